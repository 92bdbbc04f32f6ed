"""Slow and abusive clients against ``relay serve``: slowloris, clients that vanish, probe
floods, a store that fails mid-post (issue 11, "Slow and abusive clients")."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator

import pytest
from redis_server import RedisServer

from relay.testing import FakeSlack
from tests.server_env import SECRET, Relay, free_port, relay_env, relay_server, start_relay

ASK = {"questions": [{"id": "go", "question": "Ship it?", "options": [{"label": "yes"}]}]}
SLOW_CLIENTS = 400
DESCRIPTORS = 256  # the relay's RLIMIT_NOFILE: fewer than the slow clients


@pytest.fixture
async def slack() -> AsyncIterator[FakeSlack]:
    async with FakeSlack(signing_secret=SECRET) as fake:
        fake.add_user("U0ALICE", name="alice")
        yield fake


async def healthz_latency(relay: Relay) -> float:
    """Seconds ``GET /healthz`` takes on a fresh connection (fails the test after 5 s)."""
    started = time.monotonic()
    reader, writer = await asyncio.wait_for(asyncio.open_connection("127.0.0.1", relay.port), 5)
    try:
        writer.write(b"GET /healthz HTTP/1.1\r\nHost: relay\r\nConnection: close\r\n\r\n")
        response = await asyncio.wait_for(reader.read(), 5)
    finally:
        writer.close()
        with contextlib.suppress(OSError):
            await writer.wait_closed()
    assert response.startswith(b"HTTP/1.1 200"), response
    return time.monotonic() - started


async def test_slowloris_cannot_take_the_relay_down(slack: FakeSlack) -> None:
    env = relay_env(slack, free_port(), RELAY_READ_TIMEOUT="2")
    relay = await start_relay(env, max_files=DESCRIPTORS)
    slow: list[asyncio.StreamWriter] = []
    readers: list[asyncio.StreamReader] = []
    try:
        logged = len(relay.log)
        for i in range(SLOW_CLIENTS):
            reader, writer = await asyncio.open_connection("127.0.0.1", relay.port)
            # Half send a head that never ends, half a body that never ends.
            if i % 2:
                writer.write(b"GET /healthz HTTP/1.1\r\nHost: relay\r\nX-Slow: ")
            else:
                writer.write(
                    b"POST /slack/events HTTP/1.1\r\nHost: relay\r\nContent-Length: 100000\r\n"
                    b"X-Slack-Request-Timestamp: " + str(int(time.time())).encode() + b"\r\n"
                    b"X-Slack-Signature: v0=00\r\n\r\npayload="
                )
            slow.append(writer)
            readers.append(reader)
        latencies = [await healthz_latency(relay) for _ in range(5)]
        print(f"\n/healthz under {SLOW_CLIENTS} slow clients: max {max(latencies) * 1000:.0f} ms")
        assert max(latencies) < 1.0, latencies
        # Every slow client is closed by the relay within its read timeout (2 s).
        started = time.monotonic()
        for reader in readers:
            with contextlib.suppress(ConnectionError):
                await asyncio.wait_for(reader.read(), 10)
        closed = time.monotonic() - started
        print(f"slow clients all closed {closed:.1f} s later; {len(relay.log) - logged} log lines")
        assert closed < 6
        assert await healthz_latency(relay) < 1.0
        _, metrics = await relay.request("GET", "/metrics", token=None)
        assert "relay_client_connections_closed_total" in metrics
        # A few warnings at most (one per 10 s about the connection limit), not a flood.
        assert len(relay.log) - logged <= 5, "".join(relay.log[logged:])
    finally:
        for writer in slow:
            writer.close()
        await relay.stop()


async def test_abandoned_long_polls_end_as_their_clients_hang_up(slack: FakeSlack) -> None:
    async with relay_server(slack, RELAY_RATE_LIMIT="1000") as relay:
        _, record = await relay.request("POST", "/v1/asks", json=ASK)
        request = (
            f"GET /v1/asks/{record['id']}?wait=10 HTTP/1.1\r\nHost: relay\r\n"
            f"Authorization: Bearer {relay.headers()['Authorization'].split()[1]}\r\n\r\n"
        ).encode()
        clients = []
        for _ in range(300):
            _, writer = await asyncio.open_connection("127.0.0.1", relay.port)
            writer.write(request)
            clients.append(writer)
        await relay.wait_for_metric("relay_long_polls", 300.0)
        started = time.monotonic()
        for writer in clients:
            writer.transport.abort()  # gone, as 60,000 clients once went
        await relay.wait_for_metric("relay_long_polls", 0.0, timeout=5)
        released = time.monotonic() - started
        print(f"\n300 abandoned long-polls released in {released * 1000:.0f} ms")
        assert released < 2.0  # not the 10 s the polls asked to wait
        status, still = await relay.request("GET", f"/v1/asks/{record['id']}")
        assert (status, still["status"]) == (200, "pending")  # the ask itself lives on
        assert not any("WARNING" in line or "ERROR" in line for line in relay.log), relay.log


async def test_readiness_probes_cost_one_auth_test_while_slack_fails(slack: FakeSlack) -> None:
    async with relay_server(slack) as relay:
        await relay.wait_for_log("relay listening")
        slack.fail("auth.test", error="invalid_auth", times=1000)
        before = len(slack.calls_to("auth.test"))
        probes = await asyncio.gather(
            *(relay.request("GET", "/readyz", token=None) for _ in range(50))
        )
        assert {status for status, _ in probes} == {503}
        assert all(body["slack"] == "refused token" for _, body in probes)
        # The failure is cached briefly too: 50 more probes cost nothing.
        await asyncio.gather(*(relay.request("GET", "/readyz", token=None) for _ in range(50)))
        calls = len(slack.calls_to("auth.test")) - before
        print(f"\n100 probes while auth.test fails: {calls} auth.test call(s)")
        assert calls <= 2


async def test_a_store_outage_mid_post_withdraws_the_question_and_says_so(
    slack: FakeSlack, redis_server: RedisServer
) -> None:
    async with relay_server(slack, REDIS_URL=redis_server.url) as relay:
        slack.fail("chat.postMessage", delay=1.5)  # a slow post: Redis goes away meanwhile
        posting = asyncio.ensure_future(relay.request("POST", "/v1/asks", json=ASK))
        await relay.wait_for_log("event=created")
        redis_server.stop()
        status, answer = await asyncio.wait_for(posting, 15)
        assert (status, answer["error"]["code"]) == (502, "PROVIDER_FAILED"), answer
        message = answer["error"]["message"]
        assert "already posted were withdrawn" in message
        assert "nothing is pending" in message
        assert "retry shortly" not in message
        posted = await slack.wait_for_message()
        update = await slack.wait_for_call("chat.update")
        assert update.args["ts"] == posted.ts
        assert "Not delivered" in str(update.args["blocks"])
        assert "actions" not in str(update.args["blocks"])  # no buttons left to click
