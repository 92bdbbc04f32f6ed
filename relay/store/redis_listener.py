"""One channel's messages, read on a connection of its own: the waiters' wake-ups, cheaply.

Every ask that ends publishes its id, and every replica's store hears it, the one whose claim
ended it too (Redis has no way to leave the publisher out). Read through redis-py's
``PubSub``, each message went through its retry wrapper, its parser's push handling and its
message dictionary before the store saw the id: more of the relay's own time per click than
the claim's reply, and often just ahead of it, as Redis writes the message first.
``listen_channel`` reads the connection's bytes itself with hiredis's reader instead, and
hands each message's payload over as it is parsed.

The connection is made as the pool makes its connections (TLS, credentials, database, the
Sentinels' master, RESP3 or RESP2: hiredis reads a RESP3 push as the list RESP2 sends);
without hiredis, or with a redis-py whose connection has no stream of its own to read,
``listen_channel`` raises ``NotSupported`` before anything is subscribed, and the caller
listens through redis-py instead. Idle for the pool's health-check interval,
it pings; no answer within the socket timeout counts as a lost connection, as does the
connection closing or an error reply. Each ends ``listen_channel`` with
``ConnectionError`` (redis-py's), and the caller reconnects.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from redis.asyncio.connection import AbstractConnection, ConnectionPool
from redis.exceptions import ConnectionError as RedisConnectionError

from relay.errors import RelayException
from relay.store.redis_pipelined import CHUNK, own_connection

try:
    import hiredis
except ImportError:  # (optional for redis-py: then the caller listens through redis-py)
    hiredis = None  # type: ignore[assignment]

__all__ = ["NotSupported", "listen_channel"]


class NotSupported(RelayException):
    """This connection cannot be read here (no hiredis): listen through redis-py."""


async def listen_channel(
    pool: ConnectionPool,
    channel: str,
    *,
    on_message: Callable[[bytes], None],
    on_subscribed: Callable[[], None],
) -> None:
    """Subscribe to ``channel`` on a new connection of ``pool``'s kind and call
    ``on_message`` with each message's payload, ``on_subscribed`` once Redis confirms the
    subscription; runs until the connection is lost (``ConnectionError``, or ``OSError``
    from the socket) or it is cancelled. Raises ``NotSupported`` first if it cannot."""
    if hiredis is None:
        raise NotSupported("hiredis is not installed")
    connection = await own_connection(pool)
    try:
        reader: asyncio.StreamReader | None = getattr(connection, "_reader", None)
        writer: asyncio.StreamWriter | None = getattr(connection, "_writer", None)
        if reader is None or writer is None:
            raise NotSupported("this redis-py's connection has no stream to read")
        await _read(connection, reader, writer, channel, on_message, on_subscribed)
    finally:
        await connection.disconnect(nowait=True)


async def _read(
    connection: AbstractConnection,
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
    channel: str,
    on_message: Callable[[bytes], None],
    on_subscribed: Callable[[], None],
) -> None:
    assert hiredis is not None
    pack: Any = hiredis.pack_command
    parser: Any = hiredis.Reader()
    idle_for: float | None = getattr(connection, "health_check_interval", None) or None
    answer_within: float | None = getattr(connection, "socket_timeout", None) or None
    writer.write(pack(("SUBSCRIBE", channel)))
    pinged = False
    while True:
        try:
            async with asyncio.timeout(answer_within if pinged else idle_for):
                data = await reader.read(CHUNK)
        except TimeoutError:
            if pinged:
                raise RedisConnectionError(
                    f"Redis did not answer a PING on the subscription within {answer_within}s"
                ) from None
            writer.write(pack(("PING",)))
            pinged = True
            continue
        if not data:
            raise RedisConnectionError("Redis closed the subscription's connection")
        pinged = False  # (anything read shows the connection is alive)
        parser.feed(data)
        while (reply := parser.gets()) is not False:
            if isinstance(reply, hiredis.ReplyError):
                raise RedisConnectionError(f"the subscription failed: {reply}")
            if not isinstance(reply, list) or not reply:
                continue
            kind = reply[0]
            if kind == b"message" and len(reply) == 3:
                on_message(reply[2])
            elif kind == b"subscribe":
                on_subscribed()
            # (a PING's answer: b"pong" on RESP2, a plain PONG on RESP3; nothing else is
            # subscribed here)
