"""Approvals decided in this process: grants first, then a reviewer in Slack.

``LocalApprover`` serves ``relay mcp`` when it talks to Slack itself (grants live in the
process's memory) and the ``/mcp`` endpoint of ``relay serve`` (grants live in the relay's
store, shared with ``/v1/approvals``). ``SlackAsks`` is the seam provider both use to ask
through a ``SlackProvider`` with an owner and a per-ask target.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
from collections.abc import Awaitable, Callable
from typing import Any

from relay.abort import AbortSignal
from relay.errors import ErrorCode, HarnessError, UserInteractionError, ask_aborted
from relay.gate.approval import (
    ApprovalRequest,
    Approver,
    Decision,
    approval_question,
    decide_answer,
    decide_error,
    offer_for,
)
from relay.gate.match import subject
from relay.grants.base import GrantStore
from relay.questions import AskUserQuestionAnswer, AskUserQuestionRequest
from relay.slack.provider import UNSET, SlackProvider, SlackTarget
from relay.store.record import AskStatus, utcnow

__all__ = ["Approver", "LocalApprover", "SlackAsks", "slack_approver", "target_for"]


def target_for(request: ApprovalRequest) -> SlackTarget:
    """Where ``request`` is asked and who may answer it (unset: the provider's defaults)."""
    escalation: dict[str, Any] = {}
    if request.escalate_after is not None:
        # The rules' escalation is one whole: nothing of the provider's defaults mixes in.
        escalation = {
            "escalate_after": request.escalate_after,
            "escalate_users": request.escalate_users,
            "escalate_groups": request.escalate_groups,
            "escalate_channel": request.escalate_channel,
        }
    return SlackTarget(
        channel=request.channel or "",
        allowed_users=request.approvers if request.approvers is not None else UNSET,
        allowed_groups=request.approver_groups if request.approver_groups is not None else UNSET,
        timeout=request.timeout if request.timeout is not None else UNSET,
        remind_after=request.remind_after if request.remind_after is not None else UNSET,
        reminders=request.reminders if request.reminders is not None else UNSET,
        **escalation,
    )


class SlackAsks:
    """The seam's provider over a ``SlackProvider``, for one owner and a default target."""

    def __init__(
        self, provider: SlackProvider, *, owner: str | None, target: SlackTarget | None = None
    ) -> None:
        self._provider = provider
        self._owner = owner
        self._target = target

    async def ask(self, request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
        """Ask with the default target."""
        return await self.ask_at(request, self._target)

    async def ask_at(
        self, request: AskUserQuestionRequest, target: SlackTarget | None
    ) -> AskUserQuestionAnswer:
        """Post the questions to ``target``, wait, and withdraw them if aborted or cancelled."""
        signal = request.signal
        if signal is not None and signal.aborted:
            raise ask_aborted()
        record = await self._provider.start(request, target=target, owner=self._owner)
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


Ask = Callable[[AskUserQuestionRequest, ApprovalRequest], Awaitable[AskUserQuestionAnswer]]


class LocalApprover:
    """Grants first; else ask a reviewer through ``ask``; a reviewer's grant is recorded here."""

    def __init__(self, *, ask: Ask, grants: GrantStore, owner: str = "local") -> None:
        self._ask = ask
        self.grants = grants
        self._owner = owner

    async def approve(
        self, request: ApprovalRequest, *, signal: AbortSignal | None = None
    ) -> Decision:
        """Allow or deny ``request`` (a grant, a reviewer, or a deny when neither answers)."""
        if request.rules_allow:
            # No operator's rules in this process: the caller's allow stands.
            return Decision(behavior="allow", message="allowed by the rules", outcome="allowed")
        try:
            grant = await self.grants.find(
                owner=self._owner,
                agent=request.agent.id,
                use=subject(request.tool, request.input),
                now=utcnow(),
            )
        except Exception as exc:  # a store that is down must not allow anything
            return decide_error(exc)
        if grant is not None:
            return Decision(
                behavior="allow",
                message=grant.describe(),
                outcome="allowed",
                by=grant.granted_by,
                at=grant.granted_at,
                grant=grant,
            )
        question = approval_question(request)
        question = AskUserQuestionRequest(question.questions, agent=question.agent, signal=signal)
        try:
            answer = await self._ask(question, request)
        except HarnessError as exc:
            return decide_error(exc, timeout=request.timeout)
        except Exception as exc:
            return decide_error(exc)
        session, minutes = request.grants_offered
        decision, kind = decide_answer(
            answer.answers[0], session=session, minutes=minutes, editable=request.editable
        )
        offer = offer_for(request.offer(self._owner), request.tool, decision)
        if kind is None or decision.by is None or decision.at is None:
            return decision
        made = offer.grant(
            ask_id=secrets.token_urlsafe(12), kind=kind, by=decision.by, at=decision.at
        )
        try:
            await self.grants.add(grant=made)
        except Exception:
            return decision  # allowed once all the same; the grant is just not kept
        return Decision(
            behavior="allow",
            message=f"{decision.message}; {made.describe()}",
            outcome="granted",
            by=decision.by,
            at=decision.at,
            grant=made,
        )

    async def aclose(self) -> None:
        """Nothing to release (the grant store belongs to whoever made it)."""


def slack_approver(provider: SlackProvider, grants: GrantStore, *, owner: str) -> LocalApprover:
    """A ``LocalApprover`` asking through ``provider`` on behalf of ``owner``."""
    asks = SlackAsks(provider, owner=owner)

    async def ask(
        question: AskUserQuestionRequest, request: ApprovalRequest
    ) -> AskUserQuestionAnswer:
        return await asks.ask_at(question, target_for(request))

    return LocalApprover(ask=ask, grants=grants, owner=owner)
