"""relay.slack.webapi.calls: the lean Web API calls send what slack-sdk sends and fail as it
fails."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from redis_server import free_port
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from relay.asks.events import Events
from relay.slack.webapi.background import Background
from relay.slack.webapi.calls import LeanCalls, ResponseUrlRefused, encode_json
from relay.slack.webapi.messages import SlackMessages
from relay.slack.webapi.retries import default_retry_handlers as _default_retry_handlers
from relay.store.memory import MemoryStore
from relay.testing import FakeSlack
from tests.served import served

TOKEN = "xoxb-1-webapi"


@asynccontextmanager
async def lean(slack: FakeSlack, **options: Any) -> AsyncIterator[LeanCalls]:
    """LeanCalls for a client of ``slack`` with the provider's retry handlers and a session."""
    client = AsyncWebClient(token=TOKEN, base_url=slack.base_url, **options)
    _default_retry_handlers(client)
    async with aiohttp.ClientSession() as session:
        client.session = session
        yield LeanCalls(client)


@asynccontextmanager
async def web_api(
    answer: Callable[[web.Request], Awaitable[web.Response]],
) -> AsyncIterator[str]:
    """A Web API on a free port whose every method ``answer`` answers; its base URL."""
    app = web.Application()
    app.router.add_post("/api/{method}", answer)
    async with served(app) as url:
        yield f"{url}/api/"


async def posted(calls: LeanCalls) -> str:
    data = await calls.call("chat.postMessage", {"channel": "C1", "text": "Deploy?"})
    return str(data["ts"])


async def test_an_update_lands_with_its_blocks_token_and_default_params() -> None:
    async with (
        FakeSlack(bot_token=TOKEN, channels={"C1": "c1"}) as slack,
        lean(slack, team_id="T0TEAM") as calls,
    ):
        ts = await posted(calls)
        blocks = [{"type": "section", "text": {"type": "mrkdwn", "text": "Approved ✓"}}]
        data = await calls.call(
            "chat.update", {"channel": "C1", "ts": ts, "text": "Approved", "blocks": blocks}
        )
        assert data["ok"] is True
        (update,) = slack.calls_to("chat.update")
        assert update.token == TOKEN
        assert update.args == {
            "channel": "C1",
            "ts": ts,
            "text": "Approved",
            "blocks": blocks,
            "team_id": "T0TEAM",
        }
        assert "Approved ✓" in json.dumps(slack.messages[0].blocks, ensure_ascii=False)


async def test_a_refusal_raises_slack_api_error_after_one_call() -> None:
    async with FakeSlack(bot_token=TOKEN, channels={"C1": "c1"}) as slack, lean(slack) as calls:
        slack.fail("chat.update", error="message_not_found")
        with pytest.raises(SlackApiError) as info:
            await calls.call("chat.update", {"channel": "C1", "ts": "1.1", "text": "x"})
        assert info.value.response["error"] == "message_not_found"
        assert info.value.response.status_code == 200
        assert [c.error for c in slack.calls_to("chat.update")] == ["message_not_found"]


async def test_429_waits_retry_after_then_succeeds() -> None:
    async with FakeSlack(bot_token=TOKEN, channels={"C1": "c1"}) as slack, lean(slack) as calls:
        ts = await posted(calls)
        slack.fail("chat.update", status=429, retry_after=1, times=1)
        began = time.monotonic()
        await calls.call("chat.update", {"channel": "C1", "ts": ts, "text": "done"})
        assert time.monotonic() - began >= 1.0
        assert [c.status for c in slack.calls_to("chat.update")] == [429, 200]


async def test_server_errors_are_retried_as_slack_sdk_retries_them() -> None:
    async with FakeSlack(bot_token=TOKEN, channels={"C1": "c1"}) as slack, lean(slack) as calls:
        ts = await posted(calls)
        slack.fail("chat.update", status=503, times=2)
        await calls.call("chat.update", {"channel": "C1", "ts": ts, "text": "done"})
        assert [c.status for c in slack.calls_to("chat.update")] == [503, 503, 200]
        # One more failure than the handler retries: the 5xx surfaces as SlackApiError.
        slack.fail("chat.update", status=500, times=3)
        with pytest.raises(SlackApiError) as info:
            await calls.call("chat.update", {"channel": "C1", "ts": ts, "text": "again"})
        assert info.value.response.status_code == 500


async def test_an_unreachable_slack_raises_the_network_error_after_the_retries() -> None:
    client = AsyncWebClient(token=TOKEN, base_url=f"http://127.0.0.1:{free_port()}/api/")
    _default_retry_handlers(client)
    async with aiohttp.ClientSession() as session:
        client.session = session
        with pytest.raises(aiohttp.ClientConnectionError):
            await LeanCalls(client).call("chat.update", {"channel": "C1", "ts": "1", "text": "x"})


async def test_without_a_session_the_call_goes_through_slack_sdk() -> None:
    async with FakeSlack(bot_token=TOKEN, channels={"C1": "c1"}) as slack:
        client = AsyncWebClient(token=TOKEN, base_url=slack.base_url)
        calls = LeanCalls(client)
        ts = await posted(calls)
        await calls.call("chat.update", {"channel": "C1", "ts": ts, "text": "done"})
        assert [c.method for c in slack.calls] == ["chat.postMessage", "chat.update"]
        slack.fail("chat.update", error="cant_update_message")
        with pytest.raises(SlackApiError):
            await calls.call("chat.update", {"channel": "C1", "ts": ts, "text": "x"})


async def test_the_request_is_the_one_slack_sdk_sends() -> None:
    """Headers (token, user agent, the client's own) and body match slack-sdk's, the JSON
    the same values (written compact and in UTF-8), so that Slack cannot tell them apart."""
    seen: list[tuple[str, dict[str, str], Any]] = []

    async def record(request: web.Request) -> web.Response:
        headers = {k: v for k, v in request.headers.items() if k in _COMPARED}
        seen.append((request.path, headers, json.loads(await request.read())))
        return web.json_response({"ok": True})

    async with web_api(record) as base_url:
        client = AsyncWebClient(
            token=TOKEN,
            base_url=base_url,
            headers={"X-Operator": "ops"},
            user_agent_prefix="relay-test",
            team_id="T0TEAM",
        )
        fields = {"channel": "C1", "ts": "1.2", "text": "é", "blocks": [{"type": "divider"}]}
        await client.chat_update(**fields)  # type: ignore[arg-type]
        async with aiohttp.ClientSession() as session:
            client.session = session
            await LeanCalls(client).call("chat.update", fields)
    assert len(seen) == 2
    assert seen[0] == seen[1]
    assert seen[1][1]["Authorization"] == f"Bearer {TOKEN}"
    assert seen[1][1]["User-Agent"].startswith("relay-test")


_COMPARED = ("Authorization", "Content-Type", "User-Agent", "X-Operator")


async def test_a_post_is_the_request_slack_sdks_chat_post_message_sends() -> None:
    """``SlackMessages.post`` goes through ``LeanCalls``: the same headers and body as
    ``chat_postMessage`` (a ``None`` field left out, as slack-sdk leaves it out), the
    response's fields readable by key, and a refusal raising ``SlackApiError``."""
    seen: list[tuple[str, dict[str, str], Any]] = []

    async def record(request: web.Request) -> web.Response:
        headers = {k: v for k, v in request.headers.items() if k in _COMPARED}
        body = json.loads(await request.read())
        seen.append((request.path, headers, body))
        if body.get("channel") == "C_GONE":
            return web.json_response({"ok": False, "error": "channel_not_found"})
        return web.json_response({"ok": True, "channel": body["channel"], "ts": "1.5"})

    fields: dict[str, Any] = {
        "thread_ts": None,
        "text": "Deploy?",
        "blocks": [{"type": "divider"}],
        "unfurl_links": False,
        "unfurl_media": False,
    }
    async with web_api(record) as base_url:
        client = AsyncWebClient(token=TOKEN, base_url=base_url, headers={"X-Operator": "ops"})
        await client.chat_postMessage(channel="C1", **fields)
        async with aiohttp.ClientSession() as session:
            client.session = session
            messages = SlackMessages(
                client=client, store=MemoryStore(), events=Events(), background=Background(client)
            )
            response = await messages.post("C1", **fields)
            with pytest.raises(SlackApiError) as refused:
                await messages.post("C_GONE", text="Deploy?")
    assert len(seen) == 3
    assert seen[0] == seen[1]
    assert "thread_ts" not in seen[1][2]
    assert (response["ts"], response.get("channel")) == ("1.5", "C1")
    assert refused.value.response["error"] == "channel_not_found"


@pytest.mark.parametrize(
    "fields",
    [
        {"text": "Approved ✓ by Zoë", "blocks": [{"type": "divider"}], "n": 3, "ok": True},
        {"text": "half an emoji \ud83d"},  # (orjson refuses a lone surrogate: json writes it)
        {"ts": "1.2", "big": 2**70},  # (past 64 bits: json)
        {"metadata": {1: "a key that is no string"}},  # (json writes it as "1")
    ],
)
def test_a_body_is_the_json_slack_sdk_would_send(fields: dict[str, Any]) -> None:
    body = encode_json(fields)
    assert json.loads(body) == json.loads(json.dumps(fields))


def test_nan_in_a_body_is_null_which_is_json() -> None:
    # json.dumps would write NaN, which is no JSON at all: Slack refuses the whole call.
    assert json.loads(encode_json({"score": float("nan")})) == {"score": None}


async def test_a_response_url_post_reaches_the_clicker_without_a_token() -> None:
    async with FakeSlack(bot_token=TOKEN, channels={"C1": "c1"}) as slack, lean(slack) as calls:
        ts = await posted(calls)
        url = slack.build_block_actions(slack.messages[0], {"type": "button"}, user="U1")[
            "response_url"
        ]
        body = {"response_type": "ephemeral", "replace_original": False, "text": "only you"}
        await calls.respond(url, body)
        (notice,) = slack.ephemerals
        assert (notice.method, notice.token, notice.args["text"]) == (
            "response_url",
            None,
            "only you",
        )
        assert not slack.messages[0].updated
        assert slack.messages[0].ts == ts
        for _ in range(4):  # a response_url takes 5 replies in all
            await calls.respond(url, body)
        with pytest.raises(ResponseUrlRefused) as refused:
            await calls.respond(url, body)
        assert (refused.value.status, refused.value.error) == (404, "used_url")


async def test_a_response_url_post_without_a_session_opens_its_own() -> None:
    async with FakeSlack(bot_token=TOKEN, channels={"C1": "c1"}) as slack:
        calls = LeanCalls(AsyncWebClient(token=TOKEN, base_url=slack.base_url))
        await calls.call("chat.postMessage", {"channel": "C1", "text": "Deploy?"})
        url = slack.build_block_actions(slack.messages[0], {"type": "button"}, user="U1")[
            "response_url"
        ]
        await calls.respond(url, {"response_type": "ephemeral", "text": "hi"})
        assert [e.args["text"] for e in slack.ephemerals] == ["hi"]


async def test_a_web_api_that_never_answers_times_out_at_the_sessions_total() -> None:
    # The session's total timeout (the client's, on the session the provider lends) holds
    # although aiohttp no longer arms it per request: relay.slack.webapi.deadlines does.
    hung = asyncio.Event()

    async def never(request: web.Request) -> web.Response:
        await hung.wait()
        return web.json_response({"ok": True})

    async with web_api(never) as base_url:
        client = AsyncWebClient(token=TOKEN, base_url=base_url)
        _default_retry_handlers(client)
        timeout = aiohttp.ClientTimeout(total=0.5)
        async with aiohttp.ClientSession(timeout=timeout) as session:
            client.session = session
            began = time.monotonic()
            try:
                with pytest.raises(TimeoutError):
                    await LeanCalls(client).call("chat.update", {"channel": "C1", "ts": "1"})
                assert 0.5 <= time.monotonic() - began < 2.0
            finally:
                hung.set()  # (before the server stops: it waits for its handlers)
