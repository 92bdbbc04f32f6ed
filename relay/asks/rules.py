"""The ask's rules, pure: how long it may wait, how it ended, when a shown outcome is stale.

No I/O and no clock: the time is always passed in. The lifecycle (``relay.asks.lifecycle``)
applies these rules with the store's atomic claims; a channel (``relay.slack``) shows them.
"""

from __future__ import annotations

import math
from datetime import datetime, timedelta

from relay.errors import ErrorCode, RelayConfigError, UserInteractionError, ask_closed
from relay.questions import AskUserQuestionAnswer, AskUserQuestionAnswerItem
from relay.store.record import AskError, AskRecord, AskStatus

__all__ = [
    "LONGEST_TIMEOUT",
    "REPAIR_AFTER",
    "answer_of",
    "capped",
    "check_timeout",
    "default_answers",
    "ended_event",
    "needs_repair",
    "next_reminder_at",
    "outcome_of",
]

# The longest timeout anything may set (a year): a deadline beyond it is no deadline a person
# can act on, and past ~1e11 s it cannot even be shown as a date.
LONGEST_TIMEOUT = 366 * 24 * 3600.0

# A click on a question that ended longer ago than this came from a message whose final
# update never landed (Slack refused it, or the replica died first): show it again.
REPAIR_AFTER = timedelta(seconds=10)


def check_timeout(value: float | None, name: str) -> float | None:
    """``value`` as seconds to wait (``None``: forever), or ``RelayConfigError`` naming ``name``."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise RelayConfigError(f"{name} must be a number of seconds or None", setting=name)
    if not math.isfinite(value) or value <= 0:
        raise RelayConfigError(
            f"{name} must be a positive number of seconds (or None to wait forever)",
            setting=name,
        )
    if value > LONGEST_TIMEOUT:
        raise RelayConfigError(
            f"{name} must be at most {LONGEST_TIMEOUT:g} s (a year); None waits forever",
            setting=name,
        )
    return float(value)


def capped(timeout: float | None, ceiling: float | None) -> float | None:
    """``timeout`` within ``ceiling`` (no timeout at all becomes the ceiling)."""
    if ceiling is None:
        return timeout
    return ceiling if timeout is None else min(timeout, ceiling)


def outcome_of(record: AskRecord) -> str:
    """How a finished ask's unanswered questions are shown: its status, or ``closed``."""
    return "closed" if record.error and record.error.reason == "closed" else record.status.value


def ended_event(status: AskStatus, error: AskError) -> str:
    """The event name for an ask that ended without an answer."""
    return "closed" if error.reason == "closed" else status.value


def answer_of(record: AskRecord) -> AskUserQuestionAnswer:
    """What ``ask()`` returns for a record it waited for, or the error it raises."""
    if record.status is AskStatus.ANSWERED:
        return record.answer()
    if record.pending:
        raise ask_closed()  # the store closed (the relay is stopping) before the ask ended
    if record.error is None:
        raise UserInteractionError(
            ErrorCode.PROVIDER_FAILED,
            f"ask {record.id} ended as {record.status} without a reason",
        )
    raise record.error.to_exception()


def default_answers(
    record: AskRecord, *, at: datetime
) -> list[tuple[int, AskUserQuestionAnswerItem]] | None:
    """The answers a timed-out ask takes instead, question index first: every unanswered
    question's ``default``, marked ``defaulted`` and answered by nobody. ``None`` when some
    unanswered question has no default: the ask then times out as before."""
    taken: list[tuple[int, AskUserQuestionAnswerItem]] = []
    for index, question in enumerate(record.request.questions):
        if index < len(record.responses) and record.responses[index] is not None:
            continue
        if question.default is None:
            return None
        item = AskUserQuestionAnswerItem(
            id=question.id, selected=(question.default,), answered_at=at, defaulted=True
        )
        taken.append((index, item))
    return taken or None


def needs_repair(
    record: AskRecord,
    index: int,
    answer: AskUserQuestionAnswerItem | None,
    *,
    now: datetime,
    after: timedelta,
) -> bool:
    """Whether question ``index``'s outcome must be shown again after a click on it: it ended
    more than ``after`` ago, so the update that ended its message never landed."""
    ended = answer.answered_at if answer is not None else record.finished_at
    message = record.messages[index] if index < len(record.messages) else None
    return ended is not None and message is not None and now - ended >= after


def next_reminder_at(record: AskRecord, *, sent: int, now: float) -> float | None:
    """When reminder number ``sent`` + 1 is due (epoch seconds): ``remind_after`` after
    ``now``, while fewer than ``reminders`` went out and before the deadline; else ``None``."""
    target = record.target
    if target.remind_after is None or sent >= target.reminders:
        return None
    at = now + target.remind_after
    if record.deadline is not None and at >= record.deadline:
        return None
    return at
