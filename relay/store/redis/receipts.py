"""The receipt chain on Redis (``relay.store.receipts``).

``{prefix}receipts:chain`` (a list of compact JWS, place ``seq`` at index ``seq - 1``),
``{prefix}receipts:at`` (a hash: ask id -> place), ``{prefix}receipts:head``
(``seq:digest``) and ``{prefix}receipts:owed`` (a sorted set of ended asks owing a receipt,
by since when); on a cluster each is tagged ``{<prefix>receipts}`` (``Keys.receipts``), one
slot, so the append is one script. Receipts are evidence: nothing here expires them; a
trim (``RELAY_RECEIPT_RETENTION``) drops the list's head and records ``seq:digest`` of the
last receipt dropped in ``{prefix}receipts:base``, so place ``seq`` is at index
``seq - base - 1`` (read in the same script as the index). ``{prefix}receipts:checkpoints``
lists the signed checkpoints in order; ``{prefix}receipts:covered`` (``last:first``) is what
the latest covers, so that replicas do not store two of one head.
"""

from __future__ import annotations

import base64
import json

from relay.store.receipts import AppendResult, ChainHead
from relay.store.redis.base import RedisBase, translated
from relay.store.redis.codec import as_text


def _ask(receipt: str) -> str:
    """The ask a receipt (compact JWS) is of, read from its payload (already verified when
    appended: a trim only needs to forget its place)."""
    part = receipt.split(".")[1]
    return str(json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))).get("ask"))


def _head(text: str) -> ChainHead:
    seq, _, digest = text.partition(":")
    return ChainHead(int(seq or 0), digest or None)


class RedisReceipts(RedisBase):
    """The chain, appended by one script (first append after a head wins, on any replica)."""

    def _receipt_keys(self) -> list[str]:
        names = ("receipts:chain", "receipts:at", "receipts:head", "receipts:owed", "receipts:base")
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
        chain, at, _, _, base = self._receipt_keys()
        rows = await self._script("receipt_read")(keys=[chain, at, base], args=[ask_id, 0, 1])
        return as_text(rows[0]) if rows else None

    @translated
    async def receipt_range(self, *, start: int = 1, limit: int = 1000) -> list[str]:
        """Receipts in chain order from place ``start``."""
        if limit <= 0:
            return []
        chain, at, _, _, base = self._receipt_keys()
        rows = await self._script("receipt_read")(
            keys=[chain, at, base], args=["", max(start, 1), limit]
        )
        return [as_text(r) for r in rows]

    @translated
    async def receipt_owe(self, *, ask_id: str, at: float, again: bool = False) -> None:
        """Note the debt unless the ask has its receipt (one script)."""
        _, place, _, owed, _ = self._receipt_keys()
        args = [ask_id, repr(at), "again" if again else "first"]
        await self._script("receipt_owe")(keys=[place, owed], args=args)

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

    @translated
    async def receipt_base(self) -> ChainHead:
        """The last place trimmed and its digest."""
        raw = await self._redis.get(self._keys.receipts("receipts:base"))
        return _head("0:" if raw is None else as_text(raw))

    @translated
    async def receipt_trim(self, *, through: int, digest: str) -> int:
        """Drop the receipts up to place ``through`` (one script; the asks' places go too)."""
        chain, at, _, _, base_key = self._receipt_keys()
        raw = await self._redis.get(base_key)
        base = "0:" if raw is None else as_text(raw)
        first = _head(base).seq
        if through <= first:
            return 0
        rows = await self._redis.lrange(chain, 0, through - first - 1)
        asks = [_ask(as_text(r)) for r in rows]
        dropped = await self._script("receipt_trim")(
            keys=[chain, at, base_key], args=[base, through, digest, *asks]
        )
        return int(dropped)

    @translated
    async def checkpoint_add(self, *, first: int, last: int, entry: str) -> bool:
        """Keep ``entry`` if it covers more than the latest (one script)."""
        keys = [
            self._keys.receipts("receipts:checkpoints"),
            self._keys.receipts("receipts:covered"),
        ]
        kept = await self._script("checkpoint_add")(keys=keys, args=[last, first, entry])
        return bool(int(kept))

    @translated
    async def checkpoint_range(self, *, start: int = 1, limit: int = 100) -> list[str]:
        """Checkpoints in the order made, from the ``start``-th."""
        if limit <= 0:
            return []
        first = max(start, 1) - 1
        rows = await self._redis.lrange(
            self._keys.receipts("receipts:checkpoints"), first, first + limit - 1
        )
        return [as_text(r) for r in rows]

    @translated
    async def checkpoint_latest(self) -> tuple[int, str] | None:
        """The latest checkpoint and its number."""
        key = self._keys.receipts("receipts:checkpoints")
        async with self._redis.pipeline(transaction=False) as pipe:
            pipe.llen(key)
            pipe.lindex(key, -1)
            count, raw = await pipe.execute()
        return None if raw is None else (int(count), as_text(raw))
