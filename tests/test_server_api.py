"""The hosted relay's /v1 API, against `relay serve` running as a subprocess."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from datetime import datetime, timedelta

import pytest

from relay.testing import FakeSlack
from tests.server_env import BOT_TOKEN, CHANNEL, OTHER_TOKEN, TOKEN, Relay, relay_server

ASK = {
    "questions": [
        {
            "id": "env",
            "question": "Deploy where?",
            "options": [{"label": "staging"}, {"label": "prod"}],
        }
    ],
    "agent": {"id": "ci-42", "name": "CI pipeline"},
}


@pytest.fixture
async def env() -> AsyncIterator[tuple[FakeSlack, Relay]]:
    async with FakeSlack(signing_secret="server-signing-secret") as slack:
        slack.add_user("U0ALICE", name="alice")
        # C0OTHER: a channel the API's requests may name (none may, unless listed).
        async with relay_server(
            slack, RELAY_LOG_LEVEL="debug", RELAY_ALLOWED_CHANNELS="C0OTHER"
        ) as relay:
            yield slack, relay


async def test_ask_click_and_read_the_answer(env: tuple[FakeSlack, Relay]) -> None:
    slack, relay = env
    status, created = await relay.request("POST", "/v1/asks", json=ASK)
    assert status == 201
    assert created["status"] == "pending"
    assert set(created) >= {"id", "status", "created_at"}
    message = await slack.wait_for_message()
    assert message.channel == CHANNEL
    assert "CI pipeline" in str(message.blocks)

    poll = asyncio.create_task(relay.request("GET", f"/v1/asks/{created['id']}?wait=10"))
    await slack.click(message, "prod", user="U0ALICE")
    status, record = await asyncio.wait_for(poll, 10)
    assert status == 200
    assert record["status"] == "answered"
    assert record["answer"] == {"answers": [{"id": "env", "selected": ["prod"]}]}
    assert record["answered_by"] == {"id": "U0ALICE", "name": "alice"}
    assert record["answered_at"]
    assert record["responses"] == [
        {
            "id": "env",
            "answered_by": {"id": "U0ALICE", "name": "alice"},
            "answered_at": record["answered_at"],
        }
    ]
    assert "error" not in record


async def test_post_with_wait_holds_until_answered(env: tuple[FakeSlack, Relay]) -> None:
    slack, relay = env
    post = asyncio.create_task(relay.request("POST", "/v1/asks?wait=10", json=ASK))
    message = await slack.wait_for_message()
    await slack.click(message, "staging", user="U0ALICE")
    status, record = await asyncio.wait_for(post, 10)
    assert (status, record["status"]) == (201, "answered")
    assert record["answer"]["answers"][0]["selected"] == ["staging"]


async def test_a_long_poll_returns_the_pending_record_when_wait_passes(
    env: tuple[FakeSlack, Relay],
) -> None:
    _, relay = env
    _, created = await relay.request("POST", "/v1/asks", json=ASK)
    started = time.monotonic()
    status, record = await relay.request("GET", f"/v1/asks/{created['id']}?wait=0.5")
    assert time.monotonic() - started >= 0.5
    assert (status, record["status"]) == (200, "pending")


async def test_delete_aborts_and_withdraws_the_message(env: tuple[FakeSlack, Relay]) -> None:
    slack, relay = env
    _, created = await relay.request("POST", "/v1/asks", json=ASK)
    message = await slack.wait_for_message()
    status, record = await relay.request("DELETE", f"/v1/asks/{created['id']}")
    assert status == 200
    assert record["status"] == "aborted"
    assert record["error"]["code"] == "ASK_ABORTED"
    assert record["error"]["message"] == "ask_user_question was aborted before the user answered"
    await slack.wait_until(lambda: message.updated)
    assert "Withdrawn" in str(message.blocks)
    # Deleting again is harmless and shows the same outcome.
    assert (await relay.request("DELETE", f"/v1/asks/{created['id']}"))[1]["status"] == "aborted"


async def test_a_timed_out_ask_says_so_in_its_record(env: tuple[FakeSlack, Relay]) -> None:
    _, relay = env
    body = {**ASK, "slack": {"timeout_s": 0.3}}
    _, created = await relay.request("POST", "/v1/asks", json=body)
    _, record = await relay.request("GET", f"/v1/asks/{created['id']}?wait=5")
    assert record["status"] == "timed_out"
    assert record["error"] == {
        "code": "ASK_ABORTED",
        "message": "ask_user_question timed out after 0.3 s before the user answered",
        "reason": "timed_out",
    }


async def test_the_slack_object_routes_the_ask(env: tuple[FakeSlack, Relay]) -> None:
    slack, relay = env
    body = {
        **ASK,
        "slack": {
            "channel": "C0OTHER",
            "thread_ts": "1700000000.000200",
            "allowed_users": ["U0ALICE"],
        },
    }
    status, created = await relay.request("POST", "/v1/asks", json=body)
    assert status == 201
    message = await slack.wait_for_message()
    assert (message.channel, message.thread_ts) == ("C0OTHER", "1700000000.000200")
    await slack.click(message, "prod", user="U0MALLORY")
    notice = await slack.wait_for_ephemeral(user="U0MALLORY")
    assert "not allowed" in notice.args["text"]
    _, record = await relay.request("GET", f"/v1/asks/{created['id']}")
    assert record["status"] == "pending"


@pytest.mark.parametrize(
    ("headers", "token"),
    [
        ({}, None),
        ({"Authorization": "Bearer wrong-token-0000000000"}, None),
        ({"Authorization": f"Basic {TOKEN}"}, None),
        ({"Authorization": "Bearer "}, None),
    ],
)
async def test_every_v1_route_needs_a_valid_token(
    env: tuple[FakeSlack, Relay], headers: dict[str, str], token: str | None
) -> None:
    _, relay = env
    for method, path in (("POST", "/v1/asks"), ("GET", "/v1/asks/x"), ("DELETE", "/v1/asks/x")):
        status, body = await relay.request(method, path, token=token, headers=headers, json=ASK)
        assert status == 401
        assert body["error"]["code"] == "UNAUTHORIZED"
    assert not relay_messages(env)


def relay_messages(env: tuple[FakeSlack, Relay]) -> list[object]:
    return list(env[0].messages)


async def test_an_ask_is_visible_only_to_the_token_that_created_it(
    env: tuple[FakeSlack, Relay],
) -> None:
    _, relay = env
    _, created = await relay.request("POST", "/v1/asks", json=ASK)
    path = f"/v1/asks/{created['id']}"
    for method in ("GET", "DELETE"):
        status, body = await relay.request(method, path, token=OTHER_TOKEN)
        assert status == 404
        assert body["error"]["code"] == "NOT_FOUND"
    assert (await relay.request("GET", path))[1]["status"] == "pending"


@pytest.mark.parametrize(
    ("body", "code", "fragment"),
    [
        ("{not json", "BAD_REQUEST", "not valid JSON"),
        ([], "BAD_REQUEST", "JSON object"),
        ({}, "BAD_REQUEST", "questions is required"),
        ({"questions": "x"}, "BAD_REQUEST", "questions must be a list"),
        (
            {"questions": [{"id": 1, "question": "q"}]},
            "BAD_REQUEST",
            "questions[0].id must be a string",
        ),
        (
            {"questions": [{"id": "a", "question": "q", "multi_select": True}]},
            "BAD_REQUEST",
            "questions[0].multi_select is not a known field",
        ),
        ({**ASK, "extra": 1}, "BAD_REQUEST", "extra is not a known field"),
        ({**ASK, "slack": {"channel": 5}}, "BAD_REQUEST", "slack.channel"),
        ({**ASK, "slack": {"timeout_s": -1}}, "BAD_REQUEST", "slack.timeout_s"),
        ({**ASK, "slack": {"chanel": "C1"}}, "BAD_REQUEST", "slack.chanel is not a known field"),
        ({"questions": []}, "EMPTY_QUESTIONS", "at least one question"),
        (
            {
                "questions": [
                    {
                        "id": "p",
                        "question": "ok?",
                        "options": [{"label": "yes"}],
                        "intent": {"kind": "plan-review", "approve": "no"},
                        "detail": "# x",
                    }
                ]
            },
            "BAD_INTENT",
            'approve label "no" names none of its options',
        ),
        (
            {
                "questions": [
                    {"id": "m", "question": "q", "options": [{"label": str(i)} for i in range(101)]}
                ]
            },
            "BAD_REQUEST",
            "questions[0].options must be a list of at most 100 options",
        ),
    ],
)
async def test_bad_requests_are_400_naming_the_problem_and_post_nothing(
    env: tuple[FakeSlack, Relay], body: object, code: str, fragment: str
) -> None:
    slack, relay = env
    kw = {"data": body} if isinstance(body, str) else {"json": body}
    status, reply = await relay.request("POST", "/v1/asks", **kw)  # type: ignore[arg-type]
    assert status == 400
    assert reply["error"]["code"] == code
    assert fragment in reply["error"]["message"]
    assert not slack.messages


async def test_other_errors_have_their_codes(env: tuple[FakeSlack, Relay]) -> None:
    slack, relay = env
    assert (await relay.request("GET", "/v1/asks/nope"))[1]["error"]["code"] == "NOT_FOUND"
    status, body = await relay.request("PUT", "/v1/asks")
    assert (status, body["error"]["code"]) == (405, "METHOD_NOT_ALLOWED")
    status, body = await relay.request("GET", "/v1/asks/x?wait=soon")
    assert (status, body["error"]["code"]) == (400, "BAD_REQUEST")
    status, body = await relay.request("POST", "/v1/asks", data="x" * 300_000)
    assert (status, body["error"]["code"]) == (413, "TOO_LARGE")
    slack.fail("chat.postMessage", error="not_in_channel")
    status, body = await relay.request("POST", "/v1/asks", json=ASK)
    assert (status, body["error"]["code"]) == (502, "PROVIDER_FAILED")
    assert "invite the bot" in body["error"]["message"]


async def test_health_readiness_and_metrics(env: tuple[FakeSlack, Relay]) -> None:
    slack, relay = env
    assert await relay.request("GET", "/healthz", token=None) == (200, {"ok": True})
    assert await relay.request("GET", "/readyz", token=None) == (200, {"ok": True})
    _, created = await relay.request("POST", "/v1/asks", json=ASK)
    await slack.click(await slack.wait_for_message(), "prod", user="U0ALICE")
    await relay.request("GET", f"/v1/asks/{created['id']}?wait=5")
    status, text = await relay.request("GET", "/metrics", token=None)
    assert status == 200
    assert 'relay_asks_total{outcome="answered"} 1.0' in text
    assert "relay_asks_pending 0.0" in text
    assert "relay_time_to_answer_seconds_count 1.0" in text
    assert "relay_slack_api_errors_total" in text


async def test_readiness_fails_when_slack_refuses_the_token(env: tuple[FakeSlack, Relay]) -> None:
    slack, relay = env
    slack.fail("auth.test", error="invalid_auth", times=3)
    status, body = await relay.request("GET", "/readyz", token=None)
    assert status == 503
    assert body["slack"] == "refused token"  # in relay's words


async def test_one_structured_log_line_per_event_and_no_token_in_any_line(
    env: tuple[FakeSlack, Relay],
) -> None:
    slack, relay = env
    _, created = await relay.request("POST", "/v1/asks", json=ASK)
    await slack.click(await slack.wait_for_message(), "prod", user="U0ALICE")
    line = await relay.wait_for_log("event=answered")
    assert f"ask={created['id']}" in line
    assert "by=U0ALICE" in line
    assert await relay.wait_for_log(f"event=created ask={created['id']}")
    assert await relay.wait_for_log(f"event=posted ask={created['id']}")
    log = "".join(relay.log)
    assert "DEBUG" in log  # the debug level really was on
    for secret in (BOT_TOKEN, TOKEN, OTHER_TOKEN, "server-signing-secret"):
        assert secret not in log


async def test_the_api_sets_groups_and_prevents_self_approval() -> None:
    # S0OPS is a group the API's requests may name: the operator lists it.
    async with (
        FakeSlack(signing_secret="server-signing-secret") as slack,
        relay_server(slack, RELAY_ALLOWED_GROUPS="S0OPS") as relay,
    ):
        slack.usergroups = {"S0OPS": ["U0ALICE", "U0BOB"]}
        body = {
            **ASK,
            "slack": {
                "allowed_users": [],
                "allowed_groups": ["S0OPS"],
                "requester": "U0ALICE",
                "prevent_self_approval": True,
            },
        }
        status, created = await relay.request("POST", "/v1/asks", json=body)
        assert status == 201
        message = await slack.wait_for_message()
        await slack.click(message, "prod", user="U0ALICE")
        assert "someone else" in (await slack.wait_for_ephemeral(user="U0ALICE")).args["text"]
        await slack.click(message, "prod", user="U0BOB")
        _, record = await relay.request("GET", f"/v1/asks/{created['id']}?wait=5")
        assert record["answered_by"]["id"] == "U0BOB"
        status, reply = await relay.request(
            "POST", "/v1/asks", json={**ASK, "slack": {"prevent_self_approval": "yes"}}
        )
        assert (status, reply["error"]["code"]) == (400, "BAD_REQUEST")


async def test_every_time_in_a_record_is_iso_8601_in_utc(env: tuple[FakeSlack, Relay]) -> None:
    slack, relay = env
    body = {**ASK, "slack": {"timeout_s": 600}}
    status, created = await relay.request("POST", "/v1/asks", json=body)
    assert status == 201
    created_at = datetime.fromisoformat(created["created_at"])
    deadline = datetime.fromisoformat(created["deadline"])
    assert created_at.utcoffset() == deadline.utcoffset() == timedelta(0)
    assert timedelta(seconds=599) < deadline - created_at < timedelta(seconds=601)
    await slack.click(await slack.wait_for_message(), "prod", user="U0ALICE")
    _, record = await relay.request("GET", f"/v1/asks/{created['id']}?wait=10")
    for stamp in (record["answered_at"], record["responses"][0]["answered_at"]):
        assert datetime.fromisoformat(stamp).utcoffset() == timedelta(0)


async def test_a_deadline_past_a_year_cannot_be_set(env: tuple[FakeSlack, Relay]) -> None:
    # The ceiling keeps every deadline a date a person can read (and datetime can show).
    slack, relay = env
    status, created = await relay.request(
        "POST", "/v1/asks", json={**ASK, "slack": {"timeout_s": 2.9e28}}
    )
    assert (status, created["error"]["code"]) == (400, "BAD_REQUEST"), created
    assert not slack.calls_to("chat.postMessage")
