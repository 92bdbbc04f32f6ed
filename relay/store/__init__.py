"""Where asks live: the ``AskStore`` seam, the in-process ``MemoryStore``, and record types."""

from relay.store.base import AskStore, PendingLimitReached, StoreUnavailable
from relay.store.memory import MemoryStore
from relay.store.record import (
    AnswerResult,
    AskError,
    AskRecord,
    AskStatus,
    MessageRef,
    Target,
    VoteResult,
    utcnow,
)

__all__ = [
    "AnswerResult",
    "AskError",
    "AskRecord",
    "AskStatus",
    "AskStore",
    "MemoryStore",
    "MessageRef",
    "PendingLimitReached",
    "StoreUnavailable",
    "Target",
    "VoteResult",
    "utcnow",
]
