"""A grant: a reviewer's "allow this again without asking", and the offer it came from.

A grant is made only by the relay that recorded the reviewer's click (``relay serve``, or
the ``relay mcp`` process that asked Slack itself), never by the agent: the agent can write
any file in its user's home, so a grant it could create or edit would be no control at all.
It covers one owner (the API token's fingerprint), one agent identity (a Claude Code
session, an MCP connection) and one ``Pattern``, until it expires.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Literal

from relay.canonical.match import Pattern, Subject
from relay.seam.questions import Responder

__all__ = ["SESSION_HOURS", "Grant", "GrantKind", "Offer"]

# A "for this session" grant ends with the session's identity; this bounds it anyway, since
# no harness says when a session is over.
SESSION_HOURS = 12
GrantKind = Literal["session", "minutes"]


@dataclass(frozen=True, slots=True)
class Offer:
    """What an approval ask offers besides "Allow once", and what a grant would cover; also
    which call it was asked for, which its allow runs once (``relay.store.uses``)."""

    owner: str
    agent: str
    pattern: Pattern
    session: bool = True
    minutes: int = 30
    call: str | None = None
    """The tool use the reviewer was shown (``relay.canonical.match.fingerprint``)."""
    tool_use_id: str | None = None
    """The client's id of that tool use (a paused run's id and call id), if it sent one."""
    plan: str | None = None
    """The approved plan the call was outside of, which the reviewer may stop."""
    plan_widens: bool = False
    """Whether the reviewer was offered to add the call to that plan."""

    def grant(self, *, ask_id: str, kind: GrantKind, by: Responder, at: datetime) -> Grant:
        """The grant the reviewer ``by`` made at ``at`` by choosing ``kind``."""
        length = (
            timedelta(hours=SESSION_HOURS) if kind == "session" else timedelta(minutes=self.minutes)
        )
        return Grant(
            id=ask_id,
            owner=self.owner,
            agent=self.agent,
            pattern=self.pattern,
            kind=kind,
            granted_by=by,
            granted_at=at,
            expires_at=at + length,
        )

    def to_json(self) -> dict[str, Any]:
        """The stored form."""
        return {
            "owner": self.owner,
            "agent": self.agent,
            "pattern": self.pattern.to_json(),
            "session": self.session,
            "minutes": self.minutes,
            "call": self.call,
            "tool_use_id": self.tool_use_id,
            "plan": self.plan,
            "plan_widens": self.plan_widens,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Offer:
        """Read the stored form."""
        return cls(
            owner=str(data["owner"]),
            agent=str(data["agent"]),
            pattern=Pattern.from_json(data["pattern"]),
            session=bool(data["session"]),
            minutes=int(data["minutes"]),
            # An offer an older relay stored has neither: its approval then runs no call.
            call=_text(data.get("call")),
            tool_use_id=_text(data.get("tool_use_id")),
            plan=_text(data.get("plan")),
            plan_widens=data.get("plan_widens") is True,
        )


@dataclass(frozen=True, slots=True)
class Grant:
    """A standing approval, recorded with who made it and when."""

    id: str
    owner: str
    agent: str
    pattern: Pattern
    kind: GrantKind
    granted_by: Responder
    granted_at: datetime
    expires_at: datetime

    def covers(self, *, owner: str, agent: str, use: Subject, now: datetime) -> bool:
        """Whether this grant allows ``use`` by ``agent`` of ``owner`` at ``now``."""
        return (
            self.owner == owner
            and self.agent == agent
            and now < self.expires_at
            and self.pattern.matches(use)
        )

    def describe(self) -> str:
        """One line for the agent and the audit log."""
        return (
            f"allowed by a grant from {self.granted_by.display_name} made at"
            f" {self.granted_at.isoformat(timespec='seconds')} for"
            f" {self.pattern.describe()}, until {self.expires_at.isoformat(timespec='seconds')}"
        )

    def to_json(self) -> dict[str, Any]:
        """The stored and API form."""
        return {
            "id": self.id,
            "owner": self.owner,
            "agent": self.agent,
            "pattern": self.pattern.to_json(),
            "kind": self.kind,
            "granted_by": self.granted_by.to_dict(),
            "granted_at": self.granted_at.isoformat(),
            "expires_at": self.expires_at.isoformat(),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Grant:
        """Read the stored form."""
        kind = data["kind"]
        if kind not in ("session", "minutes"):
            raise ValueError(f"unknown grant kind {kind!r}")
        return cls(
            id=str(data["id"]),
            owner=str(data["owner"]),
            agent=str(data["agent"]),
            pattern=Pattern.from_json(data["pattern"]),
            kind=kind,
            granted_by=Responder.from_dict(data["granted_by"]),
            granted_at=datetime.fromisoformat(data["granted_at"]),
            expires_at=datetime.fromisoformat(data["expires_at"]),
        )


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None
