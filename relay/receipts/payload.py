"""What a receipt says: the payload of an ended ask, built from its record, in JCS.

Times are RFC 3339 strings in UTC (JCS numbers are doubles, so no float appears); digests
are base64url (no padding) SHA-256. A typed answer's text is carried as its digest only:
the receipt proves which text was given without disclosing it to whoever holds an export.
"""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime
from typing import Any

from relay.receipts.jcs import canonical
from relay.receipts.jws import b64url
from relay.seam.edits import read_edit
from relay.seam.questions import AskUserQuestionAnswerItem, Responder, Vote
from relay.store.record import AskRecord

__all__ = [
    "ERROR_CODE",
    "VERSION",
    "digest",
    "receipt_id",
    "receipt_payload",
    "record_time",
    "subject_digest",
]

VERSION = 1
ERROR_CODE = "record_not_receiptable"
"""The ``error.code`` of an error receipt: the relay could not receipt that ask's record
and signed this in its place (``relay.receipts.writer``)."""


def digest(data: bytes) -> str:
    """Base64url (no padding) SHA-256 of ``data``: every digest a receipt holds."""
    return b64url(hashlib.sha256(data).digest())


def receipt_id(ask_id: str) -> str:
    """The id of ``ask_id``'s receipt, known before it is written (one receipt per ask)."""
    return f"rcpt_{ask_id}"


def subject_digest(record: AskRecord) -> str:
    """The digest of what the reviewers were shown: the JCS of the questions' wire form
    (an approval's question carries its tool call as rendered). The one place this is
    computed, so that it can move to the decision core's canonical tool input."""
    return digest(canonical([q.to_dict() for q in record.request.questions]))


def record_time(at: datetime | float | None) -> str | None:
    """``at`` as a receipt writes times: RFC 3339 in UTC, to the microsecond."""
    if at is None:
        return None
    if isinstance(at, float | int):
        at = datetime.fromtimestamp(at, UTC)
    return at.astimezone(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


def _person(by: Responder | None) -> dict[str, Any] | None:
    if by is None:
        return None
    return {"team": by.team, "user": by.id, "request": by.request}


def _vote(vote: Vote) -> dict[str, Any]:
    out = {**(_person(vote.by) or {}), "label": vote.label, "at": record_time(vote.at)}
    if vote.version != 1:  # on an edited call's version (receipts of unedited votes unchanged)
        out["version"] = vote.version
    return out


def _decision(item: AskUserQuestionAnswerItem | None, question_id: str) -> dict[str, Any]:
    if item is None:
        return {"id": question_id, "answered": False}
    out: dict[str, Any] = {
        "id": item.id,
        "answered": True,
        "selected": list(item.selected),
        "custom_sha256": None if item.custom is None else digest(item.custom.encode()),
        "defaulted": item.defaulted,
        "by": _person(item.answered_by),
        "at": record_time(item.answered_at),
    }
    if item.votes:
        out["votes"] = [_vote(v) for v in item.votes]
    return out


def _edited_digest(responses: Any) -> str | None:
    for item in responses:
        edit = read_edit(item.custom) if item is not None else None
        if edit is not None:
            return digest(canonical(dict(edit.input)))
    return None


def receipt_payload(
    record: AskRecord, *, issuer: str, kid: str, seq: int, prev: str | None
) -> dict[str, Any]:
    """The payload of ended ``record``'s receipt, ``seq``-th in the chain after ``prev``.

    An approval is an ask whose one question shows the tool call; nothing in the record
    tells it from an ordinary ask that a client shaped alike, so the receipt claims no kind
    (``GET /v1/approvals/{id}/receipt`` serves only the relay's own approvals)."""
    questions = record.request.questions
    responses = list(record.responses) + [None] * (len(questions) - len(record.responses))
    error = record.error
    return {
        "v": VERSION,
        "iss": issuer,
        "kid": kid,
        "jti": receipt_id(record.id),
        "seq": seq,
        "prev": prev,
        "ask": record.id,
        "agent": {
            "owner": record.owner,  # the API token's fingerprint, never the token
            "name": record.request.agent.id if record.request.agent else None,
        },
        "created": record_time(record.created_at),
        "deadline": record_time(record.deadline),
        "ended": record_time(record.finished_at),
        "shown_sha256": subject_digest(record),
        # The call that runs instead of the one shown, when a reviewer edited it: the JCS
        # digest of the edited input (custom_sha256 binds the answer's exact text too).
        "edited_sha256": _edited_digest(responses),
        "options": [list(q.labels) for q in questions],
        "outcome": {
            "status": record.status.value,
            "error": None if error is None else {"code": error.code, "reason": error.reason},
            "defaulted": record.defaulted,
            "decisions": [
                _decision(item, q.id) for q, item in zip(questions, responses, strict=True)
            ],
        },
    }
