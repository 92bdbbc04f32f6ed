"""The waits part of the store: a long-poll on an ask until it ends."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from relay.store.record import AskRecord

__all__ = ["Waits"]


@runtime_checkable
class Waits(Protocol):
    """Waiting for an ask to end (a seam ``Protocol``), woken by an end in any process
    sharing the store."""

    async def wait(self, *, ask_id: str, within: float | None) -> AskRecord | None:
        """Wait until the ask is final or ``within`` seconds pass; the record as it then stands."""
        ...
