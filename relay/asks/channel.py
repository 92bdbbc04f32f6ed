"""``AskChannel``: what the doors need of the channel that shows asks to people.

The doors (the ``/v1`` API, ``/mcp``, the Decider's channel) start an ask, wait for it and
abort it through this Protocol; ``relay.slack.SlackProvider`` implements it. The channel is
handed the ask's lifecycle (``AskLifecycle``) by the composition root that built both.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from relay.asks.events import Events
from relay.asks.target import AskTarget
from relay.seam.questions import AskUserQuestionRequest
from relay.store import AskRecord, AskStore

__all__ = ["AskChannel", "ChannelCheck"]


@dataclass(frozen=True, slots=True)
class ChannelCheck:
    """A channel's failed readiness check: ``problem`` for the public ``/readyz`` body (what
    is wrong, never where), ``detail`` for the log."""

    problem: str
    detail: str


class AskChannel(Protocol):
    """Shows asks to people and records their answers: start, wait, abort, stop."""

    @property
    def store(self) -> AskStore:
        """Where the asks are recorded (the lifecycle's store)."""
        ...

    @property
    def events(self) -> Events:
        """The asks' events (created, answered, ended…), for metrics, receipts, webhooks."""
        ...

    @property
    def stopping(self) -> bool:
        """Whether ``stop_asking`` was called: no new asks, no waits."""
        ...

    async def start(
        self,
        request: AskUserQuestionRequest,
        *,
        target: AskTarget | None = None,
        owner: str | None = None,
    ) -> AskRecord:
        """Record the ask and show it; the pending record, without waiting."""
        ...

    async def wait(self, ask_id: str, *, within: float | None = None) -> AskRecord:
        """Wait until the ask is final (or ``within`` seconds pass); the record as it stands."""
        ...

    async def abort(self, ask_id: str) -> AskRecord | None:
        """Abort a pending ask and withdraw what was shown; the final record."""
        ...

    async def stop_asking(self) -> None:
        """Refuse new asks, end those that cannot outlive this process, release every wait."""
        ...

    async def aclose(self) -> None:
        """``stop_asking``, then finish what is in flight and disconnect."""
        ...
