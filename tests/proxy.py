"""A load balancer in miniature, for tests where a client must fail over between replicas."""

from __future__ import annotations

import asyncio

import aiohttp
from aiohttp import web


class Proxy:
    """A load balancer in miniature: forwards every request to the current backend."""

    def __init__(self, backend: str) -> None:
        self.backend = backend
        self.url = ""
        self.polling = asyncio.Event()  # set once a client long-polls through the proxy
        self.drop_replies = 0
        """How many of the next ``POST`` replies to drop: the request reaches the backend,
        then the client's connection is cut before the reply (a reply lost on the way)."""
        self.dropped = 0
        self._runner: web.AppRunner | None = None

    async def _forward(self, request: web.Request) -> web.StreamResponse:
        if request.method == "GET" and request.path.startswith("/v1/asks/"):
            self.polling.set()
        headers = {k: v for k, v in request.headers.items() if k.lower() != "host"}
        try:
            async with (
                aiohttp.ClientSession() as session,
                session.request(
                    request.method,
                    self.backend + request.path_qs,
                    headers=headers,
                    data=await request.read(),
                ) as upstream,
            ):
                body = await upstream.read()
                if request.method == "POST" and self.drop_replies > 0 and request.transport:
                    self.drop_replies -= 1
                    self.dropped += 1
                    request.transport.abort()  # the backend acted; the client hears nothing
                    return web.Response(status=502)
                return web.Response(
                    status=upstream.status, body=body, content_type=upstream.content_type
                )
        except aiohttp.ClientError:
            return web.Response(status=502, text="bad gateway")

    async def __aenter__(self) -> Proxy:
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self._forward)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.url = f"http://127.0.0.1:{self._runner.addresses[0][1]}"
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
