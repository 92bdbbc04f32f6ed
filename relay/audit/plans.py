"""A plan in the audit trail: the rows of ``relay audit --plans --format csv``. Pure.

Each plan (``GET /v1/plans/{id}``'s object) is one row: its id, status, who approved it and
when, until when, and its scope in plain words; then one row per call it covered, oldest
first: when, the tool, and the call's digest (a plan never keeps a call's input).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from relay.audit.trail import spreadsheet_safe

__all__ = ["PLAN_CSV_COLUMNS", "plan_csv_rows"]

PLAN_CSV_COLUMNS = (
    "plan_id",
    "row",
    "status",
    "agent",
    "approved_by",
    "approved_by_name",
    "approved_at",
    "expires_at",
    "ended_by",
    "scope",
    "covered_count",
    "at",
    "tool",
    "call",
)
# Cells the relay itself wrote (ids, statuses, times, counts, digests); every other cell
# holds someone else's text and is made spreadsheet-safe.
_RELAY_MADE = frozenset(
    {"plan_id", "row", "status", "approved_at", "expires_at", "covered_count", "at", "call"}
)


def plan_csv_rows(item: Mapping[str, Any]) -> Iterator[list[str]]:
    """The plan's row, then one row per call it covered, each cell a safe string in
    ``PLAN_CSV_COLUMNS`` order."""
    by = item.get("approved_by") or {}
    scope = item.get("scope_words") or []
    yield _row(
        plan_id=item.get("id"),
        row="plan",
        status=item.get("status"),
        agent=item.get("agent"),
        approved_by=by.get("id") if isinstance(by, Mapping) else None,
        approved_by_name=by.get("name") if isinstance(by, Mapping) else None,
        approved_at=item.get("approved_at"),
        expires_at=item.get("expires_at"),
        ended_by=item.get("ended_by"),
        scope="\n".join(str(line) for line in scope),
        covered_count=item.get("covered_count"),
    )
    for covered in item.get("covered") or []:
        if isinstance(covered, Mapping):
            yield _row(
                plan_id=item.get("id"),
                row="covered",
                at=covered.get("at"),
                tool=covered.get("tool"),
                call=covered.get("call"),
            )


def _row(**cells: object) -> list[str]:
    out = []
    for column in PLAN_CSV_COLUMNS:
        value = cells.get(column)
        text = "" if value is None else str(value)
        out.append(text if column in _RELAY_MADE else spreadsheet_safe(text))
    return out
