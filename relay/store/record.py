"""The durable record of one ask: the Slack messages are a view over it."""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, Literal

from relay.errors import AbortReason, UserInteractionError
from relay.questions import (
    AskUserQuestionAnswer,
    AskUserQuestionAnswerItem,
    AskUserQuestionRequest,
    Responder,
)

__all__ = [
    "AnswerOutcome",
    "AnswerResult",
    "AskError",
    "AskRecord",
    "AskStatus",
    "MessageRef",
    "Target",
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
    """Where and to whom an ask goes, with every default already applied."""

    channel: str
    thread_ts: str | None = None
    allowed_users: frozenset[str] | None = None
    timeout: float | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON form."""
        return {
            "channel": self.channel,
            "thread_ts": self.thread_ts,
            "allowed_users": sorted(self.allowed_users) if self.allowed_users is not None else None,
            "timeout": self.timeout,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Target:
        """Read the JSON form."""
        allowed = data.get("allowed_users")
        return cls(
            channel=data["channel"],
            thread_ts=data.get("thread_ts"),
            allowed_users=frozenset(allowed) if allowed is not None else None,
            timeout=data.get("timeout"),
        )


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

    def answer(self) -> AskUserQuestionAnswer:
        """The complete answer (only when every question has a response)."""
        return AskUserQuestionAnswer(answers=tuple(r for r in self.responses if r is not None))

    def with_(self, **changes: Any) -> AskRecord:
        """A copy with ``changes`` applied."""
        return replace(self, **changes)

    def to_json(self) -> str:
        """Serialise the record (the request's wire form plus audit metadata)."""
        return json.dumps(
            {
                "id": self.id,
                "request": self.request.to_dict(),
                "target": self.target.to_dict(),
                "created_at": self.created_at.isoformat(),
                "deadline": self.deadline,
                "status": self.status.value,
                "messages": [[m.channel, m.ts] if m else None for m in self.messages],
                "responses": [_item_to_json(r) if r else None for r in self.responses],
                "error": (
                    {
                        "code": self.error.code,
                        "message": self.error.message,
                        "reason": self.error.reason,
                    }
                    if self.error
                    else None
                ),
                "owner": self.owner,
                "finished_at": self.finished_at.isoformat() if self.finished_at else None,
                "meta": self.meta,
            },
            separators=(",", ":"),
        )

    @classmethod
    def from_json(cls, text: str | bytes) -> AskRecord:
        """Read ``to_json``'s output."""
        data = json.loads(text)
        error = data.get("error")
        return cls(
            id=data["id"],
            request=AskUserQuestionRequest.from_dict(data["request"]),
            target=Target.from_dict(data["target"]),
            created_at=datetime.fromisoformat(data["created_at"]),
            deadline=data.get("deadline"),
            status=AskStatus(data["status"]),
            messages=tuple(MessageRef(m[0], m[1]) if m else None for m in data["messages"]),
            responses=tuple(_item_from_json(r) if r else None for r in data["responses"]),
            error=AskError(error["code"], error["message"], error.get("reason")) if error else None,
            owner=data.get("owner"),
            finished_at=(
                datetime.fromisoformat(data["finished_at"]) if data.get("finished_at") else None
            ),
            meta=data.get("meta") or {},
        )


def _item_to_json(item: AskUserQuestionAnswerItem) -> dict[str, Any]:
    out = item.to_dict()
    if item.answered_by is not None:
        out["answered_by"] = item.answered_by.to_dict()
    if item.answered_at is not None:
        out["answered_at"] = item.answered_at.isoformat()
    return out


def _item_from_json(data: dict[str, Any]) -> AskUserQuestionAnswerItem:
    by = data.get("answered_by")
    at = data.get("answered_at")
    return AskUserQuestionAnswerItem(
        id=data["id"],
        selected=tuple(data.get("selected", ())),
        custom=data.get("custom"),
        answered_by=Responder.from_dict(by) if by else None,
        answered_at=datetime.fromisoformat(at) if at else None,
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
