"""``Expiry``: one task that times asks out at their deadlines, with no timer per ask.

It sleeps until the store's next due time (or until a new, earlier one is added), then
claims ``timed_out`` for every ask that is due, and, given ``remind``, claims and sends every
due reminder. With a shared store it also wakes every ``sweep_interval`` seconds, so asks
whose creating replica died still time out and are still reminded, exactly once: the store's
claim decides which replica wins (a reminder's claim lapses after ``reminder_lease``
seconds, so one whose claimer died before sending it goes out from another replica).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import time
from collections.abc import Awaitable, Callable
from typing import Any

from relay.store.base import AskStore

__all__ = ["Expiry"]

_log = logging.getLogger("relay.expiry")
_RETRY_STUCK = 1.0


class Expiry:
    """Times out due asks by calling ``expire(ask_id)``; started lazily, stopped by ``aclose``."""

    def __init__(
        self,
        *,
        store: AskStore,
        expire: Callable[[str], Awaitable[Any]],
        sweep_interval: float | None = None,
        remind: Callable[[str, int], Awaitable[Any]] | None = None,
        reminder_lease: float = 30.0,
    ) -> None:
        self._store = store
        self._expire = expire
        self._remind = remind
        self._lease = reminder_lease
        self._sweep = sweep_interval
        self._wake = asyncio.Event()
        self._next = math.inf
        self._task: asyncio.Task[None] | None = None
        self._stopping = False

    def add(self, deadline: float) -> None:
        """Note a new deadline; wakes the task if it is earlier than the one it sleeps until."""
        self._ensure_running()
        if deadline < self._next:
            self._next = deadline
            self._wake.set()

    def start(self) -> None:
        """Start sweeping now (a replica with a shared store does, to expire others' asks)."""
        self._ensure_running()

    def _ensure_running(self) -> None:
        if self._stopping:
            return
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._run(), name="relay-expiry")

    async def _run(self) -> None:
        # Stopping is a flag as well as a cancellation: a client library that swallows a
        # CancelledError mid-call (and raises something else) must not keep the loop alive.
        while not self._stopping:
            try:
                await self._expire_due()
                nxt = await self._store.next_deadline()
                if self._remind is not None:
                    await self._remind_due()
                    reminder = await self._store.next_reminder()
                    if reminder is not None:
                        nxt = reminder if nxt is None else min(nxt, reminder)
            except Exception:
                _log.exception("could not check for expired asks; retrying")
                nxt = time.time() + 1.0
            self._next = math.inf if nxt is None else nxt
            if self._sweep is not None:
                self._next = min(self._next, time.time() + self._sweep)
            if self._stopping:
                return
            self._wake.clear()
            delay = self._next - time.time()
            if nxt is not None and nxt <= time.time():
                # Still due after a pass: it could not be settled just now. Retry it in a
                # while, not in a busy loop.
                delay = max(delay, _RETRY_STUCK)
            if delay > 0:
                # asyncio.timeout, not wait_for: on 3.11 wait_for turns a cancellation that
                # lands as its timer fires into a TimeoutError, and aclose would wait forever.
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(None if math.isinf(delay) else delay):
                        await self._wake.wait()

    async def _expire_due(self) -> None:
        while True:
            due = await self._store.due(now=time.time(), limit=100)
            for ask_id in due:
                try:
                    await self._expire(ask_id)
                except Exception:
                    _log.exception("could not time out ask %s", ask_id)
            if len(due) < 100:
                return

    async def _remind_due(self) -> None:
        assert self._remind is not None
        while True:
            due = await self._store.claim_reminders(now=time.time(), lease=self._lease)
            for ask_id, sent in due:
                try:
                    await self._remind(ask_id, sent)
                except Exception:
                    _log.exception("could not remind people of ask %s", ask_id)
            if len(due) < 100:
                return

    async def aclose(self) -> None:
        """Stop the task."""
        self._stopping = True
        self._wake.set()
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
