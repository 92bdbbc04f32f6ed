"""Approval uses in memory (``relay.store.uses``)."""

from __future__ import annotations

import heapq
import time

from relay.store.memory.base import MemoryBase


class MemoryUses(MemoryBase):
    """Each used approval's use key, until it expires."""

    async def use_once(self, *, ask_id: str, key: str, ttl: float) -> bool:
        """Record the first use of ``ask_id`` (atomic: no await between read and write)."""
        now = time.monotonic()
        while self._use_expiry and self._use_expiry[0][0] <= now:
            _, old = heapq.heappop(self._use_expiry)
            held = self._uses.get(old)
            if held is not None and held[0] <= now:
                del self._uses[old]
        held = self._uses.get(ask_id)
        if held is not None and held[0] > now:
            return held[1] == key
        self._uses[ask_id] = (now + ttl, key)
        heapq.heappush(self._use_expiry, (now + ttl, ask_id))
        return True
