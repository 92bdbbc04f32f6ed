"""Many requests at once on a real Redis: no store error while Redis is up (issue 17).

redis-py's default asyncio pool raised ``MaxConnectionsError`` past 100 connections, which
the relay reported as "Redis is unreachable": 256 concurrent ``POST /v1/asks`` failed 67% of
the time and 500 long-polls sent together got 400 answers 503. The store's pool now blocks
(``RELAY_REDIS_MAX_CONNECTIONS``, a command waits its turn) and waiting holds no connection,
so these run with a deliberately small pool.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import aiohttp
import redis.asyncio as aioredis
from server_env import CHANNEL, relay_server
from test_store_contract import new_ask

from relay.store.record import AskStatus
from relay.store.redis import RedisStore
from relay.testing import FakeSlack

SECRET = "server-signing-secret"


async def test_a_thousand_concurrent_creates_all_succeed_through_a_small_pool(
    redis_url: str,
) -> None:
    store = RedisStore(url=redis_url, max_connections=8)
    try:
        records = [new_ask() for _ in range(1000)]
        results = await asyncio.gather(
            *(store.create(record=r) for r in records), return_exceptions=True
        )
        assert [r for r in results if r is not None] == []
        assert await store.count_pending() == 1000
    finally:
        await store.aclose()


async def test_ten_thousand_waiters_hold_no_connection_and_all_get_their_outcome(
    redis_url: str,
) -> None:
    store = RedisStore(url=redis_url, max_connections=8)
    other = RedisStore(url=redis_url, max_connections=8)
    try:
        records = [new_ask() for _ in range(10_000)]
        for start in range(0, len(records), 500):
            await asyncio.gather(*(store.create(record=r) for r in records[start : start + 500]))
        # A long-poll reads its ask before it waits: 10,000 reads at once, all answered.
        read = await asyncio.gather(*(store.get(ask_id=r.id) for r in records))
        assert [r.id for r in read if r is not None] == [r.id for r in records]
        waiters = [asyncio.ensure_future(store.wait(ask_id=r.id, within=60)) for r in records]
        admin = aioredis.Redis.from_url(redis_url, decode_responses=True)
        try:
            # Every waiter's first status read is done once Redis has served 10,000 HGETs.
            await _until_hgets(admin, 10_000)
            assert not any(w.done() for w in waiters), "a waiter ended early"
            # The pool's 8, the line that creates and claims are pipelined on, the
            # subscription's own connection, and this client.
            assert len(await admin.client_list()) <= 11
            # A pub/sub reconnect: every waiter re-checks (10,000 more HGETs, pipelined),
            # none fails or ends early.
            await admin.client_kill_filter(_type="pubsub")
            await _until_hgets(admin, 20_000)
            assert not any(w.done() for w in waiters), "a waiter ended on the reconnect"
        finally:
            await admin.aclose()
        at = datetime.now(UTC)
        for start in range(0, len(records), 500):
            await asyncio.gather(
                *(
                    other.finish(ask_id=r.id, status=AskStatus.ABORTED, error=None, at=at)
                    for r in records[start : start + 500]
                )
            )
        finals = await asyncio.wait_for(asyncio.gather(*waiters), 60)
        assert all(f is not None and f.status is AskStatus.ABORTED for f in finals)
    finally:
        await other.aclose()
        await store.aclose()


async def _until_hgets(admin: aioredis.Redis, calls: int) -> None:
    async with asyncio.timeout(30):
        while True:
            stats = await admin.info("commandstats")
            if int(stats.get("cmdstat_hget", {}).get("calls", 0)) >= calls:
                return
            await asyncio.sleep(0.05)  # polling Redis for a condition, within the timeout


async def test_concurrent_api_creates_and_long_polls_on_redis_get_no_503(
    redis_url: str,
) -> None:
    async with (
        # A throughput test: Slack's one message a second per channel is not under test.
        FakeSlack(signing_secret=SECRET, rate_limits=False) as slack,
        relay_server(
            slack,
            REDIS_URL=redis_url,
            RELAY_REDIS_MAX_CONNECTIONS="4",
            RELAY_RATE_LIMIT="100000",
            RELAY_MAX_LONG_POLLS="5000",
            RELAY_MAX_PENDING="100000",
        ) as relay,
        aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as http,
    ):
        body = {
            "questions": [
                {
                    "id": "ship",
                    "question": "Ship it?",
                    "options": [{"label": "Yes"}, {"label": "No"}],
                }
            ]
        }
        headers = relay.headers()

        async def create() -> tuple[int, str]:
            async with http.post(f"{relay.url}/v1/asks", json=body, headers=headers) as r:
                data = await r.json()
                return r.status, data.get("id", "")

        created = await asyncio.gather(*(create() for _ in range(300)))
        assert sorted({status for status, _ in created}) == [201]

        async def poll(ask_id: str) -> int:
            url = f"{relay.url}/v1/asks/{ask_id}?wait=3"
            async with http.get(url, headers=headers) as r:
                await r.read()
                return r.status

        statuses = await asyncio.gather(*(poll(ask_id) for _, ask_id in created))
        assert sorted(set(statuses)) == [200]
        assert len(slack.messages) == 300
        assert {m.channel for m in slack.messages} == {CHANNEL}
