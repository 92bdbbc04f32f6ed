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
- ``relay:unsettled``, a sorted set of ended asks with a message whose final update has not
  landed (``shown:{i}`` in the ask's hash once it has), by when the sweep may claim each.

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
``StoreUnavailable``, never a raw ``redis`` exception. Off a cluster the hot path (claims,
creates, reading an ask) is pipelined on a connection of its own (``relay.store.redis_pipelined``).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import hashlib
import json
import logging
import math
import random
import time
from collections.abc import Callable, Coroutine, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, ParamSpec, TypeVar

from redis.asyncio.cluster import RedisCluster
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import NoScriptError, RedisError

from relay.questions import AskUserQuestionAnswerItem, AskUserQuestionRequest, Vote
from relay.store.base import ClickClaim, PendingLimitReached, StoreUnavailable
from relay.store.idempotency import KeyClaim, KeyOutcome
from relay.store.listing import Position
from relay.store.outbox import ClaimedDelivery
from relay.store.record import (
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
from relay.store.redis_connect import (
    DEFAULT_MAX_CONNECTIONS,
    RedisClient,
    RedisConnection,
    RedisTLS,
    connect,
)
from relay.store.redis_listener import NotSupported, listen_channel
from relay.store.redis_pipelined import PipelinedCommands

__all__ = ["DEFAULT_MAX_CONNECTIONS", "RedisStore"]

_log = logging.getLogger("relay.store.redis")

# KEYS: ask hash, deadlines zset, pending-per-owner hash, and (with an owner) the owner's
# audit index. ARGV: score, id, core json, owner ('' for none), the owner's pending limit (0:
# none), created (epoch), the ask keys' prefix, how many of the audit index's oldest to check,
# then field/value pairs. Creating the same ask twice (a retried command) is a no-op (2);
# another ask's id is refused (0); an owner at their limit is refused (-1) and nothing is
# written. The audit index gets the ask, and loses those of its oldest that expired: checking
# two per create, more leave than come, so it stays about as long as retention keeps asks.
# On a cluster KEYS is the ask hash alone: ``_INDEX_ADD`` has checked and counted the owner
# first, and the audit index (a slot of its own) is the client's to update.
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
redis.call('HSET', KEYS[1], 'core', ARGV[3], unpack(ARGV, 9))
if KEYS[2] then redis.call('ZADD', KEYS[2], ARGV[1], ARGV[2]) end
if KEYS[5] then
  redis.call('ZADD', KEYS[5], ARGV[6], ARGV[2])
  for _, id in ipairs(redis.call('ZRANGE', KEYS[5], 0, tonumber(ARGV[8]) - 1)) do
    if redis.call('EXISTS', ARGV[7] .. id) == 0 then redis.call('ZREM', KEYS[5], id) end
  end
end
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


# Appended to a claim that ends the ask: index it as unsettled (see ``settled``) at the
# end time ``at`` (KEYS[4], the unsettled zset; on a cluster ``_unsettle`` does it).
def _unsettle_on_end(ask_id: str, at: str) -> str:
    return f"""
if KEYS[4] then redis.call('ZADD', KEYS[4], 'NX', {at}, {ask_id}) end
"""


# KEYS: ask hash, deadlines zset, pending-per-owner hash. ARGV: index, item json,
# finished_at, id, retention ms, channel, end time (epoch), '1' if the caller holds the ask's
# core (the reply then carries it empty: it never changes), and for a click
# (``claim_click``) the click's message as JSON ``[channel, ts]``: a question posted to
# another message is refused first. The ask is read once (HGETALL: the checks are made on
# that copy, and the reply is that copy with the writes applied) and written once: every
# command a script runs costs Redis several microseconds more when its caches are cold, as
# they are for a click that comes between other work (13 -> 7 commands on a one-question
# ask; see BENCHMARKS.md, tenth pass). The client reads the reply's fields by name.
_ANSWER = (
    """
local all = redis.call('HGETALL', KEYS[1])
if #all == 0 then return {'unknown'} end
local at = {}
for i = 1, #all, 2 do at[all[i]] = i + 1 end
local n = tonumber(all[at['n']])
local index = tonumber(ARGV[1])
if index < 0 or index >= n then return {'bad_index'} end
local function state()
  if ARGV[8] == '1' and at['core'] then all[at['core']] = '' end
  return all
end
if ARGV[9] then
  local posted = at['msg:' .. ARGV[1]]
  if posted then
    local was, click = cjson.decode(all[posted]), cjson.decode(ARGV[9])
    if was[1] ~= click[1] or was[2] ~= click[2] then return {'message_mismatch'} end
  end
end
if all[at['status']] ~= 'pending' then return {'not_pending', state()} end
local field = 'ans:' .. ARGV[1]
if at[field] then return {'already_answered', state()} end
local function put(name, value)
  if at[name] then all[at[name]] = value else
    all[#all + 1] = name; all[#all + 1] = value; at[name] = #all
  end
end
put(field, ARGV[2])
for i = 0, n - 1 do
  if not at['ans:' .. i] then
    redis.call('HSET', KEYS[1], field, ARGV[2])
    return {'accepted', state()}
  end
end
redis.call('HSET', KEYS[1], field, ARGV[2], 'status', 'answered', 'finished_at', ARGV[3])
put('status', 'answered')
put('finished_at', ARGV[3])
if KEYS[2] then redis.call('ZREM', KEYS[2], ARGV[4]) end
redis.call('PEXPIRE', KEYS[1], ARGV[5])
redis.call('PUBLISH', ARGV[6], ARGV[4])
"""
    + _RELEASE_OWNER
    + _unsettle_on_end("ARGV[4]", "ARGV[7]")
    + """
return {'completed', state()}
"""
)

# KEYS: ask hash, deadlines zset, pending-per-owner hash. ARGV: status, error json,
# finished_at, id, retention ms, channel, end time (epoch)
_FINISH = (
    """
local status = redis.call('HGET', KEYS[1], 'status')
if not status then return {0} end
if status ~= 'pending' then return {0, redis.call('HGETALL', KEYS[1])} end
redis.call('HSET', KEYS[1], 'status', ARGV[1], 'error', ARGV[2], 'finished_at', ARGV[3])
if KEYS[2] then redis.call('ZREM', KEYS[2], ARGV[4]) end
redis.call('PEXPIRE', KEYS[1], ARGV[5])
redis.call('PUBLISH', ARGV[6], ARGV[4])
"""
    + _RELEASE_OWNER
    + _unsettle_on_end("ARGV[4]", "ARGV[7]")
    + """
return {1, redis.call('HGETALL', KEYS[1])}
"""
)

# KEYS: ask hash. ARGV: index, message json. The ask as it stands after (HGETALL); 0: no such
# ask; -1: no such question.
_SET_MESSAGE = """
local n = redis.call('HGET', KEYS[1], 'n')
if not n then return 0 end
local index = tonumber(ARGV[1])
if index < 0 or index >= tonumber(n) then return -1 end
redis.call('HSET', KEYS[1], 'msg:' .. ARGV[1], ARGV[2])
return redis.call('HGETALL', KEYS[1])
"""

# Idempotency keys (relay.store.idempotency). KEYS: the key's hash. ARGV: fingerprint,
# lease ms. A free key is claimed (no ask yet) for the lease; a held one is compared.
_KEY_CLAIM = """
local fp = redis.call('HGET', KEYS[1], 'fp')
if not fp then
  redis.call('HSET', KEYS[1], 'fp', ARGV[1], 'ask', '')
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return {'new', ''}
end
if fp ~= ARGV[1] then return {'conflict', ''} end
return {'same', redis.call('HGET', KEYS[1], 'ask') or ''}
"""

# KEYS: the key's hash. ARGV: fingerprint, ask id, window ms.
_KEY_BIND = """
if redis.call('HGET', KEYS[1], 'fp') ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[1], 'ask', ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return 1
"""

# KEYS: the key's hash. ARGV: fingerprint. Only an unbound claim is dropped.
_KEY_RELEASE = """
if redis.call('HGET', KEYS[1], 'fp') == ARGV[1] and redis.call('HGET', KEYS[1], 'ask') == '' then
  return redis.call('DEL', KEYS[1])
end
return 0
"""

# The webhook outbox (relay.store.outbox). KEYS: subscription key, watch zset. ARGV: ask id,
# subscription json, ttl ms, score.
_HOOK_SUBSCRIBE = """
if redis.call('SET', KEYS[1], ARGV[2], 'NX', 'PX', ARGV[3]) then
  redis.call('ZADD', KEYS[2], ARGV[4], ARGV[1])
end
return 1
"""

# KEYS: delivery hash, outbox zset, watch zset, subscription key. ARGV: event id, delivery
# json, due, ask id, final ('1' or '0'). An event id seen before is not enqueued again.
_HOOK_ENQUEUE = """
if ARGV[5] == '1' then
  redis.call('ZREM', KEYS[3], ARGV[4])
  redis.call('DEL', KEYS[4])
end
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('HSET', KEYS[1], 'delivery', ARGV[2], 'attempts', 0, 'state', 'pending')
redis.call('ZADD', KEYS[2], ARGV[3], ARGV[1])
return 1
"""

# KEYS: a zset of due times (the webhook outbox, the unsettled asks). ARGV: due by, lease
# until, limit. Moves each due member's time to the end of the lease: no other replica takes
# it meanwhile, and one whose claimer died falls due again after it.
_LEASE_DUE = """
local ids = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, tonumber(ARGV[3]))
for _, id in ipairs(ids) do
  redis.call('ZADD', KEYS[1], 'XX', ARGV[2], id)
end
return ids
"""

# KEYS: delivery hash, outbox zset. ARGV: event id, state, error, keep ms.
_HOOK_SETTLE = """
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('HINCRBY', KEYS[1], 'attempts', 1)
redis.call('HSET', KEYS[1], 'state', ARGV[2], 'error', ARGV[3])
redis.call('PEXPIRE', KEYS[1], ARGV[4])
return 1
"""

# KEYS: delivery hash, outbox zset. ARGV: event id, due, error.
_HOOK_RETRY = """
if redis.call('HGET', KEYS[1], 'state') ~= 'pending' then return 0 end
redis.call('HINCRBY', KEYS[1], 'attempts', 1)
redis.call('HSET', KEYS[1], 'error', ARGV[3])
redis.call('ZADD', KEYS[2], ARGV[2], ARGV[1])
return 1
"""


_READ_BATCH = 500  # reads per pipeline when many waiters check at once
_CORE_CACHE = 256  # decoded record cores kept (see _Cores): a click's read and claim, a post

# KEYS: ask hash, deadlines zset, pending-per-owner hash (on a cluster the ask hash alone, as
# for _ANSWER). ARGV: index, voter id, vote json,
# votes required, veto labels json, label, answer item json (without its votes),
# finished_at, id, retention ms, channel, end time (epoch). Votes live in the ask's hash
# (vote:{i}, a JSON list), so they expire with it; the vote that reaches the quorum claims
# ans:{i} with every vote in it, as _ANSWER would, and completes the ask on the last question.
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
    + _unsettle_on_end("ARGV[9]", "ARGV[12]")
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

# The unsettled messages (``AskStore.settled``): in the ask's hash, ``shown:{i}`` once question
# i's final update landed (``shown:all``: every one); the unsettled zset holds each ended ask
# with one unsettled until its claim may be taken (less the grace).
_UNSHOWN = """
local function unshown(key)
  local out = {}
  if redis.call('HEXISTS', key, 'shown:all') == 1 then return out end
  local n = tonumber(redis.call('HGET', key, 'n') or '0')
  for i = 0, n - 1 do
    if redis.call('HEXISTS', key, 'msg:' .. i) == 1
      and redis.call('HEXISTS', key, 'shown:' .. i) == 0 then
      table.insert(out, i)
    end
  end
  return out
end
"""

# KEYS: ask hash.
_UNSETTLED = _UNSHOWN + "return unshown(KEYS[1])"

# KEYS: ask hash, the unsettled zset (none on a cluster). ARGV: index ('' for all), id. 1
# when the ask has ended (or is gone) with every message settled: it leaves the zset.
_SETTLED = (
    _UNSHOWN
    + """
if redis.call('EXISTS', KEYS[1]) == 0 then
  if KEYS[2] then redis.call('ZREM', KEYS[2], ARGV[2]) end
  return 1
end
redis.call('HSET', KEYS[1], ARGV[1] == '' and 'shown:all' or 'shown:' .. ARGV[1], '1')
if redis.call('HGET', KEYS[1], 'status') == 'pending' or #unshown(KEYS[1]) > 0 then return 0 end
if KEYS[2] then redis.call('ZREM', KEYS[2], ARGV[2]) end
return 1
"""
)


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
            raise _unreachable(exc) from exc

    return wrapper


def _unreachable(exc: Exception) -> StoreUnavailable:
    return StoreUnavailable(
        f"Redis is unreachable: {exc}; check that it is running and that REDIS_URL"
        " points at it, then retry (the relay resumes once Redis answers)"
    )


class RedisStore:
    """Asks in Redis, shared by every replica; claims are atomic Lua scripts.

    At most ``max_connections`` connections are open at once (one of them for pub/sub); a
    command that finds them all busy waits up to ``pool_timeout`` seconds for one. Claims,
    creates and single reads on one Redis (and behind Sentinel) go pipelined on one more
    connection of their own (``relay.store.redis_pipelined``); on a cluster they take the
    pool's like the rest.
    """

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
        max_connections: int = DEFAULT_MAX_CONNECTIONS,
        pool_timeout: float = 5.0,
    ) -> None:
        """``url`` is a ``REDIS_URL`` (one Redis, Sentinel or Cluster; ``relay.store.redis_url``)
        and ``tls`` its certificate files; or pass a ready ``client`` (closed with the store)."""
        if (url is None) == (client is None):
            raise ValueError("pass exactly one of url= or client=")
        self._connection = (
            RedisConnection.of(client)
            if client
            else connect(
                url or "", tls=tls, max_connections=max_connections, pool_timeout=pool_timeout
            )
        )
        self._redis: RedisClient = self._connection.client
        self._cluster = self._connection.cluster
        self._keys = _Keys(prefix, cluster=self._cluster)
        self._ask_prefix = self._keys.ask("")  # (one Redis: an ask's key is this and its id)
        self._prefix = prefix
        self._deadlines = self._keys.index("deadlines")
        self._owners = self._keys.index("owners")
        self._unsettled_index = self._keys.index("unsettled")
        self._settled = self._redis.register_script(_SETTLED)
        self._max_pending = max_pending_per_owner
        self._channel = f"{prefix}done"
        self._retention_ms = max(1, math.ceil(retention * 1000))
        self._create = self._redis.register_script(_CREATE)
        self._answer = self._redis.register_script(_ANSWER)
        self._finish = self._redis.register_script(_FINISH)
        # Claims, the hot path, skip the client on one Redis (a cluster's keys span nodes).
        self._pipelined = (
            None
            if isinstance(self._redis, RedisCluster)
            else PipelinedCommands(pool=self._redis.connection_pool)
        )
        self._set_message = self._redis.register_script(_SET_MESSAGE)
        self._index_add = self._redis.register_script(_INDEX_ADD)
        self._index_release = self._redis.register_script(_INDEX_RELEASE)
        self._scripts: dict[str, Any] = {}  # source -> its Script (see _script)
        self._cores = _Cores()
        self._watches: dict[str, _Watch] = {}
        self._in_flight: dict[str, int] = {}  # ask id -> claims of ours on their way
        self._woken: set[str] = set()  # of those, woken by pub/sub meanwhile
        self._reads: dict[str, asyncio.Future[AskRecord | None]] = {}
        self._listener: asyncio.Task[None] | None = None
        self._backoff = 0.1  # before the listener's next reconnect
        self._subscribed = asyncio.Event()
        self._subscribing: asyncio.Future[None] | None = None
        self._queued: dict[str, bool] = {}  # ask id -> read only its status first
        self._reader: asyncio.Task[None] | None = None
        self._gets: list[tuple[str, asyncio.Future[dict[Any, Any]]]] = []
        self._direct = False  # a get() is on its way outside the batches
        self._closed = False

    def _script(self, source: str) -> Any:
        """``source`` as a Script, made once (its SHA1 is computed when it is made)."""
        script = self._scripts.get(source)
        if script is None:
            script = self._scripts[source] = self._redis.register_script(source)
        return script

    async def _run(self, script: Any, keys: Sequence[str | bytes], args: Sequence[Any]) -> Any:
        """``script``'s reply, pipelined with the other calls when it can be (one
        ``EVALSHA``). When that cannot tell (the connection was lost, with the script run or
        not, or Redis forgot the script), the client runs it as it always did: on a fresh
        connection, loading the script, retrying and raising as before. (A script that ran
        once already answers the second run as a claim that came second, a create as the
        same ask created again, a recorded message as recorded again.)"""
        if self._pipelined is None:
            return await script(keys=keys, args=args)
        try:
            return await self._pipelined.evalsha(script.sha, keys, args)
        except (NoScriptError, RedisConnectionError):
            return await script(keys=keys, args=args)

    async def _read_one(self, ask_id: str) -> AskRecord | None:
        """The ask read with one ``HGETALL``, pipelined when it can be (a read: retried on
        the client's path)."""
        key = self._key(ask_id)
        if self._pipelined is not None:
            try:
                reply = await self._pipelined.command("HGETALL", key)
            except RedisConnectionError:
                pass
            else:  # (a flat list on RESP2, a dict on RESP3)
                if isinstance(reply, list):
                    return _decode_flat(reply, self._cores)
                return _decode(reply, self._cores)
        return _decode(await self._redis.hgetall(key), self._cores)

    def _key(self, ask_id: str) -> str:
        return self._keys.ask(ask_id)

    def _claim_keys(self, ask_id: str) -> list[str]:
        """The keys of a script on the ask: on a cluster its hash alone (one slot), else the
        indexes too, which the script then updates in the same step."""
        if self._cluster:
            return [self._key(ask_id)]
        return [self._key(ask_id), self._deadlines, self._owners, self._unsettled_index]

    def _index_keys(self) -> list[str]:
        return [self._deadlines, self._owners, self._keys.index("ask-owners")]

    async def _reserve(self, record: AskRecord, score: float) -> int:
        """Cluster only: index and count the ask before it is written (see ``_INDEX_ADD``)."""
        added = int(
            await self._index_add(
                keys=self._index_keys(),
                args=[score, record.id, _wire(record.owner or ""), self._max_pending or 0],
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
        text = _compact(core)
        reserved = await self._reserve(record, score) if self._cluster else 0
        keys: list[str | bytes] = [*self._claim_keys(record.id)]
        if record.owner is not None and not self._cluster:
            keys.append(self._owned_key(record.owner))
        try:
            created = int(
                await self._run(
                    self._create,
                    keys,
                    [
                        score,
                        record.id,
                        text,
                        _wire(record.owner or ""),
                        self._max_pending or 0,
                        record.created_at.timestamp(),
                        self._ask_prefix,
                        _OWNED_TRIM,
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
        if self._cluster:
            await self._index_owned(record)
        # Reading it back (posting, clicks) reuses these objects instead of decoding them.
        self._cores.put(
            text,
            _Core(
                id=record.id,
                request=record.request,
                target=record.target,
                created_at=record.created_at,
                deadline=record.deadline,
                owner=record.owner,
                meta=dict(record.meta) if record.meta else _NO_META,
                digest=hash(text),
            ),
        )

    @_translated
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
        return _decode(await future, self._cores)

    @_translated
    async def set_message(
        self, *, ask_id: str, index: int, message: MessageRef
    ) -> AskRecord | None:
        """Remember where question ``index`` was posted; the ask as it stands then, read by
        the same script (``None`` if the ask is gone)."""
        reply = await self._run(
            self._set_message, [self._key(ask_id)], [index, _message_json(message)]
        )
        if isinstance(reply, int):
            if reply < 0:
                raise IndexError(f"ask {ask_id} has no question {index}")
            return None
        return _decode_flat(reply, self._cores, self._known_core(ask_id))

    @_translated
    async def answer(
        self, *, ask_id: str, index: int, item: AskUserQuestionAnswerItem
    ) -> AnswerResult:
        """Claim question ``index``'s answer atomically; completes the ask on the last one."""
        outcome, record = await self._claim(ask_id, index, item, None)
        return AnswerResult(outcome, record)  # type: ignore[arg-type]

    def known(self, *, ask_id: str) -> AskRecord | None:
        """The unchanging part of an ask this process created or read lately, or waits for
        (``ClickClaims``): shown as pending, with no messages or answers; no I/O."""
        core = self._known_core(ask_id)
        if core is None:
            return None
        return AskRecord(
            id=core.id,
            request=core.request,
            target=core.target,
            created_at=core.created_at,
            deadline=core.deadline,
            owner=core.owner,
            meta=dict(core.meta),
        )

    def _known_core(self, ask_id: str) -> _Core | None:
        watch = self._watches.get(ask_id)
        if watch is not None and watch.core is not None:
            return watch.core
        return self._cores.of(ask_id)

    @_translated
    async def claim_click(
        self,
        *,
        ask_id: str,
        index: int,
        item: AskUserQuestionAnswerItem,
        message: tuple[str | None, str | None],
    ) -> ClickClaim:
        """A click's checks and claim in one script (``_ANSWER`` with the click's message):
        one round trip, whose reply also settles this process's waiters."""
        outcome, record = await self._claim(ask_id, index, item, _compact(list(message)))
        return ClickClaim(outcome, record)  # type: ignore[arg-type]

    async def _claim(
        self, ask_id: str, index: int, item: AskUserQuestionAnswerItem, clicked: str | None
    ) -> tuple[str, AskRecord | None]:
        at = item.answered_at.isoformat() if item.answered_at else ""
        known = self._known_core(ask_id)
        args: list[Any] = [
            index,
            _compact(item_to_json(item)),
            at,
            ask_id,
            self._retention_ms,
            self._channel,
            _epoch(item.answered_at),
            "0" if known is None else "1",
        ]
        if clicked is not None:
            args.append(clicked)
        # Settled inside ``_claiming``: a pub/sub wake-up that came before the caller resumed
        # then finds the waiters settled and reads nothing.
        with self._claiming(ask_id):
            reply = await self._run(self._answer, self._claim_keys(ask_id), args)
            outcome = _text(reply[0])
            if outcome == "bad_index":
                raise IndexError(f"ask {ask_id} has no question {index}")
            if self._cluster and outcome in ("completed", "not_pending", "unknown"):
                await self._release(ask_id)
                if outcome == "completed":
                    await self._unsettle(ask_id, _epoch(item.answered_at))
            # Our own answer, if it was recorded, is the item we sent: not read back.
            mine = (index, item) if outcome in ("accepted", "completed") else None
            record = _decode_flat(reply[1], self._cores, known, mine) if len(reply) > 1 else None
            if record is not None and not record.pending:
                self._settle_local(ask_id, record)  # no pub/sub hop, no re-read, for waiters
        return outcome, record

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
        with self._claiming(ask_id):
            reply = await self._run(
                self._finish,
                self._claim_keys(ask_id),
                [
                    status.value,
                    error_json,
                    at.isoformat(),
                    ask_id,
                    self._retention_ms,
                    self._channel,
                    _epoch(at),
                ],
            )
            record = _decode_flat(reply[1], self._cores) if len(reply) > 1 else None
            if self._cluster:
                await self._release(ask_id)  # won: its index entry goes; lost: a stale one
                if int(reply[0]):
                    await self._unsettle(ask_id, _epoch(at))
            if record is not None and not record.pending:
                self._settle_local(ask_id, record)  # (settled inside _claiming, as in _claim)
        return bool(int(reply[0])), record

    async def wait(self, *, ask_id: str, within: float | None) -> AskRecord | None:
        """Wait for the ask to end (woken by pub/sub from any replica) or ``within`` seconds.

        Waiters of one ask share one ``_Watch`` (each holds a future of its own) while the ask
        is pending: one read of the ask's status when the first waiter comes; one read of the
        whole record when pub/sub says it ended, for all of them; none at all when it ended
        through this store (the claim's own reply settles it). Waiters whose time is up
        share one read of the record as it stands, too.
        """
        # (Not ``_translated``: that would be a second coroutine per waiting ask, held as
        # long as it waits; every call below raises ``StoreUnavailable`` already or here.)
        try:
            if within is not None and within <= 0:
                return await self.get(ask_id=ask_id)
            await self._ensure_listening()
            watch = self._watches.get(ask_id)
            if watch is None or watch.failure is not None:
                watch = self._watches[ask_id] = _Watch()
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
            raise _unreachable(exc) from exc

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

    def _check(self, ask_id: str, watch: _Watch, *, status_first: bool) -> None:
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
                    failure = StoreUnavailable(
                        f"Redis is unreachable: {exc}; retry once it answers again"
                    )
                    for ask_id, _ in batch:
                        if (watch := self._watches.get(ask_id)) is not None:
                            watch.reading = False
                            watch.fail(failure)
                    continue
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

    def _settle_reads(self, batch: list[tuple[str, bool]], replies: list[Any]) -> None:
        for (ask_id, status_first), reply in zip(batch, replies, strict=True):
            watch = self._watches.get(ask_id)
            if watch is None:
                continue
            watch.reading = False
            if status_first:
                if reply is None or _text(reply) != AskStatus.PENDING.value:
                    self._check(ask_id, watch, status_first=False)  # final: read it all
                elif watch.again:
                    self._check(ask_id, watch, status_first=False)
                continue
            try:
                record = _decode(reply, self._cores)
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
        self._wake(_text(data))

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
    # hash of the request's fingerprint and the ask id it created ('' while in flight).

    def _idem_key(self, owner: str, key: str) -> str | bytes:
        digest = hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()[:32]
        return _wire(f"{self._prefix}idem:{owner}:{digest}")

    @_translated
    async def claim_key(self, *, owner: str, key: str, fingerprint: str, lease: float) -> KeyClaim:
        """Claim ``key`` for ``fingerprint`` atomically, across every replica."""
        script = self._script(_KEY_CLAIM)
        reply = await script(
            keys=[self._idem_key(owner, key)], args=[fingerprint, max(1, math.ceil(lease * 1000))]
        )
        outcome: KeyOutcome = _text(reply[0])  # type: ignore[assignment]
        return KeyClaim(outcome, _text(reply[1]) or None)

    @_translated
    async def bind_key(
        self, *, owner: str, key: str, fingerprint: str, ask_id: str, window: float
    ) -> None:
        """Point the claimed key at ``ask_id`` for ``window`` seconds."""
        script = self._script(_KEY_BIND)
        await script(
            keys=[self._idem_key(owner, key)],
            args=[fingerprint, ask_id, max(1, math.ceil(window * 1000))],
        )

    @_translated
    async def release_key(self, *, owner: str, key: str, fingerprint: str) -> None:
        """Drop an unbound claim."""
        script = self._script(_KEY_RELEASE)
        await script(keys=[self._idem_key(owner, key)], args=[fingerprint])

    # The audit index (relay.store.listing): ``{prefix}owned:{owner}``, a sorted set of the
    # owner's ask ids by creation time. An id whose ask hash expired is dropped when a listing
    # meets it, and a few of the oldest are checked now and then on create, so the index
    # stays about as long as retention keeps the asks.

    def _owned_key(self, owner: str) -> str | bytes:
        return _wire(self._keys.owned(owner))

    async def _index_owned(self, record: AskRecord) -> None:
        """Cluster only: add the ask to its owner's audit index (there a slot of its own, so
        the client does what ``_CREATE`` does on one Redis)."""
        if record.owner is None:
            return
        key = self._owned_key(record.owner)
        if random.random() >= _CLUSTER_TRIM_SHARE:  # noqa: S311 - load spreading, not a secret
            await self._redis.zadd(key, {record.id: record.created_at.timestamp()})
            return
        # Now and then (one create in four), check a few of the oldest: on average more
        # leave than come, so the index stays about as long as retention keeps asks.
        async with self._redis.pipeline(transaction=False) as pipe:
            pipe.zadd(key, {record.id: record.created_at.timestamp()})
            pipe.zrange(key, 0, _CLUSTER_TRIM - 1)
            _, oldest = await pipe.execute()
        await self._drop_gone(key, [_text(i) for i in oldest])

    async def _drop_gone(self, key: str | bytes, ids: list[str]) -> set[str]:
        """Remove from index ``key`` the ids whose asks expired; returns those removed."""
        if not ids:
            return set()
        async with self._redis.pipeline(transaction=False) as pipe:
            for ask_id in ids:
                pipe.exists(self._key(ask_id))
            alive = await pipe.execute()
        gone = {i for i, there in zip(ids, alive, strict=True) if not there}
        if gone:
            await self._redis.zrem(key, *gone)
        return gone

    @_translated
    async def list_owned(
        self,
        *,
        owner: str,
        since: float | None = None,
        until: float | None = None,
        after: Position | None = None,
        limit: int = 100,
    ) -> list[AskRecord]:
        """``owner``'s asks created in ``[since, until)``, newest first, older than ``after``."""
        key = self._owned_key(owner)
        upper: float = math.inf if until is None else until
        if after is not None:
            upper = min(upper, after[0])
        lower = "-inf" if since is None else repr(since)
        found: list[AskRecord] = []
        skip = 0
        while len(found) < limit:
            batch: list[Any] = await self._redis.zrevrangebyscore(
                key,
                repr(upper) if math.isfinite(upper) else "+inf",
                lower,
                start=skip,
                num=limit - len(found) + 8,
                withscores=True,
            )
            if not batch:
                break
            skip += len(batch)
            entries = [(_text(pair[0]), float(pair[1])) for pair in batch]
            wanted = [
                (ask_id, score)
                for ask_id, score in entries
                if (until is None or score < until) and (after is None or (score, ask_id) < after)
            ]
            async with self._redis.pipeline(transaction=False) as pipe:
                for ask_id, _ in wanted:
                    pipe.hgetall(self._key(ask_id))
                fields = await pipe.execute()
            gone: list[str] = []
            for (ask_id, _), data in zip(wanted, fields, strict=True):
                record = _decode(data)
                if record is None:
                    gone.append(ask_id)
                elif len(found) < limit:
                    found.append(record)
            if gone:
                await self._redis.zrem(key, *gone)
                skip -= len(gone)
        return found

    # The webhook outbox (relay.store.outbox): ``{prefix}hook:{ask id}`` (the subscription),
    # ``{prefix}hooks:watch`` (a sorted set of subscribed asks whose end is not enqueued),
    # ``{prefix}outbox`` (a sorted set of deliveries by when they are due, or their lease
    # ends) and ``{prefix}delivery:{event id}`` (a hash: the delivery, attempts, state); on a
    # cluster each is tagged ``{<prefix>hooks}`` (``_Keys.hooks``): one slot for the outbox.

    def _hook_key(self, ask_id: str) -> str:
        return self._keys.hooks(f"hook:{ask_id}")

    def _delivery_key(self, event_id: str) -> str:
        return self._keys.hooks(f"delivery:{event_id}")

    @_translated
    async def hook_subscribe(self, *, ask_id: str, subscription: str, ttl: float) -> None:
        """Remember ``ask_id``'s subscription for ``ttl`` seconds, and watch the ask."""
        script = self._script(_HOOK_SUBSCRIBE)
        await script(
            keys=[self._hook_key(ask_id), self._keys.hooks("hooks:watch")],
            args=[ask_id, subscription, max(1, math.ceil(ttl * 1000)), time.time()],
        )

    @_translated
    async def hook_subscription(self, *, ask_id: str) -> str | None:
        """The subscription of ``ask_id``."""
        raw = await self._redis.get(self._hook_key(ask_id))
        return None if raw is None else _text(raw)

    @_translated
    async def hook_watched(self, *, limit: int = 100, offset: int = 0) -> list[str]:
        """Subscribed asks whose end is not enqueued yet, oldest first from ``offset``
        (expired ones are dropped from the watch as they are met)."""
        watch = self._keys.hooks("hooks:watch")
        ids = [_text(i) for i in await self._redis.zrange(watch, offset, offset + limit - 1)]
        gone = await self._drop_gone(watch, ids)
        return [i for i in ids if i not in gone]

    @_translated
    async def hook_enqueue(
        self, *, event_id: str, ask_id: str, delivery: str, due: float, final: bool
    ) -> bool:
        """Owe ``delivery`` unless ``event_id`` was enqueued before (on any replica)."""
        script = self._script(_HOOK_ENQUEUE)
        done = await script(
            keys=[
                self._delivery_key(event_id),
                self._keys.hooks("outbox"),
                self._keys.hooks("hooks:watch"),
                self._hook_key(ask_id),
            ],
            args=[event_id, delivery, repr(due), ask_id, "1" if final else "0"],
        )
        return bool(int(done))

    @_translated
    async def hook_claim(self, *, now: float, lease: float, limit: int) -> list[ClaimedDelivery]:
        """Lease up to ``limit`` due deliveries (atomically: one replica gets each)."""
        script = self._script(_LEASE_DUE)
        ids = [
            _text(i)
            for i in await script(
                keys=[self._keys.hooks("outbox")], args=[repr(now), repr(now + lease), limit]
            )
        ]
        if not ids:
            return []
        async with self._redis.pipeline(transaction=False) as pipe:
            for event_id in ids:
                pipe.hmget(self._delivery_key(event_id), ["delivery", "attempts", "state"])
            rows = await pipe.execute()
        claimed: list[ClaimedDelivery] = []
        for event_id, (delivery, attempts, state) in zip(ids, rows, strict=True):
            if delivery is None or _text(state) != "pending":
                await self._redis.zrem(self._keys.hooks("outbox"), event_id)  # settled or gone
                continue
            claimed.append(ClaimedDelivery(event_id, _text(delivery), int(attempts or 0)))
        return claimed

    @_translated
    async def hook_settle(
        self, *, event_id: str, outcome: str, error: str | None, keep: float
    ) -> None:
        """End a delivery; its id is kept ``keep`` seconds (so it is not enqueued again)."""
        script = self._script(_HOOK_SETTLE)
        await script(
            keys=[self._delivery_key(event_id), self._keys.hooks("outbox")],
            args=[event_id, outcome, error or "", max(1, math.ceil(keep * 1000))],
        )

    @_translated
    async def hook_retry(self, *, event_id: str, due: float, error: str) -> None:
        """Try the delivery again from ``due``."""
        script = self._script(_HOOK_RETRY)
        await script(
            keys=[self._delivery_key(event_id), self._keys.hooks("outbox")],
            args=[event_id, repr(due), error],
        )

    @_translated
    async def hook_state(self, *, event_id: str) -> dict[str, str] | None:
        """Where a delivery stands."""
        fields = await self._redis.hgetall(self._delivery_key(event_id))
        if not fields:
            return None
        data = {_text(k): _text(v) for k, v in fields.items()}
        return {k: data.get(k, "") for k in ("state", "attempts", "error")}

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
        reply = await self._run(
            self._script(_VOTE),
            self._claim_keys(ask_id),
            [
                index,
                vote.by.id,
                _compact(vote.to_dict()),
                required,
                json.dumps(sorted(veto)),
                vote.label,
                _compact(item_to_json(item)),
                vote.at.isoformat(),
                ask_id,
                self._retention_ms,
                self._channel,
                _epoch(vote.at),
            ],
        )
        if _text(reply[0]) == "bad_index":
            raise IndexError(f"ask {ask_id} has no question {index}")
        outcome: VoteOutcome = _text(reply[0])  # type: ignore[assignment]
        if self._cluster and outcome in ("completed", "not_pending", "unknown"):
            await self._release(ask_id)
            if outcome == "completed":
                await self._unsettle(ask_id, _epoch(vote.at))
        found = _decode_flat(reply[1]) if len(reply) > 1 else None
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
        claim = self._script(_CLAIM_REMINDER)
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
        done = await self._script(_REMINDED)(
            keys=[self._key(ask_id)], args=[sent, "" if next_at is None else repr(next_at)]
        )
        if int(done) == 1 and next_at is not None:
            await self._redis.zadd(self._reminder_index, {ask_id: next_at})
        elif int(done) == 1:
            await self._redis.zrem(self._reminder_index, ask_id)
        return bool(int(done))

    async def _unsettle(self, ask_id: str, at: float) -> None:
        """Cluster only: index the ask that just ended as unsettled (the claim's script
        cannot reach the index slot). A failure is logged: the claim stands."""
        try:
            await self._redis.zadd(self._unsettled_index, {ask_id: at}, nx=True)
        except (RedisError, OSError) as exc:
            _log.warning("could not index ask %s as unsettled (%s)", ask_id, exc)

    @_translated
    async def settled(self, *, ask_id: str, index: int | None = None) -> None:
        """Record a message's final update as landed; the last one unindexes the ask."""
        keys = [self._key(ask_id)] if self._cluster else [self._key(ask_id), self._unsettled_index]
        done = await self._settled(keys=keys, args=["" if index is None else index, ask_id])
        if int(done) == 1 and self._cluster:
            await self._redis.zrem(self._unsettled_index, ask_id)

    @_translated
    async def unsettled(self, *, ask_id: str) -> frozenset[int]:
        """The posted questions not yet settled (one script on the ask's hash)."""
        found = await self._script(_UNSETTLED)(keys=[self._key(ask_id)])
        return frozenset(int(i) for i in found)

    @_translated
    async def claim_unsettled(
        self, *, now: float, grace: float, lease: float, limit: int = 100
    ) -> list[str]:
        """Claim unsettled asks in one script on the index: two replicas never both do."""
        ids = await self._script(_LEASE_DUE)(
            keys=[self._unsettled_index], args=[repr(now - grace), repr(now + lease - grace), limit]
        )
        return [_text(i) for i in ids]

    @_translated
    async def next_unsettled(self, *, grace: float) -> float | None:
        """When the earliest unsettled ask can be claimed."""
        first = await self._redis.zrange(self._unsettled_index, 0, 0, withscores=True)
        return float(first[0][1]) + grace if first else None


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

    def owned(self, owner: str) -> str:
        """``owner``'s audit index (``relay.store.listing``): one key, commands of its own."""
        return f"{self._prefix}owned:{owner}"

    def hooks(self, name: str) -> str:
        """A key of the webhook outbox (subscriptions, deliveries, the watch list and the
        queue): on a cluster one slot for all of them, since each script moves a delivery
        between several."""
        if self._cluster:
            return f"{self._prefix}{{{self._prefix}hooks}}:{name}"
        return f"{self._prefix}{name}"


def _wire(text: str) -> str | bytes:
    """``text`` as Redis takes it: as it is, or, if it holds a lone surrogate (which UTF-8
    cannot encode, and which ``os.environ`` makes of bytes that are not UTF-8), its UTF-8
    bytes with the surrogates passed through: one name per text, whatever it holds."""
    try:
        text.encode()
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogatepass")
    return text


# How many of an owner's oldest indexed asks a create checks for expiry (more than one, so
# that more leave than come); on a cluster, the client checks more, less often.
_OWNED_TRIM = 2
_CLUSTER_TRIM = 8
_CLUSTER_TRIM_SHARE = 0.25


class _Watch:
    """The waiters of one ask (each its own future, woken directly: no shield, no shared
    future), whether a read is on its way, and how the ask ended once it has."""

    __slots__ = ("again", "core", "ended", "failure", "first", "more", "reading", "result")

    def __init__(self) -> None:
        self.first: asyncio.Future[AskRecord | None] | None = None  # (most asks have one)
        self.more: list[asyncio.Future[AskRecord | None]] | None = None
        self.core: _Core | None = None  # the ask's unchanging part, if known here
        self.reading = False
        self.again = False
        self.ended = False  # settled or failed: no more reads, later waiters return at once
        self.result: AskRecord | None = None
        self.failure: Exception | None = None

    def add(self, waiter: asyncio.Future[AskRecord | None]) -> None:
        if self.first is None:
            self.first = waiter
        elif self.more is None:
            self.more = [waiter]
        else:
            self.more.append(waiter)

    def remove(self, waiter: asyncio.Future[AskRecord | None]) -> bool:
        """Forget ``waiter``; whether any waiter is left."""
        if self.first is waiter:
            self.first = None
        elif self.more is not None:
            self.more.remove(waiter)
        return self.first is not None or bool(self.more)

    def _waiters(self) -> list[asyncio.Future[AskRecord | None]]:
        return ([self.first] if self.first is not None else []) + (self.more or [])

    def settle(self, record: AskRecord | None) -> None:
        if self.ended:
            return
        self.ended, self.result = True, record
        for waiter in self._waiters():
            if not waiter.done():
                waiter.set_result(record)

    def fail(self, exc: Exception) -> None:
        if self.ended:
            return
        self.ended, self.failure = True, exc
        for waiter in self._waiters():
            if not waiter.done():
                waiter.set_exception(exc)


def _epoch(at: datetime | None) -> float:
    """``at`` in epoch seconds (now, if unknown)."""
    return at.timestamp() if at is not None else time.time()


_COMPACT = json.JSONEncoder(separators=(",", ":"))  # (json.dumps makes one per call)


def _compact(value: Any) -> str:
    """``value`` as JSON without spaces (``json.dumps`` with those separators)."""
    return _COMPACT.encode(value)


def _message_json(message: MessageRef) -> str:
    return _compact([message.channel, message.ts])


def _text(value: Any) -> str:
    # (surrogatepass: the text ``_wire`` sent comes back as it was)
    return value.decode("utf-8", "surrogatepass") if isinstance(value, bytes) else str(value)


def _pairs(flat: list[Any]) -> dict[str, str]:
    it = iter(flat)
    return {_text(k): _text(v) for k, v in zip(it, it, strict=True)}


_NO_META: dict[str, Any] = {}  # every core without meta shares it (never changed: records copy)


@dataclass(frozen=True, slots=True)
class _Core:
    """The part of a record that never changes, decoded."""

    id: str
    request: AskUserQuestionRequest
    target: Target
    created_at: datetime
    deadline: float | None
    owner: str | None
    meta: dict[str, Any]
    digest: int = -1  # hash() of its JSON text (never -1): whether a reply's core is this one


class _Cores:
    """Recently decoded cores by their JSON text, so that the record a click reads and the
    record its claim returns decode the request once, not twice; bounded (oldest first),
    small: it serves reads made moments apart, not the pending asks."""

    __slots__ = ("_by_id", "_by_text", "_size")

    def __init__(self, size: int = _CORE_CACHE) -> None:
        self._by_text: dict[str, _Core] = {}
        self._by_id: dict[str, _Core] = {}
        self._size = size

    def of(self, ask_id: str) -> _Core | None:
        """The core of ask ``ask_id`` if it is among the recent ones."""
        return self._by_id.get(ask_id)

    def get(self, text: str) -> _Core:
        core = self._by_text.get(text)
        if core is None:
            data = json.loads(text)
            core = _Core(
                id=data["id"],
                request=AskUserQuestionRequest.from_dict(data["request"]),
                target=Target.from_dict(data["target"]),
                created_at=datetime.fromisoformat(data["created_at"]),
                deadline=data.get("deadline"),
                owner=data.get("owner"),
                meta=data.get("meta") or _NO_META,
                digest=hash(text),
            )
            self.put(text, core)
        return core

    def put(self, text: str, core: _Core) -> None:
        if len(self._by_text) >= self._size:
            del self._by_text[next(iter(self._by_text))]
        self._by_text[text] = core
        self._by_id.pop(core.id, None)
        if len(self._by_id) >= self._size:
            del self._by_id[next(iter(self._by_id))]
        self._by_id[core.id] = core


def _decode(
    fields: dict[Any, Any], cores: _Cores | None = None, known: _Core | None = None
) -> AskRecord | None:
    if not fields:
        return None
    return _record_of({_text(k): _text(v) for k, v in fields.items()}, cores, known)


def _decode_flat(
    flat: list[Any],
    cores: _Cores | None = None,
    known: _Core | None = None,
    mine: tuple[int, AskUserQuestionAnswerItem] | None = None,
) -> AskRecord | None:
    """``_decode`` of a script's ``HGETALL`` (a flat list); ``mine``: an answer this process
    just recorded, the item itself (its JSON in the reply is what it sent)."""
    if not flat:
        return None
    return _record_of(_pairs(flat), cores, known, mine)


def _record_of(
    data: dict[str, str],
    cores: _Cores | None,
    known: _Core | None,
    mine: tuple[int, AskUserQuestionAnswerItem] | None = None,
) -> AskRecord | None:
    text = data.get("core")
    if text is None:
        return None  # (not an ask)
    if known is not None and (text == "" or known.digest == hash(text)):
        core = known  # (the same ask's, held here: nothing to decode; "": left out for it)
    else:
        core = (cores or _Cores(1)).get(text)
    n = int(data["n"])
    messages: list[MessageRef | None] = [None] * n
    responses: list[AskUserQuestionAnswerItem | None] = [None] * n
    for i in range(n):
        if (message := data.get(f"msg:{i}")) is not None:
            channel, ts = json.loads(message)
            messages[i] = MessageRef(channel, ts)
        if (answer := data.get(f"ans:{i}")) is not None:
            if mine is not None and mine[0] == i:
                responses[i] = mine[1]
            else:
                responses[i] = item_from_json(json.loads(answer))
    error = json.loads(data["error"]) if data.get("error") else None
    finished_at = data.get("finished_at")
    return AskRecord(
        id=core.id,
        request=core.request,
        target=core.target,
        created_at=core.created_at,
        deadline=core.deadline,
        status=AskStatus(data["status"]),
        messages=tuple(messages),
        responses=tuple(responses),
        error=AskError(error["code"], error["message"], error.get("reason")) if error else None,
        owner=core.owner,
        finished_at=datetime.fromisoformat(finished_at) if finished_at else None,
        meta=dict(core.meta),  # records share the rest, which is immutable
    )


def _votes_of(raw: str) -> tuple[Vote, ...]:
    data = json.loads(raw)
    return tuple(Vote.from_dict(v) for v in data) if isinstance(data, list) else ()
