"""Commands pipelined on a connection of their own: the hot path's short way to one Redis.

A click on Redis is one ``EVALSHA``; a create is another, then one more to record where it
was posted and a read of the ask after. Sent through redis-py's client, each one also pays
for the client's retry wrapper, the blocking pool's checkout and its argument filtering,
about a third of the relay's CPU per click. ``PipelinedCommands`` sends them on one
connection of its own instead, made as the pool makes its connections (so TLS, credentials,
database and the Sentinels' master are the same), packed by redis-py and read back by
redis-py's parser. Each call is written at once and waits for its reply; Redis answers a
connection's commands in the order they came, so one reader task hands the replies out first
in, first out, and concurrent calls share round trips instead of queueing for connections.

What can go wrong, and who sees it (the caller decides what to do next, see
``RedisStore._run``):

- an error reply (``NOSCRIPT``, ``READONLY`` from a plain Redis, a script's own error) is
  that call's alone, raised as redis-py raises it; the connection stays in step;
- a lost connection (reset, Redis restarted, a Sentinel master demoted to a replica, which
  redis-py's Sentinel connection turns into a ``ConnectionError``) fails every call waiting
  on it with that ``ConnectionError``, whether or not its script ran; the next call connects
  afresh;
- a reply that does not come within the socket timeout fails every waiting call with
  redis-py's ``TimeoutError`` and drops the connection, as the client's own path does;
- a caller that gives up (is cancelled) keeps its place in line: its reply is read and
  dropped, so the replies of the others stay theirs.
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
from collections import deque
from collections.abc import Callable, Coroutine, Sequence
from typing import Any

try:
    import hiredis
except ImportError:  # (hiredis is optional for redis-py; then redis-py packs)
    hiredis = None  # type: ignore[assignment]

from redis.asyncio.connection import AbstractConnection, ConnectionPool
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import InvalidResponse, RedisError, ResponseError
from redis.exceptions import TimeoutError as RedisTimeoutError

from relay.seam.tasks import stop_task

__all__ = ["CHUNK", "PipelinedCommands", "own_connection"]


class PipelinedCommands:
    """Commands (``EVALSHA``, plain reads) pipelined on one connection of its own, made
    like ``pool``'s when first needed (and again after it was lost); it does not count
    against the pool's limit."""

    def __init__(self, *, pool: ConnectionPool) -> None:
        """Nothing is connected until the first call."""
        self._pool = pool
        self._line: _Line | None = None
        self._opening: asyncio.Future[_Line] | None = None
        self._closed = False
        self._unsupported = False  # this redis-py's connection has no stream writer to share

    def evalsha(
        self, sha: str, keys: Sequence[str | bytes], args: Sequence[Any]
    ) -> Coroutine[Any, Any, Any]:
        """The script's reply, as redis-py's ``evalsha`` returns it; redis-py's errors as the
        module docstring says (``ConnectionError`` also once closed). (``command``'s own
        coroutine: a click awaits one coroutine here, not two.)"""
        return self.command("EVALSHA", sha, len(keys), *keys, *args)

    async def command(self, *command: Any) -> Any:
        """The reply to ``command`` as redis-py's parser reads it (no response callback: a
        hash is a ``dict`` on RESP3, a flat list on RESP2); errors as for ``evalsha``."""
        if self._unsupported:
            raise RedisConnectionError("commands take the client's path with this redis-py")
        line = self._line
        if line is None or line.lost:
            line = await self._open()
        return await line.send(command)

    async def _open(self) -> _Line:
        if self._closed:
            raise RedisConnectionError("the Redis store closed")
        if self._opening is None:
            # Calls that come while it connects share the one connection.
            self._opening = asyncio.ensure_future(self._connect())
            self._opening.add_done_callback(self._opened)
        return await asyncio.shield(self._opening)

    async def _connect(self) -> _Line:
        connection = await own_connection(self._pool)
        if getattr(connection, "_writer", None) is None:
            # (A redis-py that renamed it: every call takes the client's path, still right.)
            self._unsupported = True
            await connection.disconnect(nowait=True)
            raise RedisConnectionError("commands take the client's path with this redis-py")
        line = self._line = _Line(connection)
        return line

    def _opened(self, future: asyncio.Future[_Line]) -> None:
        self._opening = None
        if not future.cancelled():
            future.exception()  # each caller re-raises it; none is left unretrieved

    async def aclose(self) -> None:
        """Close the connection; calls still waiting fail with ``ConnectionError``."""
        self._closed = True
        opening = self._opening
        if opening is not None:
            with contextlib.suppress(Exception):
                await stop_task(opening)
        line, self._line = self._line, None
        if line is not None:
            await line.close()


CHUNK = 65536  # the most read from a connection's stream at once


async def own_connection(pool: ConnectionPool) -> AbstractConnection:
    """A new connection made and connected as ``pool`` makes its own (TLS, credentials,
    database, the Sentinels' master), outside the pool's count; closed again if connecting
    fails."""
    connection: AbstractConnection = pool.make_connection()  # type: ignore[no-untyped-call, unused-ignore]
    try:
        await connection.connect()  # type: ignore[no-untyped-call, unused-ignore]
    except BaseException:
        await connection.disconnect(nowait=True)
        raise
    return connection


def packer(connection: AbstractConnection) -> Callable[[Sequence[Any]], list[bytes]]:
    """How to put a command on ``connection``'s wire: hiredis's packer (in C, the same bytes
    as redis-py's for the str, bytes, int and float arguments the store sends) when the
    connection encodes text as UTF-8, strictly, as hiredis does; else redis-py's own.
    Either way a command's name is one word (redis-py would split ``"CONFIG GET"``)."""
    encoder = getattr(connection, "encoder", None)
    if (
        hiredis is not None
        and encoder is not None
        and codecs.lookup(encoder.encoding).name == "utf-8"
        and encoder.encoding_errors == "strict"
    ):
        pack: Any = hiredis.pack_command
        return lambda command: [pack(tuple(command))]
    return lambda command: list(connection.pack_command(*command))


class _Line:
    """One connection: written by the callers, read by its reader task, in the same order."""

    __slots__ = (
        "_closing",
        "_idle",
        "_loop",
        "_pack",
        "_reader",
        "_unsent",
        "_waiting",
        "connection",
        "lost",
    )

    def __init__(self, connection: AbstractConnection) -> None:
        self.connection = connection
        self._pack = packer(connection)
        self.lost = False
        self._closing = False  # close() disconnects, and waits for it (see there)
        self._loop = asyncio.get_running_loop()
        self._waiting: deque[asyncio.Future[Any]] = deque()
        self._unsent: list[bytes] = []
        self._idle: asyncio.Future[None] | None = None
        self._reader = self._loop.create_task(self._read(), name="relay-redis-pipelined")

    def send(self, command: Sequence[Any]) -> asyncio.Future[Any]:
        """Send the command; the future gets its reply.

        On a line with nothing in flight the command is written at once (a lone click does
        not wait a turn of the loop); while others are, it is queued and written at the
        loop's next turn with whatever else came meanwhile, in one write (one system call,
        not one per call). No await between queueing the future and writing or queueing the
        bytes keeps the replies in the order Redis reads the commands."""
        writer: asyncio.StreamWriter | None = getattr(self.connection, "_writer", None)
        if self.lost or writer is None or writer.is_closing():
            # Closed while idle (Redis dropped it, say): the next call connects afresh.
            self.lost = True
            self._reader.cancel()
            raise RedisConnectionError("the pipelined connection was lost")
        packed = self._pack(command)  # (bad arguments raise here, before anything is queued)
        future: asyncio.Future[Any] = self._loop.create_future()
        at_once = not self._waiting
        self._waiting.append(future)
        if at_once:
            self._write(writer, packed)
        else:
            if not self._unsent:
                self._loop.call_soon(self._flush)
            self._unsent.extend(packed)
        idle = self._idle
        if idle is not None and not idle.done():
            idle.set_result(None)
        return future

    def _flush(self) -> None:
        # redis-py has no public write that neither awaits nor runs a task per call
        # (``send_packed_command`` wraps its write in ``wait_for``): its stream writer is the
        # one the connection itself writes with.
        unsent, self._unsent = self._unsent, []
        writer: asyncio.StreamWriter | None = getattr(self.connection, "_writer", None)
        if self.lost or writer is None:
            return  # (the reader fails their callers)
        self._write(writer, unsent)

    def _write(self, writer: asyncio.StreamWriter, data: list[bytes]) -> None:
        try:
            writer.writelines(data)
        except Exception:
            # A transport that broke under us: stopping the reader fails every waiting call
            # with ConnectionError, rather than leaving them to the read timeout.
            self._reader.cancel()

    async def _read(self) -> None:
        loop = self._loop
        waiting = self._waiting
        replies = _replies_of(self.connection)
        try:
            while True:
                if not waiting:
                    # Nothing is owed: a read now would only time out.
                    self._idle = loop.create_future()
                    await self._idle
                    continue
                for reply in await replies():
                    future = waiting.popleft()
                    if future.done():  # its caller gave up; the reply was still its own
                        continue
                    if isinstance(reply, Exception):  # (an error reply, redis-py's class)
                        future.set_exception(reply)
                    else:
                        future.set_result(reply)
        except BaseException as exc:
            self.lost = True
            failure: Exception = RedisConnectionError("the pipelined connection closed")
            if isinstance(exc, RedisError):
                failure = exc
            elif isinstance(exc, Exception):
                failure = RedisConnectionError(f"the pipelined connection was lost ({exc!r})")
            while waiting:
                future = waiting.popleft()
                if not future.done():
                    future.set_exception(failure)
            if not self._closing:
                await self.connection.disconnect(nowait=True)
            if not isinstance(exc, Exception):
                raise

    async def close(self) -> None:
        """Stop reading and disconnect, waiting until the connection has closed: a TLS
        connection closes only once its shutdown has been sent, which an event loop that
        stops first would cut short (and leave its socket open)."""
        self.lost = True
        self._closing = True
        await stop_task(self._reader)
        await self.connection.disconnect()


def _replies_of(
    connection: AbstractConnection,
) -> Callable[[], Coroutine[Any, Any, list[Any]]]:
    """How the line reads: each call waits for the next replies (at least one; all that
    came in one read), an error reply as redis-py's exception object, in order.

    With hiredis, its reader is fed straight from the connection's stream, configured as
    redis-py configures it (the same error classes, decoding, RESP3 pushes told apart and
    skipped): one wake-up of the reader task per read, not one per reply, and none of
    redis-py's per-reply layers. Without it, redis-py's ``read_response``, a reply at a time.
    A reply later than the socket timeout is redis-py's ``TimeoutError``; a closed
    connection its ``ConnectionError``."""
    stream: asyncio.StreamReader | None = getattr(connection, "_reader", None)
    parse_error = getattr(getattr(connection, "_parser", None), "parse_error", None)
    encoder = getattr(connection, "encoder", None)
    push: type | None = getattr(hiredis, "PushNotification", None)  # (hiredis 3.2 and later)
    resp3 = str(getattr(connection, "protocol", 2)) == "3"
    if (
        hiredis is None
        or stream is None
        or parse_error is None
        or encoder is None
        or (resp3 and push is None)  # (a push would be taken for a reply)
    ):

        async def one() -> list[Any]:
            try:
                return [await connection.read_response()]
            except ResponseError as error:  # one reply, read whole: still in step
                return [error]

        return one

    options: dict[str, Any] = {"protocolError": InvalidResponse, "replyError": parse_error}
    if encoder.decode_responses:
        options.update(encoding=encoder.encoding, errors=encoder.encoding_errors)
    parser: Any = hiredis.Reader(**options)
    timeout: float | None = getattr(connection, "socket_timeout", None) or None

    async def some() -> list[Any]:
        while True:
            try:
                async with asyncio.timeout(timeout):
                    data = await stream.read(CHUNK)
            except TimeoutError:
                raise RedisTimeoutError(f"no reply from Redis within {timeout}s") from None
            if not data:
                raise RedisConnectionError("Redis closed the connection")
            parser.feed(data)
            replies = []
            while (reply := parser.gets()) is not False:
                if push is None or not isinstance(reply, push):  # (a push answers nothing)
                    replies.append(reply)
            if replies:
                return replies

    return some
