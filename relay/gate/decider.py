"""The Decider: the one place a tool use is decided, whichever door it came through.

Every door (``/v1/approvals``, the ``/mcp`` approve tool, ``relay mcp`` and ``relay hook``
asking Slack themselves, the frameworks, the Edit form) turns its input into a
``Proposal`` and its decision into its own output. The Decider:

1. computes the canonical subject once (``relay.canonical.match.subject``, one rule for ``cwd``);
2. combines the operator's rules with the client's verdict: the client may only make the
   decision stricter (``relay.gate.policy.combine``);
3. puts what is left to people with the approvers, quorum, timeout and team settings the
   operator's rules require (a client may ask for more people or fewer grants, never less);
4. derives any grant's scope from the operator's rules alone (a client's pattern never
   reaches a grant), looks grants up, asks, reads the answer and records the grant;
5. holds a session to its approved plan (``relay.plans``): a call the rules ask about is
   allowed without a post when inside a live plan of that owner and agent, approved by the
   people the call's rules require; outside it, the question says so and shows the plan;
6. decides an edit again as a new proposal, as the reviewer who made it: an edit into what
   the rules deny is refused, one needing other approvers or more people cannot be allowed
   by this reviewer alone, a grant is made only where the rules offer one for the edited
   call, and the outcome carries the edited input whatever the reviewer chose next.

The asking itself is behind ``Asks`` (start, wait, abort), not a channel.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from datetime import timedelta
from typing import Any, Literal, Protocol

from relay.abort import AbortSignal
from relay.asks.edit_review import EditTerms
from relay.canonical.match import Pattern, Subject, subject
from relay.errors import HarnessError
from relay.gate.approval import (
    ADD_TO_PLAN,
    ALLOW_ONCE,
    ALLOW_SESSION,
    STOP_PLAN,
    ApprovalRequest,
    Decision,
    allow_minutes_label,
    approval_question,
    decide_answer,
    decide_error,
    offer_for,
)
from relay.gate.core import grant_scope
from relay.gate.policy import combine
from relay.gate.rules import Rules, Verdict
from relay.grants.base import GrantStore
from relay.grants.record import Offer
from relay.plan_review import plan_verdict, scoped_plan_question
from relay.plans.record import Covered, Plan
from relay.plans.scope import Asked, PlanScope, Step, derive_scope, describe_scope
from relay.questions import (
    AgentRef,
    AskUserQuestionAnswer,
    AskUserQuestionAnswerItem,
    AskUserQuestionItem,
    AskUserQuestionRequest,
)
from relay.store.record import AskRecord, AskStatus, utcnow

__all__ = [
    "PLAN_TOOL",
    "PLAN_TTL",
    "Channel",
    "Decider",
    "PlanProposal",
    "PlanReview",
    "Proposal",
    "RulesFor",
    "Rulings",
]

_log = logging.getLogger("relay.gate")

# How long an offer outlives its ask's timeout, so a late read can still record the grant.
_OFFER_GRACE = 24 * 3600.0
_OPERATOR = "the relay's rules (RELAY_RULES_FILE)"
# The tool a plan review is judged as by the operator's rules (Claude Code's plan mode).
PLAN_TOOL = "ExitPlanMode"
PLAN_TTL = 4 * 3600.0
# How often a plan's change is tried again when another landed first (calls it covers are
# recorded on it as they run).
_STOP_TRIES = 50
"""How long an approved plan holds by default (``RELAY_PLAN_TTL``)."""

RulesFor = Callable[[str], "Rules | None"]
"""The operator's rules for an owner (a token's fingerprint); ``None``: the relay has none."""


class Channel(Protocol):
    """How the Decider asks people (a seam ``Protocol``): ``relay.gate.local.PostingChannel``
    over an ``AskChannel``, ``SeamChannel`` over any seam provider."""

    async def ask(
        self, question: AskUserQuestionRequest, proposal: Proposal, request: ApprovalRequest
    ) -> AskUserQuestionAnswer:
        """Ask ``question`` (for ``request``, the approval as decided) and wait for the
        answer; withdraw it if ``question.signal`` aborts."""
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


@dataclass(frozen=True, slots=True)
class PlanProposal:
    """A plan an agent puts up for review: its markdown, the steps its client proposes
    (relay derives the scope from both), the project directory, whose token, which agent."""

    text: str
    agent: AgentRef
    owner: str
    steps: tuple[Step, ...] = ()
    cwd: str | None = None
    target: Any = None


@dataclass(frozen=True, slots=True)
class PlanReview:
    """A plan's review as it stands: the plan (``None``: the rules denied it, see
    ``denied``), and the reviewer's feedback when sent back."""

    plan: Plan | None
    denied: Decision | None = None
    feedback: str | None = None

    def decision(self) -> Decision:
        """What this review decides about leaving plan mode."""
        plan = self.plan
        if plan is None:
            return self.denied or Decision.deny("the relay's rules deny this plan")
        if plan.status == "active":
            who = plan.approved_by.display_name if plan.approved_by else "a reviewer"
            return Decision(
                behavior="allow",
                message=f"{who} approved the plan in Slack: the calls in its scope run"
                f" without asking until {plan.expires_at.isoformat(timespec='seconds')}; any"
                " other call is asked",
                outcome="approved",
                by=plan.approved_by,
                at=plan.approved_at,
                plan=plan.id,
            )
        if self.feedback is not None and self.feedback.strip():
            words = self.feedback.strip()
            return replace(
                Decision.deny(f"Keep planning; the reviewer says: {words}"), feedback=words
            )
        return Decision.deny("The plan was not approved in Slack: keep planning")


class Rulings:
    """The rules' part of deciding, pure: the operator's ``rules`` for an owner (``None``: no
    rules file, then the client's verdict stands, as documented) and ``min_approvals``
    (``RELAY_APPROVALS_REQUIRED``)."""

    def __init__(
        self,
        *,
        rules: RulesFor,
        min_approvals: int | None = None,
        source: str = _OPERATOR,
    ) -> None:
        self._rules = rules
        self._min_approvals = min_approvals
        self._source = source

    def judge(self, proposal: Proposal, *, person: bool = False) -> Decision | ApprovalRequest:
        """A decision the rules make at once, or the approval to put to people (with the
        operator's approvers, quorum, timeout and grant scope); with ``person`` what the
        rules allow is put to people too (a plan review: no scope without a person)."""
        request = proposal.request
        rules = self._rules(proposal.owner)
        verdict = rules.verdict(proposal.subject) if rules is not None else Verdict("pass")
        client = "allow" if request.rules_allow else proposal.client
        action = combine(client, verdict)
        if action == "deny":
            return Decision.deny(verdict.reason(self._source))
        if action == "allow" and not person:
            if verdict.action == "allow":
                why = verdict.reason(self._source)
            else:
                why = "allowed by the client's rules (the relay has no rules for it)"
            return Decision(behavior="allow", message=why, outcome="allowed")
        return self._tightened(replace(request, rules_allow=False, pattern=None), rules, verdict)

    def _tightened(
        self, request: ApprovalRequest, rules: Rules | None, verdict: Verdict
    ) -> ApprovalRequest:
        """``request`` with the operator's requirements: the client may only add to them."""
        floor = self._min_approvals or 1
        if rules is None:
            return replace(request, approvals=_most(request.approvals, floor))
        rule = verdict.rule
        team = rules.team_for(verdict)
        approvers = rule.approvers if rule and rule.approvers is not None else rules.approvers
        groups = (
            rule.approver_groups
            if rule and rule.approver_groups is not None
            else rules.approver_groups
        )
        escalation: dict[str, Any] = {}
        if team.escalate_after is not None:
            escalation = {
                "escalate_after": team.escalate_after,
                "escalate_users": team.escalate_users,
                "escalate_groups": team.escalate_groups,
                "escalate_channel": team.escalate_channel,
            }
        approvals = _most(request.approvals, _most(team.approvals, floor))
        return replace(
            request,
            pattern=_scope(request, rule),
            reason=rule.reason if rule is not None and rule.reason else request.reason,
            channel=rules.channel or request.channel,
            approvers=_within(request.approvers, approvers),
            approver_groups=_within(request.approver_groups, groups),
            # The operator's time, where its file sets one, bounds the client's.
            timeout=_least(request.timeout, rules.given_timeout_for(verdict)),
            session_grants=request.session_grants and rules.session_grants,
            grant_minutes=min(request.grant_minutes, rules.grant_minutes),
            remind_after=team.remind_after
            if team.remind_after is not None
            else request.remind_after,
            reminders=team.reminders if team.reminders is not None else request.reminders,
            approvals=approvals if approvals > 1 else request.approvals,
            # One deny deciding is the stricter reading: the client may ask for it.
            deny_vetoes=True
            if request.deny_vetoes or team.deny_vetoes
            else (team.deny_vetoes if team.deny_vetoes is not None else request.deny_vetoes),
            **escalation,
        )

    def edit_terms(self, record: AskRecord, index: int, edited: Mapping[str, Any]) -> EditTerms:
        """What the rules require of an edited call in question ``index`` of ``record`` (a
        new proposal, decided again): a refusal, or the approvers, quorum and grants under
        which its reviewer may allow it."""
        question = record.request.questions[index]
        edit = question.intent.edit if question.intent is not None else None
        if edit is None:
            return EditTerms(refusal="this question offers no edits")
        return self.terms_of(edit.tool, edited, record.owner or "local", record.request.agent)

    def terms_of(
        self, tool: str, edited: Mapping[str, Any], owner: str, agent: AgentRef | None
    ) -> EditTerms:
        """The terms for ``tool`` with the ``edited`` input, proposed by ``owner``'s agent."""
        request = ApprovalRequest(
            tool=tool, input=dict(edited), agent=agent or AgentRef(id="unknown"), editable=True
        )
        judged = self.judge(Proposal(request, owner=owner))
        if isinstance(judged, Decision):
            return EditTerms() if judged.allowed else EditTerms(refusal=judged.message)
        session, minutes = judged.grants_offered
        choices = (ALLOW_ONCE, *((ALLOW_SESSION,) if session else ()))
        if minutes:
            choices += (allow_minutes_label(minutes),)
        return EditTerms(
            approvers=judged.approvers,
            approver_groups=judged.approver_groups,
            quorum=judged.quorum,
            session_grants=session,
            grant_minutes=minutes,
            choices=choices,
        )


class Decider:
    """Decides proposals by ``rulings``, the grants in ``grants``, and people asked through
    ``channel``: the one decision behind every door."""

    def __init__(
        self,
        *,
        rulings: Rulings,
        grants: GrantStore,
        channel: Channel | None = None,
        plan_ttl: float = PLAN_TTL,
    ) -> None:
        self.rulings = rulings
        self.grants = grants
        self._channel = channel
        self.plan_ttl = plan_ttl
        """Seconds an approved plan holds (``RELAY_PLAN_TTL``)."""

    def judge(self, proposal: Proposal, *, person: bool = False) -> Decision | ApprovalRequest:
        """What the rules decide at once, or the approval to put to people (``Rulings``)."""
        return self.rulings.judge(proposal, person=person)

    async def _granted(self, proposal: Proposal, request: ApprovalRequest) -> Decision | None:
        """The allow of a live grant covering this use, if one does."""
        grant = await self.grants.find(
            owner=proposal.owner, agent=request.agent.id, use=proposal.subject, now=utcnow()
        )
        if grant is None:
            return None
        return Decision(
            behavior="allow",
            message=grant.describe(),
            outcome="allowed",
            by=grant.granted_by,
            at=grant.granted_at,
            grant=grant,
        )

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
        # The plan's two choices take the place of the minutes grant: five buttons at most.
        return replace(
            request,
            plan=plans[0],
            plan_widens=_same_people(request, plans[0]),
            grant_minutes=0,
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

    async def _allowed_or_asked(
        self, proposal: Proposal, judged: ApprovalRequest
    ) -> Decision | ApprovalRequest:
        """A grant's or a plan's allow, else the request to ask (a plan's context added)."""
        granted = await self._granted(proposal, judged)
        if granted is not None:
            return granted
        return await self._planned(proposal, judged)

    def _channel_or_fail(self) -> Channel:
        if self._channel is None:
            raise RuntimeError("this Decider has no channel to ask people through")
        return self._channel

    async def open(self, proposal: Proposal) -> Decision | AskRecord:
        """A decision at once (the rules, a grant), or the posted approval ask, for a door
        that reads the decision later (``conclude``). A store that is down raises."""
        judged = self.judge(proposal)
        if isinstance(judged, Decision):
            return judged
        asked = await self._allowed_or_asked(proposal, judged)
        if isinstance(asked, Decision):
            return asked
        judged = asked
        question = approval_question(judged)
        record = await self._channel_or_fail().start(question, proposal, judged)
        ttl = (record.target.timeout or 7 * 24 * 3600.0) + _OFFER_GRACE
        # Stored even when no grant is offered: it marks the ask as an approval.
        await self.grants.put_offer(ask_id=record.id, offer=judged.offer(proposal.owner), ttl=ttl)
        return record

    async def decide(self, proposal: Proposal, *, signal: AbortSignal | None = None) -> Decision:
        """The decision, waiting for people if the rules ask them (withdrawing the question
        if ``signal`` aborts); never raises for a failure (it denies instead). Leaving plan
        mode (``ExitPlanMode`` with its plan) is the plan's review (``review_plan``)."""
        plan_text = proposal.request.input.get("plan")
        if proposal.request.tool == PLAN_TOOL and isinstance(plan_text, str):
            return await self._decide_plan(proposal, plan_text, signal)
        judged = self.judge(proposal)
        if isinstance(judged, Decision):
            return judged
        try:
            allowed = await self._allowed_or_asked(proposal, judged)
        except Exception as exc:  # a store that is down must not allow anything
            return decide_error(exc)
        if isinstance(allowed, Decision):
            return allowed
        judged = allowed
        asked = approval_question(judged)
        question = AskUserQuestionRequest(asked.questions, agent=asked.agent, signal=signal)
        try:
            answer = await self._channel_or_fail().ask(question, proposal, judged)
        except HarnessError as exc:
            return decide_error(exc, timeout=judged.timeout)
        except Exception as exc:
            return decide_error(exc)
        return await self._decided(
            answer.answers[0],
            question.questions[0],
            offer=judged.offer(proposal.owner),
            owner=proposal.owner,
            ask_id=secrets.token_urlsafe(12),
        )

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

    async def conclude(self, record: AskRecord) -> Decision | None:
        """The decision of an ended approval ask (recording the grant its reviewer chose,
        once, whichever replica reads first); ``None`` while it is pending."""
        if record.pending:
            return None
        if record.status is not AskStatus.ANSWERED:
            error = record.error.to_exception() if record.error is not None else None
            return decide_error(
                error or RuntimeError(f"the approval ended as {record.status.value}"),
                timeout=record.target.timeout,
            )
        offer = await self.grants.get_offer(ask_id=record.id)
        return await self._decided(
            record.answer().answers[0],
            record.request.questions[0],
            offer=offer,
            owner=record.owner or "local",
            ask_id=record.id,
            agent=record.request.agent,
        )

    async def _decided(
        self,
        item: AskUserQuestionAnswerItem,
        question: AskUserQuestionItem,
        *,
        offer: Offer | None,
        owner: str,
        ask_id: str,
        agent: AgentRef | None = None,
    ) -> Decision:
        """What a reviewer's answer decides, an edit decided again, the grant recorded (or
        the plan widened or stopped, as the reviewer chose)."""
        edit = question.intent.edit if question.intent is not None else None
        choice = item.selected[0] if item.selected and item.custom is None else None
        if offer is not None and offer.plan is not None and choice == STOP_PLAN:
            return await self._stopped_by_reviewer(item, offer, owner)
        widen = (
            offer is not None
            and offer.plan is not None
            and offer.plan_widens
            and choice == ADD_TO_PLAN
            and len(item.selected) == 1
        )
        if widen:
            item = replace(item, selected=(ALLOW_ONCE,))
        decision, kind = decide_answer(
            item,
            session=offer.session if offer else False,
            minutes=offer.minutes if offer else 0,
            # Edits were offered only if the client said it runs an edited input.
            editable=edit is not None,
        )
        if decision.updated_input is not None and edit is not None:
            # An edit is a new proposal, decided again (the form refused what the rules
            # refuse; this holds if the rules changed since, and for every door).
            terms = self.rulings.terms_of(edit.tool, decision.updated_input, owner, agent)
            if terms.refusal is not None:
                return Decision(
                    behavior="deny",
                    message=f"the edited call is not allowed: {terms.refusal}",
                    outcome="denied",
                    by=decision.by,
                    at=decision.at,
                )
            if kind is not None and not terms.offers(kind):
                kind = None  # the rules offer no such grant for the edited call: allow once
            if offer is not None:
                offer = offer_for(offer, edit.tool, decision)
        if widen and offer is not None and decision.allowed and decision.updated_input is None:
            # Only the very call shown joins the plan (an edited call is allowed once).
            return await self._widened(decision, offer, owner)
        if kind is None or offer is None or decision.by is None or decision.at is None:
            return decision
        grant = offer.grant(ask_id=ask_id, kind=kind, by=decision.by, at=decision.at)
        try:
            if await self.grants.add(grant=grant):
                _log.info(
                    "grant %s recorded: %s for agent %s by %s",
                    grant.id,
                    grant.pattern.describe(),
                    grant.agent,
                    grant.granted_by.id,
                )
        except Exception:
            _log.exception("grant %s could not be recorded; allowed once", grant.id)
            return decision
        # The edited input, if any, stays: a grant never turns an edit back into the original.
        return replace(
            decision,
            message=f"{decision.message}; {grant.describe()}",
            outcome="granted",
            grant=grant,
        )

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
        plan = _pending(proposal, scope, request, secrets.token_urlsafe(12), request.timeout)
        await self.grants.add_plan(plan=plan)
        answer = await self._channel_or_fail().ask(
            asked, Proposal(request, owner=proposal.owner, target=proposal.target), request
        )
        return await self._plan_answered(plan, tuple(answer.answers))

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
        judged = self.judge(Proposal(request, owner=proposal.owner), person=True)
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
        item = next((a for a in answers if a.answered_by is not None), None)
        by = item.answered_by if item is not None else None
        if not verdict.approved or by is None:
            who = by.display_name if by is not None else "the review"
            review = await self._plan_set(plan, plan.ended("rejected", who))
            return replace(review, feedback=verdict.feedback)
        at = item.answered_at if item is not None and item.answered_at else utcnow()
        approved = replace(
            plan,
            status="active",
            approved_by=by,
            approved_at=at,
            expires_at=at + timedelta(seconds=self.plan_ttl),
        )
        review = await self._plan_set(plan, approved)
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
        expires_at=now + timedelta(seconds=(timeout or 7 * 24 * 3600.0) + _OFFER_GRACE),
        approvers=request.approvers,
        approver_groups=request.approver_groups,
        quorum=request.quorum,
    )


def _scope(request: ApprovalRequest, rule: Any) -> Pattern | None:
    """A grant's scope: the operator's ask rule's commands or paths (globs, never a regex)
    when they cover this very input, else ``None`` (exactly this input)."""
    if rule is None or rule.action != "ask" or not rule.narrow:
        return None
    pattern: Pattern = rule.pattern
    if pattern.command_regex or pattern.path_regex:
        return None
    scope = grant_scope(request.tool, request.input, pattern)
    return None if scope.digest is not None else scope


def _most(a: int | None, b: int | None) -> int:
    return max(a or 1, b or 1)


def _least(a: float | None, b: float | None) -> float | None:
    if a is None:
        return b
    if b is None:
        return a
    return min(a, b)


def _within(asked: tuple[str, ...] | None, operator: tuple[str, ...] | None) -> Any:
    """The client's list if it names only the operator's ids, else the operator's."""
    if operator is None:
        return asked
    if asked is not None and set(asked) <= set(operator):
        return asked
    return operator
