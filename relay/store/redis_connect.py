"""Connecting to the relay's Redis, whichever way the operator runs it (the ``redis`` extra).

``connect`` turns a ``REDIS_URL`` (see ``relay.store.redis_url``) and the TLS files into a
``RedisConnection``: one Redis, the master a set of Sentinels names (found again after a
failover), or a Redis Cluster. The ask store and the grant store both connect here, with the
same timeouts and the same quick retry, so the two never drift apart.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import redis.asyncio as aioredis
from redis.asyncio.cluster import ClusterNode, RedisCluster
from redis.asyncio.connection import SSLConnection
from redis.asyncio.retry import Retry
from redis.asyncio.sentinel import Sentinel, SentinelConnectionPool, SentinelManagedConnection
from redis.backoff import ExponentialWithJitterBackoff
from redis.exceptions import ConnectionError as RedisConnectionError

from relay.store.redis_url import RedisAddress, parse_redis_url

DEFAULT_MAX_CONNECTIONS = 64
"""Connections a store opens to Redis at most (``RELAY_REDIS_MAX_CONNECTIONS``); commands
beyond them wait their turn. Waiting long-polls hold none."""

__all__ = ["RedisClient", "RedisConnection", "RedisTLS", "connect"]

RedisClient = aioredis.Redis | RedisCluster
"""A client of one Redis (also a Sentinel-managed master) or of a Redis Cluster."""


@dataclass(frozen=True, slots=True, kw_only=True)
class RedisTLS:
    """Files for TLS (``rediss``): the CA that signed the server's certificate (default: the
    system's), and a client certificate and its key for servers that ask for one."""

    ca_file: str | None = None
    cert_file: str | None = None
    key_file: str | None = None

    def kwargs(self) -> dict[str, Any]:
        """redis-py's keyword arguments for these files."""
        return {
            "ssl_ca_certs": self.ca_file,
            "ssl_certfile": self.cert_file,
            "ssl_keyfile": self.key_file,
        }


@dataclass(slots=True, kw_only=True)
class RedisConnection:
    """The client to send commands with, whether it is a cluster's, and what to close."""

    client: RedisClient
    cluster: bool
    address: RedisAddress | None = None
    _also: list[Sentinel] = field(default_factory=list, repr=False)

    @classmethod
    def of(cls, client: RedisClient) -> RedisConnection:
        """Wrap a client someone else built (tests, embedding applications)."""
        return cls(client=client, cluster=isinstance(client, RedisCluster))

    async def aclose(self) -> None:
        """Close the client's connections (and a Sentinel's own)."""
        await self.client.aclose()
        for sentinel in self._also:
            await sentinel.aclose()


class _SentinelConnection(SentinelManagedConnection):
    """A connection to the master that asks the Sentinels where it is on every reconnect.

    redis-py reconnects a pooled connection to the address it had (redis/redis-py#3874), so
    after a failover each one failed once against the dead master before finding the new one.
    """

    async def connect_check_health(
        self, check_health: bool = True, retry_socket_connect: bool = True
    ) -> None:
        if not self.is_connected and self.connection_pool.is_master:
            self.host, self.port = await self.connection_pool.get_master_address()
        await super().connect_check_health(
            check_health=check_health, retry_socket_connect=retry_socket_connect
        )


class _SentinelSSLConnection(_SentinelConnection, SSLConnection):
    """``_SentinelConnection`` over TLS."""


class _BlockingSentinelPool(SentinelConnectionPool, aioredis.BlockingConnectionPool):
    """A Sentinel master's pool that waits for a free connection rather than failing."""


def _common() -> dict[str, Any]:
    return {
        "socket_connect_timeout": 2.0,
        "socket_timeout": 5.0,
        "health_check_interval": 15,
        # One quick retry on a fresh connection heals pooled connections that a Redis
        # restart closed; a Redis that is down still fails within milliseconds.
        "retry": Retry(
            ExponentialWithJitterBackoff(base=0.01, cap=0.1),
            retries=2,
            supported_errors=(RedisConnectionError,),
        ),
    }


def connect(
    url: str,
    *,
    tls: RedisTLS | None = None,
    max_connections: int = DEFAULT_MAX_CONNECTIONS,
    pool_timeout: float = 5.0,
) -> RedisConnection:
    """A connection to ``url`` (nothing is sent until the first command).

    ``ValueError`` if the URL cannot be read (``relay serve`` checks it earlier, in its
    settings); ``tls`` applies to ``rediss`` URLs only. To one Redis (and to a Sentinel's
    master), at most ``max_connections`` at once: a command that finds them all busy waits
    up to ``pool_timeout`` for one instead of failing (redis-py's default pool raised
    ``MaxConnectionsError`` past 100, which read as "Redis is unreachable"). A cluster keeps
    redis-py's pools, ``max_connections`` per node.
    """
    address = parse_redis_url(url)
    options = _common()
    if address.tls:
        options.update((tls or RedisTLS()).kwargs())
    if address.mode == "single":
        pool = aioredis.BlockingConnectionPool.from_url(
            url, max_connections=max_connections, timeout=pool_timeout, **options
        )
        return RedisConnection(
            client=aioredis.Redis.from_pool(pool), cluster=False, address=address
        )
    credentials: dict[str, Any] = {"username": address.username, "password": address.password}
    if address.mode == "cluster":
        nodes = [ClusterNode(host, port) for host, port in address.hosts]
        if address.tls:
            options["ssl"] = True
        return RedisConnection(
            client=RedisCluster(
                startup_nodes=nodes, max_connections=max_connections, **credentials, **options
            ),
            cluster=True,
            address=address,
        )
    # Sentinels answer without the master's password; over TLS they get the same files.
    sentinel_options = {k: options[k] for k in ("socket_connect_timeout", "socket_timeout")}
    options["connection_class"] = _SentinelConnection
    if address.tls:
        sentinel_options.update(ssl=True, **(tls or RedisTLS()).kwargs())
        options["connection_class"] = _SentinelSSLConnection
    sentinel = Sentinel(  # type: ignore[no-untyped-call, unused-ignore]
        list(address.hosts), sentinel_kwargs=sentinel_options
    )
    assert address.service is not None  # parse_redis_url requires it for Sentinel URLs
    client = sentinel.master_for(
        address.service,
        db=address.db,
        connection_pool_class=_BlockingSentinelPool,
        max_connections=max_connections,
        timeout=pool_timeout,
        **credentials,
        **options,
    )
    return RedisConnection(client=client, cluster=False, address=address, _also=[sentinel])
