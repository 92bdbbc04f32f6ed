"""The webhook outbox: which asks want their outcome posted, and the deliveries owed.

A delivery is enqueued once per event id (replicas that both see an ask end enqueue one),
claimed with a lease by the replica that sends it (another replica takes it over only once
the lease has passed: a replica that dies mid-send does not lose it), and settled as sent,
retried later, or given up. Both stores keep it; only Redis keeps it across restarts.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

__all__ = ["ClaimedDelivery", "WebhookOutbox"]


@dataclass(frozen=True, slots=True)
class ClaimedDelivery:
    """One delivery this replica now holds the lease of."""

    event_id: str
    delivery: str  # JSON: url, owner, type, ask id, the body to sign and send
    attempts: int  # made before this one


@runtime_checkable
class WebhookOutbox(Protocol):
    """Webhook subscriptions and deliveries (a seam ``Protocol``); every method is atomic."""

    async def hook_subscribe(self, *, ask_id: str, subscription: str, ttl: float) -> None:
        """Remember that ``ask_id``'s events go to ``subscription`` (JSON), and watch it."""
        ...

    async def hook_subscription(self, *, ask_id: str) -> str | None:
        """The subscription of ``ask_id``, if it has one."""
        ...

    async def hook_watched(self, *, limit: int = 100, offset: int = 0) -> list[str]:
        """Asks with a subscription whose end has not been enqueued yet, oldest first,
        from the ``offset``-th."""
        ...

    async def hook_enqueue(
        self, *, event_id: str, ask_id: str, delivery: str, due: float, final: bool
    ) -> bool:
        """Owe ``delivery`` from ``due`` (epoch seconds) unless ``event_id`` was enqueued
        before (then ``False``); ``final`` stops watching the ask."""
        ...

    async def hook_claim(self, *, now: float, lease: float, limit: int) -> list[ClaimedDelivery]:
        """Take the lease of up to ``limit`` deliveries due at ``now``, for ``lease`` seconds."""
        ...

    async def hook_settle(
        self, *, event_id: str, outcome: str, error: str | None, keep: float
    ) -> None:
        """End a delivery (``sent`` or ``failed``), keeping its id ``keep`` seconds so that it
        is not enqueued again."""
        ...

    async def hook_retry(self, *, event_id: str, due: float, error: str) -> None:
        """Try the delivery again from ``due``, counting this attempt."""
        ...

    async def hook_state(self, *, event_id: str) -> dict[str, str] | None:
        """Where a delivery stands (``state``, ``attempts``, ``error``), if it is known."""
        ...
