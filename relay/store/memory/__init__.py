"""``MemoryStore``: the embedded default, for one process with no server.

Composed of the store's parts (see ``relay.store``), one module each: ``asks``, ``waits``,
``idempotency``, ``listing``, ``outbox``, ``votes``, ``followups``, ``receipts`` and
``uses``; ``base`` holds the asks themselves (packed, ``relay.store.packed``), their
retention, and what an ask's end changes.
"""

from __future__ import annotations

from relay.store.memory.asks import MemoryAsks
from relay.store.memory.followups import MemoryFollowUps
from relay.store.memory.idempotency import MemoryIdempotency
from relay.store.memory.listing import MemoryListing
from relay.store.memory.outbox import MemoryOutbox
from relay.store.memory.receipts import MemoryReceipts
from relay.store.memory.uses import MemoryUses
from relay.store.memory.votes import MemoryVotes
from relay.store.memory.waits import MemoryWaits

__all__ = ["MemoryStore"]


class MemoryStore(
    MemoryVotes,
    MemoryAsks,
    MemoryWaits,
    MemoryFollowUps,
    MemoryIdempotency,
    MemoryListing,
    MemoryOutbox,
    MemoryReceipts,
    MemoryUses,
):
    """Asks held in this process: every part of the store (``relay.store``) in memory,
    composed; its constructor and state are ``MemoryBase``'s."""
