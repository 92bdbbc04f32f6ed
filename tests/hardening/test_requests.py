"""``relay serve`` reading requests as clients really send them: in pieces, streamed, slowly,
too many, too often, with values no ask should have (issue 11)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import AsyncIterator
from datetime import datetime
from typing import Any

import aiohttp
import pytest

from relay.testing import FakeSlack
from tests.server_env import SECRET, TOKEN, Relay, relay_server

ASK = {"questions": [{"id": "go", "question": "Ship it?", "options": [{"label": "yes"}]}]}


@pytest.fixture
async def slack() -> AsyncIterator[FakeSlack]:
    async with FakeSlack(signing_secret=SECRET) as fake:
        yield fake


async def raw_exchange(relay: Relay, pieces: list[bytes], *, pause: float = 0.0) -> bytes:
    """Send ``pieces`` as separate writes (draining each, ``pause`` apart) until the relay
    answers; the response (head and body)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", relay.port)

    async def response() -> bytes:
        head = await reader.readuntil(b"\r\n\r\n")
        length = next(
            int(line.split(b":")[1])
            for line in head.split(b"\r\n")
            if line.lower().startswith(b"content-length:")
        )
        return head + await reader.readexactly(length)

    reading = asyncio.ensure_future(response())
    try:
        with contextlib.suppress(ConnectionError):  # the relay may answer and close first
            for piece in pieces:
                if reading.done():
                    break
                writer.write(piece)
                await writer.drain()
                if pause:
                    await asyncio.sleep(pause)  # the point: the body arrives over time
        return await asyncio.wait_for(reading, 15)
    finally:
        reading.cancel()
        writer.close()
        with contextlib.suppress(OSError):
            await writer.wait_closed()


def post_head(path: str, length: int) -> bytes:
    return (
        f"POST {path} HTTP/1.1\r\nHost: relay\r\nContent-Type: application/json\r\n"
        f"Authorization: Bearer {TOKEN}\r\nContent-Length: {length}\r\nConnection: close\r\n\r\n"
    ).encode()


def status_and_json(response: bytes) -> tuple[int, Any]:
    head, _, body = response.partition(b"\r\n\r\n")
    return int(head.split()[1]), json.loads(body)


async def test_a_body_sent_in_pieces_is_read_whole(slack: FakeSlack) -> None:
    body = json.dumps({**ASK, "agent": {"id": "ci", "name": "x" * 5000}}).encode()
    cut = [body[i : i + 1000] for i in range(0, len(body), 1000)]
    async with relay_server(slack) as relay:
        response = await raw_exchange(relay, [post_head("/v1/asks", len(body)), *cut], pause=0.05)
    status, record = status_and_json(response)
    assert status == 201, record
    assert record["status"] == "pending"


async def test_a_250_kb_ask_streamed_by_aiohttp_is_read_whole() -> None:
    detail = "Release notes.\n" + "a line of the plan under review\n" * 7800
    body = json.dumps({"questions": [{**ASK["questions"][0], "detail": detail}]}).encode()
    assert 245_000 < len(body) < 262_144

    async def chunks() -> AsyncIterator[bytes]:
        for i in range(0, len(body), 16_384):
            yield body[i : i + 16_384]
            await asyncio.sleep(0)

    # The detail goes out as ~25 thread replies; at Slack's one post a second per channel
    # they would take the test 75 s, and posting is not what it is about.
    async with (
        FakeSlack(signing_secret=SECRET, rate_limits=False) as slack,
        relay_server(slack) as relay,
    ):
        for _ in range(3):
            status, record = await relay.request(
                "POST",
                "/v1/asks",
                data=chunks(),
                headers={"Content-Type": "application/json"},
            )
            assert status == 201, record


@pytest.mark.parametrize(
    ("body", "fragment", "code"),
    [
        (b"[" * 200_000, "nests deeper", "JSON_TOO_DEEP"),
        (
            json.dumps({**ASK, "slack": {"timeout_s": 10**400}}).encode(),
            "more than 30 digits",
            "JSON_INEXACT_NUMBER",
        ),
        (
            json.dumps({**ASK, "slack": {"timeout_s": 1e308}}).encode(),
            "slack.timeout_s must be a positive number of seconds (at most a year)",
            "BAD_REQUEST",
        ),
        (b'{"questions": [], "slack": {"timeout_s": 1e999}}', "too large", "JSON_NOT_FINITE"),
    ],
)
async def test_hostile_json_and_numbers_are_400s_not_500s(
    slack: FakeSlack, body: bytes, fragment: str, code: str
) -> None:
    async with relay_server(slack) as relay:
        status, answer = await relay.request(
            "POST", "/v1/asks", data=body, headers={"Content-Type": "application/json"}
        )
        assert (status, answer["error"]["code"]) == (400, code), answer
        assert fragment in answer["error"]["message"]
        assert not any("Traceback" in line for line in relay.log)
    assert not slack.calls_to("chat.postMessage")


@pytest.mark.parametrize(
    ("questions", "fragment"),
    [
        ([ASK["questions"][0], ASK["questions"][0]], "used by an earlier question"),
        (
            [
                {
                    "id": "env",
                    "question": "Where?",
                    "options": [{"label": "prod"}, {"label": "prod"}],
                }
            ],
            "repeats an earlier option",
        ),
        ([{"id": f"q{i}", "question": "Ok?"} for i in range(5000)], "at most 25"),
    ],
)
async def test_ambiguous_and_flooding_asks_are_refused_before_anything_is_posted(
    slack: FakeSlack, questions: list[dict[str, Any]], fragment: str
) -> None:
    async with relay_server(slack) as relay:
        status, answer = await relay.request("POST", "/v1/asks", json={"questions": questions})
    assert (status, answer["error"]["code"]) == (400, "BAD_REQUEST")
    assert fragment in answer["error"]["message"]
    assert not slack.calls_to("chat.postMessage")


async def test_who_may_answer_is_bounded(slack: FakeSlack) -> None:
    async with relay_server(slack) as relay:
        groups = [f"S{i:04d}" for i in range(11)]
        status, answer = await relay.request(
            "POST", "/v1/asks", json={**ASK, "slack": {"allowed_groups": groups}}
        )
        assert (status, answer["error"]["code"]) == (400, "BAD_REQUEST")
        users = [f"U{i:04d}" for i in range(101)]
        status, answer = await relay.request(
            "POST", "/v1/asks", json={**ASK, "slack": {"allowed_users": users}}
        )
        assert (status, answer["error"]["code"]) == (400, "BAD_REQUEST")
    assert not slack.calls_to("chat.postMessage")


async def test_the_operators_ceiling_bounds_every_timeout(slack: FakeSlack) -> None:
    async with relay_server(slack, RELAY_TIMEOUT="30", RELAY_MAX_TIMEOUT="60") as relay:
        for asked, expected in ((None, 60), (10**6, 60), (20, 20)):
            started = time.time()
            status, record = await relay.request(
                "POST", "/v1/asks", json={**ASK, "slack": {"timeout_s": asked}}
            )
            assert status == 201, record
            deadline = datetime.fromisoformat(record["deadline"]).timestamp()
            assert started + expected - 1 < deadline < time.time() + expected + 1
    for message in slack.messages:
        dates = str(message.blocks).split("<!date^")[1:]
        assert all(len(d.split("^")[0]) <= 11 for d in dates)  # an epoch, not 309 digits


async def test_a_body_trickled_past_the_read_timeout_is_a_408(slack: FakeSlack) -> None:
    body = json.dumps(ASK).encode()
    async with relay_server(slack, RELAY_READ_TIMEOUT="1") as relay:
        started = time.monotonic()
        pieces = [post_head("/v1/asks", len(body)), *(bytes([b]) for b in body[:40])]
        response = await raw_exchange(relay, pieces, pause=0.1)
        status, answer = status_and_json(response)
        assert (status, answer["error"]["code"]) == (408, "REQUEST_TIMEOUT")
        assert time.monotonic() - started < 5
        assert not any("WARNING" in line or "ERROR" in line for line in relay.log), relay.log


async def test_a_client_that_hangs_up_mid_body_is_not_a_store_failure(slack: FakeSlack) -> None:
    async with relay_server(slack) as relay:
        for _ in range(20):
            _, writer = await asyncio.open_connection("127.0.0.1", relay.port)
            writer.write(post_head("/v1/asks", 5000))  # and never the body
            await writer.drain()
            writer.close()
            await writer.wait_closed()
        status, _ = await relay.request("GET", "/healthz", token=None)
        assert status == 200
        assert not any("store or network failure" in line for line in relay.log), relay.log


# ---- per-token limits -----------------------------------------------------------------------


def retry_after(headers: Any) -> int:
    return int(headers["Retry-After"])


async def test_a_token_past_its_request_rate_is_told_when_to_retry(slack: FakeSlack) -> None:
    async with (
        relay_server(slack, RELAY_RATE_LIMIT="5") as relay,
        aiohttp.ClientSession(headers=relay.headers()) as session,
    ):
        statuses = []
        for _ in range(12):
            async with session.get(f"{relay.url}/v1/asks/nope") as response:
                statuses.append(response.status)
                if response.status == 429:
                    body = await response.json()
                    assert body["error"]["code"] == "RATE_LIMITED"
                    assert "RELAY_RATE_LIMIT" in body["error"]["message"]
                    assert retry_after(response.headers) >= 1
        assert statuses[:5] == [404] * 5
        assert statuses.count(429) >= 6
        # Another token has a bucket of its own.
        status, _ = await relay.request(
            "GET", "/v1/asks/nope", token="token-for-agent-two-9876543210"
        )
        assert status == 404
        _, metrics = await relay.request("GET", "/metrics", token=None)
        assert 'relay_api_rate_limited_total{limit="rate"}' in metrics


async def test_a_token_past_its_long_polls_is_refused_and_the_others_are_not(
    slack: FakeSlack,
) -> None:
    async with relay_server(slack, RELAY_MAX_LONG_POLLS="2") as relay:
        _, record = await relay.request("POST", "/v1/asks", json=ASK)
        path = f"/v1/asks/{record['id']}?wait=5"
        polls = [asyncio.ensure_future(relay.request("GET", path)) for _ in range(2)]
        await relay.wait_for_metric("relay_long_polls", 2.0)
        status, answer = await relay.request("GET", path)
        assert (status, answer["error"]["code"]) == (429, "RATE_LIMITED")
        assert "RELAY_MAX_LONG_POLLS" in answer["error"]["message"]
        status, _ = await relay.request("GET", f"/v1/asks/{record['id']}")  # no ?wait: fine
        assert status == 200
        await relay.request("DELETE", f"/v1/asks/{record['id']}")
        assert [p[0] for p in await asyncio.gather(*polls)] == [200, 200]


async def test_a_token_past_its_pending_asks_is_refused_until_one_ends(slack: FakeSlack) -> None:
    async with relay_server(slack, RELAY_MAX_PENDING="2") as relay:
        created = [await relay.request("POST", "/v1/asks", json=ASK) for _ in range(2)]
        assert [status for status, _ in created] == [201, 201]
        posts = len(slack.calls_to("chat.postMessage"))
        status, answer = await relay.request("POST", "/v1/asks", json=ASK)
        assert (status, answer["error"]["code"]) == (429, "RATE_LIMITED")
        assert "RELAY_MAX_PENDING" in answer["error"]["message"]
        assert len(slack.calls_to("chat.postMessage")) == posts  # nothing posted
        await relay.request("DELETE", f"/v1/asks/{created[0][1]['id']}")
        status, _ = await relay.request("POST", "/v1/asks", json=ASK)
        assert status == 201
        _, metrics = await relay.request("GET", "/metrics", token=None)
        assert 'relay_api_rate_limited_total{limit="pending"} 1.0' in metrics


async def test_a_tool_approval_past_the_pending_limit_is_a_429_like_an_ask(
    slack: FakeSlack,
) -> None:
    approval = {"tool": "Bash", "input": {"command": "make deploy"}, "agent": {"id": "ci-7"}}
    async with relay_server(slack, RELAY_MAX_PENDING="1") as relay:
        status, created = await relay.request("POST", "/v1/approvals", json=approval)
        assert (status, created["status"]) == (201, "pending")
        posts = len(slack.calls_to("chat.postMessage"))
        status, answer = await relay.request("POST", "/v1/approvals", json=approval)
        assert (status, answer["error"]["code"]) == (429, "RATE_LIMITED")
        assert "RELAY_MAX_PENDING" in answer["error"]["message"]
        assert len(slack.calls_to("chat.postMessage")) == posts  # nothing posted
