"""An export of the chain, read and checked whole: the one reader and check that ``relay
verify``, ``relay rules`` and the report (``relay report``, ``GET /report``) share.

An export is what ``relay audit --receipts`` writes: one JSON object a line, a receipt
(``receipt``) or a checkpoint (``checkpoint``), or a bare compact JWS a line. Its check is
``relay verify --chain``'s: every checkpoint (with ``roots``, its RFC 3161 timestamp too),
every receipt's signature, and that the receipts link with none missing, moved or forked, as
far as the checkpoints say.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from relay.receipts.checkpoint import Stored
from relay.receipts.keys import PublicKeys
from relay.receipts.verify import (
    Checked,
    Failure,
    Mark,
    check_all,
    check_checkpoint,
    check_timestamp,
)

if TYPE_CHECKING:
    from cryptography import x509

__all__ = ["check_bundle", "check_export", "read_export", "receipt_lines"]


@dataclass(frozen=True, slots=True)
class BundleCheck:
    """What the check found: every failure, the checkpoints that held (``marks``) and the
    receipts whose signatures held, in export order."""

    failures: list[Failure] = field(default_factory=list)
    marks: list[Mark] = field(default_factory=list)
    receipts: list[Checked] = field(default_factory=list)


def read_export(
    text: str, file: str | None = None
) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """The receipts (``(name, compact JWS)``) and checkpoints (``(name, line)``) of an export;
    a name is the line (``FILE line N`` given ``file``) until the receipt's own id is read."""
    receipts: list[tuple[str, str]] = []
    checkpoints: list[tuple[str, str]] = []
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line:
            continue
        if not line.startswith("{"):
            receipts.append((f"line {number}", line))
            continue
        try:
            item = json.loads(line)
        except ValueError:
            item = None
        if isinstance(item, dict) and "checkpoint" in item and "receipt" not in item:
            checkpoints.append((f"{file} line {number}" if file else f"line {number}", line))
            continue
        token = item.get("receipt") if isinstance(item, dict) else None
        receipts.append((f"line {number}", token if isinstance(token, str) else ""))
    return receipts, checkpoints


def receipt_lines(text: str) -> list[tuple[str, str]]:
    """The receipts of an export, ``(name, compact JWS)`` each (``read_export``)."""
    return read_export(text)[0]


def check_export(
    receipts: list[tuple[str, str]],
    checkpoints: list[tuple[str, str]],
    keys: PublicKeys,
    *,
    chain: bool = True,
    roots: list[x509.Certificate] | None = None,
) -> BundleCheck:
    """``receipts`` and ``checkpoints`` (stored entries) checked against ``keys``; with
    ``chain``, also that the receipts link and reach what the checkpoints say; with
    ``roots``, each checkpoint's timestamp (one without fails)."""
    failures, marks = _check_checkpoints(checkpoints, keys, roots)
    found, checked = check_all(receipts, keys, chain=chain, marks=marks)
    return BundleCheck(failures + found, marks, checked)


def check_bundle(
    text: str,
    file: str,
    keys: PublicKeys,
    *,
    chain: bool = True,
    stored: list[tuple[str, str]] | None = None,
    roots: list[x509.Certificate] | None = None,
) -> BundleCheck:
    """The export ``text`` (read from ``file``) checked whole, with the checkpoints
    ``stored`` besides its own."""
    receipts, checkpoints = read_export(text, file)
    return check_export(receipts, [*(stored or []), *checkpoints], keys, chain=chain, roots=roots)


def _check_checkpoints(
    stored: list[tuple[str, str]], keys: PublicKeys, roots: list[x509.Certificate] | None
) -> tuple[list[Failure], list[Mark]]:
    failures: list[Failure] = []
    marks: list[Mark] = []
    for name, raw in stored:
        try:
            entry = Stored.read(raw)
        except ValueError as exc:
            failures.append(Failure(name, f"not a checkpoint ({exc})"))
            continue
        mark = check_checkpoint(entry.checkpoint, keys, name=name)
        if isinstance(mark, Failure):
            failures.append(mark)
            continue
        marks.append(mark)
        if roots is None:
            continue
        if entry.timestamp is None:
            failures.append(Failure(name, "carries no timestamp (the relay has no TSA set)"))
            continue
        problem = check_timestamp(mark, entry.timestamp, roots)
        if problem is not None:
            failures.append(Failure(name, problem))
    return failures, marks
