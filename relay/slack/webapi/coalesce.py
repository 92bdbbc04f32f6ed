"""``Coalescer``: at most one update of a thing at a time, and at most one a ``gap``.

A question decided by 25 votes cast within a second asked for 25 tallies and, with the
re-reads each makes, about 70 ``chat.update`` calls (relay issue 39), where Slack's Tier 3
allows about 50 a minute. Here a request made while one runs (or within ``gap`` of the last)
replaces any other waiting: the newest is shown next, the ones between never are.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Hashable

__all__ = ["Coalescer"]

_KEEP = 256  # finished keys remembered past this are pruned to those within the gap


class Coalescer:
    """Runs the jobs given for one key one at a time, ``gap`` seconds apart at least; a
    job given while another runs or waits replaces the one waiting (the newest wins)."""

    def __init__(self, gap: float, *, clock: Callable[[], float] = time.monotonic) -> None:
        self._gap = gap
        self._clock = clock
        self._running: set[Hashable] = set()
        self._next: dict[Hashable, Callable[[], Awaitable[bool]]] = {}
        self._last: dict[Hashable, float] = {}

    def busy(self, key: Hashable) -> bool:
        """Whether a job for ``key`` runs or waits its turn."""
        return key in self._running

    async def run(self, key: Hashable, job: Callable[[], Awaitable[bool]]) -> None:
        """Run ``job`` for ``key`` now, after the gap, or never (a newer one replaced it).
        ``job`` returns whether the thing is done for good: nothing waiting runs after."""
        if key in self._running:
            self._next[key] = job  # the caller running now runs it (or a newer one)
            return
        self._running.add(key)
        try:
            current: Callable[[], Awaitable[bool]] | None = job
            while current is not None:
                wait = self._last.get(key, -self._gap) + self._gap - self._clock()
                if wait > 0:
                    await asyncio.sleep(wait)
                    current = self._next.pop(key, current)  # asked for meanwhile: newer
                done = await current()
                self._last[key] = self._clock()
                if done:
                    self._last.pop(key, None)
                    return
                current = self._next.pop(key, None)
        finally:
            self._running.discard(key)
            self._next.pop(key, None)
            self._prune()

    def _prune(self) -> None:
        if len(self._last) > _KEEP:
            now = self._clock()
            self._last = {k: at for k, at in self._last.items() if now - at < self._gap}
