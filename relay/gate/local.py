"""Approvals decided in this process, by the Decider, and the channels it asks through.

``LocalApprover`` serves ``relay mcp`` and ``relay hook`` when they talk to Slack themselves
(grants live in the process's memory, the user's rules file is the relay's) and the
framework integrations in process. ``PostingChannel`` is the Decider's channel over an
``AskChannel`` such as a ``SlackProvider`` (``relay serve``'s ``/v1/approvals`` and ``/mcp``
use it too); ``ChannelAsks`` is the seam provider over an ``AskChannel`` with an owner and a
per-ask target. Nothing here imports a channel: the composition root hands one in.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from dataclasses import replace

from relay.asks.channel import AskChannel
from relay.asks.target import AskTarget
from relay.errors import ErrorCode, UserInteractionError, ask_aborted
from relay.gate.approval import ApprovalRequest, Approver, Decision
from relay.gate.decider import Decider, Proposal
from relay.gate.rules import Rules
from relay.gate.rulings import Rulings
from relay.gate.team import escalation
from relay.grants.base import GrantStore
from relay.seam.abort import AbortSignal
from relay.seam.questions import AskUserQuestionAnswer, AskUserQuestionRequest
from relay.store.record import AskRecord, AskStatus

__all__ = [
    "Approver",
    "ChannelAsks",
    "LocalApprover",
    "PostingChannel",
    "SeamChannel",
    "slack_approver",
]


def target_for(request: ApprovalRequest, base: AskTarget | None = None) -> AskTarget:
    """Where ``request`` is asked and who may answer it: what the Decider settled, over the
    client's own ``base`` settings (a thread, a requester); unset: the provider's defaults."""
    current = base if base is not None else AskTarget(channel="")
    return replace(
        current,
        channel=request.channel or current.channel,
        allowed_users=request.approvers if request.approvers is not None else current.allowed_users,
        allowed_groups=request.approver_groups
        if request.approver_groups is not None
        else current.allowed_groups,
        timeout=request.timeout if request.timeout is not None else current.timeout,
        remind_after=request.remind_after
        if request.remind_after is not None
        else current.remind_after,
        reminders=request.reminders if request.reminders is not None else current.reminders,
        # The rules' escalation is one whole: nothing of the provider's defaults mixes in.
        **escalation(request),
    )


class ChannelAsks:
    """The seam's provider over an ``AskChannel``, for one owner and a default target."""

    def __init__(
        self, provider: AskChannel, *, owner: str | None, target: AskTarget | None = None
    ) -> None:
        self._provider = provider
        self._owner = owner
        self._target = target

    async def ask(self, request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
        """Ask with the default target."""
        return await self.ask_at(request, self._target)

    async def ask_at(
        self,
        request: AskUserQuestionRequest,
        target: AskTarget | None,
        started: Callable[[str], Awaitable[None]] | None = None,
    ) -> AskUserQuestionAnswer:
        """Post the questions to ``target``, wait, and withdraw them if aborted or cancelled;
        ``started`` is told the ask's id once posted."""
        signal = request.signal
        if signal is not None and signal.aborted:
            raise ask_aborted()
        record = await self._provider.start(request, target=target, owner=self._owner)
        if started is not None:
            await started(record.id)
        waiting = asyncio.ensure_future(self._provider.wait(record.id))
        aborted = asyncio.ensure_future(signal.wait()) if signal is not None else None
        try:
            await asyncio.wait(
                {waiting, *([aborted] if aborted else [])}, return_when=asyncio.FIRST_COMPLETED
            )
            if not waiting.done():
                raise ask_aborted()
            final = waiting.result()
        except BaseException:
            waiting.cancel()
            # Shielded: the withdrawal must land even while this task is being cancelled.
            with contextlib.suppress(Exception):
                await asyncio.shield(self._provider.abort(record.id))
            raise
        finally:
            if aborted is not None:
                aborted.cancel()
        if final.status is AskStatus.ANSWERED:
            return final.answer()
        if final.error is None:
            raise UserInteractionError(
                ErrorCode.PROVIDER_FAILED, f"ask {final.id} ended as {final.status}"
            )
        raise final.error.to_exception()


class PostingChannel:
    """The Decider's ``Channel`` over an ``AskChannel`` (a ``SlackProvider``): it posts, and
    may return the pending record without waiting."""

    def __init__(self, provider: AskChannel) -> None:
        self._provider = provider

    async def ask(
        self,
        question: AskUserQuestionRequest,
        proposal: Proposal,
        request: ApprovalRequest,
        *,
        started: Callable[[str], Awaitable[None]] | None = None,
    ) -> AskUserQuestionAnswer:
        """Post, wait, withdraw if aborted (``ChannelAsks``)."""
        asks = ChannelAsks(self._provider, owner=proposal.owner)
        return await asks.ask_at(question, target_for(request, proposal.target), started)

    async def start(
        self, question: AskUserQuestionRequest, proposal: Proposal, request: ApprovalRequest
    ) -> AskRecord:
        """Post; the pending record."""
        target = target_for(request, proposal.target)
        return await self._provider.start(question, target=target, owner=proposal.owner)


class SeamChannel:
    """The Decider's ``Channel`` over any seam provider (``ask`` only: it cannot post and
    return, so it serves in-process approvals, not ``/v1/approvals``)."""

    def __init__(self, ask: Callable[[AskUserQuestionRequest], Awaitable[AskUserQuestionAnswer]]):
        self._ask = ask

    async def ask(
        self,
        question: AskUserQuestionRequest,
        proposal: Proposal,
        request: ApprovalRequest,
        *,
        started: Callable[[str], Awaitable[None]] | None = None,
    ) -> AskUserQuestionAnswer:
        """Ask through the seam (which names no ask: ``started`` is never told)."""
        return await self._ask(question)

    async def start(
        self, question: AskUserQuestionRequest, proposal: Proposal, request: ApprovalRequest
    ) -> AskRecord:
        """Not possible over the seam."""
        raise RuntimeError("a seam provider cannot post an approval and return")


class LocalApprover:
    """An ``Approver`` deciding in this process through a ``Decider`` (grants, people, and
    the rules it was given: a hosted relay's operator rules, or the user's own file when
    this process asks Slack itself)."""

    def __init__(self, decider: Decider, *, owner: str = "local") -> None:
        self.decider = decider
        self.grants = decider.grants
        self._owner = owner

    async def approve(
        self, request: ApprovalRequest, *, signal: AbortSignal | None = None
    ) -> Decision:
        """Allow or deny ``request`` (a grant, a reviewer, or a deny when neither answers)."""
        proposal = Proposal(request, owner=self._owner)
        return await self.decider.decide(proposal, signal=signal)

    async def aclose(self) -> None:
        """Nothing to release (the grant store belongs to whoever made it)."""


def slack_approver(
    provider: AskChannel, grants: GrantStore, *, owner: str, rules: Rules | None = None
) -> LocalApprover:
    """A ``LocalApprover`` asking through ``provider`` (a ``SlackProvider``, or any
    ``AskChannel``) on behalf of ``owner``; ``rules``: the rules this process decides by
    (asking Slack itself, the user's file is the relay's)."""
    decider = Decider(
        rulings=Rulings(rules=lambda _: rules, source=rules.source if rules else "the rules"),
        grants=grants,
        channel=PostingChannel(provider),
    )
    return LocalApprover(decider, owner=owner)
