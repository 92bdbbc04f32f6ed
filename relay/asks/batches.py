"""Batch ids: which asks were shown together, read from the asks' own ids.

Approvals an agent session asks for at once are shown as one message (``relay.slack.webapi.batch``).
Each stays its own ask, with its own decision, grant and receipt; what ties them together is
their ids: ``{batch}.{call}.{calls}``, so any replica, and any receipt reader, finds a
member's batch and its siblings from one id, without a record of the batch to keep in step.
"""

from __future__ import annotations

import re
import secrets
from dataclasses import dataclass

__all__ = ["MAX_BATCH", "BatchRef", "batch_of", "new_batch"]

MAX_BATCH = 60
"""The most calls one batch holds (a message pages them); more start another batch."""

_ID = re.compile(r"([A-Za-z0-9_-]{16})\.([0-9]{1,2})\.([0-9]{1,2})")


@dataclass(frozen=True, slots=True)
class BatchRef:
    """Call ``call`` (1-based) of the ``calls`` in batch ``batch``."""

    batch: str
    call: int
    calls: int

    @property
    def members(self) -> list[str]:
        """Every call's ask id, in the order they were shown."""
        return [f"{self.batch}.{k}.{self.calls}" for k in range(1, self.calls + 1)]

    @property
    def first(self) -> str:
        """The first call's ask id (the batch's own buttons are routed through it)."""
        return f"{self.batch}.1.{self.calls}"

    def to_json(self) -> dict[str, object]:
        """The receipt's ``batch`` object."""
        return {"id": self.batch, "call": self.call, "of": self.calls}


def new_batch(calls: int) -> list[str]:
    """The ask ids of a new batch of ``calls`` calls (2 to ``MAX_BATCH``)."""
    if not 2 <= calls <= MAX_BATCH:
        raise ValueError(f"a batch holds 2 to {MAX_BATCH} calls, not {calls}")
    batch = secrets.token_urlsafe(12)  # 16 characters, 96 random bits
    return BatchRef(batch, 1, calls).members


def batch_of(ask_id: str) -> BatchRef | None:
    """The batch ``ask_id`` belongs to, or ``None`` for an ask shown on its own."""
    found = _ID.fullmatch(ask_id)
    if found is None:
        return None
    call, calls = int(found.group(2)), int(found.group(3))
    if not 1 <= call <= calls or not 2 <= calls <= MAX_BATCH:
        return None
    return BatchRef(found.group(1), call, calls)
