"""The OpenAPI document is the one source of a request body's shape: POST /v1/asks,
POST /v1/approvals and POST /v1/plans refuse what their component schema refuses, in the
schema's words and with its code (``x-relay-code``) where that is not BAD_REQUEST."""

from __future__ import annotations

import copy
from typing import Any

import aiohttp
import pytest
from slack_sdk.web.async_client import AsyncWebClient

from relay.errors import UserInteractionError
from relay.seam.questions import validate_request
from relay.server.api import _read_ask, read_slack_section
from relay.server.app import build_app
from relay.server.approvals import _read_approval
from relay.server.errors import ApiError
from relay.server.openapi import openapi_document
from relay.server.plans import _read_plan
from relay.server.shapes import CODE, HINT, _built, body_validator
from relay.slack import SlackProvider
from relay.slack.serving import SlackServing
from tests.served import served

# Looks inside: the routes' body readers (_read_ask, _read_approval, _read_plan) are pure;
# every field through them takes milliseconds, where a served relay per case takes seconds.
ASK = {"questions": [{"id": "q", "question": "Go?", "options": [{"label": "Yes"}]}]}
APPROVAL = {"tool": "Bash", "input": {"command": "ls"}, "agent": {"id": "a"}}
PLAN = {"plan": "# Tidy\nRun `pytest`.", "agent": {"id": "a"}, "cwd": "/p"}
# Checked by their own steps after the schema, with codes of their own: a pattern is refused
# whatever it is (BAD_PATTERN); a callback is the webhook policy's (CALLBACK_NOT_ALLOWED).
APPROVAL_OWN_STEPS = {"pattern", "callback_url", "callback_events"}
ASK_OWN_STEPS = {"callback_url", "callback_events"}
_VALUES: list[tuple[str, Any]] = [
    ("string", "x"),
    ("integer", 7),
    ("boolean", True),
    ("array", []),
    ("object", {"k": "v"}),
    ("number", 1.5),
]


def _properties(name: str) -> dict[str, Any]:
    """The component's properties, a property that is another component read as that one."""
    schemas = openapi_document()["components"]["schemas"]
    return {
        key: schemas[value["$ref"].rsplit("/", 1)[1]] if "$ref" in value else value
        for key, value in schemas[name]["properties"].items()
    }


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


@pytest.mark.parametrize("field", sorted(set(_properties("AskRequest")) - ASK_OWN_STEPS))
def test_every_ask_field_of_a_wrong_type_is_refused_naming_it(field: str) -> None:
    schema = _properties("AskRequest")[field]
    refused = _refusal(_read_ask, {**ASK, field: _wrong_value(schema)})
    assert refused.code == "BAD_REQUEST"
    assert refused.message.startswith(f"{field} must be {schema[HINT]}")


@pytest.mark.parametrize("field", sorted(_properties("AskSlack")))
def test_every_slack_field_of_a_wrong_type_is_refused_naming_it(field: str) -> None:
    # The API's asks and approvals, and relay ask's --file and flags, read it so.
    schema = _properties("AskSlack")[field]
    with pytest.raises(UserInteractionError) as caught:
        read_slack_section({field: _wrong_value(schema)})
    assert caught.value.code == "BAD_REQUEST"
    assert str(caught.value).startswith(f"slack.{field} must be {schema[HINT]}")


@pytest.mark.parametrize("field", sorted(_properties("Question")))
def test_every_question_field_of_a_wrong_type_is_refused_naming_it(field: str) -> None:
    schema = _properties("Question")[field]
    question = {**ASK["questions"][0], field: _wrong_value(schema)}
    refused = _refusal(_read_ask, {"questions": [question]})
    assert refused.code == "BAD_REQUEST"
    assert refused.message.startswith(f"questions[0].{field} must be {schema[HINT]}")


@pytest.mark.parametrize(
    ("body", "code", "message"),
    [
        ({"questions": []}, "EMPTY_QUESTIONS", "questions must be a list of at least one question"),
        # The shape first: a body wrong elsewhere too is a BAD_REQUEST about that.
        ({"questions": [], "agent": 7}, "BAD_REQUEST", "agent must be"),
        ({"questions": [ASK["questions"][0]] * 26}, "BAD_REQUEST", "questions must be a list"),
        ({**ASK, "questions": None}, "BAD_REQUEST", "questions must be a list"),
        ({}, "BAD_REQUEST", "questions is required: a list of at least one question"),
        ([], "BAD_REQUEST", "the body must be a JSON object with a questions list"),
        (
            {"questions": [{"id": "q", "question": "Go?", "options": [{"label": 1}]}]},
            "BAD_REQUEST",
            "questions[0].options[0].label must be a string",
        ),
        (
            {"questions": [{**ASK["questions"][0], "intent": {"kind": "x", "approve": "Yes"}}]},
            "BAD_REQUEST",
            'questions[0].intent.kind must be "plan-review" or "tool-approval"',
        ),
        ({**ASK, "slack": {"reminders": 0}}, "BAD_REQUEST", "slack.reminders must be a whole"),
        (
            {"questions": [{**ASK["questions"][0], "multi_select": True}]},
            "BAD_REQUEST",
            "questions[0].multi_select is not a known field (did you mean multiSelect? known:",
        ),
    ],
)
def test_an_ask_refusal_has_the_schemas_code_and_words(body: Any, code: str, message: str) -> None:
    refused = _refusal(_read_ask, body)
    assert (refused.code, refused.message[: len(message)]) == (code, message)


def test_what_the_schema_cannot_say_is_still_the_seams_to_refuse() -> None:
    # An intent whose approve label is no option fits the schema: the seam's rule refuses it.
    intent = {"kind": "plan-review", "approve": "No"}
    question = {**ASK["questions"][0], "detail": "d", "intent": intent}
    request, target = _read_ask({"questions": [question]})
    with pytest.raises(UserInteractionError) as caught:
        validate_request(request)
    assert (caught.value.code, target) == ("BAD_INTENT", None)


@pytest.mark.parametrize(
    ("codes", "named"),
    [
        ({"minItems": "EMPTY_QUESTION"}, "EMPTY_QUESTION"),
        ({"minitems": "EMPTY_QUESTIONS"}, "minitems"),
    ],
)
def test_a_code_that_is_no_error_code_fails_when_the_validator_is_built(
    codes: dict[str, str], named: str
) -> None:
    # Looks inside: the served document has no typo to show; a copy of it gets one.
    components = copy.deepcopy(openapi_document()["components"])
    components["schemas"]["AskRequest"]["properties"]["questions"][CODE] = codes
    with pytest.raises(ValueError, match=named):
        _built(components, "AskRequest")


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
    for name in ("AskRequest", "ApprovalRequest", "PlanRequest"):
        assert body_validator(name).schema["components"] == document["components"]
        assert body_validator(name).schema["$ref"] == f"#/components/schemas/{name}"
