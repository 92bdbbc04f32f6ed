"""The waiters' wake-ups, read off the subscription's connection by the store itself (issue 17).

On one Redis (and behind Sentinel) ``RedisStore`` reads its channel with hiredis's reader
on a connection of its own (``relay.store.redis_listener``), not through redis-py's
``PubSub``. These tests feed that reader bytes as a network delivers them (one at a time,
messages run together, an error reply), stop Redis from answering while the subscription is
idle, and fall back to redis-py where the connection speaks RESP3: each waiter still hears
that its ask ended.
"""

from __future__ import annotations

# Looks inside: which reader the listener uses, and when it is subscribed, is the thing tested.
import asyncio
import logging
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest
import redis.asyncio as aioredis
from redis.asyncio.connection import Connection
from redis.exceptions import ConnectionError as RedisConnectionError
from test_store_contract import eventually, new_ask

from relay.store import AskRecord, AskStatus, redis_listener
from relay.store.redis import RedisStore
from relay.store.redis_listener import _read
from relay.store.redis_pipelined import packer

SUBSCRIBED = b"*3\r\n$9\r\nsubscribe\r\n$10\r\nrelay:done\r\n:1\r\n"


def message(payload: bytes) -> bytes:
    """A ``message`` on ``relay:done`` as Redis writes it (RESP2)."""
    return b"*3\r\n$7\r\nmessage\r\n$10\r\nrelay:done\r\n$%d\r\n%s\r\n" % (len(payload), payload)


class _Written:
    """A stream writer that keeps what was written."""

    def __init__(self) -> None:
        self.data = b""

    def write(self, data: bytes) -> None:
        self.data += data


class _Settings:
    """The two settings of a connection the reader looks at."""

    def __init__(self, *, health_check_interval: float = 30, socket_timeout: float = 5) -> None:
        self.health_check_interval = health_check_interval
        self.socket_timeout = socket_timeout


async def run_reader(
    feed: Callable[[asyncio.StreamReader], Any], settings: _Settings | None = None
) -> tuple[list[bytes], int, bytes, BaseException | None]:
    """Run the reader over a stream that ``feed`` fills: the messages it handed over, how
    many confirmations it saw, what it wrote, and what ended it."""
    stream = asyncio.StreamReader()
    written = _Written()
    payloads: list[bytes] = []
    confirmed = 0

    def on_subscribed() -> None:
        nonlocal confirmed
        confirmed += 1

    task = asyncio.create_task(
        _read(
            settings or _Settings(),  # type: ignore[arg-type]
            stream,
            written,  # type: ignore[arg-type]
            "relay:done",
            payloads.append,
            on_subscribed,
        )
    )
    await feed(stream)
    ended: BaseException | None = None
    try:
        await asyncio.wait_for(task, 5)
    except BaseException as exc:  # (what ended it is the result)
        ended = exc
    return payloads, confirmed, written.data, ended


async def test_bytes_arriving_one_at_a_time_are_read_as_whole_messages() -> None:
    wire = SUBSCRIBED + message(b"ask-1") + message(b"ask-2")

    async def feed(stream: asyncio.StreamReader) -> None:
        for i in range(len(wire)):
            stream.feed_data(wire[i : i + 1])
            await asyncio.sleep(0)  # (a turn of the loop between bytes: each read gets one)
        stream.feed_eof()

    payloads, confirmed, written, ended = await run_reader(feed)
    assert payloads == [b"ask-1", b"ask-2"]
    assert confirmed == 1
    assert written == b"*2\r\n$9\r\nSUBSCRIBE\r\n$10\r\nrelay:done\r\n"
    assert isinstance(ended, RedisConnectionError), "the connection closing ends it"


async def test_messages_run_together_in_one_read_are_each_handed_over() -> None:
    async def feed(stream: asyncio.StreamReader) -> None:
        stream.feed_data(SUBSCRIBED + b"".join(message(b"ask-%d" % i) for i in range(50)))
        stream.feed_eof()

    payloads, confirmed, _, _ = await run_reader(feed)
    assert payloads == [b"ask-%d" % i for i in range(50)]
    assert confirmed == 1


async def test_an_error_reply_ends_the_subscription_as_a_lost_connection() -> None:
    async def feed(stream: asyncio.StreamReader) -> None:
        stream.feed_data(b"-NOPERM this user has no permissions to access the channel\r\n")

    payloads, confirmed, _, ended = await run_reader(feed)
    assert (payloads, confirmed) == ([], 0)
    assert isinstance(ended, RedisConnectionError)
    assert "NOPERM" in str(ended)


async def test_an_idle_subscription_pings_and_a_silent_redis_ends_it() -> None:
    async def feed(stream: asyncio.StreamReader) -> None:
        stream.feed_data(SUBSCRIBED)  # then nothing: Redis has stopped answering

    settings = _Settings(health_check_interval=0.05, socket_timeout=0.1)
    _, confirmed, written, ended = await run_reader(feed, settings)
    assert confirmed == 1
    assert written.endswith(b"*1\r\n$4\r\nPING\r\n")
    assert isinstance(ended, RedisConnectionError)
    assert "did not answer a PING" in str(ended)


async def test_an_answered_ping_keeps_the_subscription() -> None:
    async def feed(stream: asyncio.StreamReader) -> None:
        stream.feed_data(SUBSCRIBED)
        for _ in range(3):  # three idle spells, each PING answered
            await asyncio.sleep(0.08)  # (idle on purpose: longer than the interval)
            stream.feed_data(b"*2\r\n$4\r\npong\r\n$0\r\n\r\n")
        stream.feed_data(message(b"ask-9"))
        stream.feed_eof()

    settings = _Settings(health_check_interval=0.05, socket_timeout=1)
    payloads, _, written, ended = await run_reader(feed, settings)
    assert payloads == [b"ask-9"]
    assert written.count(b"PING") >= 1
    assert "closed" in str(ended), "only the end of the stream ended it"


async def test_a_store_whose_redis_stops_answering_resubscribes_and_wakes_its_waiters(
    redis_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    # The store's own client pings an idle subscription after 15 s and waits 5 s for the
    # answer; made short for the test.
    client = aioredis.Redis.from_url(redis_url, health_check_interval=0.2, socket_timeout=0.5)
    store = RedisStore(client=client, prefix="listener:")
    other = RedisStore(url=redis_url, prefix="listener:")
    admin = aioredis.Redis.from_url(redis_url)
    try:
        record = new_ask()
        await store.create(record=record)
        waiter = asyncio.ensure_future(store.wait(ask_id=record.id, within=30))
        await eventually(lambda: _true(store._subscribed.is_set()), within=5)
        with caplog.at_level(logging.WARNING, logger="relay.store"):
            # Redis takes connections but answers nothing for 1.5 s: the idle subscription's
            # PING goes unanswered, and it is dropped rather than trusted.
            await admin.execute_command("CLIENT", "PAUSE", 1500, "ALL")
            await eventually(lambda: _true("lost the Redis subscription" in caplog.text), within=5)
        assert not waiter.done()
        await end_and_hear(other, record.id, waiter)
    finally:
        await admin.aclose()
        await other.aclose()
        await store.aclose()


@pytest.mark.parametrize("protocol", [2, 3])
async def test_a_waiter_hears_its_ask_end_over_either_protocol(
    redis_url: str, protocol: int
) -> None:
    client = aioredis.Redis.from_url(redis_url, protocol=protocol)
    store = RedisStore(client=client, prefix=f"resp{protocol}:")
    other = RedisStore(url=redis_url, prefix=f"resp{protocol}:")
    try:
        record = new_ask()
        await store.create(record=record)
        waiter = asyncio.ensure_future(store.wait(ask_id=record.id, within=30))
        await eventually(lambda: _true(store._subscribed.is_set()), within=5)
        await end_and_hear(other, record.id, waiter)
    finally:
        await other.aclose()
        await store.aclose()


async def test_without_hiredis_the_store_listens_through_redis_py(
    redis_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(redis_listener, "hiredis", None)
    through_redis_py = 0
    listen = RedisStore._listen_through_redis_py

    async def counted(self: RedisStore) -> None:
        nonlocal through_redis_py
        through_redis_py += 1
        await listen(self)

    monkeypatch.setattr(RedisStore, "_listen_through_redis_py", counted)
    store = RedisStore(url=redis_url, prefix="nohiredis:")
    other = RedisStore(url=redis_url, prefix="nohiredis:")
    try:
        record = new_ask()
        await store.create(record=record)
        waiter = asyncio.ensure_future(store.wait(ask_id=record.id, within=30))
        await eventually(lambda: _true(store._subscribed.is_set()), within=5)
        assert through_redis_py == 1
        await end_and_hear(other, record.id, waiter)
    finally:
        await other.aclose()
        await store.aclose()


def test_commands_are_packed_by_hiredis_into_the_bytes_redis_py_would_send() -> None:
    connection = Connection()
    pack = packer(connection)
    assert pack is not None
    command = (
        "EVALSHA",
        "c5106e09b9f70fe757825922253d7fdf895eb25c",
        2,
        "relay:ask:x",
        b"relay:\xff\xfeowners",
        0.1,
        1796181795.295043,
        -5,
        2**70,
        "caf\u00e9 \u2713",
        '{"id":"q1","selected":["Yes"]}',
    )
    assert b"".join(pack(command)) == b"".join(connection.pack_command(*command))


def test_a_connection_that_encodes_text_otherwise_packs_through_redis_py() -> None:
    connection = Connection(encoding_errors="surrogateescape")
    command = ("HGETALL", "relay:ask:\udcff")
    assert b"".join(packer(connection)(command)) == b"".join(connection.pack_command(*command))


async def end_and_hear(
    other: RedisStore, ask_id: str, waiter: asyncio.Future[AskRecord | None]
) -> None:
    """End the ask through ``other`` (another replica, say); the waiter hears of it."""
    at = datetime.now(UTC)
    await other.finish(ask_id=ask_id, status=AskStatus.ABORTED, error=None, at=at)
    final = await asyncio.wait_for(waiter, 10)
    assert final is not None
    assert final.status is AskStatus.ABORTED


async def _true(value: bool) -> bool:
    return value
