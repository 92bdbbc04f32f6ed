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
5. holds a session to its approved plan (``relay.gate.planning``): a call the rules ask
   about is allowed without a post when inside a live plan of that owner and agent, approved
   by the people the call's rules require; outside it, the question says so and shows it;
6. decides an edit again as a new proposal, as the reviewer who made it: an edit into what
   the rules deny is refused, one needing other approvers or more people cannot be allowed
   by this reviewer alone, a grant is made only where the rules offer one for the edited
   call, and the outcome carries the edited input whatever the reviewer chose next;
7. tells its ``Witness`` (``relay.gate.witness``) of each call it decides at once, without a
   person, whatever the door (``relay serve``: the call's receipt, written in the background).

The asking itself is behind ``Asks`` (start, wait, abort), not a channel.
"""

from __future__ import annotations

import logging
import secrets
from dataclasses import replace

from relay.errors import HarnessError
from relay.gate.approval import (
    ADD_TO_PLAN,
    ALLOW_ONCE,
    STOP_PLAN,
    ApprovalRequest,
    Decision,
    approval_question,
    decide_answer,
    decide_error,
    offer_for,
)
from relay.gate.plan_message import PlanMessages
from relay.gate.planning import PLAN_TOOL, PLAN_TTL, PlanDecisions, PlanProposal, PlanReview
from relay.gate.proposal import OFFER_GRACE, Channel, Proposal
from relay.gate.rulings import Rulings
from relay.gate.witness import Witness, witness
from relay.grants.base import GrantStore
from relay.grants.record import Offer
from relay.seam.abort import AbortSignal
from relay.seam.questions import (
    AgentRef,
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
]

_log = logging.getLogger("relay.gate")


class Decider(PlanDecisions, PlanMessages):
    """Decides proposals by ``rulings``, the grants in ``grants``, and people asked through
    ``channel``: the one decision behind every door."""

    def __init__(
        self,
        *,
        rulings: Rulings,
        grants: GrantStore,
        channel: Channel | None = None,
        plan_ttl: float = PLAN_TTL,
        witness: Witness | None = None,
    ) -> None:
        self.rulings = rulings
        self.grants = grants
        self._channel = channel
        self._witness = witness  # told of each call decided at once (its receipt)
        self.plan_ttl = plan_ttl
        """Seconds an approved plan holds (``RELAY_PLAN_TTL``)."""

    def judge(self, proposal: Proposal, *, person: bool = False) -> Decision | ApprovalRequest:
        """What the rules decide at once, or the approval to put to people (``Rulings``)."""
        return self.rulings.judge(proposal, person=person)

    def ruled_at_once(
        self, proposal: Proposal, *, person: bool = False
    ) -> Decision | ApprovalRequest:
        """``judge`` for a call about to run (or a plan put to review, ``person``): a
        decision at once is told to the witness (its receipt), whichever door asked."""
        judged, by = self.rulings.ruled(proposal, person=person)
        if isinstance(judged, Decision):
            return witness(self._witness, proposal, judged, by)
        return judged

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

    async def _allowed_or_asked(
        self, proposal: Proposal, judged: ApprovalRequest
    ) -> Decision | ApprovalRequest:
        """A grant's or a plan's allow, else the request to ask (a plan's context added)."""
        granted = await self._granted(proposal, judged)
        if granted is not None:
            return granted
        return await self._planned(proposal, judged)

    def post_through(self, channel: Channel) -> None:
        """Ask people through ``channel`` from now on: for a Decider made before its channel
        (``relay serve``'s, whose Slack channel needs the Decider's plan decisions first)."""
        if self._channel is not None and self._channel is not channel:
            raise RuntimeError("this Decider already asks people through another channel")
        self._channel = channel

    def _channel_or_fail(self) -> Channel:
        if self._channel is None:
            raise RuntimeError("this Decider has no channel to ask people through")
        return self._channel

    async def open(self, proposal: Proposal) -> Decision | AskRecord:
        """A decision at once (the rules, a grant), or the posted approval ask, for a door
        that reads the decision later (``conclude``). A store that is down raises."""
        judged = self.ruled_at_once(proposal)
        if isinstance(judged, Decision):
            return judged
        asked = await self._allowed_or_asked(proposal, judged)
        if isinstance(asked, Decision):
            return witness(self._witness, proposal, asked)
        judged = asked
        question = approval_question(judged)
        record = await self._channel_or_fail().start(question, proposal, judged)
        ttl = (record.target.timeout or 7 * 24 * 3600.0) + OFFER_GRACE
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
        judged = self.ruled_at_once(proposal)
        if isinstance(judged, Decision):
            return judged
        try:
            allowed = await self._allowed_or_asked(proposal, judged)
        except Exception as exc:  # a store that is down must not allow anything
            return decide_error(exc)
        if isinstance(allowed, Decision):
            return witness(self._witness, proposal, allowed)
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
