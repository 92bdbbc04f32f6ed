"""The receipts a report is made from, verified first: a bundle as ``relay audit --receipts``
writes it (receipt lines, then checkpoint lines), checked whole against the relay's keys.

The figures count only what verified: a bundle with one bad signature, a gap, a cut head or
tail (against its checkpoints), or a fork is refused as a whole (``Evidence.refusal`` names
what is wrong, and no payload is given), so a report never shows figures the evidence does
not hold.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from relay.receipts.checkpoint import Stored
from relay.receipts.keys import PublicKeys
from relay.receipts.verify import (
    Checked,
    Failure,
    Mark,
    check_chain,
    check_checkpoint,
    check_marks,
    check_receipt,
)

__all__ = ["Evidence", "read_bundle", "verified"]


@dataclass(frozen=True, slots=True)
class Evidence:
    """Verified receipts, in chain order: each one's payload; or, when they did not verify,
    no payload and the ``failures``."""

    payloads: tuple[dict[str, Any], ...] = ()
    checkpoints: int = 0
    failures: tuple[Failure, ...] = ()

    @property
    def refusal(self) -> str | None:
        """Why no report is made from these receipts (``None``: they verified)."""
        if not self.failures:
            return None
        shown = "; ".join(str(f) for f in self.failures[:5])
        more = f" (and {len(self.failures) - 5} more)" if len(self.failures) > 5 else ""
        return (
            f"the receipts do not verify, so no report is made from them: {shown}{more};"
            " check them with relay verify --chain"
        )


def read_bundle(text: str) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """The receipts (``(name, compact JWS)``) and checkpoints (``(name, stored entry)``) of a
    bundle: one JSON object a line (``receipt`` or ``checkpoint``), or bare compact JWS."""
    receipts: list[tuple[str, str]] = []
    checkpoints: list[tuple[str, str]] = []
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line:
            continue
        name = f"line {number}"
        if not line.startswith("{"):
            receipts.append((name, line))
            continue
        try:
            item = json.loads(line)
        except ValueError:
            item = None
        if isinstance(item, dict) and "checkpoint" in item and "receipt" not in item:
            checkpoints.append((name, line))
            continue
        token = item.get("receipt") if isinstance(item, dict) else None
        receipts.append((name, token if isinstance(token, str) else ""))
    return receipts, checkpoints


def verified(
    receipts: list[tuple[str, str]], checkpoints: list[tuple[str, str]], keys: PublicKeys
) -> Evidence:
    """The payloads of ``receipts`` once every signature holds and they link as one chain
    (reaching what ``checkpoints`` say); otherwise none, and the failures."""
    failures: list[Failure] = []
    marks: list[Mark] = []
    for name, raw in checkpoints:
        try:
            entry = Stored.read(raw)
        except ValueError as exc:
            failures.append(Failure(name, f"not a checkpoint ({exc})"))
            continue
        mark = check_checkpoint(entry.checkpoint, keys, name=name)
        if isinstance(mark, Failure):
            failures.append(mark)
        else:
            marks.append(mark)
    # Each signature checked once (as verify_all does), keeping the payloads it read.
    checked: list[Checked] = []
    for name, token in receipts:
        result = check_receipt(token, keys, name=name)
        if isinstance(result, Failure):
            failures.append(result)
        else:
            checked.append(result)
    failures += check_chain(checked, start=max((m.first for m in marks), default=1))
    failures += check_marks(checked, marks)
    if failures:
        return Evidence(failures=tuple(failures))
    return Evidence(payloads=tuple(c.payload for c in checked), checkpoints=len(marks))
