"""``GET /v1/asks``'s query: the audit list's filters, time range, cursor and page size."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from multidict import MultiMapping

from relay.audit.trail import AuditFilter, decode_cursor
from relay.errors import ErrorCode
from relay.server.errors import ApiError
from relay.store.listing import Position
from relay.store.record import AskStatus

__all__ = ["LIST_DEFAULT", "LIST_MAX", "LIST_SCAN_BUDGET", "ListQuery", "read_list_query"]

LIST_DEFAULT = 50
LIST_MAX = 200
# Asks one list request reads at most to fill a page past its filters; past it, the page
# ends early with a cursor (a sparse filter costs several requests, never one huge one).
LIST_SCAN_BUDGET = 2000


@dataclass(frozen=True, slots=True)
class ListQuery:
    """``GET /v1/asks``'s query, checked."""

    filter: AuditFilter
    since: float | None
    until: float | None
    after: Position | None
    limit: int


def read_list_query(query: MultiMapping[str]) -> ListQuery:
    """The list's parameters, or ``BAD_REQUEST`` naming the one that is wrong."""
    for name in query:
        if name not in _LIST_PARAMS:
            raise ApiError(
                ErrorCode.BAD_REQUEST,
                f"{name} is not a parameter of GET /v1/asks (it takes"
                f" {', '.join(sorted(_LIST_PARAMS))})",
            )
    statuses: set[AskStatus] = set()
    for raw in query.getall("status", []):
        for part in raw.split(","):
            try:
                statuses.add(AskStatus(part.strip()))
            except ValueError:
                known = ", ".join(s.value for s in AskStatus)
                raise ApiError(
                    "BAD_REQUEST", f"status {part.strip()!r} is not one of {known}"
                ) from None
    raw_limit = query.get("limit")
    limit = LIST_DEFAULT
    if raw_limit is not None:
        if not raw_limit.isdigit() or not 1 <= int(raw_limit) <= LIST_MAX:
            raise ApiError(
                ErrorCode.BAD_REQUEST, f"limit must be a whole number from 1 to {LIST_MAX}"
            )
        limit = int(raw_limit)
    after = None
    if (cursor := query.get("cursor")) is not None:
        after = decode_cursor(cursor)
        if after is None:
            raise ApiError(
                "BAD_REQUEST", "cursor is not one this relay gave: pass next_cursor as it came"
            )
    return ListQuery(
        filter=AuditFilter(
            statuses=frozenset(statuses),
            agent=query.get("agent") or None,
            channel=query.get("channel") or None,
            responder=query.get("responder") or None,
        ),
        since=_instant(query.get("since"), "since"),
        until=_instant(query.get("until"), "until"),
        after=after,
        limit=limit,
    )


_LIST_PARAMS = frozenset(
    {"status", "agent", "channel", "responder", "since", "until", "cursor", "limit"}
)


def _instant(raw: str | None, name: str) -> float | None:
    """An ISO 8601 time (UTC when it names no zone) as epoch seconds."""
    if raw is None or not raw.strip():
        return None
    try:
        at = datetime.fromisoformat(raw.strip().replace("Z", "+00:00"))
    except ValueError:
        raise ApiError(
            "BAD_REQUEST", f"{name} must be an ISO 8601 time like 2026-05-01T00:00:00Z"
        ) from None
    if at.tzinfo is None:
        at = at.replace(tzinfo=UTC)
    return at.timestamp()
