"""A plan under review or approved: its text, the scope relay derived, who approved it.

A plan is a grant of a new kind: made only by the relay that read a reviewer's *Approve*
(never by the agent), bound to one owner (the API token's fingerprint) and one agent
identity (a session), held to the scope the reviewer saw, until the operator's time limit
(``RELAY_PLAN_TTL``), a reviewer's *Stop the plan*, or the agent's own withdrawal.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, Literal

from relay.canonical.match import Subject
from relay.plans.scope import PlanScope
from relay.seam.questions import Responder

__all__ = ["Covered", "Plan"]

PlanStatus = Literal["pending", "active", "rejected", "stopped"]
_STATUSES = ("pending", "active", "rejected", "stopped")
COVERED_KEPT = 200
"""The most recent calls a plan keeps as evidence (``covered_count`` counts them all)."""


@dataclass(frozen=True, slots=True)
class Covered:
    """A call a plan allowed without a post: the tool, the digest of its input
    (``relay.canonical.match.fingerprint``; never the input, which may hold secrets), when."""

    tool: str
    call: str
    at: datetime

    def to_json(self) -> dict[str, Any]:
        """The stored and API form."""
        return {"tool": self.tool, "call": self.call, "at": self.at.isoformat()}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Covered:
        """Read the stored form."""
        return cls(str(data["tool"]), str(data["call"]), datetime.fromisoformat(data["at"]))


@dataclass(frozen=True, slots=True)
class Plan:
    """One plan: ``id`` is its review ask's id (the receipt the calls under it name)."""

    id: str
    owner: str
    agent: str
    text: str
    scope: PlanScope
    status: PlanStatus
    submitted_at: datetime
    expires_at: datetime
    # Who may widen the plan, and how many must approve: those the plan was asked of. A call
    # whose rules need other people (or more) is never covered (``relay.gate.decider``).
    approvers: tuple[str, ...] | None = None
    approver_groups: tuple[str, ...] | None = None
    quorum: int = 1
    approved_by: Responder | None = None
    approved_at: datetime | None = None
    ended_by: str | None = None
    covered: tuple[Covered, ...] = ()
    covered_count: int = 0
    # A reviewer's narrowing in the Edit form: who (a Slack id), and the items taken out.
    narrowed_by: str | None = None
    dropped: tuple[str, ...] = ()

    def covers(self, *, owner: str, agent: str, use: Subject, now: datetime) -> bool:
        """Whether this plan, approved and live, covers ``use`` by ``agent`` of ``owner``."""
        return (
            self.status == "active"
            and self.owner == owner
            and self.agent == agent
            and now < self.expires_at
            and self.scope.covers(use)
        )

    def live(self, now: datetime) -> bool:
        """Whether the plan is approved and neither stopped nor expired at ``now``."""
        return self.status == "active" and now < self.expires_at

    def ended(self, status: PlanStatus, by: str) -> Plan:
        """This plan stopped or rejected by ``by`` (a person's name, or the token)."""
        return replace(self, status=status, ended_by=by)

    def with_covered(self, call: Covered) -> Plan:
        """This plan with ``call`` recorded as allowed under it (the newest kept)."""
        kept = (*self.covered, call)[-COVERED_KEPT:]
        return replace(self, covered=kept, covered_count=self.covered_count + 1)

    def describe(self) -> str:
        """One line for the agent and the audit log."""
        who = self.approved_by.display_name if self.approved_by else "a reviewer"
        return (
            f"inside plan {self.id} approved by {who}, until"
            f" {self.expires_at.isoformat(timespec='seconds')}"
        )

    def to_json(self) -> dict[str, Any]:
        """The stored and API form."""
        return {
            "id": self.id,
            "owner": self.owner,
            "agent": self.agent,
            "text": self.text,
            "scope": self.scope.to_json(),
            "status": self.status,
            "submitted_at": self.submitted_at.isoformat(),
            "expires_at": self.expires_at.isoformat(),
            "approvers": list(self.approvers) if self.approvers is not None else None,
            "approver_groups": list(self.approver_groups)
            if self.approver_groups is not None
            else None,
            "quorum": self.quorum,
            "approved_by": self.approved_by.to_dict() if self.approved_by else None,
            "approved_at": self.approved_at.isoformat() if self.approved_at else None,
            "ended_by": self.ended_by,
            "covered": [c.to_json() for c in self.covered],
            "covered_count": self.covered_count,
            "narrowed_by": self.narrowed_by,
            "dropped": list(self.dropped),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Plan:
        """Read the stored form."""
        status = data["status"]
        if status not in _STATUSES:
            raise ValueError(f"unknown plan status {status!r}")
        approvers, groups = data.get("approvers"), data.get("approver_groups")
        by, at = data.get("approved_by"), data.get("approved_at")
        return cls(
            id=str(data["id"]),
            owner=str(data["owner"]),
            agent=str(data["agent"]),
            text=str(data["text"]),
            scope=PlanScope.from_json(data["scope"]),
            status=status,
            submitted_at=datetime.fromisoformat(data["submitted_at"]),
            expires_at=datetime.fromisoformat(data["expires_at"]),
            approvers=tuple(approvers) if isinstance(approvers, list) else None,
            approver_groups=tuple(groups) if isinstance(groups, list) else None,
            quorum=int(data.get("quorum", 1)),
            approved_by=Responder.from_dict(by) if isinstance(by, Mapping) else None,
            approved_at=datetime.fromisoformat(at) if isinstance(at, str) else None,
            ended_by=data["ended_by"] if isinstance(data.get("ended_by"), str) else None,
            covered=tuple(Covered.from_json(c) for c in data.get("covered", [])),
            covered_count=int(data.get("covered_count", 0)),
            narrowed_by=data["narrowed_by"] if isinstance(data.get("narrowed_by"), str) else None,
            dropped=tuple(str(d) for d in data.get("dropped") or ()),
        )
