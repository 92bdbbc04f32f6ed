"""The waiters of one ask on the Redis store (``RedisWaits``): who waits, and how it ended."""

from __future__ import annotations

import asyncio

from relay.store.record import AskRecord
from relay.store.redis.codec import Core

__all__ = ["Watch"]


class Watch:
    """The waiters of one ask (each its own future, woken directly: no shield, no shared
    future), whether a read is on its way, and how the ask ended once it has."""

    __slots__ = ("again", "core", "ended", "failure", "first", "more", "reading", "result")

    def __init__(self) -> None:
        self.first: asyncio.Future[AskRecord | None] | None = None  # (most asks have one)
        self.more: list[asyncio.Future[AskRecord | None]] | None = None
        self.core: Core | None = None  # the ask's unchanging part, if known here
        self.reading = False
        self.again = False
        self.ended = False  # settled or failed: no more reads, later waiters return at once
        self.result: AskRecord | None = None
        self.failure: Exception | None = None

    def add(self, waiter: asyncio.Future[AskRecord | None]) -> None:
        if self.first is None:
            self.first = waiter
        elif self.more is None:
            self.more = [waiter]
        else:
            self.more.append(waiter)

    def remove(self, waiter: asyncio.Future[AskRecord | None]) -> bool:
        """Forget ``waiter``; whether any waiter is left."""
        if self.first is waiter:
            self.first = None
        elif self.more is not None:
            self.more.remove(waiter)
        return self.first is not None or bool(self.more)

    def _waiters(self) -> list[asyncio.Future[AskRecord | None]]:
        return ([self.first] if self.first is not None else []) + (self.more or [])

    def settle(self, record: AskRecord | None) -> None:
        if self.ended:
            return
        self.ended, self.result = True, record
        for waiter in self._waiters():
            if not waiter.done():
                waiter.set_result(record)

    def fail(self, exc: Exception) -> None:
        if self.ended:
            return
        self.ended, self.failure = True, exc
        for waiter in self._waiters():
            if not waiter.done():
                waiter.set_exception(exc)
