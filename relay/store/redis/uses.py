"""Approval uses on Redis (``relay.store.uses``): ``{ask key}:used`` holds the first use's key
(in the ask's slot on a cluster), set once by ``scripts/use_once.lua``."""

from __future__ import annotations

import math

from relay.store.redis.base import RedisBase, translated
from relay.store.redis.codec import wire


class RedisUses(RedisBase):
    """The first use of each approval, recorded by one script across every replica."""

    @translated
    async def use_once(self, *, ask_id: str, key: str, ttl: float) -> bool:
        """Record the first use of ``ask_id`` atomically, across every replica."""
        script = self._script("use_once")
        marker = wire(self._keys.ask(ask_id) + ":used")
        return bool(await script(keys=[marker], args=[key, max(1, math.ceil(ttl * 1000))]))
