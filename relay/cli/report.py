"""``relay report``: the approvals report, made from the signed receipts once they verify.

Shows approvals per day, time to decide (p50, p90), who decided, how approvals ended
(allowed, denied, edited, timed out), what ended with nobody's answer, what the rules, a
grant or a plan decided at once without a person (each by what decided it), and the calls
asked about again and again.

From a running relay: ``RELAY_URL`` (or ``--relay-url``) and ``RELAY_TOKEN`` set to an
operator token (``RELAY_OPERATOR_TOKENS``), which reads the whole chain; the receipts are
checked against the relay's published keys before anything is counted. From an export
(``--receipts FILE``, as ``relay audit --receipts`` writes it, or ``-`` for stdin): checked
against ``--keys FILE|URL`` (default ``$RELAY_URL/.well-known/jwks.json``). Receipts that do
not verify (a bad signature, a gap, a cut head or tail) give no report at all.

A receipt holds only the digest of what people were shown: ``--asks FILE`` (an export of
``relay audit`` with an agent's token) names each repeated call, from an ask whose questions
hash to that digest, and the rule ``relay rules suggest`` offers for each (learned from the
same receipts and asks, and only where its replay allows no call people denied or edited).
``--format html`` writes the page ``GET /report`` serves,
self-contained, to open offline.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import IO, Any

from relay.cli.common import (
    CANNOT_READ,
    USAGE,
    CommandError,
    Commands,
    plain,
    read_text,
    relay_refusal,
)
from relay.errors import ErrorCode

__all__ = ["add_report"]

_PAGE = 1000
_MOST = 1024 * 1024 * 64  # bytes of one response at most (a page of a thousand receipts)


def add_report(commands: Commands) -> None:
    """Register ``relay report``."""
    parser = commands.add_parser(
        "report",
        help="the approvals report from the verified receipts (a table, or the HTML page)",
        description=plain(__doc__),
    )
    parser.add_argument(
        "--receipts",
        metavar="FILE|-",
        help="an export of relay audit --receipts (default: read the running relay's chain)",
    )
    parser.add_argument(
        "--keys",
        metavar="FILE|URL",
        help="the JWK Set the receipts verify with (default: $RELAY_URL/.well-known/jwks.json)",
    )
    parser.add_argument(
        "--asks",
        action="append",
        default=[],
        metavar="FILE",
        help="an asks export (relay audit, with an agent's token) naming the repeated calls"
        " and suggesting their rules (repeat for more tokens; default: calls are shown by"
        " digest)",
    )
    parser.add_argument(
        "--relay-url", metavar="URL", help="the running relay (default: RELAY_URL, if set)"
    )
    parser.add_argument(
        "--format",
        choices=("text", "html"),
        default="text",
        help="text (a table for the terminal) or html (the /report page; default: text)",
    )
    parser.add_argument(
        "--top", type=int, default=10, metavar="N", help="repeated calls listed (default: 10)"
    )
    parser.add_argument("--output", "-O", metavar="FILE", help="write here (default: stdout)")
    parser.set_defaults(handler=_run_report)


def _run_report(args: argparse.Namespace) -> int:
    from relay.cli.verify import read_keys
    from relay.receipts.keys import ReceiptKeyError, public_keys_from
    from relay.report import figures, read_bundle, verified

    if not 1 <= args.top <= 100:
        raise CommandError(USAGE, "--top must be from 1 to 100")
    url = (args.relay_url or os.environ.get("RELAY_URL", "")).strip().rstrip("/")
    if args.receipts is None:
        if not url:
            raise CommandError(
                USAGE, "say where the receipts are: --receipts FILE, or RELAY_URL (--relay-url)"
            )
        token = os.environ.get("RELAY_TOKEN", "").strip()
        if not token:
            raise CommandError(
                USAGE, "set RELAY_TOKEN to an operator token (RELAY_OPERATOR_TOKENS)"
            )
        receipts, checkpoints = _from_relay(url, token)
        source = url
    else:
        receipts, checkpoints = read_bundle(read_text(args.receipts))
        source = "stdin" if args.receipts == "-" else args.receipts
    if not receipts:
        raise CommandError(USAGE, f"{source} holds no receipt: nothing to report yet")
    where = args.keys or (url + "/.well-known/jwks.json" if url else None)
    if where is None:
        raise CommandError(USAGE, "say which keys: --keys FILE|URL (or set RELAY_URL)")
    try:
        keys = public_keys_from(read_keys(where))
    except ReceiptKeyError as exc:
        raise CommandError(USAGE, f"--keys {where}: {exc}") from None
    evidence = verified(receipts, checkpoints, keys)
    if evidence.refusal is not None:
        hint = (
            " (an agent's token exports its own receipts only, which do not form the chain:"
            " use an operator token)"
            if args.receipts is None
            else ""
        )
        raise CommandError(ErrorCode.RECEIPTS_UNVERIFIED, f"{evidence.refusal}{hint}")
    got = figures(evidence.payloads, top=args.top)
    if args.asks:
        from relay.report.labels import labels_from_asks
        from relay.report.suggested import learned_rules

        asks = _asks(args.asks)
        named = labels_from_asks(asks, (c.shown for c in got.repeated))
        # The suggested rule beside each call: relay rules suggest's, offered only when its
        # replay on every receipted call allows none that people denied or edited.
        rule_for = learned_rules(evidence.payloads, asks)
        got = figures(evidence.payloads, top=args.top, labels=named, rule_for=rule_for)
    if args.format == "html":
        from relay.report.page import render_page

        text = render_page(got, source=source)
    else:
        from relay.report.table import render_table

        text = render_table(got, source=source)
    _write(args.output, text)
    return 0


def _asks(files: list[str]) -> list[dict[str, Any]]:
    """The items of asks exports (JSON lines); a line that is no JSON object is skipped."""
    items: list[dict[str, Any]] = []
    for file in files:
        for line in read_text(file).splitlines():
            try:
                item = json.loads(line) if line.strip() else None
            except ValueError:
                item = None
            if isinstance(item, dict):
                items.append(item)
    return items


def _write(path: str | None, text: str) -> None:
    if path is None:
        sys.stdout.write(text)
        return
    try:
        out: IO[str]
        with open(path, "w", encoding="utf-8") as out:
            out.write(text)
    except OSError as exc:
        raise CommandError(CANNOT_READ, f"cannot write {path}: {exc.strerror}") from None


def _from_relay(url: str, token: str) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """The chain and its checkpoints, as ``relay audit --receipts`` reads them (checkpoints
    first here: each then covers receipts the chain read after holds)."""
    checkpoints = [
        (f"checkpoint {item.get('number')}", json.dumps(item))
        for item in _pages(url, "/receipts/checkpoints", "checkpoints", token)
    ]
    receipts = [
        (f"place {item.get('seq')}", str(item.get("receipt") or ""))
        for item in _pages(url, "/v1/receipts", "receipts", token)
    ]
    return receipts, checkpoints


def _pages(url: str, path: str, field: str, token: str) -> list[dict[str, Any]]:
    import urllib.parse

    items: list[dict[str, Any]] = []
    after = 0
    while True:
        query = urllib.parse.urlencode({"after": after, "limit": _PAGE})
        body = _get_json(f"{url}{path}?{query}", token)
        items += [i for i in body.get(field) or [] if isinstance(i, dict)]
        following = body.get("next_after")
        if not isinstance(following, int) or following <= after:
            return items
        after = following


def _get_json(url: str, token: str) -> dict[str, Any]:
    import urllib.error
    import urllib.request  # (here, not with the parser: other commands start without it)

    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"})  # noqa: S310
    try:
        with urllib.request.urlopen(request, timeout=60) as response:  # noqa: S310
            body = json.loads(response.read(_MOST))
    except urllib.error.HTTPError as exc:
        try:
            error = json.loads(exc.read(64 * 1024)).get("error") or {}
        except ValueError:
            error = {}
        raise relay_refusal(error, f"the relay answered HTTP {exc.code}") from None
    except (urllib.error.URLError, OSError, ValueError) as exc:
        raise CommandError(
            ErrorCode.PROVIDER_FAILED,
            f"cannot read {url.split('?')[0]} ({exc}); check RELAY_URL and that relay serve"
            " is running",
        ) from None
    if not isinstance(body, dict):
        raise CommandError(
            ErrorCode.PROVIDER_FAILED, f"{url.split('?')[0]} answered no JSON object"
        )
    return body
