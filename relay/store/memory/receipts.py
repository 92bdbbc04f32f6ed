"""The receipt chain and its checkpoints in memory (``relay.store.receipts``); lost on
restart. ``_receipts[i]`` is the receipt at place ``_receipt_base.seq + i + 1``."""

from __future__ import annotations

from relay.store.memory.base import MemoryBase
from relay.store.receipts import AppendResult, ChainHead


class MemoryReceipts(MemoryBase):
    """The chain as a list; each method runs without awaiting, so appends never interleave."""

    async def receipt_head(self) -> ChainHead:
        """The chain's head."""
        return self._receipt_head

    async def receipt_append(
        self, *, ask_id: str, receipt: str, seq: int, prev: str | None, digest: str
    ) -> AppendResult:
        """Append if the head is still ``(seq - 1, prev)`` and the ask has no receipt."""
        at = self._receipt_at.get(ask_id)
        if at is not None:
            self._receipts_owed.pop(ask_id, None)
            return AppendResult("exists", receipt=self._receipts[at - 1 - self._receipt_base.seq])
        head = self._receipt_head
        if head.seq != seq - 1 or head.digest != prev:
            return AppendResult("moved", head=head)
        self._receipts.append(receipt)
        self._receipt_at[ask_id] = seq
        self._receipt_head = ChainHead(seq, digest)
        self._receipts_owed.pop(ask_id, None)
        return AppendResult("appended")

    async def receipt_of(self, *, ask_id: str) -> str | None:
        """``ask_id``'s receipt."""
        at = self._receipt_at.get(ask_id)
        return None if at is None else self._receipts[at - 1 - self._receipt_base.seq]

    async def receipt_range(self, *, start: int = 1, limit: int = 1000) -> list[str]:
        """Receipts in chain order from place ``start``."""
        first = max(start - self._receipt_base.seq, 1) - 1
        return self._receipts[first : first + max(limit, 0)]

    async def receipt_owe(self, *, ask_id: str, at: float, again: bool = False) -> None:
        """Note the debt unless the ask has its receipt."""
        if ask_id not in self._receipt_at:
            if again:
                self._receipts_owed[ask_id] = at
            else:
                self._receipts_owed.setdefault(ask_id, at)

    async def receipt_owed(self, *, before: float, limit: int) -> list[str]:
        """Asks owing since before ``before``, oldest first (debts are few: a scan)."""
        due = sorted((at, i) for i, at in self._receipts_owed.items() if at < before)
        return [ask_id for _, ask_id in due[: max(limit, 0)]]

    async def receipt_forget(self, *, ask_id: str) -> None:
        """Drop the debt."""
        self._receipts_owed.pop(ask_id, None)

    async def receipt_base(self) -> ChainHead:
        """The last place trimmed and its digest."""
        return self._receipt_base

    async def receipt_trim(self, *, through: int, digest: str) -> int:
        """Drop the receipts up to place ``through``."""
        base = self._receipt_base.seq
        through = min(through, self._receipt_head.seq)
        if through <= base:
            return 0
        dropped = self._receipts[: through - base]
        del self._receipts[: through - base]
        gone = {ask for ask, at in self._receipt_at.items() if at <= through}
        for ask in gone:
            del self._receipt_at[ask]
        self._receipt_base = ChainHead(through, digest)
        return len(dropped)

    async def checkpoint_add(self, *, first: int, last: int, entry: str) -> bool:
        """Keep ``entry`` if it covers more than the latest."""
        if self._checkpoints and self._checkpoints[-1][0] >= (last, first):
            return False
        self._checkpoints.append(((last, first), entry))
        return True

    async def checkpoint_range(self, *, start: int = 1, limit: int = 100) -> list[str]:
        """Checkpoints in the order made, from the ``start``-th."""
        first = max(start, 1) - 1
        return [entry for _, entry in self._checkpoints[first : first + max(limit, 0)]]

    async def checkpoint_latest(self) -> tuple[int, str] | None:
        """The latest checkpoint and its number."""
        if not self._checkpoints:
            return None
        return len(self._checkpoints), self._checkpoints[-1][1]
