"""The plan-review question that ``exit_plan_mode`` asks, and reading its verdict."""

from __future__ import annotations

import re
from dataclasses import dataclass

from relay.errors import bad_request

from .abort import AbortSignal
from .questions import (
    AgentRef,
    AskUserQuestionIntent,
    AskUserQuestionItem,
    AskUserQuestionOption,
    AskUserQuestionRequest,
)
from .service import UserInteractionService

__all__ = [
    "APPROVE",
    "KEEP_PLANNING",
    "PLAN_REVIEW_ID",
    "PlanVerdict",
    "plan_review_question",
    "review_plan",
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


async def review_plan(
    service: UserInteractionService,
    plan: str,
    *,
    agent: AgentRef | None = None,
    signal: AbortSignal | None = None,
) -> PlanVerdict:
    """Ask the human to review ``plan``; approved only on exactly ``Approve`` with no text."""
    question = plan_review_question(plan)
    answer = await service.ask(
        AskUserQuestionRequest(questions=(question,), agent=agent, signal=signal)
    )
    items = [a for a in answer.answers if a.id == PLAN_REVIEW_ID]
    if len(items) == 1 and tuple(items[0].selected) == (APPROVE,) and items[0].custom is None:
        return PlanVerdict(approved=True)
    feedback = items[0].custom if len(items) == 1 else None
    return PlanVerdict(approved=False, feedback=feedback)
