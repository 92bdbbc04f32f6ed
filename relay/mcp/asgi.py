"""Serve one ASGI application from an aiohttp handler (the MCP SDK's Streamable HTTP).

``relay serve`` is aiohttp; the SDK's transport is ASGI. This bridge turns one aiohttp
request into an ASGI ``http`` scope: the body is streamed to ``receive`` in the pieces it
arrives in, each ``send`` is written at once (so Server-Sent Events reach the client as they
happen, with no buffering), and once the body is read ``receive`` reports
``http.disconnect`` when the client goes away. aiohttp only cancels handlers on disconnect
when the whole server runs with ``handler_cancellation``, so the bridge watches the
connection itself (a failed write notices at once; an idle stream within ``_WATCH`` s).
A ``send`` once the client has gone is dropped, as uvicorn drops it, not raised.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from aiohttp import web

from relay.errors import ErrorCode

__all__ = ["GONE_KEY", "ASGIApp", "serve_asgi"]

_log = logging.getLogger("relay.mcp")
Message = MutableMapping[str, Any]
ASGIApp = Callable[
    [
        MutableMapping[str, Any],
        Callable[[], Awaitable[Message]],
        Callable[[Message], Awaitable[None]],
    ],
    Awaitable[None],
]
_WATCH = 0.5  # seconds between looks at an idle connection
GONE_KEY = "relay.gone"
"""The ASGI scope key of an ``asyncio.Event`` set once the request has ended (its caller's)."""


def _closed(request: web.Request) -> bool:
    transport = request.transport
    return transport is None or transport.is_closing()


def _scope(request: web.Request, extra: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
    transport = request.transport
    peer = transport.get_extra_info("peername") if transport is not None else None
    sock = transport.get_extra_info("sockname") if transport is not None else None
    return {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.4"},
        "http_version": f"{request.version.major}.{request.version.minor}",
        "method": request.method,
        "scheme": request.scheme,
        "path": request.path,
        "raw_path": request.raw_path.split("?", 1)[0].encode("latin-1"),
        "query_string": request.query_string.encode("latin-1"),
        "root_path": "",
        "headers": [(k.lower(), v) for k, v in request.raw_headers],
        "client": tuple(peer[:2]) if isinstance(peer, tuple) else None,
        "server": tuple(sock[:2]) if isinstance(sock, tuple) else None,
        "state": {},
        **extra,
    }


async def serve_asgi(
    app: ASGIApp,
    request: web.Request,
    extra: MutableMapping[str, Any] | None = None,
    *,
    body: bytes | None = None,
) -> web.StreamResponse:
    """Run ``app`` for ``request``; ``extra`` is merged into the ASGI scope. ``body``, when
    given, is the request's body already read (within a deadline), passed on in one piece."""
    exchange = _Exchange(request, body)
    try:
        await app(_scope(request, extra or {}), exchange.receive, exchange.send)
    except Exception:
        if exchange.gone.is_set() and exchange.response is not None:
            return exchange.response  # the client left mid-response: nothing more to say
        if exchange.prepared:
            raise
        _log.exception("the MCP transport failed on %s %s", request.method, request.path)
        return _failed("the MCP endpoint failed; see the logs")
    return await exchange.end()


def _failed(message: str) -> web.Response:
    return web.json_response(
        {"error": {"code": ErrorCode.INTERNAL, "message": message}}, status=500
    )


class _Exchange:
    """One request's ASGI ``receive`` and ``send``, over aiohttp's request and response."""

    def __init__(self, request: web.Request, body: bytes | None) -> None:
        self.request = request
        self.body = body
        self.response: web.StreamResponse | None = None
        self.prepared = False  # the status and headers went out
        self.finished = False  # the last body message was written
        self.body_read = False
        self.gone = asyncio.Event()  # the client went away

    async def receive(self) -> Message:
        """The body in the pieces it arrives in; then ``http.disconnect`` once the client
        has gone (or the response is finished)."""
        if not self.body_read and self.body is not None:
            self.body_read = True
            return {"type": "http.request", "body": self.body, "more_body": False}
        if not self.body_read:
            try:
                chunk = await self.request.content.readany()
            except (ConnectionError, OSError):
                self.gone.set()
                return {"type": "http.disconnect"}
            at_eof = self.request.content.at_eof()
            self.body_read = at_eof
            return {"type": "http.request", "body": chunk, "more_body": not at_eof}
        while not self.gone.is_set() and not self.finished and not _closed(self.request):
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.gone.wait(), _WATCH)
        self.gone.set()
        return {"type": "http.disconnect"}

    async def send(self, message: Message) -> None:
        """Write ``message`` at once; dropped once the client has gone."""
        kind = message["type"]
        if kind == "http.response.start":
            self.response = web.StreamResponse(status=int(message["status"]))
            for name, value in message.get("headers", ()):
                self.response.headers.add(name.decode("latin-1"), value.decode("latin-1"))
            return
        response = self.response
        if kind != "http.response.body" or response is None or self.finished:
            return
        if self.gone.is_set():
            return  # as uvicorn does; the app learns of it from ``receive``
        try:
            if not self.prepared:
                await response.prepare(self.request)
                self.prepared = True
            data = message.get("body", b"")
            if data:
                await response.write(data)
            if not message.get("more_body", False):
                self.finished = True
                # Everything was written: a client that closed as soon as it had read its
                # answer (the SDK's does) misses only the stream's last chunk.
                if not _closed(self.request):
                    with contextlib.suppress(ConnectionError):
                        await response.write_eof()
        except (ConnectionError, OSError):
            # Not raised on: the SDK logs an error from ``send`` on its standalone GET
            # stream as an ERROR with a traceback, for a client that merely closed it.
            self.gone.set()

    async def end(self) -> web.StreamResponse:
        """The response once the app has returned, finished if it left it open."""
        if self.response is None:
            return _failed("the MCP endpoint sent no response")
        if self.gone.is_set():
            return self.response  # nobody to finish the response for
        if not self.prepared:
            await self.response.prepare(self.request)
        if not self.finished:
            with contextlib.suppress(ConnectionError):
                await self.response.write_eof()
        return self.response
