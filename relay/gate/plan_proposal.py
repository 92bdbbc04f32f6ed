"""A plan put up for review and its review as it stands (``relay.gate.planning`` decides
them), and the seam's plan review through the Decider's door."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from relay.gate.approval import ApprovalRequest, Approver, Decision
from relay.plans.record import Plan
from relay.plans.steps import Step
from relay.seam.abort import AbortSignal
from relay.seam.plan_review import PlanVerdict, plan_review_question
from relay.seam.questions import AgentRef

__all__ = ["PLAN_TOOL", "PlanProposal", "PlanReview", "review_plan_through"]

PLAN_TOOL = "ExitPlanMode"
"""The tool a plan review is judged as by the operator's rules (Claude Code's plan mode)."""


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


async def review_plan_through(
    approver: Approver,
    plan: str,
    *,
    agent: AgentRef | None = None,
    signal: AbortSignal | None = None,
    cwd: str | None = None,
) -> PlanVerdict:
    """The seam's plan review (``relay.review_plan``) through the Decider's door: ``approver``
    (``LocalApprover`` in process, ``RemoteApprover`` for a hosted relay) proposes ``plan`` as
    leaving plan mode is proposed at every door, with the scope relay derives (written paths
    under ``cwd``), which then holds ``agent``'s session."""
    plan_review_question(plan)  # the same refusal of a plan without a heading
    decision = await approver.approve(
        ApprovalRequest(
            tool=PLAN_TOOL, input={"plan": plan}, agent=agent or AgentRef(id="unknown"), cwd=cwd
        ),
        signal=signal,
    )
    return PlanVerdict(approved=decision.allowed, feedback=decision.feedback)
