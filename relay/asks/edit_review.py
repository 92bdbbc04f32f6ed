"""What the relay's rules require of an edited call: the terms a reviewer's edit is held to.

An edit is a new proposal. The Decider (``relay.gate.decider``) decides it again and says
here what it found; the Edit form (``relay.slack.editing.flow``) refuses, under its field, an
edit its reviewer may not allow, before anything is recorded. Pure.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from relay.store.record import AskRecord

__all__ = ["EditReview", "EditTerms"]


@dataclass(frozen=True, slots=True)
class EditTerms:
    """``refusal``: why the edited call may not be allowed at all (the rules' reason); else
    who may allow it (``approvers``/``approver_groups``: ``None`` is whoever may answer),
    how many people must (``quorum``), and which grants may come with it."""

    refusal: str | None = None
    approvers: tuple[str, ...] | None = None
    approver_groups: tuple[str, ...] | None = None
    quorum: int = 1
    session_grants: bool = True
    grant_minutes: int = 30
    # The labels the edited call may be allowed with (``None``: any allow option shown).
    choices: tuple[str, ...] | None = None

    @property
    def restricted(self) -> bool:
        """Whether only some people may allow the edited call."""
        return self.approvers is not None or self.approver_groups is not None

    def offers(self, kind: str) -> bool:
        """Whether a grant of ``kind`` (``session``, ``minutes``) may come with the edit."""
        if self.quorum > 1:
            return False
        return self.session_grants if kind == "session" else self.grant_minutes > 0


EditReview = Callable[[AskRecord, int, Mapping[str, Any]], EditTerms]
"""The terms for an edited input of question ``index`` of a record (``Decider.edit_terms``)."""
