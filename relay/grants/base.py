"""The grants store seam: where standing approvals and open offers live."""

from __future__ import annotations

from datetime import datetime
from typing import Protocol, runtime_checkable

from relay.canonical.match import Subject
from relay.grants.record import Grant, Offer
from relay.plans.record import Plan

__all__ = ["GrantStore"]


@runtime_checkable
class GrantStore(Protocol):
    """Grants and the offers they come from (a seam ``Protocol``); methods are keyword-only."""

    async def add(self, *, grant: Grant) -> bool:
        """Record ``grant``; ``False`` (and no change) if one with its id exists already."""
        ...

    async def find(self, *, owner: str, agent: str, use: Subject, now: datetime) -> Grant | None:
        """A live grant of ``owner``'s ``agent`` covering ``use``, if there is one."""
        ...

    async def list(self, *, owner: str, now: datetime) -> list[Grant]:
        """Every live grant of ``owner``, newest first."""
        ...

    async def put_offer(self, *, ask_id: str, offer: Offer, ttl: float) -> None:
        """Remember what ask ``ask_id`` offers, for ``ttl`` seconds."""
        ...

    async def get_offer(self, *, ask_id: str) -> Offer | None:
        """What ask ``ask_id`` offered, if it is still remembered."""
        ...

    async def add_plan(self, *, plan: Plan) -> bool:
        """Record a new plan (kept until ``plan.expires_at``); ``False`` if its id exists."""
        ...

    async def replace_plan(self, *, old: Plan, new: Plan) -> bool:
        """Store ``new`` in place of ``old`` only if ``old`` is still what is stored (so a
        plan is approved, widened or stopped once, whichever replica reads first)."""
        ...

    async def get_plan(self, *, owner: str, plan_id: str) -> Plan | None:
        """``owner``'s plan ``plan_id``, if it is still kept."""
        ...

    async def plans(self, *, owner: str, agent: str, now: datetime) -> tuple[Plan, ...]:
        """The approved, live plans of ``owner``'s ``agent``, newest first."""
        ...

    async def aclose(self) -> None:
        """Release connections; idempotent."""
        ...
