"""Hardening: the relay's Redis is lost (restarted empty) or down while asks wait on it.

A lost ask is ``404 NOT_FOUND`` (ask again); a store that is down is ``503 UNAVAILABLE``
(retry). Neither is ever ``500 INTERNAL`` with a traceback, a long-poll held open across the
loss included, and ``/readyz`` says the store is unreachable without saying where it is.
"""

from __future__ import annotations

import asyncio

from redis_server import RedisServer

from relay.testing import FakeSlack
from tests.server_env import SECRET, relay_server

ASK = {"questions": [{"id": "go", "question": "Ship it?", "options": [{"label": "yes"}]}]}


def _no_tracebacks(log: list[str]) -> None:
    assert not [line for line in log if "Traceback" in line], "".join(log)


async def test_a_long_poll_across_redis_restarting_empty_is_404(redis_server: RedisServer) -> None:
    async with (
        FakeSlack(signing_secret=SECRET) as slack,
        relay_server(slack, REDIS_URL=redis_server.url, RELAY_LOG_LEVEL="debug") as relay,
    ):
        status, created = await relay.request("POST", "/v1/asks", json=ASK)
        assert status == 201, created
        await slack.wait_for_message(timeout=15)
        polling = asyncio.create_task(relay.request("GET", f"/v1/asks/{created['id']}?wait=10"))
        await relay.wait_for_log(f"long-poll ask={created['id']}")
        redis_server.stop()  # no save: it comes back empty
        redis_server.start()
        status, body = await asyncio.wait_for(polling, 30)
        assert (status, body["error"]["code"]) == (404, "NOT_FOUND"), body
        assert "ask again" in body["error"]["message"]
        status, body = await relay.request("GET", f"/v1/asks/{created['id']}?wait=1")
        assert (status, body["error"]["code"]) == (404, "NOT_FOUND"), body
        status, body = await relay.request("DELETE", f"/v1/asks/{created['id']}")
        assert (status, body["error"]["code"]) == (404, "NOT_FOUND"), body
    _no_tracebacks(relay.log)


async def test_a_long_poll_while_redis_is_down_is_503_and_readyz_names_no_host(
    redis_server: RedisServer,
) -> None:
    async with (
        FakeSlack(signing_secret=SECRET) as slack,
        relay_server(slack, REDIS_URL=redis_server.url, RELAY_LOG_LEVEL="debug") as relay,
    ):
        status, created = await relay.request("POST", "/v1/asks", json=ASK)
        assert status == 201, created
        await slack.wait_for_message(timeout=15)
        polling = asyncio.create_task(relay.request("GET", f"/v1/asks/{created['id']}?wait=10"))
        await relay.wait_for_log(f"long-poll ask={created['id']}")
        redis_server.stop()
        status, body = await asyncio.wait_for(polling, 30)
        assert (status, body["error"]["code"]) == (503, "UNAVAILABLE"), body
        status, body = await relay.request("GET", f"/v1/asks/{created['id']}?wait=2")
        assert (status, body["error"]["code"]) == (503, "UNAVAILABLE"), body

        status, ready = await relay.request("GET", "/readyz", token=None)
        assert status == 503
        assert ready["store"] == "unreachable"
        shown = str(ready)
        for secret in ("127.0.0.1", str(redis_server.port), "redis", "Error"):
            assert secret not in shown, ready
        await relay.wait_for_log("not ready: store:")
    _no_tracebacks(relay.log)
