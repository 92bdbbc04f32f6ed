"""The receipts a report is made from, verified first: a bundle as ``relay audit --receipts``
writes it (receipt lines, then checkpoint lines), checked whole against the relay's keys.

The figures count only what verified: a bundle with one bad signature, a gap, a cut head or
tail (against its checkpoints), or a fork is refused as a whole (``Evidence.refusal`` names
what is wrong, and no payload is given), so a report never shows figures the evidence does
not hold.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from relay.receipts.bundle import check_export, read_export
from relay.receipts.keys import PublicKeys
from relay.receipts.verify import Failure

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
    bundle, read as ``relay verify`` reads one (``relay.receipts.bundle``)."""
    return read_export(text)


def verified(
    receipts: list[tuple[str, str]], checkpoints: list[tuple[str, str]], keys: PublicKeys
) -> Evidence:
    """The payloads of ``receipts`` once every signature holds and they link as one chain
    (reaching what ``checkpoints`` say), checked as ``relay verify --chain`` checks them;
    otherwise none, and the failures."""
    checked = check_export(receipts, checkpoints, keys, chain=True)
    if checked.failures:
        return Evidence(failures=tuple(checked.failures))
    payloads = tuple(c.payload for c in checked.receipts)
    return Evidence(payloads=payloads, checkpoints=len(checked.marks))
