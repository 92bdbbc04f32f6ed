"""``relay verify``: check exported receipts offline against the relay's published keys.

Reads receipts one a line (``relay audit --receipts`` output: JSON objects with a
``receipt`` field, or bare compact JWS) from FILE or ``-``; checks each signature against the
JWK Set (``--keys``: a file, or a URL such as ``https://relay.example.com/.well-known/jwks.json``;
default ``$RELAY_URL/.well-known/jwks.json``), and with ``--chain`` that the receipts link in
order with none missing, moved or forked.

A checkpoint (``--checkpoint FILE|URL``, repeatable: the relay's latest from
``$RELAY_URL/receipts/checkpoint``, or one an auditor kept; lines of FILE with a
``checkpoint`` field, as ``relay audit --receipts`` writes, count too) is checked like a
receipt, and with ``--chain`` the receipts must reach its last place with its head and
start where the latest says: a cut head or tail, or a chain rewritten since, fails. With
``--tsa-ca FILE`` (the TSA's CA certificates, PEM) each checkpoint's RFC 3161 timestamp is
checked as ``openssl ts -verify`` would, and a checkpoint without one fails.

Exit 0 when all hold; 1 with one line per failure naming the receipt or checkpoint and what
is wrong. Error receipts (an ask whose record the relay could not receipt,
signed in its place) hold and link like any other; each is listed.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING

from relay.cli.common import CANNOT_READ, USAGE, CommandError, Commands, plain, read_text

if TYPE_CHECKING:
    from cryptography import x509


__all__ = ["add_verify", "read_keys"]


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
    parser.add_argument(
        "--checkpoint",
        action="append",
        default=[],
        metavar="FILE|URL",
        help="a signed checkpoint the chain must match (repeat for older ones kept)",
    )
    parser.add_argument(
        "--tsa-ca",
        metavar="FILE",
        help="the timestamp authority's CA certificates (PEM): check checkpoints' timestamps",
    )
    parser.add_argument("file", metavar="FILE|-", help="the receipts, one a line")
    parser.set_defaults(handler=_run_verify)


def _run_verify(args: argparse.Namespace) -> int:
    from relay.receipts.bundle import check_bundle, receipt_lines
    from relay.receipts.keys import ReceiptKeyError, public_keys_from
    from relay.receipts.verify import quarantined

    source = args.keys or _default_keys()
    try:
        keys = public_keys_from(read_keys(source))
    except ReceiptKeyError as exc:
        raise CommandError(USAGE, f"--keys {source}: {exc}") from None
    text = read_text(args.file)
    tokens = receipt_lines(text)
    if not tokens:
        raise CommandError(USAGE, f"{args.file} holds no receipt")
    stored = [(f"checkpoint {source}", _fetch(source)) for source in args.checkpoint]
    roots = _roots(args.tsa_ca) if args.tsa_ca else None
    checked = check_bundle(text, args.file, keys, chain=args.chain, stored=stored, roots=roots)
    failures, marks = checked.failures, checked.marks
    for failure in failures:
        sys.stdout.write(f"{failure}\n")
    counted = _count(len(tokens), "receipt")
    if marks:
        counted += f" and {_count(len(marks), 'checkpoint')}"
    errors = quarantined(tokens)
    for line in errors:
        sys.stdout.write(f"{line}\n")
    if failures:
        problems = _count(len(failures), "problem")
        sys.stderr.write(f"relay: {problems} in {counted}\n")
        return 1
    linked = " and they link in order" if args.chain else ""
    stamped = ", timestamps checked" if roots is not None and marks else ""
    noted = f", {_count(len(errors), 'error receipt')} among them" if errors else ""
    sys.stderr.write(f"relay: {counted} verified{linked}{stamped}{noted}\n")
    return 0


def _roots(path: str) -> list[x509.Certificate]:
    from cryptography import x509

    try:
        return x509.load_pem_x509_certificates(read_text(path).encode())
    except ValueError:
        raise CommandError(USAGE, f"--tsa-ca {path}: not PEM certificates") from None


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _default_keys() -> str:
    url = os.environ.get("RELAY_URL", "").strip()
    if not url:
        raise CommandError(USAGE, "say which keys: --keys FILE|URL (or set RELAY_URL)")
    return url.rstrip("/") + "/.well-known/jwks.json"


def _fetch(source: str) -> str:
    return read_keys(source).decode("utf-8", "replace")


def read_keys(source: str) -> bytes:
    """The bytes of a key set (or checkpoint) at ``source``: a file, ``-`` or an http(s) URL."""
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
