"""The API's JSON view of an ask record."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from relay.seam.questions import AskUserQuestionAnswerItem, Vote
from relay.store.record import AskRecord, AskStatus

__all__ = ["iso_time", "needs_votes", "record_json"]


def iso_time(epoch: float) -> str:
    """Epoch seconds as the API shows every time: ISO 8601 in UTC."""
    # Timeouts are at most a year (LONGEST_TIMEOUT), so every deadline has a date.
    return datetime.fromtimestamp(epoch, UTC).isoformat()


def _response(item: AskUserQuestionAnswerItem) -> dict[str, Any]:
    out: dict[str, Any] = {"id": item.id}
    if item.answered_by is not None:
        out["answered_by"] = item.answered_by.to_dict()
    if item.answered_at is not None:
        out["answered_at"] = item.answered_at.isoformat()
    if item.defaulted:
        out["defaulted"] = True
    if item.votes:
        out["votes"] = [v.to_dict() for v in item.votes]
    return out


def needs_votes(record: AskRecord) -> bool:
    """Whether the record has questions decided by votes (``record_json`` shows their tally)."""
    return any(q.quorum > 1 for q in record.request.questions)


def record_json(record: AskRecord, *, votes: tuple[tuple[Vote, ...], ...] = ()) -> dict[str, Any]:
    """The record as the relay API shows it (the documented ``AskRecord`` schema); ``votes``
    (the store's, per question) adds the votes cast on questions not decided yet."""
    out: dict[str, Any] = {
        "id": record.id,
        "status": record.status.value,
        "created_at": record.created_at.isoformat(),
    }
    if record.deadline is not None:
        # ISO 8601 in UTC, like every other time in the record (the store keeps epoch seconds).
        out["deadline"] = iso_time(record.deadline)
    answered = [r for r in record.responses if r is not None]
    if answered:
        out["responses"] = [_response(r) for r in answered]
    if record.status is AskStatus.ANSWERED:
        out["answer"] = record.answer().to_dict()
        if record.defaulted:
            out["defaulted"] = True
        last = max(
            answered,
            key=lambda r: r.answered_at.timestamp() if r.answered_at is not None else 0.0,
        )
        if last.answered_by is not None:
            out["answered_by"] = last.answered_by.to_dict()
        if last.answered_at is not None:
            out["answered_at"] = last.answered_at.isoformat()
    open_votes = [
        {"id": q.id, "votes": [v.to_dict() for v in cast]}
        for i, (q, cast) in enumerate(zip(record.request.questions, votes, strict=False))
        if cast and (i >= len(record.responses) or record.responses[i] is None)
    ]
    if open_votes:
        out["votes"] = open_votes
    if record.error is not None:
        out["error"] = {"code": record.error.code, "message": record.error.message}
        if record.error.reason is not None:
            out["error"]["reason"] = record.error.reason
    return out
