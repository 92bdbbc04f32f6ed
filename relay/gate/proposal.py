"""What a door puts to the Decider (``Proposal``), and how the Decider asks people
(``Channel``): shared by the Decider and its plan decisions (``relay.gate.planning``)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from relay.canonical.match import Subject, subject
from relay.gate.approval import ApprovalRequest
from relay.seam.questions import AskUserQuestionAnswer, AskUserQuestionRequest
from relay.store.record import AskRecord

__all__ = ["OFFER_GRACE", "Channel", "Proposal"]

OFFER_GRACE = 24 * 3600.0
"""How long an offer (or a plan in review) outlives its ask's timeout, so a late read can
still record the grant."""


class Channel(Protocol):
    """How the Decider asks people (a seam ``Protocol``): ``relay.gate.local.PostingChannel``
    over an ``AskChannel``, ``SeamChannel`` over any seam provider."""

    async def ask(
        self,
        question: AskUserQuestionRequest,
        proposal: Proposal,
        request: ApprovalRequest,
        *,
        started: Callable[[str], Awaitable[None]] | None = None,
    ) -> AskUserQuestionAnswer:
        """Ask ``question`` (for ``request``, the approval as decided) and wait for the
        answer; withdraw it if ``question.signal`` aborts. ``started`` is told the ask's id
        once it is posted, where the channel has one (a plan is named by its review's)."""
        ...

    async def start(
        self, question: AskUserQuestionRequest, proposal: Proposal, request: ApprovalRequest
    ) -> AskRecord:
        """Post ``question`` and return its pending record (a door that polls reads it later)."""
        ...


@dataclass(frozen=True, slots=True)
class Proposal:
    """A tool use a door puts to the Decider: the request as the client reads it (its own
    rules applied: ``request.rules_allow`` when they allow), whose token asks, and where."""

    request: ApprovalRequest
    owner: str
    # What the client's own rules say when they do not allow: ``ask`` (a client that has
    # rules and asks), or ``pass`` (a door with no rules of its own: the operator's decide).
    client: Literal["ask", "pass"] = "ask"
    # The client's own channel settings (a thread, a requester...), which the operator's
    # requirements then override: opaque to the Decider, read by its ``Channel``.
    target: Any = None

    @property
    def subject(self) -> Subject:
        """The canonical form the rules and grants look at."""
        return subject(self.request.tool, self.request.input, cwd=self.request.cwd)
