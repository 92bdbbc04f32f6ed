"""The durable record of one ask: the Slack messages are a view over it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, fields
from datetime import UTC, datetime
from enum import StrEnum
from operator import attrgetter
from types import MemberDescriptorType
from typing import Any, Literal

from relay.errors import AbortReason, UserInteractionError
from relay.seam.edits import read_edit
from relay.seam.questions import (
    AskUserQuestionAnswer,
    AskUserQuestionAnswerItem,
    AskUserQuestionRequest,
    Responder,
    Vote,
)

__all__ = [
    "AnswerOutcome",
    "AnswerResult",
    "AskError",
    "AskRecord",
    "AskStatus",
    "MessageRef",
    "Target",
    "VoteOutcome",
    "VoteResult",
    "item_from_json",
    "item_to_json",
    "quorum_reached",
    "utcnow",
    "vote_of",
]


class AskStatus(StrEnum):
    """Where an ask is in its life; every status but ``PENDING`` is final."""

    PENDING = "pending"
    ANSWERED = "answered"
    ABORTED = "aborted"
    TIMED_OUT = "timed_out"
    FAILED = "failed"


@dataclass(frozen=True, slots=True)
class MessageRef:
    """Where a question's Slack message lives."""

    channel: str
    ts: str


@dataclass(frozen=True, slots=True)
class Target:
    """Where and to whom an ask goes, with every default already applied.

    ``escalate_after`` seconds after the ask was created, ``escalate_users`` and
    ``escalate_groups`` may answer too (``widened``), and they are told: in
    ``escalate_channel`` with a link back, or else in the question's thread.
    """

    channel: str
    thread_ts: str | None = None
    allowed_users: frozenset[str] | None = None
    timeout: float | None = None
    allowed_groups: frozenset[str] | None = None
    requester: str | None = None
    prevent_self_approval: bool = False
    remind_after: float | None = None
    reminders: int = 1
    escalate_after: float | None = None
    escalate_users: frozenset[str] | None = None
    escalate_groups: frozenset[str] | None = None
    escalate_channel: str | None = None

    @property
    def restricted(self) -> bool:
        """Whether only some people may answer (an allowlist of users or groups is set)."""
        return self.allowed_users is not None or self.allowed_groups is not None

    def to_dict(self) -> dict[str, Any]:
        """JSON form (the escalation only when there is one)."""
        out: dict[str, Any] = {
            "channel": self.channel,
            "thread_ts": self.thread_ts,
            "allowed_users": _sorted(self.allowed_users),
            "timeout": self.timeout,
            "allowed_groups": _sorted(self.allowed_groups),
            "requester": self.requester,
            "prevent_self_approval": self.prevent_self_approval,
            "remind_after": self.remind_after,
            "reminders": self.reminders,
        }
        if self.escalate_after is not None:
            out["escalate_after"] = self.escalate_after
            out["escalate_users"] = _sorted(self.escalate_users)
            out["escalate_groups"] = _sorted(self.escalate_groups)
            out["escalate_channel"] = self.escalate_channel
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Target:
        """Read the JSON form."""
        users, groups = data.get("allowed_users"), data.get("allowed_groups")
        return cls(
            channel=data["channel"],
            thread_ts=data.get("thread_ts"),
            allowed_users=frozenset(users) if users is not None else None,
            timeout=data.get("timeout"),
            allowed_groups=frozenset(groups) if groups is not None else None,
            requester=data.get("requester"),
            prevent_self_approval=bool(data.get("prevent_self_approval", False)),
            remind_after=data.get("remind_after"),
            reminders=int(data.get("reminders", 1)),
            escalate_after=data.get("escalate_after"),
            escalate_users=_ids(data.get("escalate_users")),
            escalate_groups=_ids(data.get("escalate_groups")),
            escalate_channel=data.get("escalate_channel"),
        )


def _sorted(ids: frozenset[str] | None) -> list[str] | None:
    return sorted(ids) if ids is not None else None


def _ids(value: list[str] | None) -> frozenset[str] | None:
    return frozenset(value) if value is not None else None


@dataclass(frozen=True, slots=True)
class AskError:
    """Why an ask ended without an answer: the seam's code, message and abort reason."""

    code: str
    message: str
    reason: AbortReason | None = None

    def to_exception(self) -> UserInteractionError:
        """The error to raise to the agent."""
        return UserInteractionError(self.code, self.message, reason=self.reason)

    @classmethod
    def of(cls, exc: UserInteractionError) -> AskError:
        """Capture an exception's code, message and reason."""
        return cls(code=exc.code, message=str(exc), reason=exc.reason)


@dataclass(frozen=True, slots=True)
class AskRecord:
    """One ask: the request, where it went, each question's message and answer, its outcome."""

    id: str
    request: AskUserQuestionRequest
    target: Target
    created_at: datetime
    deadline: float | None = None  # epoch seconds
    status: AskStatus = AskStatus.PENDING
    messages: tuple[MessageRef | None, ...] = ()
    responses: tuple[AskUserQuestionAnswerItem | None, ...] = ()
    error: AskError | None = None
    owner: str | None = None
    finished_at: datetime | None = None
    meta: dict[str, Any] = field(default_factory=dict, compare=False)

    @property
    def pending(self) -> bool:
        """Whether the ask still waits for an outcome."""
        return self.status is AskStatus.PENDING

    @property
    def defaulted(self) -> bool:
        """Whether any question took its default because nobody answered in time."""
        return any(r is not None and r.defaulted for r in self.responses)

    def answer(self) -> AskUserQuestionAnswer:
        """The complete answer (only when every question has a response)."""
        return AskUserQuestionAnswer(answers=tuple(r for r in self.responses if r is not None))

    def with_(self, **changes: Any) -> AskRecord:
        """A copy with ``changes`` applied (a name that is no field raises ``TypeError``)."""
        # Every click changes a record: dataclasses.replace walks the fields in Python and
        # sets each through object.__setattr__, twice what the slots' own setters take.
        # (Nothing is lost: the class has no __post_init__ to run; a test holds it to that.)
        copy: AskRecord = _new(AskRecord)
        for set_field, value in zip(_SETTERS, _record_values(self), strict=True):
            set_field(copy, value)
        for name, value in changes.items():
            setter = _SETTER_OF.get(name)
            if setter is None:
                raise TypeError(f"AskRecord has no field {name!r}")
            setter(copy, value)
        return copy


def slot_setters(cls: type) -> dict[str, Callable[[Any, Any], None]]:
    """Each field of slotted dataclass ``cls`` and its slot's own setter, in field order:
    the way to fill a frozen one (its ``__setattr__`` refuses, and ``object.__setattr__``
    looks the name up again on every call, twice as slow)."""
    setters: dict[str, Callable[[Any, Any], None]] = {}
    for f in fields(cls):
        slot = getattr(cls, f.name, None)  # (a class's slot, or a base class's)
        if not isinstance(slot, MemberDescriptorType):  # (caught at import)
            raise TypeError(f"{cls.__name__}.{f.name} is not a slot: it needs slots=True")
        setters[f.name] = slot.__set__
    return setters


_SETTER_OF = slot_setters(AskRecord)
_SETTERS = tuple(_SETTER_OF.values())
_record_values = attrgetter(*_SETTER_OF)
_new = object.__new__


def item_to_json(item: AskUserQuestionAnswerItem) -> dict[str, Any]:
    """An answer item's wire form plus its audit fields (who answered, when, and the
    evidence a receipt carries: the Slack team and the click's signed request)."""
    out = item.to_dict()
    if item.answered_by is not None:
        out["answered_by"] = item.answered_by.to_store()
    if item.answered_at is not None:
        out["answered_at"] = item.answered_at.isoformat()
    if item.votes:
        out["votes"] = [v.to_store() for v in item.votes]
    return out  # (to_dict carries defaulted)


def item_from_json(data: dict[str, Any]) -> AskUserQuestionAnswerItem:
    """Read ``item_to_json``'s output."""
    by = data.get("answered_by")
    at = data.get("answered_at")
    return AskUserQuestionAnswerItem(
        id=data["id"],
        selected=tuple(data.get("selected", ())),
        custom=data.get("custom"),
        answered_by=Responder.from_dict(by) if by else None,
        answered_at=datetime.fromisoformat(at) if at else None,
        defaulted=data.get("defaulted") is True,
        votes=tuple(Vote.from_dict(v) for v in data.get("votes") or ()),
    )


def utcnow() -> datetime:
    """The current time, timezone-aware (UTC)."""
    return datetime.now(UTC)


AnswerOutcome = Literal["accepted", "completed", "already_answered", "not_pending", "unknown"]


@dataclass(frozen=True, slots=True)
class AnswerResult:
    """What recording one question's answer did, and the record as it stands after."""

    outcome: AnswerOutcome
    record: AskRecord | None


VoteOutcome = Literal[
    "counted",
    "decided",
    "completed",
    "already_voted",
    "already_answered",
    "stale_version",
    "not_pending",
    "unknown",
]


@dataclass(frozen=True, slots=True)
class VoteResult:
    """What recording one vote did: ``counted`` (the question still waits), ``decided`` (it
    is answered), ``completed`` (and so is the ask), or why it was not counted
    (``stale_version``: the vote was for a version of the question an edit replaced, or an
    edit of one); the record, the question's votes (every version's) and its current edit
    (``revision``, the edit's ``custom`` text, ``None`` while the original stands) after."""

    outcome: VoteOutcome
    record: AskRecord | None
    votes: tuple[Vote, ...] = ()
    revision: str | None = None

    @property
    def version(self) -> int:
        """The version of the question being voted now (1: the original)."""
        edit = read_edit(self.revision)
        return edit.version if edit is not None else 1


def quorum_reached(
    votes: tuple[Vote, ...], label: str, required: int, veto: frozenset[str], version: int = 1
) -> bool:
    """Whether ``votes`` decide ``label`` on ``version``: one vote for a veto label, else
    ``required`` votes for it cast on that version (votes on an earlier one do not count)."""
    if label in veto:
        return True
    return sum(1 for v in votes if v.label == label and v.version == version) >= required


def vote_of(item: AskUserQuestionAnswerItem, version: int = 1) -> Vote:
    """The vote a person's answer item casts: who (``answered_by``), which label, when, on
    which version: an edited call in ``custom`` (``relay.seam.edits``) is a vote for its choice
    on its version, else the one label selected is a vote on ``version``."""
    edit = read_edit(item.custom)
    if item.answered_by is None or item.answered_at is None:
        raise ValueError("a vote is chosen by someone, at some time")
    if edit is not None:
        return Vote(
            by=item.answered_by, label=edit.choice, at=item.answered_at, version=edit.version
        )
    if len(item.selected) != 1 or item.custom is not None:
        raise ValueError("a vote is one label, or an edited call")
    return Vote(by=item.answered_by, label=item.selected[0], at=item.answered_at, version=version)
