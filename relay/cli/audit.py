"""``relay audit``: export the token's asks from a hosted relay, as JSON lines or CSV.

With ``--receipts``: the relay's signed receipts instead, as JSON lines in chain order
(``seq``, ``id``, ``ask``, ``receipt``), then its signed checkpoints that cover the chain
exported, in the order made (``number``, ``checkpoint``, ``timestamp``: the TSA's RFC 3161
response, base64, or null): one bundle for ``relay verify --chain`` or any JOSE tool,
offline (the filters do not apply: a chain is checked whole, so export it with an operator
token, RELAY_OPERATOR_TOKENS; an agent's token exports its own receipts only).

With ``--plans``: the plans reviewed (the filters pick their reviews), each as
``GET /v1/plans/{id}`` reads it (who approved it and when, until when, its scope in plain
words) with the calls it covered (when, the tool, the digest of the call); as CSV, the plan's
row and then a row per call.

Who answered what and when, each vote (on records that have votes), the timeouts and
aborts, with each question and its options as asked. Reads ``GET /v1/asks`` page by page
with ``RELAY_URL`` and ``RELAY_TOKEN``, like ``relay ask``. CSV cells that a spreadsheet would
run as a formula (starting with = + - @, a tab or a carriage return) get a leading '.
"""

from __future__ import annotations

import argparse
import asyncio
import csv
import json
import os
import re
import sys
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from datetime import UTC, datetime, timedelta
from typing import IO, Any

from relay.cli.common import CANNOT_READ, USAGE, CommandError, Commands, plain, relay_refusal
from relay.errors import ErrorCode

__all__ = []

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
_AGO = re.compile(r"^(\d+(?:\.\d+)?)([smhdw])$")
_STATUSES = ("pending", "answered", "aborted", "timed_out", "failed")


def parse_since(text: str, *, now: datetime, flag: str = "--since") -> str:
    """A time as the API takes it: ``30d`` (ago; also s, m, h, w) or an ISO 8601 time."""
    match = _AGO.match(text.strip())
    if match:
        ago = timedelta(seconds=float(match.group(1)) * _UNITS[match.group(2)])
        return (now - ago).isoformat()
    try:
        at = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise CommandError(
            USAGE, f"{flag} must be a duration ago like 30d, 12h, 90m, or a time like 2026-05-01"
        ) from None
    return (at if at.tzinfo else at.replace(tzinfo=UTC)).isoformat()


def add_audit(commands: Commands) -> None:
    """Register ``relay audit``."""
    parser = commands.add_parser(
        "audit",
        help="export who answered what, when (JSON lines or CSV) from a hosted relay",
        description=plain(__doc__),
    )
    parser.add_argument(
        "--since",
        default="30d",
        metavar="WHEN",
        help="from when: a duration ago such as 30d or 12h, or a time such as 2026-05-01"
        " (default: 30d)",
    )
    parser.add_argument(
        "--until", metavar="WHEN", help="up to when (the same forms as --since; default: now)"
    )
    parser.add_argument(
        "--status",
        action="append",
        choices=_STATUSES,
        help="only asks that ended so (repeat for more; default: all)",
    )
    parser.add_argument("--agent", metavar="ID", help="only asks made by this agent id")
    parser.add_argument("--channel", metavar="C…", help="only asks posted in this channel id")
    parser.add_argument("--responder", metavar="U…", help="only asks this Slack user answered")
    parser.add_argument(
        "--format",
        choices=("jsonl", "csv"),
        default="jsonl",
        help="jsonl (one JSON object a line) or csv (one row per question; default: jsonl)",
    )
    what = parser.add_mutually_exclusive_group()
    what.add_argument(
        "--receipts", action="store_true", help="export the signed receipt chain (JSON lines)"
    )
    what.add_argument(
        "--plans",
        action="store_true",
        help="export the plans reviewed (the filters pick their reviews), each with the"
        " calls it covered",
    )
    parser.add_argument("--output", "-O", metavar="FILE", help="write here (default: stdout)")
    parser.add_argument(
        "--relay-url", metavar="URL", help="the hosted relay (default: RELAY_URL, if set)"
    )
    parser.set_defaults(handler=_run_audit)


def _run_audit(args: argparse.Namespace) -> int:
    args.relay_url = args.relay_url or os.environ.get("RELAY_URL")
    if not args.relay_url:
        raise CommandError(USAGE, "say which relay: --relay-url (or RELAY_URL)")
    token = os.environ.get("RELAY_TOKEN", "")
    if not token:
        raise CommandError(USAGE, "set RELAY_TOKEN to one of the relay's API tokens")
    now = datetime.now(UTC)
    params: list[tuple[str, str]] = [("since", parse_since(args.since, now=now))]
    if args.until:
        params.append(("until", parse_since(args.until, now=now, flag="--until")))
    for status in args.status or ():
        params.append(("status", status))
    for name in ("agent", "channel", "responder"):
        if getattr(args, name):
            params.append((name, getattr(args, name)))
    try:
        out: IO[str] = (
            open(args.output, "w", encoding="utf-8", newline="")  # noqa: SIM115
            if args.output
            else sys.stdout
        )
    except OSError as exc:
        raise CommandError(CANNOT_READ, f"cannot write {args.output}: {exc.strerror}") from None
    url = args.relay_url.rstrip("/")
    try:
        if args.receipts:
            count = asyncio.run(_export_receipts(url, token, out))
        elif args.plans:
            count = asyncio.run(_export_plans(url, token, params, args.format, out))
        else:
            count = asyncio.run(_export(url, token, params, args.format, out))
    finally:
        if out is not sys.stdout:
            out.close()
    what = "receipts" if args.receipts else "plans" if args.plans else "asks"
    sys.stderr.write(f"relay: exported {count} {what}\n")
    return 0


async def _export(
    url: str, token: str, params: list[tuple[str, str]], form: str, out: IO[str]
) -> int:
    from relay.audit.trail import CSV_COLUMNS, csv_rows  # (loads the ask lifecycle: here only)

    write = _writer(out, form, CSV_COLUMNS, csv_rows)
    count = 0
    async for item in _pages(url, token, params):
        count += 1
        write(item)
    return count


def _writer(
    out: IO[str],
    form: str,
    columns: Sequence[str],
    rows: Callable[[dict[str, Any]], Iterable[Sequence[str]]],
) -> Callable[[dict[str, Any]], None]:
    """How an exported item is written: a JSON line, or ``rows(item)`` under a CSV header
    of ``columns`` (written now)."""
    if form != "csv":
        return lambda item: _line(out, item)
    table = csv.writer(out)
    table.writerow(columns)
    return lambda item: table.writerows(rows(item))


def _line(out: IO[str], item: dict[str, Any]) -> None:
    out.write(json.dumps(item, ensure_ascii=False, separators=(",", ":")) + "\n")


async def _export_receipts(url: str, token: str, out: IO[str]) -> int:
    count, head = 0, 0
    async for item in _pages(url, token, [], path="/v1/receipts"):
        count += 1
        head = max(head, item["seq"]) if isinstance(item.get("seq"), int) else head
        out.write(json.dumps(item, separators=(",", ":")) + "\n")
    # Read after the chain, and bound to the head read: a checkpoint signed since covers
    # receipts this export lacks, and would make the whole chain verify as cut.
    async for item in _pages(url, token, [], path="/receipts/checkpoints"):
        if _covers_up_to(item) <= head:
            out.write(json.dumps(item, separators=(",", ":")) + "\n")
    return count


def _covers_up_to(item: dict[str, Any]) -> int:
    """The last place a listed checkpoint covers, read unverified (``relay verify`` checks
    it); 0 when unreadable, so that it is kept and its fault reported there."""
    from relay.receipts.jws import parse

    try:
        claims = json.loads(parse(str(item.get("checkpoint", ""))).payload)
    except ValueError:  # (BadJWS is one)
        return 0
    last = claims.get("last") if isinstance(claims, dict) else None
    return last if isinstance(last, int) else 0


async def _export_plans(
    url: str, token: str, params: list[tuple[str, str]], form: str, out: IO[str]
) -> int:
    """Each plan whose review the filters pick, then the calls it covered."""
    from relay.audit.plans import PLAN_CSV_COLUMNS, plan_csv_rows
    from relay.seam.plan_review import PLAN_REVIEW_ID

    write = _writer(out, form, PLAN_CSV_COLUMNS, plan_csv_rows)
    count = 0
    async for item in _pages(url, token, params):
        if not any(q.get("id") == PLAN_REVIEW_ID for q in item.get("questions") or []):
            continue
        status, plan = await _read(url, token, f"/v1/plans/{item['id']}", [])
        if status == 404:
            continue  # a plan review with no scope behind it (the plain seam's)
        if status != 200 or not isinstance(plan, dict):
            error = plan.get("error") if isinstance(plan, dict) else None
            raise relay_refusal(error, f"the relay answered HTTP {status}")
        count += 1
        write(plan)
    return count


async def _read(url: str, token: str, path: str, query: list[tuple[str, str]]) -> tuple[int, Any]:
    """One GET of the relay's API: the status and the JSON body."""
    import aiohttp  # (here, not with the parser: other commands start without it)

    headers = {"Authorization": f"Bearer {token}"}
    timeout = aiohttp.ClientTimeout(total=60)
    try:
        async with (
            aiohttp.ClientSession(headers=headers, timeout=timeout) as session,
            session.get(f"{url}{path}", params=query) as response,
        ):
            return response.status, await response.json(content_type=None)
    except (aiohttp.ClientError, TimeoutError, ValueError) as exc:
        raise CommandError(
            ErrorCode.PROVIDER_FAILED,
            f"cannot read {url}{path} ({exc or type(exc).__name__}); check RELAY_URL"
            " and that relay serve is running",
        ) from None


async def _pages(
    url: str, token: str, params: list[tuple[str, str]], *, path: str = "/v1/asks"
) -> AsyncIterator[dict[str, Any]]:
    cursor: str | None = None
    # The chain and its checkpoints are paged by place (after=N), not by cursor.
    receipts = path in ("/v1/receipts", "/receipts/checkpoints")
    field = {"/v1/receipts": "receipts", "/receipts/checkpoints": "checkpoints"}.get(path, "asks")
    while True:
        query = [*params, ("limit", "200")]
        if cursor:
            query.append(("after" if receipts else "cursor", cursor))
        status, body = await _read(url, token, path, query)
        if status != 200 or not isinstance(body, dict):
            error = body.get("error") if isinstance(body, dict) else None
            raise relay_refusal(error, f"the relay answered HTTP {status}")
        for item in body.get(field) or []:
            yield item
        following = body.get("next_after" if receipts else "next_cursor")
        cursor = None if following is None else str(following)
        if not cursor:
            return
