"""``Expiry``: one task that times asks out at their deadlines, with no timer per ask.

It sleeps until the store's next due time (or until a new, earlier one is added), then
claims ``timed_out`` for every ask that is due, and, given ``remind``, claims and sends every
due reminder. With a shared store it also wakes every ``sweep_interval`` seconds, so asks
whose creating replica died still time out and are still reminded, exactly once: the store's
claim decides which replica wins (a reminder's claim lapses after ``reminder_lease``
seconds, so one whose claimer died before sending it goes out from another replica).

Given ``resettle``, it also sweeps asks that ended ``Settling.grace`` seconds ago or more with
a message whose final update never landed (``AskStore.claim_unsettled``, a claim that lapses
after ``Settling.lease`` seconds) and hands each to ``resettle(ask_id)``, which retries it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from relay.seam.tasks import stop_task
from relay.store.base import AskStore, StoreUnavailable

__all__ = ["Expiry", "Settling"]

_log = logging.getLogger("relay.expiry")
_RETRY_STUCK = 1.0


@dataclass(frozen=True, kw_only=True)
class Settling:
    """When a message whose final update did not land is retried: from ``grace`` seconds
    after its ask ended (the update in flight lands first), by one replica at a time (each
    try holds it ``lease`` seconds), until ``window`` seconds after the end."""

    grace: float = 5.0
    lease: float = 30.0
    window: float = 3600.0


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
        resettle: Callable[[str], Awaitable[Any]] | None = None,
        settling: Settling | None = None,
    ) -> None:
        self._store = store
        self._expire = expire
        self._remind = remind
        self._lease = reminder_lease
        self._sweep = sweep_interval
        self._resettle = resettle
        settling = settling if settling is not None else Settling()
        self._grace = settling.grace
        self._settle_lease = settling.lease
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
                if self._resettle is not None:
                    await self._resettle_due()
                    unsettled = await self._store.next_unsettled(grace=self._grace)
                    if unsettled is not None:
                        nxt = unsettled if nxt is None else min(nxt, unsettled)
            except StoreUnavailable as exc:
                # Said once a second while the store is down; a traceback would add nothing.
                _log.warning("could not check for expired asks (%s); retrying", exc)
                nxt = time.time() + 1.0
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
            await self._sleep(delay)

    async def _sleep(self, delay: float) -> None:
        """Sleep ``delay`` seconds, or less when ``add`` brings an earlier time: a wake-up
        shortens the sleep, and the next pass runs when that time comes, not at once (an ask
        ending on every click would otherwise cost a pass over the store per click)."""
        until = time.time() + delay
        while not self._stopping:
            remaining = until - time.time()
            if remaining <= 0:
                return
            # asyncio.timeout, not wait_for: on 3.11 wait_for turns a cancellation that
            # lands as its timer fires into a TimeoutError, and aclose would wait forever.
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(None if math.isinf(remaining) else remaining):
                    await self._wake.wait()
            if self._wake.is_set():
                self._wake.clear()
                until = min(until, self._next)

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

    async def _resettle_due(self) -> None:
        assert self._resettle is not None
        while True:
            due = await self._store.claim_unsettled(
                now=time.time(), grace=self._grace, lease=self._settle_lease
            )
            for ask_id in due:
                try:
                    await self._resettle(ask_id)
                except Exception:
                    _log.exception("could not update the messages of ask %s", ask_id)
            if len(due) < 100:
                return

    def settle_later(self) -> None:
        """An ask just ended: look for its messages' final update once the grace is over."""
        if self._resettle is not None:
            self.add(time.time() + self._grace)

    async def aclose(self) -> None:
        """Stop the task."""
        self._stopping = True
        self._wake.set()
        if self._task is not None:
            await stop_task(self._task)
            self._task = None
