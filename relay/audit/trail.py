"""The audit trail's pure core: an ask as the trail shows it, the list's filters and cursor,
and the rows of a CSV export (safe to open in a spreadsheet).

``GET /v1/asks`` lists the records ``audit_json`` makes; ``relay audit`` turns them into
JSON lines or CSV rows with ``csv_rows``.
"""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from relay.asks.records import iso_time, record_json
from relay.asks.terms import escalated_at
from relay.store.listing import Position
from relay.store.record import AskRecord, AskStatus

__all__ = ["CSV_COLUMNS", "AuditFilter", "audit_json", "csv_rows", "decode_cursor", "encode_cursor"]


def audit_json(record: AskRecord) -> dict[str, Any]:
    """The record as ``GET /v1/asks`` lists it: the ``AskRecord`` view plus the questions and
    options as asked, who asked, where, and when it ended."""
    out = record_json(record)
    request = record.request.to_dict()
    out["questions"] = request["questions"]
    out["agent"] = request.get("agent")
    out["channel"] = record.target.channel
    if record.target.thread_ts is not None:
        out["thread_ts"] = record.target.thread_ts
    if record.finished_at is not None:
        out["finished_at"] = record.finished_at.isoformat()
    escalated = escalated_at(record, now=time.time())
    if escalated is not None:
        out["escalated_at"] = iso_time(escalated)
    return out


@dataclass(frozen=True, slots=True, kw_only=True)
class AuditFilter:
    """What a listing keeps: any of ``statuses`` (all when empty), and the agent, channel
    and responder when given."""

    statuses: frozenset[AskStatus] = frozenset()
    agent: str | None = None
    channel: str | None = None
    responder: str | None = None

    def matches(self, record: AskRecord) -> bool:
        """Whether ``record`` passes every filter."""
        if self.statuses and record.status not in self.statuses:
            return False
        if self.agent is not None and (
            record.request.agent is None or record.request.agent.id != self.agent
        ):
            return False
        if self.channel is not None and record.target.channel != self.channel:
            return False
        if self.responder is not None:
            return any(
                r is not None and r.answered_by is not None and r.answered_by.id == self.responder
                for r in record.responses
            )
        return True


def encode_cursor(position: Position) -> str:
    """An opaque cursor for the listing position ``position``."""
    raw = json.dumps([position[0], position[1]], separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: str) -> Position | None:
    """The position in ``cursor``, or ``None`` if it is not one ``encode_cursor`` made."""
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        at, ask_id = json.loads(raw)
    except (ValueError, TypeError):
        return None
    if isinstance(at, bool) or not isinstance(at, int | float) or not isinstance(ask_id, str):
        return None
    return float(at), ask_id


CSV_COLUMNS = (
    "ask_id",
    "created_at",
    "status",
    "finished_at",
    "agent",
    "channel",
    "question_id",
    "question",
    "options",
    "selected",
    "custom",
    "answered_by",
    "answered_by_name",
    "answered_at",
    "error_code",
    "error_reason",
    "error_message",
    "votes",
    "escalated_at",
)
# What a spreadsheet may read as the start of a formula (OWASP's CSV injection list).
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def spreadsheet_safe(value: str) -> str:
    """``value`` with a leading ``'`` if a spreadsheet would run it as a formula."""
    return "'" + value if value.startswith(_FORMULA_START) else value


def csv_rows(item: Mapping[str, Any]) -> Iterator[list[str]]:
    """One row per question of a listed ask (``audit_json``'s shape), every cell a safe
    string in ``CSV_COLUMNS`` order: who answered what and when, or how the ask ended."""
    questions: Sequence[Any] = item.get("questions") or [{}]
    answers = {a.get("id"): a for a in (item.get("answer") or {}).get("answers", [])}
    responses = {r.get("id"): r for r in item.get("responses") or [] if isinstance(r, dict)}
    agent = item.get("agent") or {}
    error = item.get("error") or {}
    votes = item.get("votes")
    for question in questions:
        qid = question.get("id")
        answer = answers.get(qid) or {}
        response = responses.get(qid) or {}
        by = response.get("answered_by") or {}
        row = [
            item.get("id"),
            item.get("created_at"),
            item.get("status"),
            item.get("finished_at"),
            agent.get("id") if isinstance(agent, dict) else agent,
            item.get("channel"),
            qid,
            question.get("question"),
            "; ".join(o.get("label", "") for o in question.get("options") or []),
            "; ".join(answer.get("selected") or []),
            answer.get("custom"),
            by.get("id"),
            by.get("name"),
            response.get("answered_at"),
            error.get("code"),
            error.get("reason"),
            error.get("message"),
            _votes(votes, qid),
            item.get("escalated_at"),
        ]
        yield [_cell(column, cell) for column, cell in zip(CSV_COLUMNS, row, strict=True)]


# Cells the relay itself wrote: ask ids (letters, digits, ``-`` and ``_``, so they may begin
# with ``-`` and a ``'`` would change them), its statuses and timestamps. Every other cell
# holds someone else's text and is made spreadsheet-safe.
_RELAY_MADE = frozenset(
    {"ask_id", "created_at", "status", "finished_at", "answered_at", "escalated_at"}
)


def _cell(column: str, value: object) -> str:
    text = "" if value is None else str(value)
    return text if column in _RELAY_MADE else spreadsheet_safe(text)


def _votes(votes: object, question_id: object) -> str:
    """Each vote on one question as ``who: choice at when``, if the record has votes (the
    quorum workflow's records do); anything unexpected is kept as JSON."""
    if not isinstance(votes, list) or not votes:
        return ""
    shown = []
    for vote in votes:
        if not isinstance(vote, dict):
            shown.append(json.dumps(vote, sort_keys=True))
            continue
        if vote.get("question", vote.get("id", question_id)) != question_id:
            continue
        by = vote.get("by") or vote.get("answered_by") or vote.get("voter") or {}
        who = by.get("id") if isinstance(by, dict) else by
        choice = vote.get("label") or vote.get("selected") or vote.get("choice") or vote.get("vote")
        if isinstance(choice, list):
            choice = "+".join(str(c) for c in choice)
        at = vote.get("at") or vote.get("answered_at")
        version = vote.get("version")
        on = f" (v{version})" if isinstance(version, int) and version > 1 else ""
        shown.append(f"{who}: {choice}{on}" + (f" at {at}" if at else ""))
    return "; ".join(shown)
