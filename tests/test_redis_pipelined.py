"""Claims, creates and reads pipelined on one connection of their own (issue 17).

On one Redis (and behind Sentinel) every claim (``claim_click``, ``answer``, ``finish``),
create and single read is written at once on the store's pipelined connection
(``relay.store.redis_pipelined``) and its reply comes back in order. These
tests hold Redis's writes (``CLIENT PAUSE … WRITE``) to keep claims in flight, then take the
connection or Redis away, flush the scripts, or cancel some callers: every claim still gets
its own ask's outcome, or the store's ``StoreUnavailable``, never another's reply.
"""

from __future__ import annotations

# Looks inside: which connection a command went out on, and what waits on it, is the thing tested.
import asyncio
import random
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import redis.asyncio as aioredis
from redis.exceptions import ReadOnlyError
from redis_server import RedisServer
from redis_topologies import SentinelServers
from test_store_contract import eventually, new_ask, reply

from relay.store import AskStatus, MessageRef, StoreUnavailable
from relay.store.base import ClickClaim, PendingLimitReached
from relay.store.redis import RedisStore

HERE = ("C0123", "1700000000.000200")


@pytest.fixture
async def admin(redis_url: str) -> AsyncIterator[aioredis.Redis]:
    """A client of the test's Redis of its own (``CLIENT KILL`` skips it)."""
    client = aioredis.Redis.from_url(redis_url, decode_responses=True)
    try:
        yield client
    finally:
        await client.aclose()


@pytest.fixture
async def store(redis_url: str) -> AsyncIterator[RedisStore]:
    """The store under test, closed after."""
    opened = RedisStore(url=redis_url, prefix="pipelined:")
    try:
        yield opened
    finally:
        await opened.aclose()


def in_flight(store: RedisStore) -> int:
    """Claims written on the store's claims connection and not yet answered."""
    pipelined = store._pipelined
    assert pipelined is not None
    line = pipelined._line
    return 0 if line is None else len(line._waiting)


async def click(store: RedisStore, ask_id: str, *, by: str = "U0CLICK") -> ClickClaim:
    return await store.claim_click(ask_id=ask_id, index=0, item=reply(by=by), message=HERE)


async def pending_asks(store: RedisStore, n: int) -> list[str]:
    """``n`` new asks, created one after the other (one pooled connection)."""
    ids = []
    for _ in range(n):
        record = new_ask(questions=2)
        await store.create(record=record)
        ids.append(record.id)
    return ids


async def asks_of_every_outcome(store: RedisStore, n: int) -> dict[str, str]:
    """``n`` asks of each kind, by the outcome a click on question 0 gets next."""
    expected: dict[str, str] = {}
    for ask_id in await pending_asks(store, n):
        expected[ask_id] = "accepted"  # (the ask has two questions: it stays pending)
    for ask_id in await pending_asks(store, n):
        await store.answer(ask_id=ask_id, index=0, item=reply(by="U0FIRST"))
        expected[ask_id] = "already_answered"
    for ask_id in await pending_asks(store, n):
        await store.finish(
            ask_id=ask_id, status=AskStatus.ABORTED, error=None, at=datetime.now(UTC)
        )
        expected[ask_id] = "not_pending"
    for ask_id in await pending_asks(store, n):
        await store.set_message(ask_id=ask_id, index=0, message=MessageRef("C0OTHER", "1.2"))
        expected[ask_id] = "message_mismatch"
    for i in range(n):
        expected[f"gone-{i}"] = "unknown"
    return expected


def assert_its_own(ask_id: str, claim: ClickClaim, outcome: str) -> None:
    """``claim`` is the reply to a click on ``ask_id`` whose outcome is ``outcome``."""
    assert claim.outcome == outcome, ask_id
    if outcome in ("unknown", "message_mismatch"):
        assert claim.record is None
        return
    assert claim.record is not None
    assert claim.record.id == ask_id
    first = claim.record.responses[0]
    if outcome == "accepted":
        assert first is not None
        assert first.answered_by is not None
        assert first.answered_by.id == "U0CLICK"
    elif outcome == "already_answered":
        assert first is not None
        assert first.answered_by is not None
        assert first.answered_by.id == "U0FIRST"
    else:
        assert claim.record.status is AskStatus.ABORTED


async def calls(admin: aioredis.Redis, command: str) -> int:
    stats: dict[str, Any] = await admin.info("commandstats")
    return int(stats.get(f"cmdstat_{command}", {}).get("calls", 0))


async def hold_writes(admin: aioredis.Redis) -> None:
    """Redis holds every write (the claim scripts) until ``CLIENT UNPAUSE``."""
    await admin.execute_command("CLIENT", "PAUSE", 30_000, "WRITE")


# ---- replies in order -------------------------------------------------------------------------


async def test_concurrent_claims_share_one_connection_and_each_gets_its_own_reply(
    store: RedisStore, admin: aioredis.Redis
) -> None:
    expected = await asks_of_every_outcome(store, 40)
    ids = list(expected)
    random.Random(17).shuffle(ids)
    await admin.config_resetstat()

    got = await asyncio.gather(*(click(store, ask_id) for ask_id in ids))

    for ask_id, claim in zip(ids, got, strict=True):
        assert_its_own(ask_id, claim, expected[ask_id])
    # One EVALSHA per click and nothing else; all on one connection (the client's path would
    # have opened one per concurrent claim): this one, the pool's one, the claims' own.
    assert await calls(admin, "evalsha") == len(ids)
    assert await calls(admin, "eval") == await calls(admin, "script|load") == 0
    assert len(await admin.client_list()) <= 3


async def held_clicks(
    store: RedisStore, admin: aioredis.Redis, n: int, *, seed: int
) -> tuple[dict[str, str], list[str], list[asyncio.Task[ClickClaim]]]:
    """Asks of every outcome clicked in a shuffled order while Redis holds every write: the
    outcomes expected, the asks in click order and their clicks, all of them in flight."""
    expected = await asks_of_every_outcome(store, n)
    ids = list(expected)
    random.Random(seed).shuffle(ids)
    await hold_writes(admin)
    tasks = [asyncio.create_task(click(store, ask_id)) for ask_id in ids]
    await eventually(lambda: _true(in_flight(store) == len(ids)), within=5)
    return expected, ids, tasks


async def test_claims_held_by_redis_answer_in_order_when_it_goes_on(
    store: RedisStore, admin: aioredis.Redis
) -> None:
    expected, ids, tasks = await held_clicks(store, admin, 10, seed=3)
    assert not any(task.done() for task in tasks)
    await admin.execute_command("CLIENT", "UNPAUSE")
    for ask_id, task in zip(ids, tasks, strict=True):
        assert_its_own(ask_id, await asyncio.wait_for(task, 5), expected[ask_id])


async def test_a_cancelled_claim_keeps_its_place_and_shifts_no_reply(
    store: RedisStore, admin: aioredis.Redis
) -> None:
    expected, ids, tasks = await held_clicks(store, admin, 8, seed=5)
    accepted = next(a for a in ids if expected[a] == "accepted")
    cancelled = {*ids[::3], accepted}
    for ask_id, task in zip(ids, tasks, strict=True):
        if ask_id in cancelled:
            task.cancel()
    await admin.execute_command("CLIENT", "UNPAUSE")

    for ask_id, task in zip(ids, tasks, strict=True):
        if ask_id in cancelled:
            with pytest.raises(asyncio.CancelledError):
                await task
        else:
            assert_its_own(ask_id, await asyncio.wait_for(task, 5), expected[ask_id])
    assert in_flight(store) == 0
    # The cancelled callers' scripts ran all the same (written, they cannot be taken back):
    # a click on one of those asks now comes second; a new ask's is still its own.
    again = await click(store, accepted, by="U0LATE")
    assert again.outcome == "already_answered"
    (fresh,) = await pending_asks(store, 1)
    assert_its_own(fresh, await click(store, fresh), "accepted")


# ---- Redis forgetting the script, dropping the connection, going away -------------------------


async def test_claims_after_a_script_flush_load_the_script_again_and_succeed(
    store: RedisStore, admin: aioredis.Redis
) -> None:
    ids = await pending_asks(store, 21)
    assert_its_own(ids[0], await click(store, ids[0]), "accepted")
    await admin.script_flush()
    got = await asyncio.gather(*(click(store, ask_id) for ask_id in ids[1:]))
    for ask_id, claim in zip(ids[1:], got, strict=True):
        assert_its_own(ask_id, claim, "accepted")
    # The script is back: the next click is one EVALSHA again, and nothing else.
    (fresh,) = await pending_asks(store, 1)
    await admin.config_resetstat()
    assert_its_own(fresh, await click(store, fresh), "accepted")
    assert await calls(admin, "evalsha") == 1
    assert await calls(admin, "script|load") == 0


async def test_claims_in_flight_when_their_connection_is_killed_run_once_on_a_fresh_one(
    store: RedisStore, admin: aioredis.Redis
) -> None:
    # As on the client's path (which retries a command on a fresh connection when its
    # connection breaks), the claims whose connection was killed are sent again; Redis had
    # not run them, so each is accepted once, with its own reply.
    ids = await pending_asks(store, 30)
    assert_its_own(ids[0], await click(store, ids[0]), "accepted")
    await hold_writes(admin)
    tasks = [asyncio.create_task(click(store, ask_id)) for ask_id in ids[1:]]
    await eventually(lambda: _true(in_flight(store) == len(tasks)), within=5)
    await admin.client_kill_filter(_type="normal")  # every connection but this one
    await admin.execute_command("CLIENT", "UNPAUSE")
    for ask_id, task in zip(ids[1:], tasks, strict=True):
        assert_its_own(ask_id, await asyncio.wait_for(task, 10), "accepted")
    assert in_flight(store) == 0
    # And the claims connection is back for the next ones.
    (fresh,) = await pending_asks(store, 1)
    assert_its_own(fresh, await click(store, fresh), "accepted")
    assert in_flight(store) == 0
    assert store._pipelined is not None
    assert store._pipelined._line is not None
    assert not store._pipelined._line.lost


async def test_a_connection_killed_right_after_a_burst_of_claims_reports_none_wrongly(
    store: RedisStore, admin: aioredis.Redis
) -> None:
    # Whenever the kill lands (before Redis read a claim, or after it ran one whose reply was
    # then lost), a claim sent again comes second to itself at worst ("already_answered", as a
    # retry on the client's path would say): none is told another ask's outcome, and every
    # ask holds the one click. (Which of those happened depends on timing; all must hold.)
    ids = await pending_asks(store, 600)
    assert_its_own(ids[0], await click(store, ids[0]), "accepted")
    tasks = [asyncio.create_task(click(store, ask_id)) for ask_id in ids[1:]]
    # Two turns of the loop: every claim queued, then written (one write).
    for _ in range(2):
        await asyncio.sleep(0)
    assert in_flight(store) == len(tasks)
    await admin.client_kill_filter(_type="normal")
    got = await asyncio.wait_for(asyncio.gather(*tasks), 30)
    outcomes = {claim.outcome for claim in got}
    assert outcomes <= {"accepted", "already_answered"}
    for ask_id, claim in zip(ids[1:], got, strict=True):
        assert claim.record is not None
        assert claim.record.id == ask_id
        first = claim.record.responses[0]
        assert first is not None
        assert first.answered_by is not None
        assert first.answered_by.id == "U0CLICK"


async def test_a_claims_connection_redis_closed_while_idle_costs_the_next_claim_nothing(
    store: RedisStore, admin: aioredis.Redis
) -> None:
    # Redis's ``timeout`` setting, a restart or a proxy can close a connection nobody is
    # reading: the next claim finds out on it, and is sent again on a fresh one.
    ids = await pending_asks(store, 3)
    assert_its_own(ids[0], await click(store, ids[0]), "accepted")
    assert store._pipelined is not None
    first = store._pipelined._line
    await admin.client_kill_filter(_type="normal")
    assert_its_own(ids[1], await click(store, ids[1]), "accepted")
    assert_its_own(ids[2], await click(store, ids[2]), "accepted")
    assert store._pipelined._line is not first  # a new connection for the claims after it


async def test_creates_cut_off_by_a_killed_connection_each_count_once(
    redis_url: str, admin: aioredis.Redis
) -> None:
    # Creates go on the same connection. Whether the kill lands before Redis ran a create or
    # after (its reply lost), the one sent again finds its own ask and succeeds without
    # counting it twice: the owner's pending count, the deadlines and the audit index each
    # hold every ask once, and the owner's limit still has room for exactly the rest.
    store = RedisStore(url=redis_url, prefix="creates:", max_pending_per_owner=302)
    try:
        await store.create(record=new_ask())  # (connected, and the script loaded)
        records = [new_ask() for _ in range(300)]
        tasks = [asyncio.create_task(store.create(record=r)) for r in records]
        for _ in range(2):  # every create queued, then written (one write)
            await asyncio.sleep(0)
        assert in_flight(store) == len(tasks)
        await admin.client_kill_filter(_type="normal")
        assert await asyncio.wait_for(asyncio.gather(*tasks), 30) == [None] * len(tasks)
        assert await store.count_pending() == 301
        assert await admin.hget("creates:owners", "team-release") == "301"
        assert await admin.zcard("creates:owned:team-release") == 301
        read = await asyncio.gather(*(store.get(ask_id=r.id) for r in records))
        assert [r.id if r else None for r in read] == [r.id for r in records]
        await store.create(record=new_ask())
        with pytest.raises(PendingLimitReached):
            await store.create(record=new_ask())
    finally:
        await store.aclose()


async def test_a_read_after_its_connection_was_closed_while_idle_takes_a_fresh_one(
    store: RedisStore, admin: aioredis.Redis
) -> None:
    (ask_id,) = await pending_asks(store, 1)
    assert store._pipelined is not None
    first = store._pipelined._line
    await admin.client_kill_filter(_type="normal")
    record = await store.get(ask_id=ask_id)
    assert record is not None
    assert record.id == ask_id
    assert store._pipelined._line is first  # (the read went the client's way meanwhile)
    assert_its_own(ask_id, await click(store, ask_id), "accepted")
    assert store._pipelined._line is not first


async def test_claims_in_flight_when_redis_stops_are_unavailable_and_not_applied(
    redis_server: RedisServer, store: RedisStore
) -> None:
    ids = await pending_asks(store, 20)
    assert_its_own(ids[0], await click(store, ids[0]), "accepted")
    admin = aioredis.Redis.from_url(redis_server.url)
    try:
        await hold_writes(admin)
    finally:
        await admin.aclose()
    tasks = [asyncio.create_task(click(store, ask_id)) for ask_id in ids[1:]]
    await eventually(lambda: _true(in_flight(store) == len(tasks)), within=5)

    redis_server.stop(save=True)  # (SHUTDOWN is not a write: Redis runs it while paused)

    for task in tasks:
        with pytest.raises(StoreUnavailable, match="REDIS_URL"):
            await asyncio.wait_for(task, 10)
    redis_server.start()  # with the data as it was when it stopped
    for ask_id in ids[1:]:
        record = await store.get(ask_id=ask_id)
        assert record is not None
        assert record.responses[0] is None  # not applied, and not reported as applied
    got = await asyncio.gather(*(click(store, ask_id) for ask_id in ids[1:]))
    for ask_id, claim in zip(ids[1:], got, strict=True):
        assert_its_own(ask_id, claim, "accepted")


async def test_a_claim_whose_reply_is_late_is_unavailable_and_the_next_one_works(
    redis_url: str,
) -> None:
    # socket_timeout as the store's own client sets it (5 s), made short for the test.
    store = RedisStore(client=aioredis.Redis.from_url(redis_url, socket_timeout=0.5))
    admin = aioredis.Redis.from_url(redis_url)
    try:
        ids = await pending_asks(store, 2)
        assert_its_own(ids[0], await click(store, ids[0]), "accepted")
        await hold_writes(admin)
        with pytest.raises(StoreUnavailable, match="REDIS_URL"):
            await asyncio.wait_for(click(store, ids[1]), 5)
        await admin.execute_command("CLIENT", "UNPAUSE")
        assert_its_own(ids[1], await click(store, ids[1]), "accepted")
    finally:
        await admin.aclose()
        await store.aclose()


async def test_a_plain_redis_turned_replica_refuses_claims_as_unavailable_and_stays_in_step(
    tmp_path: Path, store: RedisStore, admin: aioredis.Redis
) -> None:
    # A Redis (no Sentinel) made a replica answers the scripts' writes with READONLY: the
    # store's unavailable error, as on the client's path; the replies after it stay in step.
    other = RedisServer(directory=tmp_path / "other")
    other.start()
    try:
        ids = await pending_asks(store, 2)
        assert_its_own(ids[0], await click(store, ids[0]), "accepted")
        await admin.replicaof("127.0.0.1", other.port)
        with pytest.raises(StoreUnavailable, match="read only replica") as caught:
            await click(store, ids[1])
        assert isinstance(caught.value.__cause__, ReadOnlyError)
        await admin.replicaof("NO", "ONE")
    finally:
        other.stop()
    # (It may have synced from the empty one meanwhile: a new ask shows it is in step.)
    (fresh,) = await pending_asks(store, 1)
    assert_its_own(fresh, await click(store, fresh), "accepted")


# ---- Sentinel, closing ------------------------------------------------------------------------


async def test_behind_sentinel_claims_follow_a_failover_whose_old_master_stays_up(
    tmp_path: Path,
) -> None:
    servers = SentinelServers(directory=tmp_path, replica=True)
    servers.start()
    store = RedisStore(url=servers.url)
    try:
        ids = await pending_asks(store, 3)
        assert_its_own(ids[0], await click(store, ids[0]), "accepted")
        assert servers.replica is not None
        old = aioredis.Redis(port=servers.master.port)
        try:
            await old.wait(1, 5000)  # the replica has the asks before it is promoted
            sentinel = aioredis.Redis(port=servers.sentinels[0].port)
            try:
                await sentinel.execute_command("SENTINEL", "FAILOVER", servers.service)
            finally:
                await sentinel.aclose()
            await eventually(
                lambda: _true(servers.master_port() == servers.replica.port),  # type: ignore[union-attr]
                within=30,
            )
            await eventually(lambda: _is_replica(old), within=30)
        finally:
            await old.aclose()
        for ask_id in ids[1:]:
            assert_its_own(ask_id, await click(store, ask_id), "accepted")
        promoted = aioredis.Redis(port=servers.replica.port, decode_responses=True)
        try:
            for ask_id in ids:
                assert await promoted.hexists(f"relay:ask:{ask_id}", "ans:0")
        finally:
            await promoted.aclose()
    finally:
        await store.aclose()
        servers.stop()


async def test_closing_the_store_closes_the_claims_connection_and_its_reader(
    redis_url: str, admin: aioredis.Redis
) -> None:
    store = RedisStore(url=redis_url, prefix="closing:")
    (ask_id,) = await pending_asks(store, 1)
    assert_its_own(ask_id, await click(store, ask_id), "accepted")
    assert [t for t in asyncio.all_tasks() if t.get_name() == "relay-redis-pipelined"]
    await store.aclose()
    assert not [t for t in asyncio.all_tasks() if t.get_name() == "relay-redis-pipelined"]
    assert len(await admin.client_list()) == 1  # this one alone


async def _true(value: bool) -> bool:
    return value


async def _is_replica(client: aioredis.Redis) -> bool:
    info: dict[str, Any] = await client.info("replication")
    return bool(info.get("role") == "slave" and info.get("master_link_status") == "up")


async def test_replies_arriving_a_byte_at_a_time_come_out_whole_and_in_order() -> None:
    from redis.asyncio.connection import Connection
    from redis.exceptions import NoScriptError

    from relay.store.redis_pipelined import _replies_of

    connection = Connection(protocol=3)
    stream = asyncio.StreamReader()
    connection._reader = stream
    replies = _replies_of(connection)
    wire = (
        b"*2\r\n$9\r\ncompleted\r\n%1\r\n$6\r\nstatus\r\n$8\r\nanswered\r\n"
        b">3\r\n$7\r\nmessage\r\n$1\r\nc\r\n$1\r\nx\r\n"  # a push: no command's reply
        b"-NOSCRIPT No matching script. Please use EVAL.\r\n"
        b":7\r\n"
    )

    async def feed() -> None:
        for i in range(len(wire)):
            stream.feed_data(wire[i : i + 1])
            await asyncio.sleep(0)  # (a turn of the loop between bytes: each read gets one)

    feeding = asyncio.create_task(feed())
    got: list[Any] = []
    while len(got) < 3:
        got += await asyncio.wait_for(replies(), 5)
    await feeding
    assert got[0] == [b"completed", {b"status": b"answered"}]
    assert isinstance(got[1], NoScriptError)
    assert got[2] == 7
