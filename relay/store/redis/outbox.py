"""The webhook outbox on Redis (``relay.store.outbox``).

``{prefix}hook:{ask id}`` (the subscription), ``{prefix}hooks:watch`` (a sorted set of
subscribed asks whose end is not enqueued), ``{prefix}outbox`` (a sorted set of deliveries by
when they are due, or their lease ends) and ``{prefix}delivery:{event id}`` (a hash: the
delivery, attempts, state); on a cluster each is tagged ``{<prefix>hooks}`` (``Keys.hooks``):
one slot for the outbox.
"""

from __future__ import annotations

import math
import time

from relay.store.outbox import ClaimedDelivery
from relay.store.redis.base import RedisBase, translated
from relay.store.redis.codec import as_text


class RedisOutbox(RedisBase):
    """Webhook subscriptions and deliveries, each step one script."""

    def _hook_key(self, ask_id: str) -> str:
        return self._keys.hooks(f"hook:{ask_id}")

    def _delivery_key(self, event_id: str) -> str:
        return self._keys.hooks(f"delivery:{event_id}")

    @translated
    async def hook_subscribe(self, *, ask_id: str, subscription: str, ttl: float) -> None:
        """Remember ``ask_id``'s subscription for ``ttl`` seconds, and watch the ask."""
        script = self._script("hook_subscribe")
        await script(
            keys=[self._hook_key(ask_id), self._keys.hooks("hooks:watch")],
            args=[ask_id, subscription, max(1, math.ceil(ttl * 1000)), time.time()],
        )

    @translated
    async def hook_subscription(self, *, ask_id: str) -> str | None:
        """The subscription of ``ask_id``."""
        raw = await self._redis.get(self._hook_key(ask_id))
        return None if raw is None else as_text(raw)

    @translated
    async def hook_watched(self, *, limit: int = 100, offset: int = 0) -> list[str]:
        """Subscribed asks whose end is not enqueued yet, oldest first from ``offset``
        (expired ones are dropped from the watch as they are met)."""
        watch = self._keys.hooks("hooks:watch")
        ids = [as_text(i) for i in await self._redis.zrange(watch, offset, offset + limit - 1)]
        gone = await self._drop_gone(watch, ids)
        return [i for i in ids if i not in gone]

    @translated
    async def hook_enqueue(
        self, *, event_id: str, ask_id: str, delivery: str, due: float, final: bool
    ) -> bool:
        """Owe ``delivery`` unless ``event_id`` was enqueued before (on any replica)."""
        script = self._script("hook_enqueue")
        done = await script(
            keys=[
                self._delivery_key(event_id),
                self._keys.hooks("outbox"),
                self._keys.hooks("hooks:watch"),
                self._hook_key(ask_id),
            ],
            args=[event_id, delivery, repr(due), ask_id, "1" if final else "0"],
        )
        return bool(int(done))

    @translated
    async def hook_claim(self, *, now: float, lease: float, limit: int) -> list[ClaimedDelivery]:
        """Lease up to ``limit`` due deliveries (atomically: one replica gets each)."""
        script = self._script("lease_due")
        ids = [
            as_text(i)
            for i in await script(
                keys=[self._keys.hooks("outbox")], args=[repr(now), repr(now + lease), limit]
            )
        ]
        if not ids:
            return []
        async with self._redis.pipeline(transaction=False) as pipe:
            for event_id in ids:
                pipe.hmget(self._delivery_key(event_id), ["delivery", "attempts", "state"])
            rows = await pipe.execute()
        claimed: list[ClaimedDelivery] = []
        for event_id, (delivery, attempts, state) in zip(ids, rows, strict=True):
            if delivery is None or as_text(state) != "pending":
                await self._redis.zrem(self._keys.hooks("outbox"), event_id)  # settled or gone
                continue
            claimed.append(ClaimedDelivery(event_id, as_text(delivery), int(attempts or 0)))
        return claimed

    @translated
    async def hook_settle(
        self, *, event_id: str, outcome: str, error: str | None, keep: float
    ) -> None:
        """End a delivery; its id is kept ``keep`` seconds (so it is not enqueued again)."""
        script = self._script("hook_settle")
        await script(
            keys=[self._delivery_key(event_id), self._keys.hooks("outbox")],
            args=[event_id, outcome, error or "", max(1, math.ceil(keep * 1000))],
        )

    @translated
    async def hook_retry(self, *, event_id: str, due: float, error: str) -> None:
        """Try the delivery again from ``due``."""
        script = self._script("hook_retry")
        await script(
            keys=[self._delivery_key(event_id), self._keys.hooks("outbox")],
            args=[event_id, repr(due), error],
        )

    @translated
    async def hook_state(self, *, event_id: str) -> dict[str, str] | None:
        """Where a delivery stands."""
        fields = await self._redis.hgetall(self._delivery_key(event_id))
        if not fields:
            return None
        data = {as_text(k): as_text(v) for k, v in fields.items()}
        return {k: data.get(k, "") for k in ("state", "attempts", "error")}
