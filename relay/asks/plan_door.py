"""What a channel may ask of the Decider's plan decisions: the door for a plan's message.

A reviewer acts on a plan from its review message: *Stop the plan* once it is approved, or
narrows its scope in the *Edit…* form before approving. The channel only translates those
into calls here (``relay.gate.planning`` implements them); what they decide is the
Decider's. A seam ``Protocol``, with plain data so that the channel needs no plan type.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

from relay.seam.questions import Responder
from relay.store.record import AskRecord

__all__ = ["PlanDoor", "PlanStop", "ScopeChoice"]


@dataclass(frozen=True, slots=True)
class PlanStop:
    """What a reviewer's *Stop the plan* did: ``stopped`` it now, found it ``ended`` already
    (``status``: stopped, rejected or expired; ``by``: who ended it), or found ``none``."""

    outcome: Literal["stopped", "ended", "none"]
    status: str = ""
    by: str | None = None


@dataclass(frozen=True, slots=True)
class ScopeChoice:
    """One item of a plan's derived scope, as the Edit form shows it: ``key`` names it in a
    submission, ``words`` say it; ``asked`` (why) when it stays ask each time."""

    key: str
    words: str
    asked: str | None = None


class PlanDoor(Protocol):
    """The Decider's plan decisions, as a plan's review message reaches them."""

    async def stop_from_review(self, record: AskRecord, *, by: Responder) -> PlanStop:
        """End the plan that review ask ``record`` approved, as ``by`` chose in Slack."""
        ...

    async def scope_choices(self, record: AskRecord) -> tuple[ScopeChoice, ...] | None:
        """The scope items of the plan under review in ``record``; ``None``: no such plan."""
        ...

    async def narrowing_refusal(self, record: AskRecord, keep: Sequence[str]) -> str | None:
        """Why approving ``record``'s plan with only the items ``keep`` (their keys) is
        refused, or ``None``: the same check the plan's approval makes."""
        ...
