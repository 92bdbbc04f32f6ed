"""Approval uses: an approval's allow runs the call it was asked for once, on any replica.

A paused run keeps its approval ids (tickets) where whoever holds the run's state can copy
them; the relay records the first use of an allow, so that a ticket resumed twice, or by two
processes at once, runs its call once. A use sent again under the same ``key`` (its reply was
lost) is the same use.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

__all__ = ["ApprovalUses"]


@runtime_checkable
class ApprovalUses(Protocol):
    """Where the uses of approvals are recorded (a seam ``Protocol``); atomic across replicas."""

    async def use_once(self, *, ask_id: str, key: str, ttl: float) -> bool:
        """Record the use ``key`` of approval ``ask_id`` for ``ttl`` seconds: ``True`` if it is
        the first use (or that same use again), ``False`` if another use came first."""
        ...
