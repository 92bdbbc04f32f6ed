"""A decision on a tool use: allow or deny, why (what the agent is told), and who or what
decided; and the denies the gate makes when no reviewer's answer came (it fails closed)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from relay.errors import ErrorCode, HarnessError, UserInteractionError
from relay.grants.record import Grant
from relay.seam.questions import Responder

__all__ = ["Decision", "Outcome", "decide_error", "gave_up"]

Outcome = Literal["approved", "granted", "allowed", "denied", "timed_out", "aborted", "failed"]


@dataclass(frozen=True, slots=True)
class Decision:
    """Allow or deny, why (the message the agent sees), and who or what decided."""

    behavior: Literal["allow", "deny"]
    message: str
    outcome: Outcome
    by: Responder | None = None
    at: datetime | None = None
    grant: Grant | None = None
    # The input a reviewer edited and allowed: what runs instead of the one asked about.
    updated_input: Mapping[str, Any] | None = None
    edited_by: str | None = None
    # The approved plan (its review ask's id) this was allowed under, without a post.
    plan: str | None = None
    # A plan sent back: the reviewer's words for the agent (also in ``message``).
    feedback: str | None = None
    # Decided at once, without a person: the id of the receipt written for it (``rcpt_…``).
    receipt: str | None = None

    @property
    def allowed(self) -> bool:
        """Whether the tool may run."""
        return self.behavior == "allow"

    def to_json(self) -> dict[str, Any]:
        """The API form."""
        out: dict[str, Any] = {
            "behavior": self.behavior,
            "message": self.message,
            "outcome": self.outcome,
        }
        if self.by is not None:
            out["by"] = self.by.to_dict()
        if self.at is not None:
            out["at"] = self.at.isoformat()
        if self.grant is not None:
            out["grant"] = self.grant.to_json()
        if self.updated_input is not None:
            out["updated_input"] = dict(self.updated_input)
            if self.edited_by is not None:
                out["edited_by"] = self.edited_by
        for key, value in (
            ("plan", self.plan),
            ("feedback", self.feedback),
            ("receipt", self.receipt),
        ):
            if value is not None:
                out[key] = value
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Decision:
        """Read the API form; raises ``KeyError``/``ValueError``/``TypeError`` if malformed."""
        behavior = data["behavior"]
        outcome = data["outcome"]
        if behavior not in ("allow", "deny") or not isinstance(data["message"], str):
            raise ValueError("malformed decision")
        if outcome not in (
            "approved",
            "granted",
            "allowed",
            "denied",
            "timed_out",
            "aborted",
            "failed",
        ):
            raise ValueError("malformed decision")
        by, at, grant = data.get("by"), data.get("at"), data.get("grant")
        plan = data.get("plan")
        updated, editor = data.get("updated_input"), data.get("edited_by")
        if updated is not None and (behavior != "allow" or not isinstance(updated, Mapping)):
            raise ValueError("malformed decision")
        return cls(
            behavior=behavior,
            message=data["message"],
            outcome=outcome,
            by=Responder.from_dict(by) if isinstance(by, Mapping) else None,
            at=datetime.fromisoformat(at) if isinstance(at, str) else None,
            grant=Grant.from_json(grant) if isinstance(grant, Mapping) else None,
            updated_input=dict(updated) if isinstance(updated, Mapping) else None,
            edited_by=editor if isinstance(editor, str) and updated is not None else None,
            plan=plan if isinstance(plan, str) and behavior == "allow" else None,
            feedback=data["feedback"] if isinstance(data.get("feedback"), str) else None,
            receipt=data["receipt"] if isinstance(data.get("receipt"), str) else None,
        )

    @classmethod
    def deny(cls, message: str, outcome: Outcome = "denied") -> Decision:
        """A deny that no reviewer made (a rule, a timeout, a failure)."""
        return cls(behavior="deny", message=message, outcome=outcome)


def gave_up(waited: float) -> Decision:
    """The deny when no decision came within ``waited`` seconds (the reviewer's time plus
    ``DECISION_GRACE``): the relay or the connection to it is gone."""
    return Decision.deny(
        f"relay got no decision within {waited:g} s (the relay stopped answering or cannot be"
        " reached), so this is denied (it fails closed); check that relay serve is running",
        "failed",
    )


def decide_error(exc: BaseException, *, timeout: float | None = None) -> Decision:
    """The deny for an ask that ended without an answer (timed out, withdrawn, unreachable)."""
    if isinstance(exc, UserInteractionError) and exc.code == ErrorCode.ASK_ABORTED:
        if exc.reason == "timed_out":
            waited = f" within {timeout:g} s" if timeout else ""
            return Decision.deny(
                f"No reviewer answered{waited}, so relay denied this (it fails closed); ask"
                " again later or ask the team to approve it sooner",
                "timed_out",
            )
        return Decision.deny(
            "The approval was withdrawn before a reviewer answered, so this is denied",
            "aborted",
        )
    message = str(exc) or type(exc).__name__
    code = exc.code if isinstance(exc, HarnessError) else "PROVIDER_FAILED"
    return Decision.deny(
        f"relay could not get a reviewer's answer ({code}: {message}), so this is denied"
        " (relay fails closed)",
        "failed",
    )
