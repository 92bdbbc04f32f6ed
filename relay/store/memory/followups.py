"""Follow-ups in memory (``relay.store.followups``): reminders and unsettled messages."""

from __future__ import annotations

import heapq

from relay.store.memory.base import _NONE, MemoryBase


class MemoryFollowUps(MemoryBase):
    """Reminders and the unsettled-message sweep."""

    async def schedule_reminder(self, *, ask_id: str, at: float) -> None:
        """Remind people of the ask at ``at``."""
        self._reminders[ask_id] = at
        heapq.heappush(self._reminder_queue, (at, ask_id))

    async def next_reminder(self) -> float | None:
        """When the earliest reminder falls due."""
        queue = self._reminder_queue
        while queue and self._reminders.get(queue[0][1]) != queue[0][0]:
            heapq.heappop(queue)  # rescheduled or dropped since
        return queue[0][0] if queue else None

    async def claim_reminders(
        self, *, now: float, lease: float, limit: int = 100
    ) -> list[tuple[str, int]]:
        """Claim due reminders of pending asks for ``lease`` seconds."""
        claimed: list[tuple[str, int]] = []
        queue = self._reminder_queue
        while queue and queue[0][0] <= now and len(claimed) < limit:
            at, ask_id = heapq.heappop(queue)
            if self._reminders.get(ask_id) != at:
                continue
            if ask_id not in self._records:  # (every record there is pending)
                del self._reminders[ask_id]
                continue
            claimed.append((ask_id, self._reminders_sent.get(ask_id, 0)))
            self._reminders[ask_id] = now + lease
            heapq.heappush(queue, (now + lease, ask_id))
        return claimed

    async def reminded(self, *, ask_id: str, sent: int, next_at: float | None) -> bool:
        """Record a reminder sent; schedule the next one."""
        if self._reminders_sent.get(ask_id, 0) != sent:
            return False
        self._reminders_sent[ask_id] = sent + 1
        if next_at is None or ask_id not in self._records:
            self._reminders.pop(ask_id, None)
        else:
            await self.schedule_reminder(ask_id=ask_id, at=next_at)
        return True

    # Messages whose final update has not landed (``AskStore.settled``).

    async def settled(self, *, ask_id: str, index: int | None = None) -> None:
        """Record that question ``index``'s message (``None``: every one) shows its end."""
        if ask_id in self._records:  # pending: remembered for when it ends
            shown = self._shown.setdefault(ask_id, set())
            if index is None:
                self._shown[ask_id] = None
            elif shown is not None:
                shown.add(index)
            return
        unshown = self._unshown_ended.get(ask_id)  # (ended: nothing to decode)
        if unshown is not None and index is not None:
            unshown.discard(index)
        if not unshown or index is None:
            self._unshown_ended.pop(ask_id, None)
            self._unsettled.pop(ask_id, None)

    async def unsettled(self, *, ask_id: str) -> frozenset[int]:
        """The posted questions not yet settled."""
        record = self._pending_record(ask_id)
        if record is None:  # ended (or unknown): nothing to decode
            return frozenset(self._unshown_ended.get(ask_id, ()))
        shown = self._shown.get(ask_id, _NONE)
        if shown is None:
            return frozenset()
        return frozenset(
            i for i, m in enumerate(record.messages) if m is not None and i not in shown
        )

    async def claim_unsettled(
        self, *, now: float, grace: float, lease: float, limit: int = 100
    ) -> list[str]:
        """Claim unsettled asks that ended ``grace`` ago, each for ``lease`` seconds."""
        self._forget_expired()
        claimed: list[str] = []
        queue = self._unsettled_queue
        while queue and queue[0][0] <= now - grace and len(claimed) < limit:
            at, ask_id = heapq.heappop(queue)
            if self._unsettled.get(ask_id) != at:
                continue  # settled, or claimed again since
            claimed.append(ask_id)
            self._unsettle(ask_id, now + lease - grace)
        return claimed

    async def next_unsettled(self, *, grace: float) -> float | None:
        """When the earliest unsettled ask can be claimed."""
        queue = self._unsettled_queue
        while queue and self._unsettled.get(queue[0][1]) != queue[0][0]:
            heapq.heappop(queue)
        return queue[0][0] + grace if queue else None
