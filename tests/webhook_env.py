"""A real webhook receiver for tests: an aiohttp server on a free loopback port."""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web


@dataclass
class Received:
    """One request the receiver got."""

    path: str
    headers: dict[str, str]
    body: bytes

    @property
    def json(self) -> Any:
        return json.loads(self.body)


@dataclass
class Receiver:
    """Records every POST; answers ``fail`` more with HTTP ``fail_status``, then 200."""

    fail: int = 0
    fail_status: int = 500
    redirect_to: str | None = None
    received: list[Received] = field(default_factory=list)
    url: str = ""
    _runner: web.AppRunner | None = None

    def __post_init__(self) -> None:
        self._changed = asyncio.Event()

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        self.received.append(Received(request.path, dict(request.headers), await request.read()))
        self._changed.set()
        if self.redirect_to is not None and request.path != "/elsewhere":
            raise web.HTTPFound(self.redirect_to)
        if self.fail > 0:
            self.fail -= 1
            return web.Response(status=self.fail_status, text="not now")
        return web.Response(text="ok")

    def accepted(self) -> list[Received]:
        """The deliveries answered 200 (the last ``len - failures`` ones)."""
        return [r for r in self.received if r.path != "/elsewhere"]

    async def wait_for(self, count: int, timeout: float = 20.0) -> list[Received]:
        """Wait until ``count`` requests have come; all of them so far."""
        deadline = time.monotonic() + timeout
        while len(self.received) < count:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"{len(self.received)} webhooks came, not {count}")
            self._changed.clear()
            try:
                async with asyncio.timeout(left):
                    await self._changed.wait()
            except TimeoutError:
                continue
        return list(self.received)

    async def __aenter__(self) -> Receiver:
        app = web.Application()
        app.router.add_post("/{tail:.*}", self._handle)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.url = f"http://127.0.0.1:{self._runner.addresses[0][1]}"
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
