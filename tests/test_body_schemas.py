"""The OpenAPI document is the one source of a request body's shape: POST /v1/approvals
and POST /v1/plans refuse what their component schema refuses, in the schema's words."""

from __future__ import annotations

from typing import Any

import aiohttp
import pytest
from slack_sdk.web.async_client import AsyncWebClient

from relay.server.app import build_app
from relay.server.approvals import _read_approval
from relay.server.errors import ApiError
from relay.server.openapi import openapi_document
from relay.server.plans import _read_plan
from relay.server.shapes import HINT, body_validator
from relay.slack import SlackProvider
from relay.slack.serving import SlackServing
from tests.served import served

# Looks inside: the routes' body readers (_read_approval, _read_plan) are pure; every field
# through them takes milliseconds, where a served relay per case takes seconds.
APPROVAL = {"tool": "Bash", "input": {"command": "ls"}, "agent": {"id": "a"}}
PLAN = {"plan": "# Tidy\nRun `pytest`.", "agent": {"id": "a"}, "cwd": "/p"}
# Checked by their own steps after the schema, with codes of their own: a pattern is refused
# whatever it is (BAD_PATTERN); a callback is the webhook policy's (CALLBACK_NOT_ALLOWED).
APPROVAL_OWN_STEPS = {"pattern", "callback_url", "callback_events"}
_VALUES: list[tuple[str, Any]] = [
    ("string", "x"),
    ("integer", 7),
    ("boolean", True),
    ("array", []),
    ("object", {"k": "v"}),
    ("number", 1.5),
]


def _properties(name: str) -> dict[str, Any]:
    return dict(openapi_document()["components"]["schemas"][name]["properties"])


def _wrong_value(schema: dict[str, Any]) -> Any:
    """A value whose JSON type the property's schema does not allow."""
    allowed = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
    if "number" in allowed:
        allowed = [*allowed, "integer"]
    return next(value for kind, value in _VALUES if kind not in allowed)


def _refusal(read: Any, body: Any) -> ApiError:
    with pytest.raises(ApiError) as caught:
        read(body)
    return caught.value


def _read_plan_of(body: Any) -> Any:
    return _read_plan(body, "owner")


@pytest.mark.parametrize("field", sorted(set(_properties("ApprovalRequest")) - APPROVAL_OWN_STEPS))
def test_every_approval_field_of_a_wrong_type_is_refused_naming_it(field: str) -> None:
    schema = _properties("ApprovalRequest")[field]
    refused = _refusal(_read_approval, {**APPROVAL, field: _wrong_value(schema)})
    assert refused.code == "BAD_REQUEST"
    assert refused.message.startswith(f"{field} must be {schema[HINT]}")


@pytest.mark.parametrize("field", sorted(_properties("PlanRequest")))
def test_every_plan_field_of_a_wrong_type_is_refused_naming_it(field: str) -> None:
    schema = _properties("PlanRequest")[field]
    refused = _refusal(_read_plan_of, {**PLAN, field: _wrong_value(schema)})
    assert refused.code == "BAD_REQUEST"
    assert refused.message.startswith(f"{field} must be {schema[HINT]}")


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"tool": "Bash"}, 'agent is required: {"id": ..., "name": ...}, who asks'),
        ({**APPROVAL, "agent": {"id": " "}}, "agent.id must be a non-blank string"),
        ({**APPROVAL, "agent": {"id": "a", "x": 1}}, "agent.x is not a known field"),
        ({**APPROVAL, "grant_minutes": 5.0}, "grant_minutes must be a whole number"),
        ({**APPROVAL, "context": {"a": 1}}, "context must be an object of strings"),
        ({**APPROVAL, "slack": {"reminders": 0}}, "slack.reminders must be a whole number"),
        ([], "the body must be a JSON object with tool, input and agent"),
    ],
)
def test_a_refusal_names_the_field_and_says_what_to_send(body: Any, message: str) -> None:
    refused = _refusal(_read_approval, body)
    assert (refused.code, refused.message[: len(message)]) == ("BAD_REQUEST", message)


def test_a_pattern_is_refused_whatever_its_shape() -> None:
    for pattern in ("x", {}, {"tools": ["*"]}):
        assert _refusal(_read_approval, {**APPROVAL, "pattern": pattern}).code == "BAD_PATTERN"


@pytest.mark.parametrize(
    ("steps", "message"),
    [
        ([{"run": "a", "write": "b"}], "steps must be a list of at most 100 objects"),
        ([{"run": " "}], "steps must be a list"),
        ([{}], "steps must be a list"),
        ("pytest", "steps must be a list"),
        ([{"jump": "x"}], "steps[0].jump is not a known field (known: run, write"),
    ],
)
def test_a_plan_step_is_refused_by_the_schema(steps: Any, message: str) -> None:
    refused = _refusal(_read_plan_of, {**PLAN, "steps": steps})
    assert (refused.code, refused.message[: len(message)]) == ("BAD_REQUEST", message)


def test_valid_bodies_read_as_before() -> None:
    approval, target = _read_approval(
        {**APPROVAL, "grant_minutes": None, "context": {"cwd": "/p"}, "client_verdict": "allow"}
    )
    assert (approval.grant_minutes, approval.context, approval.rules_allow) == (
        30,
        {"cwd": "/p"},
        True,
    )
    assert target is None
    proposal = _read_plan({**PLAN, "steps": [{"run": "pytest -q"}]}, "owner")
    assert [(s.kind, s.text) for s in proposal.steps] == [("run", "pytest -q")]


async def test_the_served_document_is_what_the_validators_use() -> None:
    provider = SlackProvider(
        client=AsyncWebClient(token="xoxb-x"), signing_secret="s", channel="C1"
    )
    app = build_app(channel=SlackServing(provider), api_tokens=("t" * 20,))
    try:
        async with (
            served(app) as url,
            aiohttp.ClientSession() as session,
            session.get(f"{url}/openapi.json") as response,
        ):
            document = await response.json()
    finally:
        await provider.aclose()
    for name in ("ApprovalRequest", "PlanRequest"):
        assert body_validator(name).schema["components"] == document["components"]
        assert body_validator(name).schema["$ref"] == f"#/components/schemas/{name}"
