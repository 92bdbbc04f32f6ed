"""The webhook outbox in memory (``relay.store.outbox``); lost on restart."""

from __future__ import annotations

import math
import time

from relay.store.memory.base import MemoryBase, _Delivery
from relay.store.outbox import ClaimedDelivery


class MemoryOutbox(MemoryBase):
    """Webhook subscriptions and deliveries. Deliveries are few at a time; a scan of them all
    per claim is cheaper than keeping an index right."""

    async def hook_subscribe(self, *, ask_id: str, subscription: str, ttl: float) -> None:
        """Remember ``ask_id``'s subscription (kept as long as the ask is)."""
        if ask_id not in self._hooks:
            self._hooks[ask_id] = subscription
            self._hooks_watched[ask_id] = None

    async def hook_subscription(self, *, ask_id: str) -> str | None:
        """The subscription of ``ask_id``."""
        return self._hooks.get(ask_id)

    async def hook_watched(self, *, limit: int = 100, offset: int = 0) -> list[str]:
        """Subscribed asks whose end is not enqueued yet, oldest first from ``offset``."""
        gone = [i for i in self._hooks_watched if i not in self._records and i not in self._ended]
        for ask_id in gone:
            self._hooks_watched.pop(ask_id, None)  # gone (expired): nothing left to send
            self._hooks.pop(ask_id, None)
        return list(self._hooks_watched)[offset : offset + limit]

    async def hook_enqueue(
        self, *, event_id: str, ask_id: str, delivery: str, due: float, final: bool
    ) -> bool:
        """Owe ``delivery`` unless ``event_id`` is known."""
        self._forget_deliveries()
        if final:
            self._hooks_watched.pop(ask_id, None)
            self._hooks.pop(ask_id, None)  # no event follows the end
        if event_id in self._outbox:
            return False
        self._outbox[event_id] = _Delivery(delivery=delivery, due=due)
        return True

    async def hook_claim(self, *, now: float, lease: float, limit: int) -> list[ClaimedDelivery]:
        """Lease up to ``limit`` due deliveries."""
        claimed: list[ClaimedDelivery] = []
        for event_id, held in sorted(self._outbox.items(), key=lambda item: item[1].due):
            if len(claimed) >= limit or held.due > now:
                break
            if held.state != "pending":
                continue
            held.due = now + lease
            claimed.append(ClaimedDelivery(event_id, held.delivery, held.attempts))
        return claimed

    async def hook_settle(
        self, *, event_id: str, outcome: str, error: str | None, keep: float
    ) -> None:
        """End a delivery; its id is kept ``keep`` seconds."""
        held = self._outbox.get(event_id)
        if held is not None:
            held.state, held.error = outcome, error
            held.attempts += 1
            held.due = math.inf
            held.forget_at = time.monotonic() + keep

    async def hook_retry(self, *, event_id: str, due: float, error: str) -> None:
        """Try again from ``due``."""
        held = self._outbox.get(event_id)
        if held is not None and held.state == "pending":
            held.due, held.error = due, error
            held.attempts += 1

    async def hook_state(self, *, event_id: str) -> dict[str, str] | None:
        """Where a delivery stands."""
        held = self._outbox.get(event_id)
        if held is None:
            return None
        return {"state": held.state, "attempts": str(held.attempts), "error": held.error or ""}

    def _forget_deliveries(self) -> None:
        now = time.monotonic()
        for event_id in [i for i, d in self._outbox.items() if d.forget_at <= now]:
            del self._outbox[event_id]
