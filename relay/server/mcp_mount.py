"""``/mcp`` routed when the server starts, its MCP server opened at its first request.

The MCP SDK costs about a second of CPU to import, half of what ``relay serve`` spends
starting: a relay nobody reaches over ``/mcp`` never spends it, and the first ``/mcp``
request waits for it once (imported in a worker thread, so the relay's other requests go
on meanwhile). ``relay.server.mcp`` is the door itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
from dataclasses import dataclass
from typing import Any, Protocol

from aiohttp import web

from relay.errors import ErrorCode
from relay.server.errors import ApiError

__all__ = ["SessionLimits", "mount_mcp"]

MCP_PATH = "/mcp"


class _Door(Protocol):
    """What ``relay.server.mcp.open_door`` returns."""

    async def handle(self, request: web.Request) -> web.StreamResponse: ...
    async def end_sessions(self, app: web.Application) -> None: ...


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionLimits:
    """The operator's bounds on MCP sessions (``RELAY_MCP_*``)."""

    per_token: int = 20
    """Sessions one API token may hold at once (``RELAY_MCP_SESSIONS_PER_TOKEN``)."""
    total: int = 1000
    """Sessions the relay holds at once, all tokens together (``RELAY_MCP_MAX_SESSIONS``)."""
    idle: float = 1800.0
    """Seconds without a request after which a session is closed (``RELAY_MCP_SESSION_IDLE``)."""


def mount_mcp(app: web.Application, **options: Any) -> None:
    """Serve the MCP server at ``/mcp`` of ``app`` for the life of the application, opened
    at the first request (``options``: ``relay.server.mcp.open_door``'s)."""
    door = _LazyDoor(options)
    app.on_shutdown.append(door.end_sessions)
    app.on_cleanup.append(door.end_sessions)
    for method in ("GET", "POST", "DELETE"):
        app.router.add_route(method, MCP_PATH, door.handle)


class _LazyDoor:
    def __init__(self, options: dict[str, Any]) -> None:
        self._options = options
        self._door: _Door | None = None
        self._opening: asyncio.Future[_Door] | None = None
        self._ending = False

    async def handle(self, request: web.Request) -> web.StreamResponse:
        door = self._door or await self._open()
        return await door.handle(request)

    async def _open(self) -> _Door:
        if self._ending:
            raise ApiError(
                ErrorCode.UNAVAILABLE,
                "the relay is stopping: send the request again (another replica takes it)",
            )
        if self._opening is None:
            # One opening for the requests that come meanwhile; a failed one is tried again.
            self._opening = asyncio.ensure_future(self._build())
        try:
            return await asyncio.shield(self._opening)
        except Exception:
            if self._opening.done():
                self._opening = None
            raise

    async def _build(self) -> _Door:
        module = await asyncio.to_thread(importlib.import_module, "relay.server.mcp")
        door: _Door = await module.open_door(**self._options)
        self._door = door
        return door

    async def end_sessions(self, app: web.Application) -> None:
        self._ending = True
        if self._opening is not None and self._door is None:
            with contextlib.suppress(Exception):  # (its request has its error)
                await self._opening
        if self._door is not None:
            await self._door.end_sessions(app)
