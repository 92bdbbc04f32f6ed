"""The store seam: the store a provider is given (``AskStore``, every part composed), and the
errors every part raises. Each part's ``Protocol`` is in its own module (see ``relay.store``)."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from relay.errors import RelayException
from relay.store.asks import Asks, ClickClaim, ClickClaims, ClickOutcome
from relay.store.followups import FollowUps
from relay.store.votes import Votes
from relay.store.waits import Waits

__all__ = [
    "AskStore",
    "ClickClaim",
    "ClickClaims",
    "ClickOutcome",
    "PendingLimitReached",
    "StoreUnavailable",
]


class StoreUnavailable(RelayException):
    """The store could not be reached, so the operation did not happen; retry later."""


class PendingLimitReached(RelayException):
    """The ask's owner already has as many pending asks as the store allows; nothing was
    stored. ``limit`` is that number."""

    def __init__(self, owner: str, limit: int) -> None:
        super().__init__(f"{owner} has {limit} asks pending, the most allowed")
        self.owner = owner
        self.limit = limit


@runtime_checkable
class AskStore(Asks, Waits, Votes, FollowUps, Protocol):
    """The store a provider is given: the asks, waits, votes and follow-ups parts (a seam
    ``Protocol``). Idempotency, listing, the outbox and ``ClickClaims`` are parts a store
    may also have; callers check for them (``isinstance``)."""
