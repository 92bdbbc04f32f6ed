"""Edit, then approve: a reviewer's edited tool input, carried in the seam's ``custom``. Pure.

The seam stays as it is: a tool approval is a question whose intent says so
(``{"kind": "tool-approval", "approve": "Allow once", "edit": {...}}``; ``edit`` only when the
harness can take an edited call), and an edited call comes back as the answer's ``custom``,
holding one JSON object (documented in docs/edit-then-approve.md)::

    {"relay": "edit", "choice": "Allow once", "version": 2,
     "input": {"command": "terraform apply -target=module.staging"}, "edited_by": "U0BOB"}

``selected`` is then empty, as the seam wants when ``custom`` is set. A UI that knows no
edits answers as ever: a label, or text that denies with it. A text that reads as an edit is
taken as one only where the question offered edits; a UI must not let a person type one (the
Slack provider refuses typed text that parses as an edit: an edit is made in its form, where
the message then shows it).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["EDIT_TAG", "Edit", "edit_custom", "read_edit"]

EDIT_TAG = "edit"


@dataclass(frozen=True, slots=True)
class Edit:
    """An edited tool input, the option chosen for it, its version (the original is 1), and
    the Slack id of whoever edited it."""

    input: Mapping[str, Any]
    choice: str
    version: int
    edited_by: str

    def to_json(self) -> dict[str, Any]:
        """The JSON object carried in ``custom``."""
        return {
            "relay": EDIT_TAG,
            "choice": self.choice,
            "version": self.version,
            "input": dict(self.input),
            "edited_by": self.edited_by,
        }


def edit_custom(edit: Edit) -> str:
    """The answer's ``custom`` text for ``edit``: compact JSON, keys in a fixed order."""
    return json.dumps(edit.to_json(), ensure_ascii=False, separators=(",", ":"))


def read_edit(custom: str | None) -> Edit | None:
    """The edit ``custom`` carries, or ``None`` when it is anything else (a typed reason)."""
    if custom is None or not custom.lstrip().startswith("{"):
        return None
    try:
        data = json.loads(custom)
    except ValueError:
        return None
    if not isinstance(data, dict) or data.get("relay") != EDIT_TAG:
        return None
    value, choice, version, by = (
        data.get("input"),
        data.get("choice"),
        data.get("version"),
        data.get("edited_by"),
    )
    if (
        not isinstance(value, dict)
        or not isinstance(choice, str)
        or isinstance(version, bool)
        or not isinstance(version, int)
        or version < 2
        or not isinstance(by, str)
    ):
        return None
    return Edit(input=value, choice=choice, version=version, edited_by=by)
