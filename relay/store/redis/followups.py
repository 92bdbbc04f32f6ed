"""Follow-ups on Redis (``relay.store.followups``): reminders and the unsettled-message sweep.

A reminder is due at ``remind_at`` in the ask's hash (where it is claimed) and in the
``reminders`` index every replica scans. An ended ask with a message whose final update has
not landed (``shown:{i}`` in its hash once it has) is in the ``unsettled`` index, by when the
sweep may claim it.
"""

from __future__ import annotations

from relay.store.redis.base import RedisBase, translated
from relay.store.redis.codec import as_text


class RedisFollowUps(RedisBase):
    """Reminders and the unsettled-message sweep, each claim one script on the ask's hash."""

    @translated
    async def schedule_reminder(self, *, ask_id: str, at: float) -> None:
        """Remind people of the ask at ``at``: in its hash (where claims happen) and in a
        sorted set every replica scans for what is due."""
        await self._redis.hset(self._key(ask_id), "remind_at", repr(at))
        await self._redis.zadd(self._reminder_index, {ask_id: at})

    @property
    def _reminder_index(self) -> str:
        return self._keys.index("reminders")

    @translated
    async def next_reminder(self) -> float | None:
        """When the earliest reminder (or a lapsed claim) falls due."""
        first = await self._redis.zrange(self._reminder_index, 0, 0, withscores=True)
        return float(first[0][1]) if first else None

    @translated
    async def claim_reminders(
        self, *, now: float, lease: float, limit: int = 100
    ) -> list[tuple[str, int]]:
        """Claim due reminders, each in one script on the ask's hash: two replicas never
        claim the same one. The sorted set only says where to look, and is set right here."""
        index = self._reminder_index
        due = await self._redis.zrangebyscore(index, "-inf", repr(now), 0, limit)
        claim = self._script("claim_reminder")
        claimed: list[tuple[str, int]] = []
        for raw in due:
            ask_id = as_text(raw)
            sent, at = await claim(keys=[self._key(ask_id)], args=[now, now + lease])
            sent, at = int(sent), as_text(at)
            if sent >= 0:
                claimed.append((ask_id, sent))
                await self._redis.zadd(index, {ask_id: now + lease})
            elif at:
                await self._redis.zadd(index, {ask_id: float(at)})  # claimed elsewhere
            else:
                await self._redis.zrem(index, ask_id)  # ended, or no reminder left
        return claimed

    @translated
    async def reminded(self, *, ask_id: str, sent: int, next_at: float | None) -> bool:
        """Record reminder number ``sent`` as sent, once; schedule the next one."""
        done = await self._script("reminded")(
            keys=[self._key(ask_id)], args=[sent, "" if next_at is None else repr(next_at)]
        )
        if int(done) == 1 and next_at is not None:
            await self._redis.zadd(self._reminder_index, {ask_id: next_at})
        elif int(done) == 1:
            await self._redis.zrem(self._reminder_index, ask_id)
        return bool(int(done))

    @translated
    async def settled(self, *, ask_id: str, index: int | None = None) -> None:
        """Record a message's final update as landed; the last one unindexes the ask."""
        keys = [self._key(ask_id)] if self._cluster else [self._key(ask_id), self._unsettled_index]
        done = await self._settled(keys=keys, args=["" if index is None else index, ask_id])
        if int(done) == 1 and self._cluster:
            await self._redis.zrem(self._unsettled_index, ask_id)

    @translated
    async def unsettled(self, *, ask_id: str) -> frozenset[int]:
        """The posted questions not yet settled (one script on the ask's hash)."""
        found = await self._script("unsettled")(keys=[self._key(ask_id)])
        return frozenset(int(i) for i in found)

    @translated
    async def claim_unsettled(
        self, *, now: float, grace: float, lease: float, limit: int = 100
    ) -> list[str]:
        """Claim unsettled asks in one script on the index: two replicas never both do."""
        ids = await self._script("lease_due")(
            keys=[self._unsettled_index], args=[repr(now - grace), repr(now + lease - grace), limit]
        )
        return [as_text(i) for i in ids]

    @translated
    async def next_unsettled(self, *, grace: float) -> float | None:
        """When the earliest unsettled ask can be claimed."""
        first = await self._redis.zrange(self._unsettled_index, 0, 0, withscores=True)
        return float(first[0][1]) + grace if first else None
