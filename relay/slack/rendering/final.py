"""How a question shows once it has ended, and whether it has. Pure."""

from __future__ import annotations

from relay.asks.terms import outcome_of
from relay.seam.questions import AskUserQuestionAnswerItem
from relay.slack.rendering.render import RenderedQuestion, render_outcome
from relay.store import AskRecord

__all__ = ["answered_of", "ended", "final_of"]


def ended(record: AskRecord | None, index: int) -> bool:
    """Whether question ``index`` of ``record`` is answered, or the ask over (or unknown)."""
    if record is None or not record.pending:
        return True
    return index < len(record.responses) and record.responses[index] is not None


def final_of(record: AskRecord, index: int) -> RenderedQuestion:
    """How question ``index`` of the ended ``record`` shows for good: its answer (a person's
    or the default it took) or how the ask ended."""
    response = record.responses[index] if index < len(record.responses) else None
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
    return render_outcome(
        record.request.questions[index],
        outcome="answered",
        item=item,
        agent=record.request.agent,
        index=index,
        count=len(record.request.questions),
    )
