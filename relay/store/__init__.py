"""Where the relay's state lives: the store, as parts by concern, each with two backends.

Each part is a ``Protocol`` in ``relay/store/<part>.py`` and a class per backend in
``relay/store/memory/<part>.py`` and ``relay/store/redis/<part>.py``; ``MemoryStore`` and
``RedisStore`` are each composed of their backend's parts (over that backend's ``base``,
which holds what the parts share). A part a backend lacks is simply absent from its store;
callers check with ``isinstance``. Which part to open for which question:

- How an ask is created, read, and ended by the first claim (a click in one step)? ``asks``
  (``AskStore``'s core, ``ClickClaims``), and on Redis ``scripts/answer.lua`` and friends.
- How a long-poll learns that an ask ended, on any replica? ``waits``.
- How a create sent twice makes one ask? ``idempotency``. Each token's asks, newest first
  (the audit trail)? ``listing``. Which webhook deliveries are owed? ``outbox``.
- How votes are counted and the quorum claims? ``votes``. Reminders, and messages still to be
  updated once an ask ended? ``followups``.
- What a record is, and how it is kept small? ``record`` and ``packed``. Connecting to Redis
  (URLs, Sentinel, Cluster, TLS) and its fast paths? ``redis_url``, ``redis_connect``,
  ``redis_pipelined``, ``redis_listener``. What a store provides as a whole? ``base``.
- How every ended ask's signed receipt is chained, with no fork across replicas?
  ``receipts`` (the signing is ``relay.receipts``').
- How an approval's allow runs its call once, whoever resumes the paused run? ``uses``.

A new part is one ``Protocol`` module and one module per backend, added to the bases of
``MemoryStore`` and ``RedisStore`` (its state in the backend's ``base``, its scripts as
``.lua`` files with a header naming their ``KEYS`` and ``ARGV``).
"""

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
