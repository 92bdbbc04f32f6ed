"""The follow-ups part of the store: reminders of pending asks, and the messages of ended
asks whose final update has not landed yet (the unsettled-message sweep)."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

__all__ = ["FollowUps"]


@runtime_checkable
class FollowUps(Protocol):
    """Reminders and settlement (a seam ``Protocol``); each claim holds for a lease, so two
    claimers never act on one at once and a claimer that dies leaves it to the next."""

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
