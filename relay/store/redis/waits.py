"""Waiting on Redis (``relay.store.waits``): long-polls woken by pub/sub from any replica, and
the pipelined batches of reads they share."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Iterator
from typing import Any

from redis.asyncio.cluster import RedisCluster
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import RedisError
from redis.exceptions import TimeoutError as RedisTimeoutError

from relay.seam.tasks import stop_task
from relay.store.base import StoreUnavailable
from relay.store.record import AskRecord, AskStatus
from relay.store.redis.base import RedisBase, translated, unreachable
from relay.store.redis.codec import as_text, decode
from relay.store.redis.watch import Watch
from relay.store.redis_listener import NotSupported, listen_channel

_log = logging.getLogger("relay.store.redis")


_READ_BATCH = 500  # reads per pipeline when many waiters check at once


class RedisWaits(RedisBase):
    """Waiters of each ask, the pub/sub listener that wakes them, and the batched reads."""

    @translated
    async def get(self, *, ask_id: str) -> AskRecord | None:
        """The ask as it stands, or ``None``.

        Reads that come while others are on their way are sent together, pipelined (see
        ``_check``): 10,000 long-polls arriving at once each read their ask first, and as
        separate commands they queued for the pool's connections longer than it waits.
        """
        if not self._direct and (self._reader is None or self._reader.done()):
            # Nothing else is reading: one command, no pipeline, no task.
            self._direct = True
            try:
                return await self._read_one(ask_id)
            finally:
                self._direct = False
        if self._closed:
            raise StoreUnavailable("this Redis store is closed (the relay is stopping); retry")
        future: asyncio.Future[dict[Any, Any]] = asyncio.get_running_loop().create_future()
        self._gets.append((ask_id, future))
        self._start_reader()
        return decode(await future, self._cores)

    async def wait(self, *, ask_id: str, within: float | None) -> AskRecord | None:
        """Wait for the ask to end (woken by pub/sub from any replica) or ``within`` seconds.

        Waiters of one ask share one ``Watch`` (each holds a future of its own) while the ask
        is pending: one read of the ask's status when the first waiter comes; one read of the
        whole record when pub/sub says it ended, for all of them; none at all when it ended
        through this store (the claim's own reply settles it). Waiters whose time is up
        share one read of the record as it stands, too.
        """
        # (Not ``translated``: that would be a second coroutine per waiting ask, held as
        # long as it waits; every call below raises ``StoreUnavailable`` already or here.)
        try:
            if within is not None and within <= 0:
                return await self.get(ask_id=ask_id)
            await self._ensure_listening()
            watch = self._watches.get(ask_id)
            if watch is None or watch.failure is not None:
                watch = self._watches[ask_id] = Watch()
                watch.core = self._cores.of(ask_id)  # held while waited for: clicks claim at once
                # Subscribed before its first read, so an ending between the two is never missed.
                self._check(ask_id, watch, status_first=True)
            elif watch.ended:
                return watch.result  # (its waiters are on their way out)
            waiter: asyncio.Future[AskRecord | None] = asyncio.get_running_loop().create_future()
            watch.add(waiter)
            try:
                if within is None:
                    return await waiter  # (no timeout object per ask())
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(within):  # (wait_for could swallow a cancel)
                        return await waiter
                return await self._read_shared(ask_id)
            finally:
                if not watch.remove(waiter) and self._watches.get(ask_id) is watch:
                    del self._watches[ask_id]
        except (RedisError, OSError) as exc:
            raise unreachable(exc) from exc

    @contextlib.contextmanager
    def _claiming(self, ask_id: str) -> Iterator[None]:
        """A claim of this store's on ``ask_id`` is on its way: its reply settles the waiters
        here, so the pub/sub wake-up its own script published (which can arrive first) reads
        nothing. Woken meanwhile, the waiters read the ask after it, unless it settled them."""
        self._in_flight[ask_id] = self._in_flight.get(ask_id, 0) + 1
        try:
            yield
        finally:
            if self._in_flight[ask_id] > 1:
                self._in_flight[ask_id] -= 1
            else:
                del self._in_flight[ask_id]
                if ask_id in self._woken:
                    self._woken.discard(ask_id)
                    self._wake(ask_id)  # (nothing, if the reply settled them: see _check)

    def _settle_local(self, ask_id: str, record: AskRecord) -> None:
        watch = self._watches.get(ask_id)
        if watch is not None:
            watch.settle(record)

    def _check(self, ask_id: str, watch: Watch, *, status_first: bool) -> None:
        """Queue a read of the ask for ``watch`` (one in flight per watch; a wake-up during
        it reads again after, as that read may predate the ending); a final record settles
        it. Queued reads go to Redis pipelined, in batches: ten thousand long-polls arriving
        at once are twenty round trips on one connection, not ten thousand commands each
        waiting for a connection of its own."""
        if watch.ended:
            return
        if watch.reading:
            watch.again = True
            return
        watch.reading, watch.again = True, False
        self._queued[ask_id] = status_first
        self._start_reader()

    def _start_reader(self) -> None:
        if self._reader is None or self._reader.done():
            self._reader = asyncio.get_running_loop().create_task(self._read_queued())

    async def _read_queued(self) -> None:
        gets: list[tuple[str, asyncio.Future[dict[Any, Any]]]] = []
        try:
            while self._queued or self._gets:
                gets = self._gets[:_READ_BATCH]
                del self._gets[: len(gets)]
                batch: list[tuple[str, bool]] = []
                for ask_id in self._queued:
                    if len(batch) + len(gets) >= _READ_BATCH:
                        break
                    batch.append((ask_id, self._queued[ask_id]))
                for ask_id, _ in batch:
                    del self._queued[ask_id]
                try:
                    async with self._redis.pipeline(transaction=False) as pipe:
                        for ask_id, _ in gets:
                            pipe.hgetall(self._key(ask_id))
                        for ask_id, status_first in batch:
                            if status_first:
                                pipe.hget(self._key(ask_id), "status")
                            else:
                                pipe.hgetall(self._key(ask_id))
                        replies = await pipe.execute()
                except (RedisError, OSError) as exc:
                    for _, future in gets:
                        if not future.done():
                            future.set_exception(exc)  # get() raises it as StoreUnavailable
                    self._read_failed(batch, exc)
                    continue
                self._reread_after = 0.1
                for (_, future), reply in zip(gets, replies, strict=False):
                    if not future.done():  # (its caller may have given up)
                        future.set_result(reply)
                answered, gets = len(gets), []
                self._settle_reads(batch, replies[answered:])
        finally:
            # Cancelled (the store is closing): nobody else will answer these.
            for _, future in [*gets, *self._gets]:
                if not future.done():
                    future.set_exception(RedisConnectionError("the Redis store closed"))
            self._gets.clear()

    def _read_failed(self, batch: list[tuple[str, bool]], exc: Exception) -> None:
        """Redis did not answer the waiters' reads in ``batch``.

        Lost on the way (Redis restarting, a connection cut), each read is sent again after
        a backoff: an outage is not an outcome, and a waiter must not wait out its time on
        an ask that ended before it came (the pub/sub wake-up for that went by before it
        watched). Refused by Redis, the read would fail again: its waiters fail now.
        """
        lost = isinstance(exc, (RedisConnectionError, RedisTimeoutError, OSError))
        failure = StoreUnavailable(f"Redis is unreachable: {exc}; retry once it answers again")
        for ask_id, status_first in batch:
            if (watch := self._watches.get(ask_id)) is None:
                continue
            watch.reading = False
            if not lost:
                watch.fail(failure)
                continue
            asyncio.get_running_loop().call_later(
                self._reread_after, self._reread, ask_id, watch, status_first
            )
        if lost:
            self._reread_after = min(self._reread_after * 2, 2.0)

    def _reread(self, ask_id: str, watch: Watch, status_first: bool) -> None:
        if not self._closed and self._watches.get(ask_id) is watch:
            self._check(ask_id, watch, status_first=status_first)

    def _settle_reads(self, batch: list[tuple[str, bool]], replies: list[Any]) -> None:
        for (ask_id, status_first), reply in zip(batch, replies, strict=True):
            watch = self._watches.get(ask_id)
            if watch is None:
                continue
            watch.reading = False
            if status_first:
                if reply is None or as_text(reply) != AskStatus.PENDING.value:
                    self._check(ask_id, watch, status_first=False)  # final: read it all
                elif watch.again:
                    self._check(ask_id, watch, status_first=False)
                continue
            try:
                record = decode(reply, self._cores)
            except Exception as exc:  # a record nobody can read: fail its waiters, not all
                _log.exception("could not read ask %s for its waiters", ask_id)
                watch.fail(StoreUnavailable(f"ask {ask_id} could not be read: {exc}"))
                continue
            if record is None or not record.pending:
                watch.settle(record)
            elif watch.again:
                self._check(ask_id, watch, status_first=False)

    async def _read_shared(self, ask_id: str) -> AskRecord | None:
        """``get``, shared by every caller that asks while one read is in flight."""
        reading = self._reads.get(ask_id)
        if reading is None:
            reading = asyncio.ensure_future(self.get(ask_id=ask_id))
            self._reads[ask_id] = reading

            def done(future: asyncio.Future[AskRecord | None]) -> None:
                if self._reads.get(ask_id) is future:
                    del self._reads[ask_id]
                if not future.cancelled():
                    future.exception()  # each caller re-raises it; none is left unretrieved

            reading.add_done_callback(done)
        return await asyncio.shield(reading)

    async def _ensure_listening(self) -> None:
        if self._closed:
            raise StoreUnavailable("this Redis store is closed (the relay is stopping); retry")
        if self._listener is None or self._listener.done():
            self._subscribed.clear()
            self._listener = asyncio.get_running_loop().create_task(
                self._listen(), name="relay-redis-listener"
            )
        if not self._subscribed.is_set():
            # Waiters that come together share one check (300 pings would be 300 connections).
            if self._subscribing is None:
                self._subscribing = asyncio.ensure_future(self._await_subscription())
                self._subscribing.add_done_callback(self._subscription_checked)
            await asyncio.shield(self._subscribing)

    async def _await_subscription(self) -> None:
        await self.ping()  # fail fast when Redis is down, rather than wait out the timeout
        async with asyncio.timeout(5.0):
            await self._subscribed.wait()

    def _subscription_checked(self, future: asyncio.Future[None]) -> None:
        self._subscribing = None
        if not future.cancelled():
            future.exception()  # each waiter re-raises it

    async def _listen(self) -> None:
        # On one Redis (and behind Sentinel) the channel is read here, cheaply (see
        # ``relay.store.redis_listener``); on a cluster, or where that cannot be, by redis-py.
        pool = None if isinstance(self._redis, RedisCluster) else self._redis.connection_pool
        while not self._closed:
            try:
                if pool is not None:
                    try:
                        await listen_channel(
                            pool,
                            self._channel,
                            on_message=self._published,
                            on_subscribed=self._confirmed,
                        )
                    except NotSupported:
                        pool = None
                else:
                    await self._listen_through_redis_py()
            except asyncio.CancelledError:
                raise
            except (RedisError, OSError) as exc:
                # Waiters keep waiting (Redis cannot tell them anything now); the subscription
                # confirmation after reconnecting wakes them to re-check.
                _log.warning("lost the Redis subscription (%s); reconnecting", exc)
                await asyncio.sleep(self._backoff)  # back off before reconnecting to a down Redis
                self._backoff = min(self._backoff * 2, 2.0)

    async def _listen_through_redis_py(self) -> None:
        pubsub = self._redis.pubsub()
        try:
            if isinstance(self._redis, RedisCluster):
                # A cluster's pub/sub picks its node from the slot map, read on first use.
                # Any node will do: PUBLISH (from the claim scripts) reaches every node.
                await self._redis.initialize()
            await pubsub.subscribe(self._channel)
            async for message in pubsub.listen():
                kind = message.get("type")
                if kind == "message":
                    self._published(message["data"])
                elif kind == "subscribe":
                    self._confirmed()  # (also when redis-py reconnected by itself)
        finally:
            with contextlib.suppress(Exception):
                await pubsub.aclose()  # type: ignore[no-untyped-call, unused-ignore]

    def _published(self, data: bytes | str) -> None:
        self._wake(as_text(data))

    def _confirmed(self) -> None:
        # Subscribed (again): anything may have ended while we were not listening, so every
        # waiter re-checks.
        self._subscribed.set()
        self._wake_all()
        self._backoff = 0.1

    def _wake(self, ask_id: str) -> None:
        # Pub/sub says the ask ended: read the record straight away (no status read first).
        if ask_id in self._in_flight:
            self._woken.add(ask_id)  # after the claim on its way here (see _claiming)
            return
        watch = self._watches.get(ask_id)
        if watch is not None:
            self._check(ask_id, watch, status_first=False)

    def _wake_all(self) -> None:
        # Anything may have ended while unsubscribed: every watch re-reads its status (in
        # pipelined batches, see _check).
        for ask_id, watch in list(self._watches.items()):
            self._check(ask_id, watch, status_first=True)

    async def aclose(self) -> None:
        """Stop listening, wake waiters and close the connections; idempotent."""
        if self._closed:
            return
        self._closed = True
        if self._listener is not None:
            with contextlib.suppress(Exception):
                await stop_task(self._listener)
        if self._reader is not None:
            self._reader.cancel()
        # Waiters get the record as it stands now (one read per ask), then Redis is closed.
        for ask_id, watch in list(self._watches.items()):
            try:
                watch.settle(await self.get(ask_id=ask_id))
            except StoreUnavailable as exc:
                watch.fail(exc)
        if self._pipelined is not None:
            await self._pipelined.aclose()
        await self._connection.aclose()

    # Idempotency keys (relay.store.idempotency): ``{prefix}idem:{owner}:{sha256(key)}``, a
