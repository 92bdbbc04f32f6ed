"""``RedisStore``: asks shared by every replica, surviving restarts (the ``redis`` extra).

Layout, for ask ``{id}`` (prefix ``relay:`` by default):

- ``relay:ask:{id}``, a hash: ``core`` (JSON of what never changes: request, target, owner,
  times), ``n`` (questions), ``status``, ``error``, ``finished_at``, ``msg:{i}`` (where
  question *i* was posted, as JSON ``[channel, ts]``) and ``ans:{i}`` (its answer). It
  expires ``retention`` seconds after the ask ends.
- ``relay:deadlines``, a sorted set of pending asks by deadline (``+inf`` for none).
- ``relay:done``, a pub/sub channel carrying the id of every ask that ends, so long-polls on
  any replica wake at once.
- ``relay:owners``, a hash counting each API token's (owner's) pending asks, so that
  ``max_pending_per_owner`` holds across replicas (checked and counted in the create script).

On a Redis Cluster (``redis+cluster://``) a script may touch one hash slot only, so the names
carry hash tags (``_Keys``): ``relay:ask:{id}`` keeps each ask's keys in its own slot, and the
structures across asks share the tag ``{relay:index}`` (``relay:{relay:index}:deadlines``,
``…:owners``, and ``…:ask-owners``, each pending ask's owner). A claim is then two scripts: the
claim on the ask's slot (which alone decides the outcome and publishes it), then the index
update on the index slot, which is idempotent and is run again by any later claim on the ask,
so a replica dying between the two leaves an index entry that the next ``due`` repairs. On one
Redis (and behind Sentinel) the names and the single atomic scripts stay as they were.

Every claim is one Lua script, so "first claim wins" holds across replicas; a per-question
``HSETNX`` makes two clicks on two replicas race safely. A Redis that cannot be reached raises
``StoreUnavailable``, never a raw ``redis`` exception.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import logging
import math
from collections.abc import Callable, Coroutine
from datetime import datetime
from typing import Any, ParamSpec, TypeVar

from redis.asyncio.cluster import RedisCluster
from redis.exceptions import RedisError

from relay.questions import AskUserQuestionAnswerItem, AskUserQuestionRequest, Vote
from relay.store.base import PendingLimitReached, StoreUnavailable
from relay.store.record import (
    AnswerOutcome,
    AnswerResult,
    AskError,
    AskRecord,
    AskStatus,
    MessageRef,
    Target,
    VoteOutcome,
    VoteResult,
    item_from_json,
    item_to_json,
    vote_of,
)
from relay.store.redis_connect import RedisClient, RedisConnection, RedisTLS, connect

__all__ = ["RedisStore"]

_log = logging.getLogger("relay.store.redis")

# KEYS: ask hash, deadlines zset, pending-per-owner hash. ARGV: score, id, core json, owner
# ('' for none), the owner's pending limit (0: none), then field/value pairs. Creating the
# same ask twice (a retried command) is a no-op (2); another ask's id is refused (0); an owner
# at their limit is refused (-1) and nothing is written. On a cluster KEYS is the ask hash
# alone and ``_INDEX_ADD`` has checked and counted the owner first.
_CREATE = """
if redis.call('EXISTS', KEYS[1]) == 1 then
  if redis.call('HGET', KEYS[1], 'core') == ARGV[3] then return 2 end
  return 0
end
if ARGV[4] ~= '' then
  if KEYS[3] then
    local limit = tonumber(ARGV[5])
    if limit > 0 and tonumber(redis.call('HGET', KEYS[3], ARGV[4]) or '0') >= limit then
      return -1
    end
    redis.call('HINCRBY', KEYS[3], ARGV[4], 1)
  end
  redis.call('HSET', KEYS[1], 'owner', ARGV[4])
end
redis.call('HSET', KEYS[1], 'core', ARGV[3], unpack(ARGV, 6))
if KEYS[2] then redis.call('ZADD', KEYS[2], ARGV[1], ARGV[2]) end
return 1
"""

# Run when an ask ends (KEYS[1] its hash, KEYS[3] the pending-per-owner hash; on a cluster
# there is no KEYS[3] and ``_INDEX_RELEASE`` follows).
_RELEASE_OWNER = """
local owner = KEYS[3] and redis.call('HGET', KEYS[1], 'owner')
if owner and redis.call('HINCRBY', KEYS[3], owner, -1) <= 0 then
  redis.call('HDEL', KEYS[3], owner)
end
"""

# Redis Cluster only, on the index slot. KEYS: deadlines zset, pending-per-owner hash, each
# pending ask's owner. ARGV: score, id, owner ('' for none), the owner's pending limit (0:
# none). Indexed already: 2 (nothing counted twice); the owner at their limit: -1; added: 1.
_INDEX_ADD = """
if redis.call('ZSCORE', KEYS[1], ARGV[2]) then return 2 end
if ARGV[3] ~= '' then
  local limit = tonumber(ARGV[4])
  if limit > 0 and tonumber(redis.call('HGET', KEYS[2], ARGV[3]) or '0') >= limit then
    return -1
  end
  redis.call('HINCRBY', KEYS[2], ARGV[3], 1)
  redis.call('HSET', KEYS[3], ARGV[2], ARGV[3])
end
redis.call('ZADD', KEYS[1], ARGV[1], ARGV[2])
return 1
"""

# Redis Cluster only: the ask ARGV[1] is no longer pending; the same KEYS. Idempotent.
_INDEX_RELEASE = """
if redis.call('ZREM', KEYS[1], ARGV[1]) == 0 then return 0 end
local owner = redis.call('HGET', KEYS[3], ARGV[1])
if owner then
  redis.call('HDEL', KEYS[3], ARGV[1])
  if redis.call('HINCRBY', KEYS[2], owner, -1) <= 0 then redis.call('HDEL', KEYS[2], owner) end
end
return 1
"""

# KEYS: ask hash, deadlines zset, pending-per-owner hash. ARGV: index, item json,
# finished_at, id, retention ms, channel
_ANSWER = (
    """
if redis.call('EXISTS', KEYS[1]) == 0 then return {'unknown'} end
local n = tonumber(redis.call('HGET', KEYS[1], 'n'))
local index = tonumber(ARGV[1])
if index < 0 or index >= n then return {'bad_index'} end
if redis.call('HGET', KEYS[1], 'status') ~= 'pending' then
  return {'not_pending', redis.call('HGETALL', KEYS[1])}
end
if redis.call('HSETNX', KEYS[1], 'ans:' .. ARGV[1], ARGV[2]) == 0 then
  return {'already_answered', redis.call('HGETALL', KEYS[1])}
end
for i = 0, n - 1 do
  if redis.call('HEXISTS', KEYS[1], 'ans:' .. i) == 0 then
    return {'accepted', redis.call('HGETALL', KEYS[1])}
  end
end
redis.call('HSET', KEYS[1], 'status', 'answered', 'finished_at', ARGV[3])
if KEYS[2] then redis.call('ZREM', KEYS[2], ARGV[4]) end
redis.call('PEXPIRE', KEYS[1], ARGV[5])
redis.call('PUBLISH', ARGV[6], ARGV[4])
"""
    + _RELEASE_OWNER
    + """
return {'completed', redis.call('HGETALL', KEYS[1])}
"""
)

# KEYS: ask hash, deadlines zset, pending-per-owner hash. ARGV: status, error json,
# finished_at, id, retention ms, channel
_FINISH = (
    """
if redis.call('EXISTS', KEYS[1]) == 0 then return {0} end
if redis.call('HGET', KEYS[1], 'status') ~= 'pending' then
  return {0, redis.call('HGETALL', KEYS[1])}
end
redis.call('HSET', KEYS[1], 'status', ARGV[1], 'error', ARGV[2], 'finished_at', ARGV[3])
if KEYS[2] then redis.call('ZREM', KEYS[2], ARGV[4]) end
redis.call('PEXPIRE', KEYS[1], ARGV[5])
redis.call('PUBLISH', ARGV[6], ARGV[4])
"""
    + _RELEASE_OWNER
    + """
return {1, redis.call('HGETALL', KEYS[1])}
"""
)

# KEYS: ask hash. ARGV: index, message json
_SET_MESSAGE = """
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
local index = tonumber(ARGV[1])
if index < 0 or index >= tonumber(redis.call('HGET', KEYS[1], 'n')) then return -1 end
redis.call('HSET', KEYS[1], 'msg:' .. ARGV[1], ARGV[2])
return 1
"""

# KEYS: ask hash, deadlines zset, pending-per-owner hash (on a cluster the ask hash alone, as
# for _ANSWER). ARGV: index, voter id, vote json,
# votes required, veto labels json, label, answer item json (without its votes),
# finished_at, id, retention ms, channel. Votes live in the ask's hash (vote:{i}, a JSON
# list), so they expire with it; the vote that reaches the quorum claims ans:{i} with every
# vote in it, as _ANSWER would, and completes the ask on the last question.
_VOTE = (
    """
if redis.call('EXISTS', KEYS[1]) == 0 then return {'unknown'} end
local n = tonumber(redis.call('HGET', KEYS[1], 'n'))
local index = tonumber(ARGV[1])
if index < 0 or index >= n then return {'bad_index'} end
local field = 'vote:' .. ARGV[1]
local raw = redis.call('HGET', KEYS[1], field) or '[]'
if redis.call('HGET', KEYS[1], 'status') ~= 'pending' then
  return {'not_pending', redis.call('HGETALL', KEYS[1]), raw}
end
if redis.call('HEXISTS', KEYS[1], 'ans:' .. ARGV[1]) == 1 then
  return {'already_answered', redis.call('HGETALL', KEYS[1]), raw}
end
local votes = cjson.decode(raw)
for _, v in ipairs(votes) do
  if v['by']['id'] == ARGV[2] then
    return {'already_voted', redis.call('HGETALL', KEYS[1]), raw}
  end
end
table.insert(votes, cjson.decode(ARGV[3]))
raw = cjson.encode(votes)
redis.call('HSET', KEYS[1], field, raw)
local count = 0
for _, v in ipairs(votes) do
  if v['label'] == ARGV[6] then count = count + 1 end
end
local veto = false
for _, label in ipairs(cjson.decode(ARGV[5])) do
  if label == ARGV[6] then veto = true end
end
if not veto and count < tonumber(ARGV[4]) then
  return {'counted', redis.call('HGETALL', KEYS[1]), raw}
end
local item = cjson.decode(ARGV[7])
item['votes'] = votes
redis.call('HSET', KEYS[1], 'ans:' .. ARGV[1], cjson.encode(item))
for i = 0, n - 1 do
  if redis.call('HEXISTS', KEYS[1], 'ans:' .. i) == 0 then
    return {'decided', redis.call('HGETALL', KEYS[1]), raw}
  end
end
redis.call('HSET', KEYS[1], 'status', 'answered', 'finished_at', ARGV[8])
if KEYS[2] then redis.call('ZREM', KEYS[2], ARGV[9]) end
redis.call('PEXPIRE', KEYS[1], ARGV[10])
redis.call('PUBLISH', ARGV[11], ARGV[9])
"""
    + _RELEASE_OWNER
    + """
return {'completed', redis.call('HGETALL', KEYS[1]), raw}
"""
)

# KEYS: ask hash. ARGV: now, lease end. Claims a due reminder for a while (a claimer that
# dies lets it fall due again): {reminders sent so far, lease end}, or {-1, when it is due}
# when it is not due yet (claimed by another replica first), or {-1, ''} when the ask has
# ended or has no reminder left.
_CLAIM_REMINDER = """
local at = redis.call('HGET', KEYS[1], 'remind_at')
if not at or redis.call('HGET', KEYS[1], 'status') ~= 'pending' then return {-1, ''} end
if tonumber(at) > tonumber(ARGV[1]) then return {-1, at} end
redis.call('HSET', KEYS[1], 'remind_at', ARGV[2])
return {tonumber(redis.call('HGET', KEYS[1], 'reminded') or '0'), ARGV[2]}
"""

# KEYS: ask hash. ARGV: reminders sent before this one, next due ('' for none). Only the first
# to record reminder number ARGV[1] does (1); the others get 0.
_REMINDED = """
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
if tonumber(redis.call('HGET', KEYS[1], 'reminded') or '0') ~= tonumber(ARGV[1]) then
  return 0
end
redis.call('HSET', KEYS[1], 'reminded', tonumber(ARGV[1]) + 1)
if ARGV[2] == '' or redis.call('HGET', KEYS[1], 'status') ~= 'pending' then
  redis.call('HDEL', KEYS[1], 'remind_at')
else
  redis.call('HSET', KEYS[1], 'remind_at', ARGV[2])
end
return 1
"""


P = ParamSpec("P")
R = TypeVar("R")


def _translated(
    method: Callable[P, Coroutine[Any, Any, R]],
) -> Callable[P, Coroutine[Any, Any, R]]:
    """Turn Redis and socket errors into ``StoreUnavailable`` at the store's boundary."""

    @functools.wraps(method)
    async def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return await method(*args, **kwargs)
        except (RedisError, OSError) as exc:
            raise StoreUnavailable(
                f"Redis is unreachable: {exc}; check that it is running and that REDIS_URL"
                " points at it, then retry (the relay resumes once Redis answers)"
            ) from exc

    return wrapper


class RedisStore:
    """Asks in Redis, shared by every replica; claims are atomic Lua scripts."""

    durable = True

    def __init__(
        self,
        *,
        url: str | None = None,
        client: RedisClient | None = None,
        tls: RedisTLS | None = None,
        prefix: str = "relay:",
        retention: float = 7 * 24 * 3600.0,
        max_pending_per_owner: int | None = None,
    ) -> None:
        """``url`` is a ``REDIS_URL`` (one Redis, Sentinel or Cluster; ``relay.store.redis_url``)
        and ``tls`` its certificate files; or pass a ready ``client`` (closed with the store)."""
        if (url is None) == (client is None):
            raise ValueError("pass exactly one of url= or client=")
        self._connection = RedisConnection.of(client) if client else connect(url or "", tls=tls)
        self._redis: RedisClient = self._connection.client
        self._cluster = self._connection.cluster
        self._keys = _Keys(prefix, cluster=self._cluster)
        self._prefix = prefix
        self._deadlines = self._keys.index("deadlines")
        self._owners = self._keys.index("owners")
        self._max_pending = max_pending_per_owner
        self._channel = f"{prefix}done"
        self._retention_ms = max(1, math.ceil(retention * 1000))
        self._create = self._redis.register_script(_CREATE)
        self._answer = self._redis.register_script(_ANSWER)
        self._finish = self._redis.register_script(_FINISH)
        self._set_message = self._redis.register_script(_SET_MESSAGE)
        self._index_add = self._redis.register_script(_INDEX_ADD)
        self._index_release = self._redis.register_script(_INDEX_RELEASE)
        self._watches: dict[str, _Watch] = {}
        self._reads: dict[str, asyncio.Future[AskRecord | None]] = {}
        self._listener: asyncio.Task[None] | None = None
        self._subscribed = asyncio.Event()
        self._subscribing: asyncio.Future[None] | None = None
        self._closed = False

    def _key(self, ask_id: str) -> str:
        return self._keys.ask(ask_id)

    def _claim_keys(self, ask_id: str) -> list[str]:
        """The keys of a script on the ask: on a cluster its hash alone (one slot), else the
        indexes too, which the script then updates in the same step."""
        if self._cluster:
            return [self._key(ask_id)]
        return [self._key(ask_id), self._deadlines, self._owners]

    def _index_keys(self) -> list[str]:
        return [self._deadlines, self._owners, self._keys.index("ask-owners")]

    async def _reserve(self, record: AskRecord, score: float) -> int:
        """Cluster only: index and count the ask before it is written (see ``_INDEX_ADD``)."""
        added = int(
            await self._index_add(
                keys=self._index_keys(),
                args=[score, record.id, record.owner or "", self._max_pending or 0],
            )
        )
        if added < 0 and record.owner is not None and self._max_pending is not None:
            raise PendingLimitReached(record.owner, self._max_pending)
        return added

    async def _release(self, ask_id: str) -> None:
        """Cluster only: drop the ask from the indexes once it is over (idempotent).

        The claim has happened by now, so a failure here must not turn it into an error: the
        entry stays until the next claim on the ask (``due`` hands it out for one) repairs it.
        """
        try:
            await self._index_release(keys=self._index_keys(), args=[ask_id])
        except (RedisError, OSError) as exc:
            _log.warning("could not update the Redis index for ask %s (%s)", ask_id, exc)

    @_translated
    async def create(self, *, record: AskRecord) -> None:
        """Store a new pending ask (all fields in one script: nothing half-written)."""
        core = {
            "id": record.id,
            "request": record.request.to_dict(),
            "target": record.target.to_dict(),
            "created_at": record.created_at.isoformat(),
            "deadline": record.deadline,
            "owner": record.owner,
            "meta": record.meta,
        }
        fields: list[str] = [
            "n",
            str(len(record.request.questions)),
            "status",
            record.status.value,
        ]
        for i, message in enumerate(record.messages):
            if message is not None:
                fields += [f"msg:{i}", _message_json(message)]
        score = record.deadline if record.deadline is not None else math.inf
        reserved = await self._reserve(record, score) if self._cluster else 0
        try:
            created = int(
                await self._create(
                    keys=self._claim_keys(record.id),
                    args=[
                        score,
                        record.id,
                        json.dumps(core, separators=(",", ":")),
                        record.owner or "",
                        self._max_pending or 0,
                        *fields,
                    ],
                )
            )
        except (RedisError, OSError):
            if reserved == 1:
                # The caller is told the create failed, so nobody will wait on this ask: undo
                # its entry rather than leave its owner counted for an ask that may not exist.
                await self._release(record.id)
            raise
        if reserved == 1 and created != 1:
            # Indexed just now, yet the ask was there: another ask's, or this one finished
            # already (a pending ask is always indexed first). Undo the entry.
            await self._release(record.id)
        if created < 0 and record.owner is not None and self._max_pending is not None:
            raise PendingLimitReached(record.owner, self._max_pending)
        if created <= 0:
            raise ValueError(f"ask {record.id} exists already")

    @_translated
    async def get(self, *, ask_id: str) -> AskRecord | None:
        """The ask as it stands, or ``None``."""
        return _decode(await self._redis.hgetall(self._key(ask_id)))

    @_translated
    async def set_message(self, *, ask_id: str, index: int, message: MessageRef) -> None:
        """Remember where question ``index`` was posted (ignored if the ask is gone)."""
        done = await self._set_message(
            keys=[self._key(ask_id)], args=[index, _message_json(message)]
        )
        if int(done) < 0:
            raise IndexError(f"ask {ask_id} has no question {index}")

    @_translated
    async def answer(
        self, *, ask_id: str, index: int, item: AskUserQuestionAnswerItem
    ) -> AnswerResult:
        """Claim question ``index``'s answer atomically; completes the ask on the last one."""
        at = item.answered_at.isoformat() if item.answered_at else ""
        reply = await self._answer(
            keys=self._claim_keys(ask_id),
            args=[
                index,
                json.dumps(item_to_json(item), separators=(",", ":")),
                at,
                ask_id,
                self._retention_ms,
                self._channel,
            ],
        )
        if _text(reply[0]) == "bad_index":
            raise IndexError(f"ask {ask_id} has no question {index}")
        outcome: AnswerOutcome = _text(reply[0])  # type: ignore[assignment]
        if self._cluster and outcome in ("completed", "not_pending", "unknown"):
            await self._release(ask_id)
        record = _decode(_pairs(reply[1])) if len(reply) > 1 else None
        return AnswerResult(outcome, record)

    @_translated
    async def finish(
        self, *, ask_id: str, status: AskStatus, error: AskError | None, at: datetime
    ) -> tuple[bool, AskRecord | None]:
        """Claim a final outcome atomically; the first claim wins."""
        if status is AskStatus.PENDING:
            raise ValueError("finish needs a final status, not pending")
        error_json = ""
        if error is not None:
            error_json = json.dumps(
                {"code": error.code, "message": error.message, "reason": error.reason}
            )
        reply = await self._finish(
            keys=self._claim_keys(ask_id),
            args=[
                status.value,
                error_json,
                at.isoformat(),
                ask_id,
                self._retention_ms,
                self._channel,
            ],
        )
        record = _decode(_pairs(reply[1])) if len(reply) > 1 else None
        if self._cluster:
            await self._release(ask_id)  # won: its index entry goes; lost: a stale one, if any
        return bool(int(reply[0])), record

    @_translated
    async def wait(self, *, ask_id: str, within: float | None) -> AskRecord | None:
        """Wait for the ask to end (woken by pub/sub from any replica) or ``within`` seconds.

        Waiters of one ask share one ``_Watch``: while the ask is pending it reads only the
        ask's status, once when the first waiter comes and once per wake-up, and reads (and
        decodes) the whole record once when it ends, for all of them. Waiters whose time is
        up share one read of the record as it stands, too.
        """
        if within is not None and within <= 0:
            return await self.get(ask_id=ask_id)
        await self._ensure_listening()
        watch = self._watches.get(ask_id)
        if watch is None or watch.failed():
            loop = asyncio.get_running_loop()
            watch = self._watches[ask_id] = _Watch(loop)
            # Subscribed before its first read, so an ending between the two is never missed.
            watch.task = loop.create_task(self._watch(ask_id, watch))
        watch.waiters += 1
        try:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(within):  # (wait_for could swallow a cancel)
                    return await asyncio.shield(watch.done)
            return await self._read_shared(ask_id)
        finally:
            watch.waiters -= 1
            if not watch.waiters and self._watches.get(ask_id) is watch:
                del self._watches[ask_id]
                watch.stop()

    async def _watch(self, ask_id: str, watch: _Watch) -> None:
        """Settle ``watch`` with the record once the ask is final (or gone)."""
        key = self._key(ask_id)
        try:
            while True:
                status = await self._redis.hget(key, "status")
                if status is None or _text(status) != AskStatus.PENDING.value:
                    record = await self._redis.hgetall(key)
                    watch.settle(_decode(record))
                    return
                await watch.woken.wait()
                watch.woken.clear()
        except (RedisError, OSError) as exc:
            watch.fail(
                StoreUnavailable(f"Redis is unreachable: {exc}; retry once it answers again")
            )

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
        backoff = 0.1
        while not self._closed:
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
                        self._wake(_text(message["data"]))
                    elif kind == "subscribe":
                        # Confirmed, also when redis-py reconnected by itself: anything may have
                        # ended while we were not listening, so every waiter re-checks.
                        self._subscribed.set()
                        self._wake_all()
                        backoff = 0.1
            except asyncio.CancelledError:
                raise
            except (RedisError, OSError) as exc:
                # Waiters keep waiting (Redis cannot tell them anything now); the subscription
                # confirmation after reconnecting wakes them to re-check.
                _log.warning("lost the Redis subscription (%s); reconnecting", exc)
                await asyncio.sleep(backoff)  # back off before reconnecting to a down Redis
                backoff = min(backoff * 2, 2.0)
            finally:
                with contextlib.suppress(Exception):
                    await pubsub.aclose()  # type: ignore[no-untyped-call]

    def _wake(self, ask_id: str) -> None:
        watch = self._watches.get(ask_id)
        if watch is not None:
            watch.woken.set()

    def _wake_all(self) -> None:
        for watch in self._watches.values():
            watch.woken.set()

    @_translated
    async def due(self, *, now: float, limit: int = 100) -> list[str]:
        """Pending asks whose deadline has passed (again, until someone settles them)."""
        upper = "+inf" if math.isinf(now) else repr(now)
        ids = await self._redis.zrangebyscore(self._deadlines, "-inf", upper, start=0, num=limit)
        return [_text(i) for i in ids]

    @_translated
    async def next_deadline(self) -> float | None:
        """The earliest deadline of a pending ask."""
        first = await self._redis.zrange(self._deadlines, 0, 0, withscores=True)
        if not first:
            return None
        score = float(first[0][1])
        return None if math.isinf(score) else score

    @_translated
    async def count_pending(self) -> int:
        """How many asks are pending, across every replica."""
        return int(await self._redis.zcard(self._deadlines))

    @_translated
    async def ping(self) -> None:
        """Raise ``StoreUnavailable`` if Redis does not answer."""
        await self._redis.ping()

    async def aclose(self) -> None:
        """Stop listening, wake waiters and close the connections; idempotent."""
        if self._closed:
            return
        self._closed = True
        if self._listener is not None:
            # redis-py can swallow a cancellation that lands while it connects or subscribes
            # (redis/redis-py#2028): cancel until the listener has stopped, or this hangs.
            while not self._listener.done():
                self._listener.cancel()
                await asyncio.wait({self._listener}, timeout=0.1)
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._listener
        # Waiters get the record as it stands now (one read per ask), then Redis is closed.
        for ask_id, watch in list(self._watches.items()):
            watch.stop()
            try:
                watch.settle(await self.get(ask_id=ask_id))
            except StoreUnavailable as exc:
                watch.fail(exc)
        await self._connection.aclose()

    @_translated
    async def vote(
        self,
        *,
        ask_id: str,
        index: int,
        item: AskUserQuestionAnswerItem,
        required: int,
        veto: frozenset[str],
    ) -> VoteResult:
        """Count one person's vote atomically (one Lua script, so two replicas' votes each
        count once); the vote that reaches the quorum claims the question's answer."""
        vote = vote_of(item)
        reply = await self._redis.register_script(_VOTE)(
            keys=self._claim_keys(ask_id),
            args=[
                index,
                vote.by.id,
                json.dumps(vote.to_dict(), separators=(",", ":")),
                required,
                json.dumps(sorted(veto)),
                vote.label,
                json.dumps(item_to_json(item), separators=(",", ":")),
                vote.at.isoformat(),
                ask_id,
                self._retention_ms,
                self._channel,
            ],
        )
        if _text(reply[0]) == "bad_index":
            raise IndexError(f"ask {ask_id} has no question {index}")
        outcome: VoteOutcome = _text(reply[0])  # type: ignore[assignment]
        if self._cluster and outcome in ("completed", "not_pending", "unknown"):
            await self._release(ask_id)
        found = _decode(_pairs(reply[1])) if len(reply) > 1 else None
        votes = _votes_of(_text(reply[2])) if len(reply) > 2 else ()
        return VoteResult(outcome, found, votes)

    @_translated
    async def votes(self, *, ask_id: str) -> tuple[tuple[Vote, ...], ...]:
        """Every question's votes so far (one read of the ask's hash)."""
        raw = await self._redis.hgetall(self._key(ask_id))
        fields = {_text(k): _text(v) for k, v in raw.items()}
        if "n" not in fields:
            return ()
        return tuple(_votes_of(fields.get(f"vote:{i}", "[]")) for i in range(int(fields["n"])))

    @_translated
    async def schedule_reminder(self, *, ask_id: str, at: float) -> None:
        """Remind people of the ask at ``at``: in its hash (where claims happen) and in a
        sorted set every replica scans for what is due."""
        await self._redis.hset(self._key(ask_id), "remind_at", repr(at))
        await self._redis.zadd(self._reminder_index, {ask_id: at})

    @property
    def _reminder_index(self) -> str:
        return self._keys.index("reminders")

    @_translated
    async def next_reminder(self) -> float | None:
        """When the earliest reminder (or a lapsed claim) falls due."""
        first = await self._redis.zrange(self._reminder_index, 0, 0, withscores=True)
        return float(first[0][1]) if first else None

    @_translated
    async def claim_reminders(
        self, *, now: float, lease: float, limit: int = 100
    ) -> list[tuple[str, int]]:
        """Claim due reminders, each in one script on the ask's hash: two replicas never
        claim the same one. The sorted set only says where to look, and is set right here."""
        index = self._reminder_index
        due = await self._redis.zrangebyscore(index, "-inf", repr(now), 0, limit)
        claim = self._redis.register_script(_CLAIM_REMINDER)
        claimed: list[tuple[str, int]] = []
        for raw in due:
            ask_id = _text(raw)
            sent, at = await claim(keys=[self._key(ask_id)], args=[now, now + lease])
            sent, at = int(sent), _text(at)
            if sent >= 0:
                claimed.append((ask_id, sent))
                await self._redis.zadd(index, {ask_id: now + lease})
            elif at:
                await self._redis.zadd(index, {ask_id: float(at)})  # claimed elsewhere
            else:
                await self._redis.zrem(index, ask_id)  # ended, or no reminder left
        return claimed

    @_translated
    async def reminded(self, *, ask_id: str, sent: int, next_at: float | None) -> bool:
        """Record reminder number ``sent`` as sent, once; schedule the next one."""
        done = await self._redis.register_script(_REMINDED)(
            keys=[self._key(ask_id)], args=[sent, "" if next_at is None else repr(next_at)]
        )
        if int(done) == 1 and next_at is not None:
            await self._redis.zadd(self._reminder_index, {ask_id: next_at})
        elif int(done) == 1:
            await self._redis.zrem(self._reminder_index, ask_id)
        return bool(int(done))


class _Keys:
    """Every key name the store uses, in one place.

    On a Redis Cluster the keys of one ask carry its id as hash tag and the structures across
    asks share the tag ``{<prefix>index}``, so that each script touches one slot; on one Redis
    the names are the plain ones they always were (no migration on upgrade). Another key of
    one ask is ``ask(id) + ":name"`` (same slot); another structure across asks is ``index``'s.
    """

    __slots__ = ("_cluster", "_prefix")

    def __init__(self, prefix: str, *, cluster: bool) -> None:
        self._prefix = prefix
        self._cluster = cluster

    def ask(self, ask_id: str) -> str:
        """The hash of ask ``ask_id``."""
        if self._cluster:
            return f"{self._prefix}ask:{{{ask_id}}}"
        return f"{self._prefix}ask:{ask_id}"

    def index(self, name: str) -> str:
        """A structure across asks (``deadlines``, ``owners``…): one slot for all of them."""
        if self._cluster:
            return f"{self._prefix}{{{self._prefix}index}}:{name}"
        return f"{self._prefix}{name}"


class _Watch:
    """The waiters of one ask and the one task that reads it for them."""

    __slots__ = ("done", "task", "waiters", "woken")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.done: asyncio.Future[AskRecord | None] = loop.create_future()
        self.woken = asyncio.Event()
        self.waiters = 0
        self.task: asyncio.Task[None] | None = None

    def settle(self, record: AskRecord | None) -> None:
        if not self.done.done():
            self.done.set_result(record)

    def fail(self, exc: Exception) -> None:
        if not self.done.done():
            self.done.set_exception(exc)
            self.done.exception()  # retrieved: each waiter re-raises it

    def failed(self) -> bool:
        return self.done.done() and self.done.exception() is not None

    def stop(self) -> None:
        if self.task is not None:
            self.task.cancel()


def _message_json(message: MessageRef) -> str:
    return json.dumps([message.channel, message.ts], separators=(",", ":"))


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _pairs(flat: list[Any]) -> dict[str, str]:
    it = iter(flat)
    return {_text(k): _text(v) for k, v in zip(it, it, strict=True)}


def _decode(fields: dict[Any, Any]) -> AskRecord | None:
    if not fields:
        return None
    data = {_text(k): _text(v) for k, v in fields.items()}
    if "core" not in data:
        return None
    core = json.loads(data["core"])
    n = int(data["n"])
    messages: list[MessageRef | None] = [None] * n
    responses: list[AskUserQuestionAnswerItem | None] = [None] * n
    for i in range(n):
        if f"msg:{i}" in data:
            channel, ts = json.loads(data[f"msg:{i}"])
            messages[i] = MessageRef(channel, ts)
        if f"ans:{i}" in data:
            responses[i] = item_from_json(json.loads(data[f"ans:{i}"]))
    error = json.loads(data["error"]) if data.get("error") else None
    return AskRecord(
        id=core["id"],
        request=AskUserQuestionRequest.from_dict(core["request"]),
        target=Target.from_dict(core["target"]),
        created_at=datetime.fromisoformat(core["created_at"]),
        deadline=core.get("deadline"),
        status=AskStatus(data["status"]),
        messages=tuple(messages),
        responses=tuple(responses),
        error=AskError(error["code"], error["message"], error.get("reason")) if error else None,
        owner=core.get("owner"),
        finished_at=datetime.fromisoformat(data["finished_at"])
        if data.get("finished_at")
        else None,
        meta=core.get("meta") or {},
    )


def _votes_of(raw: str) -> tuple[Vote, ...]:
    data = json.loads(raw)
    return tuple(Vote.from_dict(v) for v in data) if isinstance(data, list) else ()
