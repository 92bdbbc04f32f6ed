"""The audit index in memory (``relay.store.listing``): each owner's asks by creation time."""

from __future__ import annotations

from relay.store.listing import Position
from relay.store.memory.base import MemoryBase
from relay.store.record import (
    AskRecord,
)


class MemoryListing(MemoryBase):
    """Lists one owner's asks newest first."""

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
        self._forget_expired()
        owned = self._owned.get(owner, {})
        found: list[AskRecord] = []
        # Newest first is the reverse of creation order (a dict keeps insertion order).
        for ask_id, at in reversed(owned.items()):
            position = (at, ask_id)
            if after is not None and position >= after:
                continue
            if since is not None and at < since:
                break
            if until is not None and at >= until:
                continue
            record = self._lookup(position[1])
            if record is not None:
                found.append(record)
                if len(found) >= limit:
                    break
        return found
