"""The Socket Mode side of the fake: the WebSocket an app opens with the URL from
``apps.connections.open``, the ``hello`` Slack sends on connect, envelopes carrying
interactions, the app's acks, and the ``disconnect`` messages Slack sends.

Matches what ``slack_sdk.socket_mode.aiohttp.SocketModeClient`` expects: pings are answered
(aiohttp's autoping), a closed connection makes the client call ``apps.connections.open``
again and reconnect.

What real Slack does, and the fake too:

- An ``interactive`` envelope is ``{envelope_id, payload, type, accepts_response_payload}``;
  ``retry_attempt``/``retry_reason`` belong to ``events_api`` envelopes only (python-slack-sdk
  ``tests/slack_sdk/socket_mode/mock_socket_mode_server.py``).
- An app may hold about 10 connections at once; a connection past the cap gets
  ``{"type": "disconnect", "reason": "too_many_websockets"}`` instead of ``hello`` and is
  closed (bolt-js#2225, where Slack's maintainer states the cap; node-slack-sdk#1654,
  java-slack-sdk#1223 for the message as it arrives on a new session).
- Before Slack rotates a connection it sends ``{"type": "disconnect", "reason":
  "refresh_requested"}`` (python-slack-sdk reconnects on any ``disconnect``).
- The app acks with ``{"envelope_id", "payload"?}`` (slack_sdk ``SocketModeResponse``);
  ``payload`` is what an HTTP app would put in its response body, so a ``view_submission``
  is answered with ``{"response_action": ...}`` there. Slack reads it only when the envelope
  said ``accepts_response_payload: true`` (``view_submission``, ``slash_commands``); for
  ``block_actions`` and shortcuts (``false``) it is dropped, so the fake drops it too.
  docs/testing-modals.md has the sources.
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
MAX_CONNECTIONS = 10
"""Socket Mode connections Slack lets one app hold at once."""


class SocketModeServer:
    """Open Socket Mode connections and the envelopes waiting for an ack."""

    def __init__(
        self,
        *,
        api_app_id: str,
        changed: Callable[[], Awaitable[None]],
        max_connections: int = MAX_CONNECTIONS,
    ) -> None:
        self._api_app_id = api_app_id
        self._changed = changed
        self.max_connections = max_connections
        """Connections past this many are refused with ``too_many_websockets``."""
        self.refused = 0
        """How many connections were refused for being past ``max_connections``."""
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
        if len(self._open) >= self.max_connections:
            self.refused += 1
            with contextlib.suppress(ConnectionError, RuntimeError):
                await ws.send_json(_disconnect("too_many_websockets"))
                await ws.close(code=WSCloseCode.POLICY_VIOLATION, message=b"too_many_websockets")
            await self._changed()
            return ws
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

    async def deliver(
        self, payload: dict[str, Any], *, timeout: float, accepts_response_payload: bool = False
    ) -> ClickResult:
        """Send an ``interactive`` envelope to one open connection (round robin) and wait
        for its ack; 504 when none comes within ``timeout`` seconds."""
        envelope = {
            "envelope_id": str(uuid.uuid4()),
            "type": "interactive",
            "accepts_response_payload": accepts_response_payload,
            "payload": payload,
        }
        return await self.send_envelope(envelope, timeout=timeout)

    async def send_envelope(self, envelope: dict[str, Any], *, timeout: float) -> ClickResult:
        """Send ``envelope`` as it is to one open connection (round robin) and wait for the
        ack of its ``envelope_id``; 504 when none comes within ``timeout`` seconds."""
        if not self._open:
            raise RuntimeError("no Socket Mode client is connected")
        ws = self._open[self._next % len(self._open)]
        self._next += 1
        envelope_id = str(envelope.get("envelope_id"))
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._acks[envelope_id] = (ws, future)
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
        if body is None or envelope.get("accepts_response_payload") is not True:
            # Slack reads an ack's payload only where the envelope said it accepts one.
            return ClickResult(status=200, body="")
        return ClickResult(status=200, body=json.dumps(body))

    def disconnect_all(self, *, reason: str | None = "refresh_requested") -> asyncio.Task[None]:
        """Drop every connection now (the count drops at once), first sending each a
        ``disconnect`` message with ``reason`` (``None``: none, as when the network drops);
        the returned task finishes when the close handshakes are done. Clients reconnect
        through ``apps.connections.open``."""
        dropped, self._open = self._open, []
        task = asyncio.get_running_loop().create_task(self._close(dropped, reason))
        self._closing.add(task)
        task.add_done_callback(self._closing.discard)
        return task

    async def _close(self, dropped: list[web.WebSocketResponse], reason: str | None) -> None:
        for ws in dropped:
            self._forget(ws)
        await self._changed()
        for ws in dropped:
            with contextlib.suppress(ConnectionError, RuntimeError):
                if reason is not None:
                    await ws.send_json(_disconnect(reason))
                await ws.close(code=WSCloseCode.GOING_AWAY, message=(reason or "").encode())

    async def close(self) -> None:
        """Close every connection and wait for pending disconnects."""
        await self.disconnect_all(reason=None)
        if self._closing:
            await asyncio.gather(*self._closing, return_exceptions=True)


def _disconnect(reason: str) -> dict[str, Any]:
    """The ``disconnect`` message Slack sends before it closes a connection."""
    return {"type": "disconnect", "reason": reason, "debug_info": {"host": "fake-slack"}}
