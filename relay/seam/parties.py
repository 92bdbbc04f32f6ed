"""Who takes part in an ask on the wire: the agent asking (``AgentRef``), the person who
answered (``Responder``), and each person's ``Vote`` on a question that needs several."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Self

from .wire_reader import Reader as _Reader

__all__ = ["AgentRef", "Responder", "Vote"]


@dataclass(frozen=True, slots=True)
class _Party:
    """Someone identified by an id and an optional display name."""

    id: str
    name: str | None = None

    @property
    def display_name(self) -> str:
        """The name if there is one, else the id."""
        return self.name or self.id

    def to_dict(self) -> dict[str, Any]:
        """The wire form."""
        out: dict[str, Any] = {"id": self.id}
        if self.name is not None:
            out["name"] = self.name
        return out

    @classmethod
    def from_dict(cls, data: object, *, strict: bool = False, path: str = "") -> Self:
        """Read the wire form; raises ``BAD_REQUEST`` naming the bad field."""
        r = _Reader(data, path, frozenset({"id", "name"}), strict=strict)
        return cls(id=r.text("id"), name=r.opt_str("name"))


@dataclass(frozen=True, slots=True)
class AgentRef(_Party):
    """Who is asking: shown to the human and usable for routing."""


@dataclass(frozen=True, slots=True)
class Responder(_Party):
    """The human who answered a question. From a signed Slack click, also ``team`` (the
    Slack team id) and ``request`` (``relay.slack.intake.parse.request_digest`` of the request
    that carried the click): a receipt's evidence of who decided, and how. Both stay out of
    ``repr``: evidence for receipts, not what a reader of the answer needs."""

    team: str | None = field(default=None, compare=False, repr=False)
    request: str | None = field(default=None, compare=False, repr=False)

    def to_store(self) -> dict[str, Any]:
        """The stored form: the wire form (``to_dict``, which the API shows) with ``team``
        and ``request`` when known."""
        out = self.to_dict()
        if self.team is not None:
            out["team"] = self.team
        if self.request is not None:
            out["request"] = self.request
        return out

    @classmethod
    def from_dict(cls, data: object, *, strict: bool = False, path: str = "") -> Self:
        """Read the wire or the stored form; raises ``BAD_REQUEST`` naming the bad field."""
        r = _Reader(data, path, frozenset({"id", "name", "team", "request"}), strict=strict)
        return cls(
            id=r.text("id"),
            name=r.opt_str("name"),
            team=r.opt_str("team"),
            request=r.opt_str("request"),
        )


@dataclass(frozen=True, slots=True)
class Vote:
    """One person's vote on a question that needs several: who, which label, when, and on
    which version of the question (an edited tool call is a new version; the original is 1)."""

    by: Responder
    label: str
    at: datetime
    version: int = 1

    def to_dict(self) -> dict[str, Any]:
        """The JSON form (audit metadata, as in the API record); ``version`` only past 1."""
        out: dict[str, Any] = {
            "by": self.by.to_dict(),
            "label": self.label,
            "at": self.at.isoformat(),
        }
        if self.version != 1:
            out["version"] = self.version
        return out

    def to_store(self) -> dict[str, Any]:
        """The stored form: ``to_dict`` with the voter's ``Responder.to_store``."""
        out: dict[str, Any] = {
            "by": self.by.to_store(),
            "label": self.label,
            "at": self.at.isoformat(),
        }
        if self.version != 1:
            out["version"] = self.version
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Vote:
        """Read ``to_dict``'s or ``to_store``'s output."""
        version = data.get("version", 1)
        return cls(
            by=Responder.from_dict(data["by"]),
            label=str(data["label"]),
            at=datetime.fromisoformat(str(data["at"])),
            version=version if isinstance(version, int) and not isinstance(version, bool) else 1,
        )
