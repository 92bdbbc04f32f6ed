"""What a receipt says of a call decided at once, without a person: the payload, in JCS.

The Decider (``relay.gate.decider``) allows or denies some calls with nobody asked: the
operator's rules (a rule, or the file's default), the client's own rules where the relay
has none, a live grant, or an approved plan's scope. Each such decision gets a receipt in
the same chain as the asks' (``relay.receipts.writer``), marked ``"kind": "at_once"``,
naming what decided, the call as the rules saw it (its tool and the digest of its canonical
form, never the input, which may hold secrets), whose token and agent, and when.
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from relay.receipts.payload import VERSION, receipt_id, record_time

__all__ = ["AtOnce", "is_at_once"]

KIND = "at_once"
"""The ``kind`` of a receipt of a call decided without a person (an ask's receipt has none)."""


def is_at_once(payload: Mapping[str, Any]) -> bool:
    """Whether ``payload`` is the receipt of a call decided at once, without a person."""
    return payload.get("kind") == KIND


@dataclass(frozen=True, slots=True)
class AtOnce:
    """One call decided without a person: whose token (``owner``, its fingerprint) and
    agent, the tool and the digest of the canonical call (``call``), ``allow`` or ``deny``,
    what decided (``by``: a ``rule``, a ``grant``, a ``plan`` or the ``client``'s rules), and
    when. ``id`` keys its place in the chain (one receipt per decision)."""

    owner: str
    agent: str
    tool: str
    call: str
    decision: str
    by: Mapping[str, Any]
    at: datetime
    id: str = field(default_factory=lambda: f"now_{secrets.token_urlsafe(12)}")

    def payload(self, *, issuer: str, kid: str, seq: int, prev: str | None) -> dict[str, Any]:
        """The receipt's payload, ``seq``-th in the chain after ``prev``."""
        by = dict(self.by)
        plan = by.get("plan")
        if isinstance(plan, Mapping) and isinstance(plan.get("id"), str):
            # The plan's own receipt: that of its review ask, whose id the plan's is.
            by["plan"] = {**plan, "receipt": receipt_id(plan["id"])}
        return {
            "v": VERSION,
            "iss": issuer,
            "kid": kid,
            "jti": receipt_id(self.id),
            "seq": seq,
            "prev": prev,
            "kind": KIND,
            "agent": {"owner": self.owner, "name": self.agent},
            "at": record_time(self.at),
            "call": {"tool": self.tool, "digest": self.call},
            "decision": self.decision,
            "by": by,
        }
