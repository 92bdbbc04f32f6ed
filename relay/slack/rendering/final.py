"""How a question shows once it has ended, and whether it has. Pure."""

from __future__ import annotations

from dataclasses import replace

from relay.asks.terms import outcome_of
from relay.seam.plan_review import SCOPED_QUESTION, plan_verdict
from relay.seam.questions import AskUserQuestionAnswerItem
from relay.slack.rendering import kit
from relay.slack.rendering.inputs import ACTION_PLAN_STOP, block_id
from relay.slack.rendering.render import RenderedQuestion, render_outcome
from relay.slack.rendering.text import mention
from relay.store import AskRecord

__all__ = ["PLAN_STOP", "answered_of", "ended", "final_of", "plan_stopped"]

PLAN_STOP = "Stop the plan"
_MAX_BLOCKS = 50  # Slack's, per message


def ended(record: AskRecord | None, index: int) -> bool:
    """Whether question ``index`` of ``record`` is answered, or the ask over (or unknown)."""
    if record is None or not record.pending:
        return True
    return index < len(record.responses) and record.responses[index] is not None


def final_of(record: AskRecord, index: int) -> RenderedQuestion:
    """How question ``index`` of the ended ``record`` shows for good: its answer (a person's
    or the default it took) or how the ask ended."""
    response = record.responses[index] if index < len(record.responses) else None
    return _with_stop(_outcome(record, index, response), record, index, response)


def _outcome(
    record: AskRecord, index: int, response: AskUserQuestionAnswerItem | None
) -> RenderedQuestion:
    return render_outcome(
        record.request.questions[index],
        outcome="answered" if response is not None else outcome_of(record),  # type: ignore[arg-type]
        item=response,
        agent=record.request.agent,
        index=index,
        count=len(record.request.questions),
        timeout=record.target.timeout,
    )


def answered_of(record: AskRecord, index: int, item: AskUserQuestionAnswerItem) -> RenderedQuestion:
    """How question ``index`` of ``record`` shows once ``item`` answered it."""
    shown = render_outcome(
        record.request.questions[index],
        outcome="answered",
        item=item,
        agent=record.request.agent,
        index=index,
        count=len(record.request.questions),
    )
    return _with_stop(shown, record, index, item)


def _approved_plan(record: AskRecord, index: int, item: AskUserQuestionAnswerItem | None) -> bool:
    """Whether ``item`` approved the scoped plan review that question ``index`` is."""
    question = record.request.questions[index]
    intent = question.intent
    if item is None or intent is None or intent.kind != "plan-review":
        return False
    return question.question == SCOPED_QUESTION and plan_verdict((item,)).approved


def _with_stop(
    shown: RenderedQuestion, record: AskRecord, index: int, item: AskUserQuestionAnswerItem | None
) -> RenderedQuestion:
    """An approved plan's message keeps *Stop the plan*: a reviewer ends the plan there."""
    if not _approved_plan(record, index, item) or len(shown.blocks) >= _MAX_BLOCKS:
        return shown
    button = kit.button(PLAN_STOP, ACTION_PLAN_STOP, "stop", style="danger")
    actions = {
        "type": "actions",
        "block_id": block_id(record.id, index, "plan"),
        "elements": [button],
    }
    return replace(shown, blocks=[*shown.blocks, actions])


def plan_stopped(record: AskRecord, index: int, by: str) -> RenderedQuestion:
    """How an approved plan's message shows once ``by`` (a Slack user id) stopped it: its
    approval as before, then who stopped it; the calls it covered are asked again."""
    response = record.responses[index] if index < len(record.responses) else None
    shown = _outcome(record, index, response)
    line = (
        f":octagonal_sign: {mention(by)} stopped this plan: every later call it would have"
        " covered is asked again."
    )
    blocks = [*shown.blocks[: _MAX_BLOCKS - 1], kit.context(line)]
    return replace(shown, blocks=blocks, text=f"{shown.text} — plan stopped")
