"""The plan-review question that ``exit_plan_mode`` asks, and reading its verdict."""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from .abort import AbortSignal
from .errors import bad_request
from .questions import (
    AgentRef,
    AskUserQuestionAnswerItem,
    AskUserQuestionIntent,
    AskUserQuestionItem,
    AskUserQuestionOption,
    AskUserQuestionRequest,
)
from .service import UserInteractionService

if TYPE_CHECKING:
    from .gate.approval import Approver

__all__ = [
    "APPROVE",
    "KEEP_PLANNING",
    "PLAN_REVIEW_ID",
    "PlanVerdict",
    "plan_review_question",
    "plan_verdict",
    "review_plan",
    "scoped_plan_question",
]

PLAN_REVIEW_ID = "plan-review"
APPROVE = "Approve"
KEEP_PLANNING = "Keep planning"

# An ATX heading: "#", spaces or tabs on the same line, then its text; "#" alone on a line is not.
_HEADING = re.compile(r"#[ \t]+\S")


@dataclass(frozen=True, slots=True)
class PlanVerdict:
    """The human's decision on a plan: approved, or keep planning with optional feedback."""

    approved: bool
    feedback: str | None = None


def plan_review_question(plan: str) -> AskUserQuestionItem:
    """The plan-review question for ``plan``; a plan without a ``# `` heading is refused."""
    text = plan.strip()
    if not _HEADING.match(text):
        raise bad_request(
            "the plan must be markdown starting with a '# ' heading, for example '# Plan'"
        )
    return AskUserQuestionItem(
        id=PLAN_REVIEW_ID,
        header="Plan review",
        question="Approve this plan and leave plan mode?",
        detail=text,
        options=(
            AskUserQuestionOption(
                APPROVE, "Leave plan mode; the plan is carried out from the next step."
            ),
            AskUserQuestionOption(
                KEEP_PLANNING, "Stay in plan mode; feedback goes back to the model."
            ),
        ),
        intent=AskUserQuestionIntent(approve=APPROVE),
    )


def scoped_plan_question(plan: str, scope_lines: list[str]) -> AskUserQuestionItem:
    """The plan-review question with the scope relay derived shown under the plan, in
    plain words: approving it lets those calls run without asking again."""
    question = plan_review_question(plan)
    scope = "\n".join(scope_lines)
    return replace(
        question,
        question="Approve this plan, and the calls under it without asking again?",
        detail=f"{question.detail}\n\n---\n\n**If approved, this session may, without asking"
        f" again:**\n{scope}",
        options=(
            AskUserQuestionOption(
                APPROVE, "Leave plan mode; the calls in the scope below run without a post."
            ),
            AskUserQuestionOption(
                KEEP_PLANNING, "Stay in plan mode; feedback goes back to the model."
            ),
        ),
    )


def plan_verdict(items: tuple[AskUserQuestionAnswerItem, ...]) -> PlanVerdict:
    """The verdict in a plan review's answers: approved only on exactly ``Approve`` with
    no text; else keep planning, with the reviewer's feedback if any."""
    mine = [a for a in items if a.id == PLAN_REVIEW_ID]
    if len(mine) == 1 and tuple(mine[0].selected) == (APPROVE,) and mine[0].custom is None:
        return PlanVerdict(approved=True)
    return PlanVerdict(approved=False, feedback=mine[0].custom if len(mine) == 1 else None)


async def review_plan(
    service: UserInteractionService,
    plan: str,
    *,
    agent: AgentRef | None = None,
    signal: AbortSignal | None = None,
    approver: Approver | None = None,
    cwd: str | None = None,
) -> PlanVerdict:
    """Ask the human to review ``plan``; approved only on exactly ``Approve`` with no text.

    With ``approver`` (the Decider's door: ``relay.gate.local.LocalApprover`` or
    ``RemoteApprover``), the plan is proposed as leaving plan mode is at every door: with the
    scope relay derives (written paths under ``cwd``), which then holds ``agent``'s session."""
    if approver is not None:
        from .gate.approval import ApprovalRequest
        from .gate.decider import PLAN_TOOL

        plan_review_question(plan)  # the same refusal of a plan without a heading
        decision = await approver.approve(
            ApprovalRequest(
                tool=PLAN_TOOL,
                input={"plan": plan},
                agent=agent or AgentRef(id="unknown"),
                cwd=cwd,
            ),
            signal=signal,
        )
        return PlanVerdict(approved=decision.allowed, feedback=decision.feedback)
    question = plan_review_question(plan)
    answer = await service.ask(
        AskUserQuestionRequest(questions=(question,), agent=agent, signal=signal)
    )
    return plan_verdict(tuple(answer.answers))
