"""The receipt chain on Redis (``relay.store.receipts``).

``{prefix}receipts:chain`` (a list of compact JWS, place ``seq`` at index ``seq - 1``),
``{prefix}receipts:at`` (a hash: ask id -> place), ``{prefix}receipts:head``
(``seq:digest``) and ``{prefix}receipts:owed`` (a sorted set of ended asks owing a receipt,
by since when); on a cluster each is tagged ``{<prefix>receipts}`` (``Keys.receipts``), one
slot, so the append is one script. Receipts are evidence: nothing here expires them.
"""

from __future__ import annotations

from relay.store.receipts import AppendResult, ChainHead
from relay.store.redis.base import RedisBase, translated
from relay.store.redis.codec import as_text


def _head(text: str) -> ChainHead:
    seq, _, digest = text.partition(":")
    return ChainHead(int(seq or 0), digest or None)


class RedisReceipts(RedisBase):
    """The chain, appended by one script (first append after a head wins, on any replica)."""

    def _receipt_keys(self) -> list[str]:
        names = ("receipts:chain", "receipts:at", "receipts:head", "receipts:owed")
        return [self._keys.receipts(n) for n in names]

    @translated
    async def receipt_head(self) -> ChainHead:
        """The chain's head."""
        raw = await self._redis.get(self._keys.receipts("receipts:head"))
        return _head("0:" if raw is None else as_text(raw))

    @translated
    async def receipt_append(
        self, *, ask_id: str, receipt: str, seq: int, prev: str | None, digest: str
    ) -> AppendResult:
        """Append if the head is still ``(seq - 1, prev)`` and the ask has no receipt."""
        outcome, value = await self._script("receipt_append")(
            keys=self._receipt_keys(), args=[ask_id, receipt, seq, prev or "", digest]
        )
        kind, text = as_text(outcome), as_text(value)
        if kind == "exists":
            return AppendResult("exists", receipt=text)
        if kind == "moved":
            return AppendResult("moved", head=_head(text))
        return AppendResult("appended")

    @translated
    async def receipt_of(self, *, ask_id: str) -> str | None:
        """``ask_id``'s receipt."""
        chain, at, _, _ = self._receipt_keys()
        place = await self._redis.hget(at, ask_id)
        if place is None:
            return None
        raw = await self._redis.lindex(chain, int(place) - 1)
        return None if raw is None else as_text(raw)

    @translated
    async def receipt_range(self, *, start: int = 1, limit: int = 1000) -> list[str]:
        """Receipts in chain order from place ``start``."""
        if limit <= 0:
            return []
        first = max(start, 1) - 1
        rows = await self._redis.lrange(
            self._keys.receipts("receipts:chain"), first, first + limit - 1
        )
        return [as_text(r) for r in rows]

    @translated
    async def receipt_owe(self, *, ask_id: str, at: float) -> None:
        """Note the debt unless the ask has its receipt (one script)."""
        _, place, _, owed = self._receipt_keys()
        await self._script("receipt_owe")(keys=[place, owed], args=[ask_id, repr(at)])

    @translated
    async def receipt_owed(self, *, before: float, limit: int) -> list[str]:
        """Asks owing since before ``before``, oldest first."""
        if limit <= 0:
            return []
        owed = self._keys.receipts("receipts:owed")
        rows = await self._redis.zrangebyscore(owed, "-inf", f"({before!r}", start=0, num=limit)
        return [as_text(r) for r in rows]

    @translated
    async def receipt_forget(self, *, ask_id: str) -> None:
        """Drop the debt."""
        await self._redis.zrem(self._keys.receipts("receipts:owed"), ask_id)
