"""The Socket Mode side of the fake: the WebSocket an app opens with the URL from
``apps.connections.open``, the ``hello`` Slack sends on connect, envelopes carrying
interactions, and the app's acks.

Matches what ``slack_sdk.socket_mode.aiohttp.SocketModeClient`` expects: pings are answered
(aiohttp's autoping), a closed connection makes the client call ``apps.connections.open``
again and reconnect.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import secrets
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import WSCloseCode, WSMsgType, web

from .records import ClickResult

__all__ = ["SOCKET_MODE_PATH", "SocketModeServer"]

SOCKET_MODE_PATH = "/socket-mode"


class SocketModeServer:
    """Open Socket Mode connections and the envelopes waiting for an ack."""

    def __init__(self, *, api_app_id: str, changed: Callable[[], Awaitable[None]]) -> None:
        self._api_app_id = api_app_id
        self._changed = changed
        self._tickets: set[str] = set()
        self._open: list[web.WebSocketResponse] = []
        self._acks: dict[str, tuple[web.WebSocketResponse, asyncio.Future[dict[str, Any]]]] = {}
        self._closing: set[asyncio.Task[None]] = set()
        self._next = 0

    @property
    def connections(self) -> int:
        """How many Socket Mode connections are open."""
        return len(self._open)

    def issue_url(self, root_ws_url: str) -> str:
        """A new ``wss``-style URL for ``apps.connections.open``, with its own ticket."""
        ticket = secrets.token_hex(8)
        self._tickets.add(ticket)
        return f"{root_ws_url}{SOCKET_MODE_PATH}?ticket={ticket}"

    async def handle(self, request: web.Request) -> web.StreamResponse:
        """The WebSocket endpoint: greet, then route acks to their envelopes until closed."""
        if request.query.get("ticket") not in self._tickets:
            raise web.HTTPUnauthorized(text="invalid_ticket")
        ws = web.WebSocketResponse(autoping=True)
        await ws.prepare(request)
        self._open.append(ws)
        try:
            await ws.send_json(
                {
                    "type": "hello",
                    "num_connections": len(self._open),
                    "debug_info": {
                        "host": "fake-slack",
                        "build_number": 1,
                        "approximate_connection_time": 18060,
                    },
                    "connection_info": {"app_id": self._api_app_id},
                }
            )
            await self._changed()
            async for message in ws:
                if message.type == WSMsgType.TEXT:
                    self._on_text(message.data)
        finally:
            self._forget(ws)
            await self._changed()
        return ws

    def _on_text(self, data: str) -> None:
        try:
            ack = json.loads(data)
        except ValueError:
            return
        if not isinstance(ack, dict):
            return
        pending = self._acks.pop(str(ack.get("envelope_id")), None)
        if pending is not None and not pending[1].done():
            pending[1].set_result(ack)

    def _forget(self, ws: web.WebSocketResponse) -> None:
        if ws in self._open:
            self._open.remove(ws)
        for envelope_id, (owner, future) in list(self._acks.items()):
            if owner is ws:
                del self._acks[envelope_id]
                if not future.done():
                    future.set_exception(ConnectionResetError("the socket closed before the ack"))

    async def deliver(self, payload: dict[str, Any], *, timeout: float) -> ClickResult:
        """Send an ``interactive`` envelope to one open connection (round robin) and wait
        for its ack; 504 when none comes within ``timeout`` seconds."""
        if not self._open:
            raise RuntimeError("no Socket Mode client is connected")
        ws = self._open[self._next % len(self._open)]
        self._next += 1
        envelope_id = str(uuid.uuid4())
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._acks[envelope_id] = (ws, future)
        envelope = {
            "envelope_id": envelope_id,
            "type": "interactive",
            "accepts_response_payload": False,
            "payload": payload,
            "retry_attempt": 0,
            "retry_reason": "",
        }
        try:
            await ws.send_json(envelope)
            ack = await asyncio.wait_for(future, timeout)
        except TimeoutError:
            return ClickResult(status=504, body=f"operation_timeout: no ack within {timeout:g}s")
        except ConnectionResetError as exc:
            return ClickResult(status=504, body=f"connection_lost: {exc}")
        finally:
            self._acks.pop(envelope_id, None)
        body = ack.get("payload")
        return ClickResult(status=200, body="" if body is None else json.dumps(body))

    def disconnect_all(self) -> asyncio.Task[None]:
        """Drop every connection now (the count drops at once); the returned task finishes
        when the close handshakes are done. Clients reconnect through
        ``apps.connections.open``."""
        dropped, self._open = self._open, []
        task = asyncio.get_running_loop().create_task(self._close(dropped))
        self._closing.add(task)
        task.add_done_callback(self._closing.discard)
        return task

    async def _close(self, dropped: list[web.WebSocketResponse]) -> None:
        for ws in dropped:
            self._forget(ws)
        await self._changed()
        for ws in dropped:
            with contextlib.suppress(ConnectionError, RuntimeError):
                await ws.close(code=WSCloseCode.GOING_AWAY, message=b"refresh_requested")

    async def close(self) -> None:
        """Close every connection and wait for pending disconnects."""
        await self.disconnect_all()
        if self._closing:
            await asyncio.gather(*self._closing, return_exceptions=True)
