"""The plan-review question that ``exit_plan_mode`` asks, and reading its verdict."""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from relay.errors import bad_request

from .abort import AbortSignal
from .questions import (
    AgentRef,
    AskUserQuestionAnswerItem,
    AskUserQuestionIntent,
    AskUserQuestionItem,
    AskUserQuestionOption,
    AskUserQuestionRequest,
)
from .service import UserInteractionService

__all__ = [
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
) -> PlanVerdict:
    """Ask the human to review ``plan``; approved only on exactly ``Approve`` with no text.
    Through the Decider, with the scope relay derives: ``relay.gate.planning``'s
    ``review_plan_through``."""
    question = plan_review_question(plan)
    answer = await service.ask(
        AskUserQuestionRequest(questions=(question,), agent=agent, signal=signal)
    )
    return plan_verdict(tuple(answer.answers))
