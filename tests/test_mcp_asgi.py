"""The ASGI-over-aiohttp bridge that serves ``/mcp``: bodies in pieces, real streaming, and
clients that go away."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, MutableMapping
from contextlib import asynccontextmanager
from typing import Any

import aiohttp
from aiohttp import web

from relay.mcp.asgi import serve_asgi

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]


@asynccontextmanager
async def serving(app: App) -> AsyncIterator[int]:
    async def handler(request: web.Request) -> web.StreamResponse:
        return await serve_asgi(app, request, {"relay.owner": "o1"})

    web_app = web.Application()
    web_app.router.add_route("*", "/mcp", handler)
    runner = web.AppRunner(web_app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    try:
        yield runner.addresses[0][1]
    finally:
        await runner.cleanup()


async def test_a_body_sent_in_pieces_arrives_whole_with_the_scope() -> None:
    seen: dict[str, Any] = {}

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        seen.update(scope=scope, body=body)
        await send(
            {
                "type": "http.response.start",
                "status": 202,
                "headers": [(b"x-echo", b"yes"), (b"set-cookie", b"a"), (b"set-cookie", b"b")],
            }
        )
        await send({"type": "http.response.body", "body": b"ok"})

    async with serving(app) as port:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(
            b"POST /mcp?x=1 HTTP/1.1\r\nHost: t\r\nContent-Length: 10\r\n"
            b"Authorization: Bearer k\r\n\r\n"
        )
        for piece in (b"01234", b"56789"):
            writer.write(piece)
            await writer.drain()
            await asyncio.sleep(0.05)  # the gap between pieces is the thing tested
        response = await asyncio.wait_for(reader.read(4096), 5)
        writer.close()
    assert response.startswith(b"HTTP/1.1 202")
    assert b"x-echo: yes" in response.lower()
    assert response.lower().count(b"set-cookie") == 2
    assert seen["body"] == b"0123456789"
    scope = seen["scope"]
    assert (scope["method"], scope["path"], scope["query_string"]) == ("POST", "/mcp", b"x=1")
    assert (b"authorization", b"Bearer k") in scope["headers"]
    assert scope["relay.owner"] == "o1"


async def test_each_send_reaches_the_client_before_the_next() -> None:
    go_on = asyncio.Event()

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        await receive()
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [(b"content-type", b"text/event-stream")],
            }
        )
        await send({"type": "http.response.body", "body": b"data: one\n\n", "more_body": True})
        await go_on.wait()
        await send({"type": "http.response.body", "body": b"data: two\n\n"})

    async with (
        serving(app) as port,
        aiohttp.ClientSession() as http,
        http.post(f"http://127.0.0.1:{port}/mcp", data=b"{}") as response,
    ):
        first = await asyncio.wait_for(response.content.readline(), 5)
        assert first == b"data: one\n"  # while the app still holds "two" back
        go_on.set()
        rest = await asyncio.wait_for(response.content.read(), 5)
    assert rest == b"\ndata: two\n\n"


async def test_a_client_that_goes_away_is_reported_as_a_disconnect() -> None:
    disconnected = asyncio.Event()

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        await receive()
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"waiting", "more_body": True})
        message = await receive()
        if message["type"] == "http.disconnect":
            disconnected.set()

    async with serving(app) as port:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"POST /mcp HTTP/1.1\r\nHost: t\r\nContent-Length: 2\r\n\r\n{}")
        await writer.drain()
        assert b"waiting" in await asyncio.wait_for(reader.read(4096), 5)
        writer.close()
        await asyncio.wait_for(disconnected.wait(), 5)


async def test_an_app_that_fails_before_answering_is_a_500() -> None:
    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        raise RuntimeError("boom")

    async with (
        serving(app) as port,
        aiohttp.ClientSession() as http,
        http.get(f"http://127.0.0.1:{port}/mcp") as response,
    ):
        assert response.status == 500
        assert (await response.json())["error"]["code"] == "INTERNAL"


async def test_a_send_after_the_client_left_is_dropped_not_raised() -> None:
    """As uvicorn does: the MCP SDK logs any error from ``send`` on its standalone stream as
    an ERROR with a traceback, for a client that simply closed its GET stream."""
    outcome: list[str] = []
    done = asyncio.Event()

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        await receive()
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"waiting", "more_body": True})
        assert (await receive())["type"] == "http.disconnect"
        try:
            for _ in range(3):  # the first write may land in the buffer; later ones cannot
                await send({"type": "http.response.body", "body": b"late", "more_body": True})
            await send({"type": "http.response.body", "body": b""})
        except Exception as error:  # what the app would see is the point
            outcome.append(type(error).__name__)
        else:
            outcome.append("dropped")
        done.set()

    async with serving(app) as port:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"POST /mcp HTTP/1.1\r\nHost: t\r\nContent-Length: 2\r\n\r\n{}")
        await writer.drain()
        assert b"waiting" in await asyncio.wait_for(reader.read(4096), 5)
        writer.close()
        await asyncio.wait_for(done.wait(), 5)
    assert outcome == ["dropped"]
