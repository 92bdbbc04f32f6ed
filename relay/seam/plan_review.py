"""The plan-review question that ``exit_plan_mode`` asks, and reading its verdict."""

from __future__ import annotations

import json
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
    "APPROVE",
    "PLAN_REVIEW_ID",
    "SCOPED_QUESTION",
    "Narrowing",
    "PlanVerdict",
    "narrowing_custom",
    "plan_narrowing",
    "plan_review_question",
    "plan_verdict",
    "read_narrowing",
    "review_plan",
    "scoped_plan_question",
]

PLAN_REVIEW_ID = "plan-review"
APPROVE = "Approve"
KEEP_PLANNING = "Keep planning"
SCOPED_QUESTION = "Approve this plan, and the calls under it without asking again?"
"""The question of a plan review with a scope (the Decider's): its message offers the
scope's narrowing, and *Stop the plan* once approved."""
_NARROW_TAG = "narrow"

# An ATX heading: "#", spaces or tabs on the same line, then its text; "#" alone on a line is not.
_HEADING = re.compile(r"#[ \t]+\S")


@dataclass(frozen=True, slots=True)
class PlanVerdict:
    """The human's decision on a plan: approved, or keep planning with optional feedback."""

    approved: bool
    feedback: str | None = None


@dataclass(frozen=True, slots=True)
class Narrowing:
    """A plan approved with a narrower scope, made in the Edit form: the kept items' keys,
    who narrowed (a Slack user id), and the items taken out in words (shown, not decided)."""

    keep: tuple[str, ...]
    by: str
    dropped: tuple[str, ...] = ()


def narrowing_custom(narrowing: Narrowing) -> str:
    """The answer's ``custom`` for ``narrowing`` (``selected`` is then empty)."""
    data = {
        "relay": _NARROW_TAG,
        "choice": APPROVE,
        "keep": list(narrowing.keep),
        "narrowed_by": narrowing.by,
        "dropped": list(narrowing.dropped),
    }
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"))


def read_narrowing(custom: str | None) -> Narrowing | None:
    """The narrowing ``custom`` carries, or ``None`` when it is anything else."""
    if custom is None or not custom.lstrip().startswith("{"):
        return None
    try:
        data = json.loads(custom)
    except (ValueError, RecursionError):
        return None
    if not isinstance(data, dict) or data.get("relay") != _NARROW_TAG:
        return None
    keep, by, dropped = data.get("keep"), data.get("narrowed_by"), data.get("dropped", [])
    if data.get("choice") != APPROVE or not isinstance(by, str):
        return None
    if not isinstance(keep, list) or not _strings(keep) or not _strings(dropped):
        return None
    return Narrowing(tuple(keep), by, tuple(dropped))


def plan_narrowing(items: tuple[AskUserQuestionAnswerItem, ...]) -> Narrowing | None:
    """The narrowing a plan review's answers approve it with (its Edit form), if any."""
    mine = [a for a in items if a.id == PLAN_REVIEW_ID]
    if len(mine) != 1 or mine[0].selected:
        return None
    return read_narrowing(mine[0].custom)


def _strings(value: object) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


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
        question=SCOPED_QUESTION,
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
    no text (or a narrowing of the scope, made in the Edit form); else keep planning, with
    the reviewer's feedback if any."""
    mine = [a for a in items if a.id == PLAN_REVIEW_ID]
    if len(mine) == 1 and tuple(mine[0].selected) == (APPROVE,) and mine[0].custom is None:
        return PlanVerdict(approved=True)
    if plan_narrowing(items) is not None:
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
