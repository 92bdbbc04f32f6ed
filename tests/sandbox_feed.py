"""The sandbox page's HTTP side as the page uses it: one viewer's live feed
(``/sandbox/events``) and the page's action endpoint (``/sandbox/act``), on the page at ``url``."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import aiohttp


class Feed:
    """One viewer's server-sent events, parsed as they come; ``events`` keeps all read so far."""

    def __init__(self, response: aiohttp.ClientResponse) -> None:
        self.response = response
        self.events: list[tuple[str, Any]] = []

    async def next(self, kind: str, timeout: float = 10.0) -> Any:
        """The data of the next event named ``kind`` (events of other kinds are passed over)."""
        async with asyncio.timeout(timeout):
            event, data = "", []
            while True:
                line = (await self.response.content.readline()).decode().rstrip("\n")
                if line.startswith("event: "):
                    event = line.removeprefix("event: ")
                elif line.startswith("data: "):
                    data.append(line.removeprefix("data: "))
                elif not line and event:
                    parsed = json.loads("\n".join(data))
                    self.events.append((event, parsed))
                    if event == kind:
                        return parsed
                    event, data = "", []

    async def modal_closed(self) -> None:
        """Wait for the feed to show no modal (it may first show the modal changing)."""
        async with asyncio.timeout(10.0):
            while (await self.next("modal"))["modal"] is not None:
                pass


@asynccontextmanager
async def feed(session: aiohttp.ClientSession, url: str, viewer: str) -> AsyncIterator[Feed]:
    """``viewer``'s live feed of the page at ``url``."""
    async with session.get(f"{url}/sandbox/events?as={viewer}") as response:
        assert response.headers["Content-Type"] == "text/event-stream"
        yield Feed(response)


async def act(
    session: aiohttp.ClientSession, url: str, body: dict[str, Any], **headers: str
) -> tuple[int, Any]:
    """POST ``body`` to the page's action endpoint: the status and the JSON answer."""
    async with session.post(f"{url}/sandbox/act", json=body, headers=headers) as response:
        return response.status, await response.json()
