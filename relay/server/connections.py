"""The server's client connections: how many, how long to send a request, who hung up.

aiohttp's server gives a connection as long as it likes to send its headers (its keep-alive
timer, an hour by default, is the only bound) and never notices that a long-poll's client
has gone. Slow clients then hold descriptors until none are left, and ``/healthz`` fails with
the rest. ``Connections`` wraps each of the server's protocols (a transport-level guard,
nothing of aiohttp patched) to:

- close a connection that has not sent a whole request head ``read_timeout`` seconds after
  its first byte (bodies have their own deadline: ``relay.server.bodies``);
- keep the number of connections under ``limit``: a new connection past it closes the one
  that has waited longest without a request in progress (idle or still sending its head),
  or else the one that has been sending its body longest; with every connection busy
  working on a request, the new one is closed at once;
- cancel a handler that asked for it (``cancel_on_hangup``) as soon as its client hangs up,
  so that an abandoned long-poll frees its memory at once instead of after its whole wait.
  (aiohttp's ``handler_cancellation=True`` would cancel every handler on a hang-up: a click
  half-recorded when Slack stops waiting after 3 s, an ask half-posted. Only waits ask.)
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import resource
import time
from collections.abc import Callable, Iterator
from enum import Enum
from typing import Any

from aiohttp import web

__all__ = ["RUNNER_OPTIONS", "Connections", "GuardedSite", "default_connection_limit"]

# aiohttp's server keeps an idle connection an hour by default; a client that comes back
# within a minute and a quarter keeps it, as with most servers (nginx: 75 s).
RUNNER_OPTIONS: dict[str, Any] = {"keepalive_timeout": 75.0}

_log = logging.getLogger("relay.server")
# Descriptors kept for everything that is not a client: Slack and Redis connections (up to
# ~100 background Slack calls at once), log files, the listening socket.
_RESERVED_FDS = 128
_WARN_EVERY = 10.0  # seconds between two "connection limit reached" warnings
# Connections the kernel queues before the loop accepts them. aiohttp's 128 fills in a burst
# of slow clients (the loop is busy closing the ones past the limit), and a SYN meeting a full
# queue is dropped and retried a whole second later: /healthz then answers in 1 s, not 2 ms.
# Linux caps it at net.core.somaxconn (4,096 by default).
LISTEN_BACKLOG = 1024


def default_connection_limit() -> int:
    """Client connections the process can hold: its descriptor limit less a reserve."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return 100_000
    return max(16, soft - max(_RESERVED_FDS, soft // 8))


class _State(Enum):
    IDLE = "idle"  # no byte of a request yet
    HEAD = "head"  # a request is arriving, its head not yet whole
    BUSY = "busy"  # a handler runs


class _Connection:
    __slots__ = ("guard", "hangup", "request", "since", "state", "transport")

    def __init__(self, guard: _Guarded, transport: asyncio.BaseTransport) -> None:
        self.guard = guard
        self.transport = transport
        self.state = _State.IDLE
        self.since = time.monotonic()
        self.hangup: asyncio.Task[object] | None = None
        self.request: web.BaseRequest | None = None

    def sending_body(self) -> bool:
        """Whether the request in progress still has body to arrive."""
        request = self.request
        return request is not None and not request.content.is_eof()


class _Guarded(asyncio.Protocol):
    """Passes every transport event on to aiohttp's protocol, telling ``Connections`` first."""

    __slots__ = ("_connections", "_inner", "connection")

    def __init__(self, inner: asyncio.Protocol, connections: Connections) -> None:
        self._inner = inner
        self._connections = connections
        self.connection: _Connection | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._inner.connection_made(transport)
        self._connections._made(self, transport)

    def data_received(self, data: bytes) -> None:
        connection = self.connection
        if connection is not None and connection.state is _State.IDLE:
            self._connections._head_started(connection)
        self._inner.data_received(data)

    def eof_received(self) -> bool | None:
        return self._inner.eof_received()

    def connection_lost(self, exc: Exception | None) -> None:
        self._connections._lost(self)
        self._inner.connection_lost(exc)

    def pause_writing(self) -> None:
        self._inner.pause_writing()

    def resume_writing(self) -> None:
        self._inner.resume_writing()


class Connections:
    """Bounds and watches the server's client connections (see the module docstring)."""

    def __init__(self, *, limit: int, read_timeout: float) -> None:
        self.limit = limit
        self.read_timeout = read_timeout
        self._by_transport: dict[asyncio.BaseTransport, _Connection] = {}
        # Connections without a request in progress, longest-waiting first; of those, the
        # ones sending a request head (also oldest first), which one timer sweeps.
        self._waiting: dict[_Connection, None] = {}
        self._heads: dict[_Connection, None] = {}
        self._sweep_every = max(0.05, min(1.0, read_timeout / 4))
        self._sweeping: asyncio.TimerHandle | None = None
        self._warned_at = -float("inf")
        self.on_close: Callable[[str], None] | None = None
        """Told ``"timeout"`` or ``"evicted"`` for each connection the guard closes."""

    def __len__(self) -> int:
        return len(self._by_transport)

    def protocol_factory(self, server: Callable[[], asyncio.Protocol]) -> Callable[[], _Guarded]:
        """A protocol factory for ``loop.create_server`` wrapping ``server``'s protocols."""
        return lambda: _Guarded(server(), self)

    # ---- from the handlers (through the middleware) -------------------------------------

    def request_started(self, request: web.BaseRequest) -> None:
        """A request's head is whole and its handler starts: stop the head's deadline."""
        connection = self._by_transport.get(request.transport)  # type: ignore[arg-type]
        if connection is not None:
            self._set_state(connection, _State.BUSY)
            connection.request = request

    def request_finished(self, request: web.BaseRequest) -> None:
        """The handler is done: the connection waits for its next request."""
        connection = self._by_transport.get(request.transport)  # type: ignore[arg-type]
        if connection is not None and connection.state is _State.BUSY:
            connection.hangup = None
            unread = connection.sending_body()
            connection.request = None
            self._set_state(connection, _State.IDLE)
            if unread:
                # aiohttp reads what is left of the body for a while (its "lingering"):
                # that body has the same deadline as a head.
                self._head_started(connection)

    @contextlib.contextmanager
    def cancel_on_hangup(self, request: web.BaseRequest) -> Iterator[None]:
        """Within this block, the client hanging up cancels the current task."""
        connection = self._by_transport.get(request.transport)  # type: ignore[arg-type]
        task = asyncio.current_task()
        if connection is None or task is None:
            yield
            return
        connection.hangup = task
        try:
            yield
        finally:
            connection.hangup = None

    # ---- from the protocols ------------------------------------------------------------

    def _made(self, guarded: _Guarded, transport: asyncio.BaseTransport) -> None:
        if len(self._by_transport) >= self.limit and not self._evict_one():
            self._warn("every connection is busy")
            transport.abort()  # type: ignore[attr-defined]
            return
        connection = _Connection(guarded, transport)
        guarded.connection = connection
        self._by_transport[transport] = connection
        self._waiting[connection] = None

    def _head_started(self, connection: _Connection) -> None:
        self._set_state(connection, _State.HEAD)
        self._heads[connection] = None
        if self._sweeping is None:
            # One timer for every head in flight, not one per request: a click's path.
            loop = asyncio.get_running_loop()
            self._sweeping = loop.call_later(self._sweep_every, self._sweep)

    def _sweep(self) -> None:
        """Close the connections whose head is overdue (they are the oldest heads)."""
        self._sweeping = None
        overdue = time.monotonic() - self.read_timeout
        for connection in list(self._heads):
            if connection.since > overdue:
                break
            self._close(connection, "timeout")
        if self._heads:
            loop = asyncio.get_running_loop()
            self._sweeping = loop.call_later(self._sweep_every, self._sweep)

    def _lost(self, guarded: _Guarded) -> None:
        connection = guarded.connection
        if connection is None:
            return
        guarded.connection = None
        self._forget(connection)
        if connection.hangup is not None:
            connection.hangup.cancel()
            connection.hangup = None

    # ---- bookkeeping ---------------------------------------------------------------------

    def _set_state(self, connection: _Connection, state: _State) -> None:
        self._heads.pop(connection, None)
        connection.state = state
        connection.since = time.monotonic()
        self._waiting.pop(connection, None)
        if state is not _State.BUSY:
            self._waiting[connection] = None  # to the end: it has waited least

    def _evict_one(self) -> bool:
        """Close the connection that has waited longest without a request in progress, or
        else the one sending its body longest; ``False`` if every one is busy working."""
        victim = next(iter(self._waiting), None)
        if victim is None:
            sending = [c for c in self._by_transport.values() if c.sending_body()]
            victim = min(sending, key=lambda c: c.since, default=None)
        if victim is None:
            return False
        self._warn("closing the connections that have waited longest")
        self._close(victim, "evicted")
        return True

    def _close(self, connection: _Connection, why: str) -> None:
        self._forget(connection)
        connection.guard.connection = None
        connection.transport.abort()  # type: ignore[attr-defined]
        if self.on_close is not None:
            self.on_close(why)

    def _forget(self, connection: _Connection) -> None:
        self._heads.pop(connection, None)
        self._by_transport.pop(connection.transport, None)
        self._waiting.pop(connection, None)

    def _warn(self, doing: str) -> None:
        now = time.monotonic()
        if now - self._warned_at >= _WARN_EVERY:
            self._warned_at = now
            _log.warning(
                "%d client connections, the limit (RELAY_MAX_CONNECTIONS): %s", self.limit, doing
            )


class GuardedSite(web.TCPSite):
    """A ``TCPSite`` whose connections go through ``connections``."""

    __slots__ = ("_connections",)

    def __init__(
        self, runner: web.BaseRunner, host: str, port: int, *, connections: Connections
    ) -> None:
        super().__init__(runner, host, port, backlog=LISTEN_BACKLOG)
        self._connections = connections

    async def start(self) -> None:
        """Listen, wrapping each connection's protocol."""
        await web.BaseSite.start(self)
        server = self._runner.server
        assert server is not None
        self._server = await asyncio.get_running_loop().create_server(
            self._connections.protocol_factory(server),
            self._host,
            self._port,
            backlog=self._backlog,
            reuse_address=self._reuse_address,
            reuse_port=self._reuse_port,
        )
        if self._server.sockets:
            self._bound_port = self._server.sockets[0].getsockname()[1]
