"""``RedisGrants``: grants shared by every replica of ``relay serve`` (the ``redis`` extra).

Layout (prefix ``relay:``): ``relay:grants:{owner}`` is a hash of grant id to grant JSON,
expiring with the owner's last grant; ``relay:grant-offer:{ask id}`` holds an open offer.
``relay:plans:{owner}`` is a hash of plan id to plan JSON, kept as long as its longest-lived
plan; a plan changes only from the state a caller read (``_SWAP``), so one approval, widening
or stop lands once. ``HSETNX`` makes recording a grant idempotent, so two replicas reading
the same answered approval record it once. Every command and script touches one key, so a
Redis Cluster needs no hash tags here; connections are made as the ask store's
(``relay.store.redis_connect``).
"""

from __future__ import annotations

import json
import math
from datetime import datetime
from typing import Any

from relay.canonical.match import Subject
from relay.grants.record import Grant, Offer
from relay.plans.record import Plan
from relay.store.record import utcnow
from relay.store.redis.base import translated
from relay.store.redis_connect import RedisClient, RedisConnection, RedisTLS, connect

__all__ = ["RedisGrants"]

# KEYS: the owner's hash. ARGV: grant id, grant JSON, ms to live. The hash lives as long as
# its longest-lived grant.
_ADD = """
if redis.call('HSETNX', KEYS[1], ARGV[1], ARGV[2]) == 0 then return 0 end
if redis.call('PTTL', KEYS[1]) < tonumber(ARGV[3]) then
  redis.call('PEXPIRE', KEYS[1], ARGV[3])
end
return 1
"""

# KEYS: the owner's plans hash. ARGV: plan id, the JSON read, the JSON to store, ms to live.
_SWAP = """
if redis.call('HGET', KEYS[1], ARGV[1]) ~= ARGV[2] then return 0 end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[3])
if redis.call('PTTL', KEYS[1]) < tonumber(ARGV[4]) then
  redis.call('PEXPIRE', KEYS[1], ARGV[4])
end
return 1
"""


def _plan_json(plan: Plan) -> str:
    # Sorted keys: the stored text is compared byte for byte by _SWAP.
    return json.dumps(plan.to_json(), sort_keys=True, separators=(",", ":"))


def _ms_until(when: datetime) -> int:
    return max(1, math.ceil((when - utcnow()).total_seconds() * 1000))


class RedisGrants:
    """Grants and offers in Redis."""

    def __init__(
        self,
        *,
        url: str | None = None,
        client: RedisClient | None = None,
        tls: RedisTLS | None = None,
        prefix: str = "relay:",
    ) -> None:
        if (url is None) == (client is None):
            raise ValueError("pass exactly one of url= or client=")
        self._connection = RedisConnection.of(client) if client else connect(url or "", tls=tls)
        self._redis: RedisClient = self._connection.client
        self._own = client is None
        self._prefix = prefix

    def _key(self, owner: str) -> str:
        return f"{self._prefix}grants:{owner}"

    @translated
    async def add(self, *, grant: Grant) -> bool:
        """Record ``grant`` unless one with its id exists (atomically, on any Redis ≥ 2.6)."""
        ttl_ms = max(1, math.ceil((grant.expires_at - utcnow()).total_seconds() * 1000))
        added = await self._redis.eval(
            _ADD, 1, self._key(grant.owner), grant.id, json.dumps(grant.to_json()), ttl_ms
        )
        return bool(added)

    async def _live(self, owner: str, now: datetime) -> list[Grant]:
        raw: dict[Any, Any] = await self._redis.hgetall(self._key(owner))
        live: list[tuple[Any, Grant]] = []
        dead: list[tuple[Any, Grant]] = []
        for field, value in raw.items():
            grant = Grant.from_json(json.loads(value))
            (live if grant.expires_at > now else dead).append((field, grant))
        if dead:
            await self._redis.hdel(self._key(owner), *[f for f, _ in dead])
        return [g for _, g in live]

    @translated
    async def find(self, *, owner: str, agent: str, use: Subject, now: datetime) -> Grant | None:
        """The newest live grant covering ``use``."""
        found = [
            g
            for g in await self._live(owner, now)
            if g.covers(owner=owner, agent=agent, use=use, now=now)
        ]
        return max(found, key=lambda g: g.granted_at, default=None)

    @translated
    async def list(self, *, owner: str, now: datetime) -> list[Grant]:
        """Every live grant of ``owner``, newest first."""
        grants = await self._live(owner, now)
        return sorted(grants, key=lambda g: g.granted_at, reverse=True)

    @translated
    async def put_offer(self, *, ask_id: str, offer: Offer, ttl: float) -> None:
        """Remember the offer for ``ttl`` seconds."""
        await self._redis.set(
            f"{self._prefix}grant-offer:{ask_id}",
            json.dumps(offer.to_json()),
            px=max(1, math.ceil(ttl * 1000)),
        )

    @translated
    async def get_offer(self, *, ask_id: str) -> Offer | None:
        """The offer, if it has not expired."""
        raw = await self._redis.get(f"{self._prefix}grant-offer:{ask_id}")
        return Offer.from_json(json.loads(raw)) if raw else None

    def _plans_key(self, owner: str) -> str:
        return f"{self._prefix}plans:{owner}"

    @translated
    async def add_plan(self, *, plan: Plan) -> bool:
        """Record a new plan unless one with its id exists (atomically)."""
        added = await self._redis.eval(
            _ADD,
            1,
            self._plans_key(plan.owner),
            plan.id,
            _plan_json(plan),
            _ms_until(plan.expires_at),
        )
        return bool(added)

    @translated
    async def replace_plan(self, *, old: Plan, new: Plan) -> bool:
        """``new`` in place of ``old`` if ``old`` is what is stored (atomically)."""
        swapped = await self._redis.eval(
            _SWAP,
            1,
            self._plans_key(old.owner),
            old.id,
            _plan_json(old),
            _plan_json(new),
            _ms_until(new.expires_at),
        )
        return bool(swapped)

    @translated
    async def get_plan(self, *, owner: str, plan_id: str) -> Plan | None:
        """The plan, if kept."""
        raw = await self._redis.hget(self._plans_key(owner), plan_id)
        return Plan.from_json(json.loads(raw)) if raw else None

    @translated
    async def plans(self, *, owner: str, agent: str, now: datetime) -> tuple[Plan, ...]:
        """The live plans of ``owner``'s ``agent``, newest first."""
        raw: dict[Any, Any] = await self._redis.hgetall(self._plans_key(owner))
        found = [Plan.from_json(json.loads(v)) for v in raw.values()]
        dead = [p.id for p in found if p.expires_at <= now]
        if dead:
            await self._redis.hdel(self._plans_key(owner), *dead)
        mine = [p for p in found if p.agent == agent and p.live(now)]
        return tuple(sorted(mine, key=lambda p: p.submitted_at, reverse=True))

    async def aclose(self) -> None:
        """Close the connection pool this store opened."""
        if self._own:
            await self._connection.aclose()
