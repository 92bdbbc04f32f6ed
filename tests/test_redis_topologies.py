"""Redis as operators run it: TLS with a client certificate, Sentinel, and Redis Cluster.

The store contract runs on each (tests/test_store_contract.py); here are what only one of them
has (a TLS server refusing a client it cannot trust, a cluster's slots, an index repaired after
a replica died between the two steps of a cluster claim) and a click through ``relay serve``.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path

import pytest
import redis
from redis.asyncio.cluster import ClusterNode, RedisCluster
from redis_topologies import Certificates, RedisClusterServers, SentinelServers, TLSRedis
from test_store_contract import new_ask, reply

from relay.store import AskStatus, PendingLimitReached, StoreUnavailable
from relay.store.redis import RedisStore
from relay.store.redis_connect import RedisTLS
from relay.testing import FakeSlack
from tests.server_env import free_port, relay_env, start_relay

ASK = {"questions": [{"id": "go", "question": "Ship it?", "options": [{"label": "yes"}]}]}


# ---- TLS --------------------------------------------------------------------------------------


@pytest.mark.parametrize("missing", ["client certificate", "CA"])
async def test_a_tls_redis_refuses_a_relay_it_cannot_trust_and_the_error_says_so(
    redis_tls: TLSRedis, missing: str
) -> None:
    files = redis_tls.certificates
    tls = (
        RedisTLS(ca_file=str(files.ca))
        if missing == "client certificate"
        else RedisTLS(cert_file=str(files.client_cert), key_file=str(files.client_key))
    )
    store = RedisStore(url=redis_tls.url, tls=tls, prefix=f"t:{uuid.uuid4().hex}:")
    try:
        started = time.monotonic()
        with pytest.raises(StoreUnavailable, match="REDIS_URL"):
            await store.create(record=new_ask())
        assert time.monotonic() - started < 5.0
    finally:
        await store.aclose()


async def test_plain_redis_is_not_spoken_to_a_tls_port(redis_tls: TLSRedis) -> None:
    store = RedisStore(url=f"redis://127.0.0.1:{redis_tls.port}/0")
    try:
        with pytest.raises(StoreUnavailable):
            await store.ping()
    finally:
        await store.aclose()


# ---- Redis Cluster ----------------------------------------------------------------------------


async def test_on_a_cluster_each_ask_has_one_slot_and_asks_spread_over_the_masters(
    redis_cluster: RedisClusterServers,
) -> None:
    prefix = f"t:{uuid.uuid4().hex}:"
    store = RedisStore(url=redis_cluster.url, prefix=prefix)
    seed = redis_cluster.nodes[0]
    client = RedisCluster(startup_nodes=[ClusterNode("127.0.0.1", seed.port)])
    try:
        records = [new_ask(deadline=time.time() + 60) for _ in range(24)]
        for record in records:
            await store.create(record=record)
        await store.answer(ask_id=records[0].id, index=0, item=reply(0))
        keys = [k async for k in client.scan_iter(match=f"{prefix}*")]
        by_slot: dict[int, list[bytes]] = {}
        for key in keys:
            by_slot.setdefault(client.keyslot(key), []).append(key)
        asks = [k for k in keys if b":ask:" in k]
        assert len(asks) == len(records)
        # The indexes across asks share one slot (every index script touches that one); each
        # owner's audit index is a key of its own, only ever read or written alone.
        audit = [k for k in keys if b":owned:" in k]
        assert audit
        indexes = {client.keyslot(k) for k in keys if k not in asks and k not in audit}
        assert len(indexes) == 1
        assert {k.rsplit(b":", 1)[1] for k in by_slot[indexes.pop()]} == {
            b"deadlines",
            b"owners",
            b"ask-owners",
            b"unsettled",  # the answered ask, until its message's final update lands
        }
        # Asks are spread over the masters, not piled on one.
        owners = {client.get_node_from_key(k).port for k in asks}  # type: ignore[no-untyped-call]
        assert len(owners) == 3
        assert await store.count_pending() == len(records) - 1
    finally:
        await store.aclose()
        await client.aclose()


async def test_waiters_on_a_cluster_are_woken_by_asks_ending_on_every_node(
    redis_cluster: RedisClusterServers,
) -> None:
    prefix = f"t:{uuid.uuid4().hex}:"
    waiting, ending = (RedisStore(url=redis_cluster.url, prefix=prefix) for _ in range(2))
    try:
        records = [new_ask() for _ in range(12)]  # their slots land on all three masters
        for record in records:
            await ending.create(record=record)
        waiters = [asyncio.ensure_future(waiting.wait(ask_id=r.id, within=30)) for r in records]
        await asyncio.sleep(0.2)  # every waiter subscribed and checked once
        assert not any(w.done() for w in waiters)
        started = time.monotonic()
        for record in records:
            await ending.finish(
                ask_id=record.id, status=AskStatus.ABORTED, error=None, at=datetime.now(UTC)
            )
        finals = await asyncio.wait_for(asyncio.gather(*waiters), 10)
        assert all(f is not None and f.status is AskStatus.ABORTED for f in finals)
        assert time.monotonic() - started < 5.0  # woken by pub/sub, not by ``within``
    finally:
        await waiting.aclose()
        await ending.aclose()


async def test_a_replica_dying_between_a_cluster_claim_and_its_index_update_is_repaired(
    redis_cluster: RedisClusterServers,
) -> None:
    prefix = f"t:{uuid.uuid4().hex}:"
    store = RedisStore(url=redis_cluster.url, prefix=prefix, max_pending_per_owner=1)
    client = RedisCluster(startup_nodes=[ClusterNode("127.0.0.1", redis_cluster.nodes[0].port)])
    try:
        record = new_ask(deadline=time.time() - 1)
        await store.create(record=record)
        # The claim's first step landed (the ask is over), the index update never did.
        await client.hset(f"{prefix}ask:{{{record.id}}}", "status", "aborted")
        assert await store.due(now=time.time()) == [record.id]
        with pytest.raises(PendingLimitReached):
            await store.create(record=new_ask())  # the owner still counts it
        # The expiry loop settles what ``due`` hands out: the claim loses, the index heals.
        won, final = await store.finish(
            ask_id=record.id, status=AskStatus.TIMED_OUT, error=None, at=datetime.now(UTC)
        )
        assert not won
        assert final is not None
        assert final.status is AskStatus.ABORTED
        assert await store.due(now=time.time()) == []
        assert await store.count_pending() == 0
        await store.create(record=new_ask())  # the owner's count was released
    finally:
        await store.aclose()
        await client.aclose()


# ---- a click through relay serve --------------------------------------------------------------


async def _click_through_relay_serve(slack: FakeSlack, **env: str) -> None:
    """Two replicas on one Redis: the ask is made on A, clicked on B, and A's poll wakes."""
    a = await start_relay(relay_env(slack, free_port(), **env))
    b = await start_relay(relay_env(slack, free_port(), **env))
    try:
        slack.interactivity_url = f"{b.url}/slack/events"
        status, created = await a.request("POST", "/v1/asks", json=ASK)
        assert status == 201, created
        poll = asyncio.ensure_future(a.request("GET", f"/v1/asks/{created['id']}?wait=30"))
        message = await slack.wait_for_message()
        await slack.click(message, "yes", user="U0ALICE")
        status, record = await asyncio.wait_for(poll, 30)
        assert status == 200
        assert record["status"] == "answered"
        assert record["answer"]["answers"][0]["selected"] == ["yes"]
        for relay in (a, b):
            assert not [line for line in relay.log if " ERROR " in line]
    finally:
        for relay in (a, b):
            await relay.stop()


async def test_a_click_through_relay_serve_on_a_redis_cluster(
    redis_cluster: RedisClusterServers,
) -> None:
    async with FakeSlack(signing_secret="server-signing-secret") as slack:
        await _click_through_relay_serve(slack, REDIS_URL=redis_cluster.url)


async def test_a_click_through_relay_serve_on_tls_redis_with_a_client_certificate(
    redis_tls: TLSRedis,
) -> None:
    files = redis_tls.certificates
    async with FakeSlack(signing_secret="server-signing-secret") as slack:
        await _click_through_relay_serve(
            slack,
            REDIS_URL=redis_tls.url,
            RELAY_REDIS_CA_FILE=str(files.ca),
            RELAY_REDIS_CERT_FILE=str(files.client_cert),
            RELAY_REDIS_KEY_FILE=str(files.client_key),
        )


async def test_a_click_through_relay_serve_behind_sentinel(
    redis_sentinel: SentinelServers,
) -> None:
    async with FakeSlack(signing_secret="server-signing-secret") as slack:
        await _click_through_relay_serve(slack, REDIS_URL=redis_sentinel.url)


# ---- Sentinel ---------------------------------------------------------------------------------


async def test_behind_sentinel_the_store_follows_a_failover_to_the_promoted_replica(
    tmp_path: Path,
) -> None:
    servers = SentinelServers(directory=tmp_path, replica=True)
    servers.start()
    store = RedisStore(url=servers.url)
    try:
        record = new_ask()
        await store.create(record=record)
        assert servers.replica is not None
        with redis.Redis(port=servers.master.port) as master:
            master.wait(1, 5000)  # the replica has the ask before it is promoted
        servers.fail_over()  # the master dies; the Sentinels promote its replica
        result = await store.answer(ask_id=record.id, index=0, item=reply(0))
        assert result.outcome == "completed"
        with redis.Redis(port=servers.replica.port) as promoted:
            assert promoted.hget(f"relay:ask:{record.id}", "status") == b"answered"
        assert await store.count_pending() == 0
    finally:
        await store.aclose()
        servers.stop()


async def test_a_tls_redis_cluster_with_client_certificates_serves_the_store(
    tmp_path: Path, redis_certificates: Certificates
) -> None:
    cluster = RedisClusterServers(directory=tmp_path, certificates=redis_certificates)
    cluster.start()
    assert cluster.url.startswith("rediss+cluster://")
    tls = redis_certificates.client()
    a, b = (RedisStore(url=cluster.url, tls=tls) for _ in range(2))
    try:
        records = [new_ask(deadline=time.time() + 60) for _ in range(6)]
        for record in records:
            await a.create(record=record)
        waiters = [asyncio.ensure_future(b.wait(ask_id=r.id, within=30)) for r in records]
        for record in records:
            result = await a.answer(ask_id=record.id, index=0, item=reply(0))
            assert result.outcome == "completed"
        finals = await asyncio.wait_for(asyncio.gather(*waiters), 10)
        assert all(f is not None and f.status is AskStatus.ANSWERED for f in finals)
        assert await b.count_pending() == 0
    finally:
        await a.aclose()
        await b.aclose()
        cluster.stop()


async def test_behind_sentinel_over_tls_the_sentinels_and_the_master_get_the_certificates(
    tmp_path: Path, redis_certificates: Certificates
) -> None:
    servers = SentinelServers(directory=tmp_path, certificates=redis_certificates)
    servers.start()
    assert servers.url.startswith("rediss+sentinel://")
    store = RedisStore(url=servers.url, tls=redis_certificates.client())
    try:
        record = new_ask()
        await store.create(record=record)
        waiter = asyncio.ensure_future(store.wait(ask_id=record.id, within=30))
        assert (await store.answer(ask_id=record.id, index=0, item=reply(0))).outcome == (
            "completed"
        )
        final = await asyncio.wait_for(waiter, 10)
        assert final is not None
        assert final.status is AskStatus.ANSWERED
    finally:
        await store.aclose()
        servers.stop()
