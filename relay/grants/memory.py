"""``MemoryGrants``: grants in this process only (one relay, or ``relay mcp`` on Slack)."""

from __future__ import annotations

import time
from datetime import datetime

from relay.canonical.match import Subject
from relay.grants.record import Grant, Offer
from relay.plans.record import Plan

__all__ = ["MemoryGrants"]


class MemoryGrants:
    """Grants and offers in a dict; expired ones are dropped as they are met."""

    def __init__(self) -> None:
        self._grants: dict[str, Grant] = {}
        self._offers: dict[str, tuple[float, Offer]] = {}
        self._plans: dict[tuple[str, str], Plan] = {}

    async def add(self, *, grant: Grant) -> bool:
        """Record ``grant`` unless one with its id exists."""
        if grant.id in self._grants:
            return False
        self._grants[grant.id] = grant
        return True

    async def find(self, *, owner: str, agent: str, use: Subject, now: datetime) -> Grant | None:
        """The newest live grant covering ``use``."""
        self._expire(now)
        found = [
            g for g in self._grants.values() if g.covers(owner=owner, agent=agent, use=use, now=now)
        ]
        return max(found, key=lambda g: g.granted_at, default=None)

    async def list(self, *, owner: str, now: datetime) -> list[Grant]:
        """Every live grant of ``owner``, newest first."""
        self._expire(now)
        mine = [g for g in self._grants.values() if g.owner == owner]
        return sorted(mine, key=lambda g: g.granted_at, reverse=True)

    async def put_offer(self, *, ask_id: str, offer: Offer, ttl: float) -> None:
        """Remember the offer until ``ttl`` seconds from now."""
        now = time.monotonic()
        self._offers = {k: v for k, v in self._offers.items() if v[0] > now}
        self._offers[ask_id] = (now + ttl, offer)

    async def get_offer(self, *, ask_id: str) -> Offer | None:
        """The offer, if it has not expired."""
        entry = self._offers.get(ask_id)
        if entry is None or entry[0] <= time.monotonic():
            return None
        return entry[1]

    async def add_plan(self, *, plan: Plan) -> bool:
        """Record a new plan unless one with its id exists."""
        if (plan.owner, plan.id) in self._plans:
            return False
        self._plans[(plan.owner, plan.id)] = plan
        return True

    async def replace_plan(self, *, old: Plan, new: Plan) -> bool:
        """``new`` in place of ``old`` if ``old`` is what is stored."""
        if self._plans.get((old.owner, old.id)) != old:
            return False
        self._plans[(old.owner, old.id)] = new
        return True

    async def get_plan(self, *, owner: str, plan_id: str) -> Plan | None:
        """The plan, if kept."""
        return self._plans.get((owner, plan_id))

    async def plans(self, *, owner: str, agent: str, now: datetime) -> tuple[Plan, ...]:
        """The live plans of ``owner``'s ``agent``, newest first."""
        self._expire(now)
        mine = [p for p in self._plans.values() if p.owner == owner and p.agent == agent]
        live = sorted((p for p in mine if p.live(now)), key=lambda p: p.submitted_at, reverse=True)
        return tuple(live)

    def _expire(self, now: datetime) -> None:
        for key in [k for k, g in self._grants.items() if g.expires_at <= now]:
            del self._grants[key]
        for pkey in [k for k, p in self._plans.items() if p.expires_at <= now]:
            del self._plans[pkey]

    async def aclose(self) -> None:
        """Nothing to release."""
