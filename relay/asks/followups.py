"""What follows a pending ask's post, and an ended ask's end: its reminders and escalation
(one schedule of nudges, ``rules.nudges``, each claimed through the store so it goes out
once across replicas) and the sweep of its messages whose final update never landed. The
``Expiry`` task calls ``remind`` and ``resettle`` for what the store says is due."""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Set

from relay.asks.events import Events
from relay.asks.expiry import Settling
from relay.asks.terms import next_reminder_at, nudges
from relay.store import AskRecord, AskStore

__all__ = ["FollowUpRunner"]

_log = logging.getLogger("relay.asks")


class FollowUpRunner:
    """Reminders, escalation and the sweep, shown through the channel's callbacks;
    ``wake(at)`` tells the expiry task of a new due time."""

    def __init__(
        self,
        *,
        store: AskStore,
        events: Events,
        wake: Callable[[float], None],
        on_remind: Callable[[AskRecord, int], Awaitable[None]] | None,
        on_escalate: Callable[[AskRecord], Awaitable[None]] | None,
        on_unsettled: Callable[[AskRecord, Set[int]], Awaitable[None]] | None,
        settling: Settling,
    ) -> None:
        self.store = store
        self.events = events
        self._wake = wake
        self._on_remind = on_remind
        self._on_escalate = on_escalate
        self._on_unsettled = on_unsettled
        self.settling = settling

    async def arm(self, record: AskRecord) -> None:
        """Schedule the (posted, pending) ask's first nudge (a reminder or its escalation),
        if it has any."""
        at = next_reminder_at(record, sent=0)
        if at is not None and self._on_remind is not None:
            await self.store.schedule_reminder(ask_id=record.id, at=at)
            self._wake(at)

    async def remind(self, ask_id: str, sent: int) -> None:
        """Send the claimed nudge number ``sent`` + 1 of a pending ask (``on_remind`` for a
        reminder, ``on_escalate`` for its escalation), then record it and schedule the next;
        nothing once the ask has ended."""
        record = await self.store.get(ask_id=ask_id)
        steps = nudges(record) if record is not None else []
        if record is None or not record.pending or self._on_remind is None or sent >= len(steps):
            await self.store.reminded(ask_id=ask_id, sent=sent, next_at=None)
            return
        step = steps[sent]
        if step.kind == "escalate":
            if self._on_escalate is not None:
                await self._on_escalate(record)
        else:
            await self._on_remind(record, step.number - 1)
        nxt = steps[sent + 1].at if sent + 1 < len(steps) else None
        if await self.store.reminded(ask_id=ask_id, sent=sent, next_at=nxt):
            if step.kind == "escalate":
                target = record.target
                self.events.emit(
                    "escalated",
                    ask_id,
                    users=len(target.escalate_users or ()),
                    groups=len(target.escalate_groups or ()),
                    channel=target.escalate_channel,
                )
            else:
                self.events.emit("reminded", ask_id, reminder=step.number)
            if nxt is not None:
                self._wake(nxt)

    async def resettle(self, ask_id: str) -> None:
        """Retry the final update of the ended ask's messages that never landed (claimed by
        the sweep); past ``Settling.window`` after it ended, give up with one warning."""
        record = await self.store.get(ask_id=ask_id)
        if record is not None and record.pending:
            return  # (only an ended ask is indexed; its open questions are no business here)
        stale = await self.store.unsettled(ask_id=ask_id) if record is not None else None
        if record is None or not stale or self._on_unsettled is None:
            await self.store.settled(ask_id=ask_id)  # gone, or nothing left to show
            return
        ended = record.finished_at.timestamp() if record.finished_at else time.time()
        window = self.settling.window
        if time.time() - ended > window:
            _log.warning(
                "gave up updating %d message(s) of ask %s: their final update has not landed"
                " in the %g s since it ended, so they may still show live buttons (a click on"
                " one is answered privately that the ask is over)",
                len(stale),
                ask_id,
                window,
            )
            await self.store.settled(ask_id=ask_id)
            return
        await self._on_unsettled(record, stale)
