"""The audit index on Redis (``relay.store.listing``): ``{prefix}owned:{owner}``, a sorted set
of the owner's ask ids by creation time. An id whose ask hash expired is dropped when a listing
meets it, and a few of the oldest are checked now and then on create (``create.lua``), so the
index stays about as long as retention keeps the asks."""

from __future__ import annotations

import math
from typing import Any

from relay.store.listing import Position
from relay.store.record import AskRecord
from relay.store.redis.base import RedisBase, translated
from relay.store.redis.codec import as_text, decode


class RedisListing(RedisBase):
    """Lists one owner's asks, newest first."""

    @translated
    async def list_owned(
        self,
        *,
        owner: str,
        since: float | None = None,
        until: float | None = None,
        after: Position | None = None,
        limit: int = 100,
    ) -> list[AskRecord]:
        """``owner``'s asks created in ``[since, until)``, newest first, older than ``after``."""
        key = self._owned_key(owner)
        upper: float = math.inf if until is None else until
        if after is not None:
            upper = min(upper, after[0])
        lower = "-inf" if since is None else repr(since)
        found: list[AskRecord] = []
        skip = 0
        while len(found) < limit:
            batch: list[Any] = await self._redis.zrevrangebyscore(
                key,
                repr(upper) if math.isfinite(upper) else "+inf",
                lower,
                start=skip,
                num=limit - len(found) + 8,
                withscores=True,
            )
            if not batch:
                break
            skip += len(batch)
            entries = [(as_text(pair[0]), float(pair[1])) for pair in batch]
            wanted = [
                (ask_id, score)
                for ask_id, score in entries
                if (until is None or score < until) and (after is None or (score, ask_id) < after)
            ]
            async with self._redis.pipeline(transaction=False) as pipe:
                for ask_id, _ in wanted:
                    pipe.hgetall(self._key(ask_id))
                fields = await pipe.execute()
            gone: list[str] = []
            for (ask_id, _), data in zip(wanted, fields, strict=True):
                record = decode(data)
                if record is None:
                    gone.append(ask_id)
                elif len(found) < limit:
                    found.append(record)
            if gone:
                await self._redis.zrem(key, *gone)
                skip -= len(gone)
        return found
