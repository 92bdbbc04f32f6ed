"""The asks part of the store: creating asks, reading them, and the claims that end them.

``answer`` and ``finish`` are claims: for each question, and for the ask as a whole, the first
claim wins and every later one is refused, across every process sharing the store. A click
may be checked and claimed in one step (``ClickClaims``, optional).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Literal, Protocol, runtime_checkable

from relay.seam.questions import AskUserQuestionAnswerItem
from relay.store.record import AnswerResult, AskError, AskRecord, AskStatus, MessageRef

__all__ = ["Asks", "ClickClaim", "ClickClaims", "ClickOutcome"]


@runtime_checkable
class Asks(Protocol):
    """Pending and recent asks and their claims (a seam ``Protocol``); every method is
    keyword-only and atomic."""

    async def create(self, *, record: AskRecord) -> None:
        """Store a new pending ask; ``PendingLimitReached`` if its owner has too many."""
        ...

    async def get(self, *, ask_id: str) -> AskRecord | None:
        """The ask as it stands, or ``None`` if unknown or expired."""
        ...

    async def set_message(
        self, *, ask_id: str, index: int, message: MessageRef
    ) -> AskRecord | None:
        """Remember where question ``index``'s Slack message was posted; the ask as it
        stands once recorded (read in the same step), or ``None`` if it is gone."""
        ...

    async def answer(
        self, *, ask_id: str, index: int, item: AskUserQuestionAnswerItem
    ) -> AnswerResult:
        """Claim question ``index``'s answer; the ask completes when every question has one."""
        ...

    async def finish(
        self, *, ask_id: str, status: AskStatus, error: AskError | None, at: datetime
    ) -> tuple[bool, AskRecord | None]:
        """Claim a final outcome other than an answer; returns (won, record as it stands)."""
        ...

    durable: bool
    """Whether asks outlive this process (a restart must then not abort them)."""

    async def due(self, *, now: float, limit: int = 100) -> list[str]:
        """Pending asks whose deadline is at or before ``now`` (epoch seconds; asks with no
        deadline count as due at infinity). The caller settles them (``finish``); a store
        may return an ask again until someone has (a shared store must, so that the asks of
        a replica that died still time out)."""
        ...

    async def next_deadline(self) -> float | None:
        """The earliest deadline of a pending ask not yet returned by ``due``, if any."""
        ...

    async def count_pending(self) -> int:
        """How many asks are pending (for the ``relay_asks_pending`` gauge)."""
        ...

    async def ping(self) -> None:
        """Raise if the store cannot be reached."""
        ...

    async def aclose(self) -> None:
        """Release connections; idempotent."""
        ...


ClickOutcome = Literal[
    "accepted", "completed", "already_answered", "not_pending", "unknown", "message_mismatch"
]


@dataclass(frozen=True, slots=True)
class ClickClaim:
    """What ``ClickClaims.claim_click`` did: ``AnswerResult``'s outcomes, or
    ``message_mismatch`` (the click came from another message than the question's, and
    nothing was read back); the record as it stands after (``None`` for ``unknown`` and
    ``message_mismatch``)."""

    outcome: ClickOutcome
    record: AskRecord | None


@runtime_checkable
class ClickClaims(Protocol):
    """An optional part of a store: a click checked and claimed in one step (on Redis, one
    script, one round trip), for a caller that already knows the ask's unchanging part."""

    def known(self, *, ask_id: str) -> AskRecord | None:
        """The ask as this process holds it, without any I/O, or ``None`` if it holds none.

        Its request, target, owner and times are right (they never change); its status,
        messages and answers may be out of date: ``claim_click`` checks those itself."""
        ...

    async def claim_click(
        self,
        *,
        ask_id: str,
        index: int,
        item: AskUserQuestionAnswerItem,
        message: tuple[str | None, str | None],
    ) -> ClickClaim:
        """``answer``, refused first as ``message_mismatch`` if question ``index``'s message
        is recorded and is not ``message`` (the click's channel and ts)."""
        ...
