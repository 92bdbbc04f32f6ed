"""The store seam: where asks live, and the one place that decides which outcome wins."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Literal, Protocol, runtime_checkable

from relay.questions import AskUserQuestionAnswerItem, Vote
from relay.store.record import (
    AnswerResult,
    AskError,
    AskRecord,
    AskStatus,
    MessageRef,
    VoteResult,
)

__all__ = [
    "AskStore",
    "ClickClaim",
    "ClickClaims",
    "ClickOutcome",
    "PendingLimitReached",
    "StoreUnavailable",
]


class StoreUnavailable(Exception):
    """The store could not be reached, so the operation did not happen; retry later."""


class PendingLimitReached(Exception):
    """The ask's owner already has as many pending asks as the store allows; nothing was
    stored. ``limit`` is that number."""

    def __init__(self, owner: str, limit: int) -> None:
        super().__init__(f"{owner} has {limit} asks pending, the most allowed")
        self.owner = owner
        self.limit = limit


@runtime_checkable
class AskStore(Protocol):
    """Pending and recent asks (a seam ``Protocol``); every method is keyword-only and atomic.

    ``answer`` and ``finish`` are claims: for each question, and for the ask as a whole, the
    first claim wins and every later one is refused, across every process sharing the store.
    """

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

    async def wait(self, *, ask_id: str, within: float | None) -> AskRecord | None:
        """Wait until the ask is final or ``within`` seconds pass; the record as it then stands."""
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

    async def vote(
        self,
        *,
        ask_id: str,
        index: int,
        item: AskUserQuestionAnswerItem,
        required: int,
        veto: frozenset[str],
    ) -> VoteResult:
        """Count ``item`` (one label, ``answered_by`` someone) as a vote on question
        ``index``, once per person: a second vote by the same person is ``already_voted``
        and changes nothing. When the label reaches ``required`` votes, or is in ``veto``,
        claim ``item`` as the question's answer as ``answer`` does, with every vote in its
        ``votes``."""
        ...

    async def votes(self, *, ask_id: str) -> tuple[tuple[Vote, ...], ...]:
        """Every question's votes so far, in question order (empty for an unknown ask)."""
        ...

    async def schedule_reminder(self, *, ask_id: str, at: float) -> None:
        """Remind people of the (pending) ask at ``at`` (epoch seconds)."""
        ...

    async def next_reminder(self) -> float | None:
        """When the earliest reminder (or a lapsed claim on one) falls due, if any."""
        ...

    async def claim_reminders(
        self, *, now: float, lease: float, limit: int = 100
    ) -> list[tuple[str, int]]:
        """Claim the reminders due at ``now`` of pending asks: ``(ask_id, reminders sent so
        far)``. Each claim holds for ``lease`` seconds: a claimer that dies before
        ``reminded`` leaves the reminder to whoever claims it after. Reminders of asks that
        ended are dropped."""
        ...

    async def reminded(self, *, ask_id: str, sent: int, next_at: float | None) -> bool:
        """Record that reminder number ``sent`` (as claimed) went out, and when the next one
        is due (``None``: no more). ``False`` if another claimer recorded it first."""
        ...

    async def settled(self, *, ask_id: str, index: int | None = None) -> None:
        """Record that question ``index``'s message shows its final state (the update that
        ended it landed); ``None``: every message of the ask (also to give up on them). An
        ask that ended and whose every posted message is settled leaves the unsettled index
        that ``claim_unsettled`` reads; an ask enters it when it ends (``answer``, ``vote``
        or ``finish`` completing it)."""
        ...

    async def unsettled(self, *, ask_id: str) -> frozenset[int]:
        """The questions whose message was posted and is not yet ``settled``: once the ask
        has ended, the messages that may still show live inputs (while it is pending, the
        open questions too). Empty for an unknown ask."""
        ...

    async def claim_unsettled(
        self, *, now: float, grace: float, lease: float, limit: int = 100
    ) -> list[str]:
        """Claim the asks that ended ``grace`` seconds or more before ``now`` (epoch
        seconds) and are still unsettled. Each claim holds for ``lease`` seconds: two
        claimers never retry one ask at once, and one whose claimer died before settling
        it is claimed again after that."""
        ...

    async def next_unsettled(self, *, grace: float) -> float | None:
        """When the earliest unsettled ask (or lapsed claim) can be claimed, if any."""
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
