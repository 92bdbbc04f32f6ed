"""A question's intent: the decision of a known shape it is, for presentation only. Pure.

``plan-review`` (``exit_plan_mode``'s plan) and ``tool-approval`` (``relay.gate.approval``'s
question, with the edit it offers when the harness can run an edited call).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, Self

from relay.errors import bad_request

from .wire_reader import Reader as _Reader
from .wire_reader import path_of as _prefix

__all__ = ["INTENT_KINDS", "AskUserQuestionIntent", "IntentKind", "ToolEdit"]

IntentKind = Literal["plan-review", "tool-approval"]
INTENT_KINDS: tuple[str, ...] = ("plan-review", "tool-approval")


@dataclass(frozen=True, slots=True)
class ToolEdit:
    """A tool approval's offer to edit the call before approving it: the tool, its input as
    shown, and the input's JSON Schema when one is known (the form is built from it)."""

    tool: str
    input: Mapping[str, Any]
    input_schema: Mapping[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        """The wire form (``inputSchema`` only when known)."""
        out: dict[str, Any] = {"tool": self.tool, "input": dict(self.input)}
        if self.input_schema is not None:
            out["inputSchema"] = dict(self.input_schema)
        return out

    @classmethod
    def from_dict(cls, data: object, *, strict: bool = False, path: str = "") -> Self:
        """Read the wire form; raises ``BAD_REQUEST`` naming the bad field."""
        r = _Reader(data, path, frozenset({"tool", "input", "inputSchema"}), strict=strict)
        tool_input, schema = r.data.get("input"), r.data.get("inputSchema")
        if not isinstance(tool_input, dict):
            raise bad_request(f"{r.at('input')} must be an object: the tool's input")
        if schema is not None and not isinstance(schema, dict):
            raise bad_request(f"{r.at('inputSchema')} must be an object (a JSON Schema)")
        return cls(tool=r.text("tool"), input=tool_input, input_schema=schema)


@dataclass(frozen=True, slots=True)
class AskUserQuestionIntent:
    """Declares that a question is a decision of a known shape, for presentation only.

    ``plan-review``: a plan to approve. ``tool-approval``: a tool use to allow or deny; with
    ``edit``, a UI that knows the kind may let the reviewer edit the input first and answer
    with the edit in ``custom`` (``relay.gate.edit``). A UI that does not know the kind shows
    the options as for any question, and its answers mean what they always mean.
    """

    approve: str
    kind: IntentKind = "plan-review"
    edit: ToolEdit | None = None

    def to_dict(self) -> dict[str, Any]:
        """The wire form."""
        out: dict[str, Any] = {"kind": self.kind, "approve": self.approve}
        if self.edit is not None:
            out["edit"] = self.edit.to_dict()
        return out

    @classmethod
    def from_dict(cls, data: object, *, strict: bool = False, path: str = "") -> Self:
        """Read the wire form; an unknown ``kind`` is a ``BAD_REQUEST``."""
        r = _Reader(data, path, frozenset({"kind", "approve", "edit"}), strict=strict)
        kind = r.text("kind")
        if kind not in INTENT_KINDS:
            raise bad_request(
                f"{r.at('kind')} must be one of {', '.join(map(json.dumps, INTENT_KINDS))},"
                f" not {json.dumps(kind)}"
            )
        raw_edit = r.data.get("edit")
        edit = None
        if raw_edit is not None:
            if kind != "tool-approval":
                raise bad_request(f"{r.at('edit')} is only for intent kind tool-approval")
            edit = ToolEdit.from_dict(raw_edit, strict=strict, path=_prefix(path, "edit"))
        return cls(
            approve=r.text("approve"),
            kind="tool-approval" if kind == "tool-approval" else "plan-review",
            edit=edit,
        )
