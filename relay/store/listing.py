"""The audit index: each API token's asks by creation time, newest first.

Stores keep it beside the asks and drop an ask from it when the ask itself goes (after
``RELAY_RETENTION``, or the memory store's byte bound), so the trail is as long as retention.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from relay.store.record import AskRecord

__all__ = ["AskListing", "Position"]

Position = tuple[float, str]
"""Where a listing stands: an ask's creation time (epoch seconds) and id."""


@runtime_checkable
class AskListing(Protocol):
    """Lists one owner's asks newest first (a seam ``Protocol``)."""

    async def list_owned(
        self,
        *,
        owner: str,
        since: float | None = None,
        until: float | None = None,
        after: Position | None = None,
        limit: int = 100,
    ) -> list[AskRecord]:
        """Up to ``limit`` of ``owner``'s asks created in ``[since, until)``, newest first,
        each older than ``after`` (the position of the last one a previous call returned)."""
        ...
