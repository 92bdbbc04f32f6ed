"""What every part of the Redis store shares: the connection, key names, scripts, the claims'
index upkeep on a cluster, and turning Redis errors into ``StoreUnavailable``."""

from __future__ import annotations

import asyncio
import functools
import logging
import math
from collections.abc import Callable, Coroutine, Sequence
from typing import Any, ParamSpec, TypeVar

from redis.asyncio.cluster import RedisCluster
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import NoScriptError, RedisError

from relay.store.base import PendingLimitReached, StoreUnavailable
from relay.store.record import AskRecord
from relay.store.redis import lua
from relay.store.redis.codec import Cores, Keys, decode, decode_flat, wire
from relay.store.redis.watch import Watch
from relay.store.redis_connect import (
    DEFAULT_MAX_CONNECTIONS,
    RedisClient,
    RedisConnection,
    RedisTLS,
    connect,
)
from relay.store.redis_pipelined import PipelinedCommands

__all__ = ["RedisBase", "translated", "unreachable"]

_log = logging.getLogger("relay.store.redis")

P = ParamSpec("P")
R = TypeVar("R")


def translated(
    method: Callable[P, Coroutine[Any, Any, R]],
) -> Callable[P, Coroutine[Any, Any, R]]:
    """Turn Redis and socket errors into ``StoreUnavailable`` at the store's boundary."""

    @functools.wraps(method)
    async def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return await method(*args, **kwargs)
        except (RedisError, OSError) as exc:
            raise unreachable(exc) from exc

    return wrapper


def unreachable(exc: Exception) -> StoreUnavailable:
    return StoreUnavailable(
        f"Redis is unreachable: {exc}; check that it is running and that REDIS_URL"
        " points at it, then retry (the relay resumes once Redis answers)"
    )


class RedisBase:
    """The state and helpers the parts of ``RedisStore`` share (each part is a subclass).

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
        self._scripts: dict[str, Any] = {}  # name -> its Script (see _script)
        self._cluster = self._connection.cluster
        self._keys = Keys(prefix, cluster=self._cluster)
        self._ask_prefix = self._keys.ask("")  # (one Redis: an ask's key is this and its id)
        self._prefix = prefix
        self._deadlines = self._keys.index("deadlines")
        self._owners = self._keys.index("owners")
        self._unsettled_index = self._keys.index("unsettled")
        self._settled = self._script("settled")
        self._max_pending = max_pending_per_owner
        self._channel = f"{prefix}done"
        self._retention_ms = max(1, math.ceil(retention * 1000))
        self._create = self._script("create")
        self._answer = self._script("answer")
        self._finish = self._script("finish")
        # Claims, the hot path, skip the client on one Redis (a cluster's keys span nodes).
        self._pipelined = (
            None
            if isinstance(self._redis, RedisCluster)
            else PipelinedCommands(pool=self._redis.connection_pool)
        )
        self._set_message = self._script("set_message")
        self._index_add = self._script("index_add")
        self._index_release = self._script("index_release")
        self._cores = Cores()
        self._watches: dict[str, Watch] = {}
        self._in_flight: dict[str, int] = {}  # ask id -> claims of ours on their way
        self._woken: set[str] = set()  # of those, woken by pub/sub meanwhile
        self._reads: dict[str, asyncio.Future[AskRecord | None]] = {}
        self._listener: asyncio.Task[None] | None = None
        self._backoff = 0.1  # before the listener's next reconnect
        self._subscribed = asyncio.Event()
        self._subscribing: asyncio.Future[None] | None = None
        self._queued: dict[str, bool] = {}  # ask id -> read only its status first
        self._reader: asyncio.Task[None] | None = None
        self._reread_after = 0.1  # before a waiter's read that Redis cut off is sent again
        self._gets: list[tuple[str, asyncio.Future[dict[Any, Any]]]] = []
        self._direct = False  # a get() is on its way outside the batches
        self._closed = False

    def _script(self, name: str) -> Any:
        """Script ``name`` (``scripts/<name>.lua``), registered once per store (its SHA1 is
        computed then)."""
        script = self._scripts.get(name)
        if script is None:
            script = self._scripts[name] = self._redis.register_script(lua.source(name))
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
                    return decode_flat(reply, self._cores)
                return decode(reply, self._cores)
        return decode(await self._redis.hgetall(key), self._cores)

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
                args=[score, record.id, wire(record.owner or ""), self._max_pending or 0],
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

    @translated
    async def ping(self) -> None:
        """Raise ``StoreUnavailable`` if Redis does not answer."""
        await self._redis.ping()

    def _owned_key(self, owner: str) -> str | bytes:
        return wire(self._keys.owned(owner))

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

    async def _unsettle(self, ask_id: str, at: float) -> None:
        """Cluster only: index the ask that just ended as unsettled (the claim's script
        cannot reach the index slot). A failure is logged: the claim stands."""
        try:
            await self._redis.zadd(self._unsettled_index, {ask_id: at}, nx=True)
        except (RedisError, OSError) as exc:
            _log.warning("could not index ask %s as unsettled (%s)", ask_id, exc)
