"""The receipt chain: every ended ask's signed receipt, one chain per relay, in order.

Each receipt names the digest of the one before (``prev``) and its place (``seq``), so the
chain is appended with a check: ``receipt_append`` adds a receipt only if the chain's head is
still the one it was signed after, in one atomic step (memory: no await; Redis: one script on
one slot), else it answers ``moved`` and the writer signs again after the new head. So
replicas never fork it, and a replica killed mid-append leaves its receipt whole or absent.
An ask has one receipt: appending a second answers ``exists`` with the first. An ask that
ended is first noted as owing one (``receipt_owe``), and the append settles that, so that a
replica killed between an ask's end and its receipt leaves it to another replica's sweep
(``receipt_owed``), not to nobody.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Protocol, runtime_checkable

__all__ = ["AppendResult", "ChainHead", "Checkpoints", "ReceiptChain"]


@dataclass(frozen=True, slots=True)
class ChainHead:
    """The last receipt's place (0: the chain is empty) and digest (``None`` then)."""

    seq: int
    digest: str | None


@dataclass(frozen=True, slots=True)
class AppendResult:
    """``appended``; ``exists`` (``receipt`` is the ask's, appended before); or ``moved``
    (another receipt came first: ``head`` is the chain's head now)."""

    outcome: Literal["appended", "exists", "moved"]
    receipt: str | None = None
    head: ChainHead | None = None


@runtime_checkable
class ReceiptChain(Protocol):
    """The chain of receipts (a seam ``Protocol``); every method is atomic."""

    async def receipt_head(self) -> ChainHead:
        """The chain's head as it stands."""
        ...

    async def receipt_append(
        self, *, ask_id: str, receipt: str, seq: int, prev: str | None, digest: str
    ) -> AppendResult:
        """Append ``receipt`` (compact JWS, whose digest is ``digest``) as ``ask_id``'s, at
        place ``seq``, if the head is still ``(seq - 1, prev)`` and the ask has none."""
        ...

    async def receipt_of(self, *, ask_id: str) -> str | None:
        """``ask_id``'s receipt, once it is written."""
        ...

    async def receipt_range(self, *, start: int = 1, limit: int = 1000) -> list[str]:
        """Up to ``limit`` receipts in chain order from place ``start`` (the first is 1)."""
        ...

    async def receipt_owe(self, *, ask_id: str, at: float, again: bool = False) -> None:
        """Note that ``ask_id`` owes a receipt (once it ends) since ``at`` (epoch seconds),
        unless it has one; appending it settles the debt. A debt already noted keeps its
        time, unless ``again`` (a sweep putting a still pending ask's debt back in line)."""
        ...

    async def receipt_owed(self, *, before: float, limit: int) -> list[str]:
        """Up to ``limit`` asks owing a receipt since before ``before``, oldest first."""
        ...

    async def receipt_forget(self, *, ask_id: str) -> None:
        """Drop ``ask_id``'s debt (it expired before anyone could sign for it)."""
        ...


@runtime_checkable
class Checkpoints(Protocol):
    """The chain's signed checkpoints and its trimmed start (a seam ``Protocol``).

    A trim drops the receipts up to a place and keeps the digest of the last one dropped
    (the ``prev`` of the first kept), so that a checkpoint can say where the chain now starts
    and what that receipt links to. Checkpoints are kept in the order made; one is added only
    if it covers more of the chain than the latest, so replicas making them at once never
    store two for one head."""

    async def receipt_base(self) -> ChainHead:
        """The place before the first receipt held (0 when none was trimmed) and the digest
        that receipt names as ``prev``."""
        ...

    async def receipt_trim(self, *, through: int, digest: str) -> int:
        """Drop the receipts at places up to ``through`` (``digest``: the digest of the one
        at ``through``), unless they are gone already; how many were dropped."""
        ...

    async def checkpoint_add(self, *, first: int, last: int, entry: str) -> bool:
        """Keep ``entry`` (a checkpoint of the chain's places ``first`` to ``last``) if the
        latest one kept covers less (an earlier last, or the same with less trimmed);
        whether it was kept."""
        ...

    async def checkpoint_range(self, *, start: int = 1, limit: int = 100) -> list[str]:
        """Up to ``limit`` checkpoints in the order made, from the ``start``-th (first is 1)."""
        ...

    async def checkpoint_latest(self) -> tuple[int, str] | None:
        """The latest checkpoint and its number, if any was made."""
        ...
