"""The Decider's plan decisions: a reviewed plan's scope, made and held (``relay.plans``).

A plan is a grant of a broader kind. ``PlanDecisions`` is the part of the one ``Decider``
(``relay.gate.decider``) that proposes a plan (its scope derived by relay and bound by the
operator's rules: an item they deny, or whose calls need other people, stays ask each time),
reads the reviewer's answer once, allows a call inside a live plan of its owner and agent
without a post (after the rules and grants, never before), lets a reviewer widen the plan by
one exact call or stop it, and keeps the calls it covered as evidence.
"""

from __future__ import annotations

import logging
import secrets
from dataclasses import replace
from datetime import timedelta
from typing import Any, Literal

from relay.canonical.match import Subject
from relay.errors import HarnessError
from relay.gate.approval import ApprovalRequest, Decision, decide_error
from relay.gate.plan_message import narrow
from relay.gate.plan_proposal import PLAN_TOOL, PlanProposal, PlanReview, review_plan_through
from relay.gate.proposal import OFFER_GRACE, Channel, Proposal
from relay.grants.base import GrantStore
from relay.grants.record import Offer
from relay.plans.record import Covered, Plan
from relay.plans.scope import Asked, PlanScope, derive_scope, describe_scope
from relay.plans.steps import Step
from relay.seam.abort import AbortSignal
from relay.seam.plan_review import (
    plan_narrowing,
    plan_verdict,
    scoped_plan_question,
)
from relay.seam.questions import AskUserQuestionAnswerItem, AskUserQuestionRequest
from relay.store.record import AskRecord, AskStatus, utcnow

# The plan's records and the seam's door live in relay.gate.plan_proposal; this module is
# where users reach them (docs/plans.md).
__all__ = [
    "PLAN_TOOL",
    "PLAN_TTL",
    "PlanDecisions",
    "PlanProposal",
    "PlanReview",
    "review_plan_through",
]

_log = logging.getLogger("relay.gate")

PLAN_TTL = 4 * 3600.0
"""How long an approved plan holds by default (``RELAY_PLAN_TTL``)."""
# How often a plan's change is tried again when another landed first (calls it covers are
# recorded on it as they run).
_STOP_TRIES = 50


class PlanDecisions:
    """The plan half of the ``Decider``, which supplies the grant store, the plan time
    limit, the rules' judgement and the channel to ask through."""

    grants: GrantStore
    plan_ttl: float

    def judge(self, proposal: Proposal, *, person: bool = False) -> Decision | ApprovalRequest:
        """What the rules decide at once, or the approval to put to people."""
        raise NotImplementedError

    def ruled_at_once(
        self, proposal: Proposal, *, person: bool = False
    ) -> Decision | ApprovalRequest:
        """``judge``, a decision at once told to the witness (its receipt)."""
        raise NotImplementedError

    def _channel_or_fail(self) -> Channel:
        raise NotImplementedError

    async def _planned(
        self, proposal: Proposal, request: ApprovalRequest
    ) -> Decision | ApprovalRequest:
        """The allow of a live plan covering this use, or ``request`` as it is to be asked:
        outside the session's newest live plan, if it has one (the question then says so)."""
        plans = await self.grants.plans(owner=proposal.owner, agent=request.agent.id, now=utcnow())
        use = proposal.subject
        for plan in plans:
            if plan.covers(
                owner=proposal.owner, agent=request.agent.id, use=use, now=utcnow()
            ) and _same_people(request, plan):
                # The tool's name and the plan only: an input may hold secrets.
                _log.info(
                    "%s call of agent %s allowed inside plan %s", use.tool, plan.agent, plan.id
                )
                await self._record_covered(plan, use)
                return Decision(
                    behavior="allow",
                    message=f"allowed {plan.describe()}",
                    outcome="allowed",
                    by=plan.approved_by,
                    at=plan.approved_at,
                    plan=plan.id,
                )
        if not plans:
            return request
        newest, now = plans[0], utcnow()
        people = _same_people(request, newest)
        inside = newest.covers(owner=proposal.owner, agent=request.agent.id, use=use, now=now)
        # The plan's two choices take the place of the minutes grant: five buttons at most.
        return replace(
            request, plan=newest, plan_widens=people, plan_inside=inside, grant_minutes=0
        )

    async def _record_covered(self, plan: Plan, use: Subject) -> None:
        """Keep the call on the plan as evidence (``GET /v1/plans/{id}``); a lost race or a
        failed write loses the record, never the allow the plan made."""
        call = Covered(tool=use.tool, call=use.digest, at=utcnow())
        for _ in range(3):
            try:
                if await self.grants.replace_plan(old=plan, new=plan.with_covered(call)):
                    return
                fresh = await self.grants.get_plan(owner=plan.owner, plan_id=plan.id)
            except Exception:
                _log.exception("the call allowed inside plan %s could not be recorded", plan.id)
                return
            if fresh is None or not fresh.live(utcnow()):
                return
            plan = fresh
        _log.warning("the call allowed inside plan %s was not recorded (busy)", plan.id)

    async def _decide_plan(
        self, proposal: Proposal, text: str, signal: AbortSignal | None
    ) -> Decision:
        """Leaving plan mode, decided as the plan's review: approved, the plan holds."""
        request = proposal.request
        plan = PlanProposal(
            text=text,
            agent=request.agent,
            owner=proposal.owner,
            cwd=request.cwd,
            target=proposal.target,
        )
        try:
            review = await self.review_plan(plan, signal=signal)
        except HarnessError as exc:
            return decide_error(exc, timeout=request.timeout)
        except Exception as exc:
            return decide_error(exc)
        return review.decision()

    async def _widened(self, decision: Decision, offer: Offer, owner: str) -> Decision:
        """``decision`` (an allow) with its call added to the plan the offer names."""
        if offer.plan is None or offer.call is None:
            return decision
        for _ in range(_STOP_TRIES):  # another change may land first: read it again
            plan = await self.grants.get_plan(owner=owner, plan_id=offer.plan)
            if plan is None or not plan.live(utcnow()):
                return decision
            wider = replace(plan, scope=plan.scope.with_call(offer.call))
            if await self.grants.replace_plan(old=plan, new=wider):
                who = decision.by.display_name if decision.by else "a reviewer"
                _log.info("plan %s widened by %s by one call", plan.id, decision.by)
                return replace(
                    decision,
                    message=f"{decision.message}; {who} added this exact call to plan {plan.id}",
                    plan=plan.id,
                )
        return decision

    async def _stopped_by_reviewer(
        self, item: AskUserQuestionAnswerItem, offer: Offer, owner: str
    ) -> Decision:
        """The deny of a reviewer's *Stop the plan*, the plan stopped."""
        by = item.answered_by
        name = by.display_name if by is not None else "a reviewer"
        if offer.plan is not None:
            await self.stop_plan(owner=owner, plan_id=offer.plan, by=name)
        return Decision(
            behavior="deny",
            message=f"{name} stopped the approved plan in Slack: this call is denied and every"
            " later call is asked",
            outcome="denied",
            by=by,
            at=item.answered_at,
        )

    def _plan_scope(self, proposal: PlanProposal, asked_of: ApprovalRequest) -> PlanScope:
        """The scope relay derives for ``proposal``, bound by the operator's rules: an item
        they deny, or whose calls need other people than the plan's, stays ask each time."""
        scope = derive_scope(proposal.text, proposal.steps, root=proposal.cwd)
        keep: list[Step] = []
        bound: list[Asked] = []
        for step in scope.items():
            tool, tool_input = _example(step, scope.root)
            judged = self.judge(
                Proposal(
                    ApprovalRequest(tool=tool, input=tool_input, agent=asked_of.agent),
                    owner=proposal.owner,
                )
            )
            if isinstance(judged, Decision) and not judged.allowed:
                bound.append(Asked(step.kind, step.text, "the operator's rules deny it"))
            elif isinstance(judged, ApprovalRequest) and not _same_people(judged, asked_of):
                why = "the operator's rules need other or more approvers for it"
                bound.append(Asked(step.kind, step.text, why))
            else:
                keep.append(step)
        narrowed = scope.narrowed(keep)
        return replace(narrowed, asked=(*bound, *narrowed.asked))

    async def propose_plan(self, proposal: PlanProposal) -> tuple[PlanReview, AskRecord | None]:
        """Post ``proposal`` for review (the plan and, under it, the scope relay derived);
        the pending plan and its ask, or the rules' deny and no ask."""
        question, request, scope = self._plan_ask(proposal)
        if isinstance(request, Decision):
            return PlanReview(plan=None, denied=request), None
        record = await self._channel_or_fail().start(
            question, Proposal(request, owner=proposal.owner, target=proposal.target), request
        )
        plan = _pending(proposal, scope, request, record.id, record.target.timeout)
        await self.grants.add_plan(plan=plan)
        return PlanReview(plan=plan), record

    async def review_plan(
        self, proposal: PlanProposal, *, signal: AbortSignal | None = None
    ) -> PlanReview:
        """Ask for ``proposal``'s review and wait (the seam's ``exit_plan_mode``); approved,
        the plan holds for this owner and agent. A failure to ask raises."""
        question, request, scope = self._plan_ask(proposal)
        if isinstance(request, Decision):
            return PlanReview(plan=None, denied=request)
        asked = AskUserQuestionRequest(question.questions, agent=question.agent, signal=signal)
        added: list[Plan] = []

        async def named(ask_id: str) -> None:  # the plan is named by its review, as a POST's
            plan = _pending(proposal, scope, request, ask_id, request.timeout)
            if await self.grants.add_plan(plan=plan):
                added.append(plan)

        answer = await self._channel_or_fail().ask(
            asked,
            Proposal(request, owner=proposal.owner, target=proposal.target),
            request,
            started=named,
        )
        if not added:  # a channel that names no ask (the seam's)
            await named(secrets.token_urlsafe(12))
        return await self._plan_answered(added[0], tuple(answer.answers))

    def _plan_ask(
        self, proposal: PlanProposal
    ) -> tuple[AskUserQuestionRequest, ApprovalRequest | Decision, PlanScope]:
        """The plan review question, the approval it is asked as (the operator's rules on
        ``ExitPlanMode``: who approves, where, how long; a deny refuses the plan), and the
        scope. A plan without a ``# `` heading raises ``BAD_REQUEST``."""
        request = ApprovalRequest(
            tool=PLAN_TOOL,
            input={"plan": proposal.text},
            agent=proposal.agent,
            cwd=proposal.cwd,
            session_grants=False,
            grant_minutes=0,
        )
        # (A review the rules deny at once has its receipt, as any call decided so.)
        judged = self.ruled_at_once(Proposal(request, owner=proposal.owner), person=True)
        if isinstance(judged, Decision):
            scope = PlanScope()
            question = scoped_plan_question(proposal.text, [])
            return AskUserQuestionRequest((question,), agent=proposal.agent), judged, scope
        scope = self._plan_scope(proposal, judged)
        question = scoped_plan_question(proposal.text, describe_scope(scope))
        return AskUserQuestionRequest((question,), agent=proposal.agent), judged, scope

    async def conclude_plan(self, record: AskRecord) -> PlanReview | None:
        """The plan of review ask ``record`` as its answer makes it (approved: live for
        ``plan_ttl``, once, whichever replica reads first); ``None``: no such plan."""
        plan = await self.grants.get_plan(owner=record.owner or "local", plan_id=record.id)
        if plan is None:
            return None
        if plan.status != "pending" or record.pending:
            return PlanReview(plan=plan)
        if record.status is not AskStatus.ANSWERED:
            return await self._plan_set(
                plan, plan.ended("rejected", f"the review {record.status.value}")
            )
        return await self._plan_answered(plan, tuple(record.answer().answers))

    async def _plan_answered(
        self, plan: Plan, answers: tuple[AskUserQuestionAnswerItem, ...]
    ) -> PlanReview:
        verdict = plan_verdict(answers)
        stored = plan
        item = next((a for a in answers if a.answered_by is not None), None)
        by = item.answered_by if item is not None else None
        if not verdict.approved or by is None:
            who = by.display_name if by is not None else "the review"
            review = await self._plan_set(plan, plan.ended("rejected", who))
            return replace(review, feedback=verdict.feedback)
        at = item.answered_at if item is not None and item.answered_at else utcnow()
        narrowing = plan_narrowing(answers)
        if narrowing is not None:  # narrowed in the Edit form: decided again here
            narrowed = narrow(plan.scope, narrowing.keep)
            if isinstance(narrowed, str):
                _log.warning("plan %s: a narrowing was refused (%s)", plan.id, narrowed)
                return await self._plan_set(plan, plan.ended("rejected", by.display_name))
            scope, dropped = narrowed
            plan = replace(plan, scope=scope, narrowed_by=narrowing.by, dropped=dropped)
        approved = replace(
            plan,
            status="active",
            approved_by=by,
            approved_at=at,
            expires_at=at + timedelta(seconds=self.plan_ttl),
        )
        review = await self._plan_set(stored, approved)
        if review.plan is not None and review.plan.status == "active":
            _log.info("plan %s approved by %s for agent %s", plan.id, by.id, plan.agent)
        return review

    async def _plan_set(self, old: Plan, new: Plan) -> PlanReview:
        """``new`` stored in place of ``old``, or the plan as another reader left it."""
        if await self.grants.replace_plan(old=old, new=new):
            return PlanReview(plan=new)
        return PlanReview(plan=await self.grants.get_plan(owner=old.owner, plan_id=old.id))

    async def stop_plan(self, *, owner: str, plan_id: str, by: str) -> Plan | None:
        """End ``owner``'s plan ``plan_id`` (``by``: who stopped it): every later call is
        asked. A plan already ended stays as it is; ``None``: no such plan."""
        # Calls recorded under the plan change it too: try until the stop lands.
        for _ in range(_STOP_TRIES):
            plan = await self.grants.get_plan(owner=owner, plan_id=plan_id)
            if plan is None or plan.status in ("stopped", "rejected"):
                return plan
            status: Literal["stopped", "rejected"] = (
                "stopped" if plan.status == "active" else "rejected"
            )
            if await self.grants.replace_plan(old=plan, new=plan.ended(status, by)):
                _log.info("plan %s %s", plan.id, status)
                return plan.ended(status, by)
        _log.error("plan %s could not be stopped: it kept changing", plan_id)
        return await self.grants.get_plan(owner=owner, plan_id=plan_id)


def _same_people(request: ApprovalRequest, plan: Plan | ApprovalRequest) -> bool:
    """Whether the people a call's rules require are those a plan was approved by: the
    same approvers and groups, and no more of them."""
    quorum = plan.quorum
    return (
        request.approvers == plan.approvers
        and request.approver_groups == plan.approver_groups
        and request.quorum <= quorum
    )


def _example(step: Step, root: str | None) -> tuple[str, dict[str, Any]]:
    """A call the scope item ``step`` covers, for the operator's rules to judge."""
    if step.kind == "run":
        return "Bash", {"command": step.text}
    if step.kind == "write":
        base = (root or "").rstrip("/")
        return "Write", {"file_path": f"{base}/{step.text}".rstrip("/")}
    if step.kind == "tool":
        return step.text, {}
    return f"mcp__{step.text}__any", {}


def _pending(
    proposal: PlanProposal,
    scope: PlanScope,
    request: ApprovalRequest,
    plan_id: str,
    timeout: float | None,
) -> Plan:
    """The plan under review, kept as long as its offer would be."""
    now = utcnow()
    return Plan(
        id=plan_id,
        owner=proposal.owner,
        agent=proposal.agent.id,
        text=proposal.text,
        scope=scope,
        status="pending",
        submitted_at=now,
        expires_at=now + timedelta(seconds=(timeout or 7 * 24 * 3600.0) + OFFER_GRACE),
        approvers=request.approvers,
        approver_groups=request.approver_groups,
        quorum=request.quorum,
    )
