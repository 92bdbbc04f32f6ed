"""The terms an ask runs under, pure: how long it may wait, how it ended, when a shown
outcome is stale. (The team's rules file, which decides tool uses, is ``relay.gate.rules``.)

No I/O and no clock: the time is always passed in. The lifecycle (``relay.asks.lifecycle``)
applies these terms with the store's atomic claims; a channel (``relay.slack``) shows them.
"""

from __future__ import annotations

import math
from collections.abc import Collection
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Literal

from relay.errors import ErrorCode, RelayConfigError, UserInteractionError, ask_closed
from relay.seam.limits import LONGEST_TIMEOUT, MAX_REMINDERS
from relay.seam.questions import (
    MAX_APPROVALS,
    AskUserQuestionAnswer,
    AskUserQuestionAnswerItem,
    AskUserQuestionItem,
    AskUserQuestionRequest,
)
from relay.store import VoteResult
from relay.store.record import AskError, AskRecord, AskStatus, Target

__all__ = [
    "LONGEST_TIMEOUT",
    "MAX_REMINDERS",
    "REPAIR_AFTER",
    "Nudge",
    "QuestionDefaults",
    "answer_of",
    "capped",
    "check_approvals",
    "check_timeout",
    "default_answers",
    "ended_event",
    "escalated",
    "escalated_at",
    "known",
    "needs_repair",
    "next_reminder_at",
    "nudges",
    "outcome_of",
    "votes_on_version",
    "widened",
]

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


def check_approvals(value: int | None) -> int | None:
    """``value`` as a number of approvals a question needs, or ``RelayConfigError``."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_APPROVALS:
        raise RelayConfigError(
            f"approvals_required must be a whole number from 1 to {MAX_APPROVALS}",
            setting="approvals_required",
        )
    return value


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


@dataclass(frozen=True, slots=True)
class Nudge:
    """One step of a pending ask's nudges: a reminder (``number`` 1, 2…) or its escalation
    (``number`` 0), due at ``at`` (epoch seconds)."""

    at: float
    kind: Literal["remind", "escalate"]
    number: int = 0


def nudges(record: AskRecord) -> list[Nudge]:
    """Every nudge of ``record`` in the order they fall due: reminder ``k`` at ``k`` times
    ``remind_after`` after the ask was created (up to ``reminders`` of them), the escalation
    at ``escalate_after`` (first, when both fall together); none at or after the deadline.

    The store counts the nudges sent, so replicas agree on which one is next."""
    target = record.target
    created = record.created_at.timestamp()
    steps: list[Nudge] = []
    if target.escalate_after is not None:
        steps.append(Nudge(created + target.escalate_after, "escalate"))
    if target.remind_after is not None:
        steps += [
            Nudge(created + k * target.remind_after, "remind", k)
            for k in range(1, target.reminders + 1)
        ]
    if record.deadline is not None:
        steps = [step for step in steps if step.at < record.deadline]
    return sorted(steps, key=lambda step: (step.at, step.number))


def next_reminder_at(record: AskRecord, *, sent: int) -> float | None:
    """When nudge number ``sent`` + 1 (``nudges``) is due, or ``None`` when none is left."""
    steps = nudges(record)
    return steps[sent].at if sent < len(steps) else None


def escalated(record: AskRecord, *, now: float) -> bool:
    """Whether ``record``'s escalation time has come (it may then be answered more widely)."""
    after = record.target.escalate_after
    return after is not None and now >= record.created_at.timestamp() + after


def escalated_at(record: AskRecord, *, now: float) -> float | None:
    """When ``record`` was escalated (epoch seconds): its escalation time, if that came
    before it ended (or, pending, before ``now``); else ``None``."""
    after = record.target.escalate_after
    if after is None:
        return None
    at = record.created_at.timestamp() + after
    until = record.finished_at.timestamp() if record.finished_at is not None else now
    return at if at <= until else None


def widened(record: AskRecord, *, now: float) -> Target:
    """Who may answer ``record`` at ``now``: its target, joined from the escalation time on by
    the escalation's users and groups. An ask anyone may answer stays so; the operator's
    policy still bounds everyone (it is checked on top, at every click)."""
    target = record.target
    if not target.restricted or not escalated(record, now=now):
        return target
    if target.escalate_users is None and target.escalate_groups is None:
        return target
    return replace(
        target,
        allowed_users=_union(target.allowed_users, target.escalate_users),
        allowed_groups=_union(target.allowed_groups, target.escalate_groups),
    )


def _union(a: frozenset[str] | None, b: frozenset[str] | None) -> frozenset[str] | None:
    if a is None or b is None:
        return a if b is None else b
    return a | b


@dataclass(frozen=True, slots=True)
class QuestionDefaults:
    """The provider's team decisions for questions that set none (``apply``): the
    ``default`` label taken at timeout, the ``approvals`` an option needs, ``veto`` labels."""

    default: str | None = None
    approvals: int | None = None
    veto: tuple[str, ...] | None = None

    @classmethod
    def checked(
        cls, default: str | None, approvals: int | None, veto: Collection[str] | None
    ) -> QuestionDefaults:
        """These defaults, or ``RelayConfigError`` for one that cannot be."""
        if isinstance(veto, str):
            raise RelayConfigError("veto must be a collection of labels", setting="veto")
        return cls(default or None, check_approvals(approvals), tuple(veto or ()) or None)

    def apply(self, request: AskUserQuestionRequest) -> AskUserQuestionRequest:
        """``request`` with these filled in where a question sets none and they apply:
        ``default`` where it is one of the question's labels, ``approvals`` on single-select
        questions with options, the ``veto`` labels a question offers (never all of them)."""
        if self.default is None and self.approvals is None and not self.veto:
            return request
        questions = tuple(
            _with_defaults(q, self.default, self.approvals, self.veto) for q in request.questions
        )
        if questions == tuple(request.questions):
            return request
        return replace(request, questions=questions)


def _with_defaults(
    q: AskUserQuestionItem,
    default: str | None,
    approvals: int | None,
    veto: tuple[str, ...] | None,
) -> AskUserQuestionItem:
    labels = q.labels
    if not labels:
        return q
    changes: dict[str, object] = {}
    if q.default is None and default is not None and default in labels:
        changes["default"] = default
    votable = not q.multi_select and q.approvals_required is None
    if votable and approvals is not None and approvals > 1:
        changes["approvals_required"] = approvals
    offered = tuple(label for label in veto or () if label in labels)
    if q.veto is None and offered and len(set(offered)) < len(set(labels)):
        changes["veto"] = offered
    return replace(q, **changes) if changes else q  # type: ignore[arg-type]


def known(ask_id: str, record: AskRecord | None) -> AskRecord:
    """``record``, or ``PROVIDER_FAILED`` if the store no longer has the ask."""
    if record is None:
        raise UserInteractionError(
            ErrorCode.PROVIDER_FAILED,
            f"ask {ask_id} is not in the store (it expired or was lost); ask again",
        )
    return record


def votes_on_version(result: VoteResult) -> int:
    """How many votes count on the version being voted (an edit's replaced the others)."""
    return sum(1 for v in result.votes if v.version == result.version)
