"""``relay verify``: check exported receipts offline against the relay's published keys.

Reads receipts one a line (``relay audit --receipts`` output: JSON objects with a
``receipt`` field, or bare compact JWS) from FILE or ``-``; checks each signature against the
JWK Set (``--keys``: a file, or a URL such as ``https://relay.example.com/.well-known/jwks.json``;
default ``$RELAY_URL/.well-known/jwks.json``), and with ``--chain`` that the receipts link in
order with none missing, moved or forked. Exit 0 when all hold; 1 with one line per failure
naming the receipt and what is wrong. Error receipts (an ask whose record the relay could
not receipt, signed in its place) hold and link like any other; each is listed.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from relay.cli.common import CANNOT_READ, USAGE, CommandError, Commands, plain, read_text

__all__ = ["add_verify"]

INVALID = "RECEIPT_INVALID"


def add_verify(commands: Commands) -> None:
    """Register ``relay verify``."""
    parser = commands.add_parser(
        "verify",
        help="check exported receipts' signatures (and, with --chain, their order) offline",
        description=plain(__doc__),
    )
    parser.add_argument(
        "--keys",
        metavar="FILE|URL",
        help="the JWK Set, or PEM public keys (default: $RELAY_URL/.well-known/jwks.json)",
    )
    parser.add_argument("--chain", action="store_true", help="also check that they link")
    parser.add_argument("file", metavar="FILE|-", help="the receipts, one a line")
    parser.set_defaults(handler=_run_verify)


def _run_verify(args: argparse.Namespace) -> int:
    from relay.receipts.keys import ReceiptKeyError, public_keys_from
    from relay.receipts.verify import quarantined, verify_all

    source = args.keys or _default_keys()
    try:
        keys = public_keys_from(_read_keys(source))
    except ReceiptKeyError as exc:
        raise CommandError(USAGE, f"--keys {source}: {exc}") from None
    tokens = _receipts(read_text(args.file))
    if not tokens:
        raise CommandError(USAGE, f"{args.file} holds no receipt")
    failures = verify_all(tokens, keys, chain=args.chain)
    for failure in failures:
        sys.stdout.write(f"{failure}\n")
    errors = quarantined(tokens)
    for line in errors:
        sys.stdout.write(f"{line}\n")
    if failures:
        problems = _count(len(failures), "problem")
        sys.stderr.write(f"relay: {problems} in {_count(len(tokens), 'receipt')}\n")
        return 1
    linked = " and they link in order" if args.chain else ""
    noted = f", {_count(len(errors), 'error receipt')} among them" if errors else ""
    sys.stderr.write(f"relay: {_count(len(tokens), 'receipt')} verified{linked}{noted}\n")
    return 0


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _default_keys() -> str:
    url = os.environ.get("RELAY_URL", "").strip()
    if not url:
        raise CommandError(USAGE, "say which keys: --keys FILE|URL (or set RELAY_URL)")
    return url.rstrip("/") + "/.well-known/jwks.json"


def _read_keys(source: str) -> bytes:
    if source.startswith(("http://", "https://")):
        import urllib.error
        import urllib.request

        try:
            with urllib.request.urlopen(source, timeout=30) as response:  # noqa: S310
                data: bytes = response.read(1024 * 1024)
                return data
        except (urllib.error.URLError, OSError, ValueError) as exc:
            raise CommandError(CANNOT_READ, f"cannot fetch {source} ({exc})") from None
    return read_text(source).encode()


def _receipts(text: str) -> list[tuple[str, str]]:
    """``(name, compact JWS)`` per non-blank line; the name is the line until the receipt's
    own id is read."""
    found: list[tuple[str, str]] = []
    for number, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line:
            continue
        token = line
        if line.startswith("{"):
            try:
                item = json.loads(line)
            except json.JSONDecodeError:
                item = None
            got = item.get("receipt") if isinstance(item, dict) else None
            token = got if isinstance(got, str) else ""
        found.append((f"line {number}", token))
    return found
