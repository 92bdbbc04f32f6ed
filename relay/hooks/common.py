"""What every hook adapter shares: the tool use under review, the reply, the input readers.

Pure and standard-library only: the hook's start-up is paid on every tool call a harness
sends it, so nothing here may pull in the clients a question to the team needs.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol

if TYPE_CHECKING:
    import argparse

__all__ = [
    "Adapter",
    "BadHookInput",
    "Decided",
    "HookCall",
    "Reply",
    "RulesDecision",
    "load_event",
    "object_input",
    "text_field",
]


class Decided(Protocol):
    """What an adapter writes back: allow or deny, and the reason the agent sees. The gate's
    ``Decision`` is one; so is ``RulesDecision``, made without loading the gate's clients."""

    @property
    def behavior(self) -> Literal["allow", "deny"]:
        """``allow`` or ``deny``."""
        ...

    @property
    def message(self) -> str:
        """Why (shown to the agent on a deny)."""
        ...

    @property
    def allowed(self) -> bool:
        """Whether the tool may run."""
        ...

    @property
    def updated_input(self) -> Mapping[str, Any] | None:
        """The input a reviewer edited and allowed (``None``: the input as asked)."""
        ...


@dataclass(frozen=True, slots=True)
class RulesDecision:
    """A decision the rules file made alone (``Gate.decide``'s allow or deny, same words)."""

    behavior: Literal["allow", "deny"]
    message: str
    updated_input: Mapping[str, Any] | None = None

    @property
    def allowed(self) -> bool:
        """Whether the tool may run."""
        return self.behavior == "allow"


class BadHookInput(Exception):
    """The hook's stdin is not a tool event this harness's hook understands."""


@dataclass(frozen=True, slots=True)
class HookCall:
    """One tool use a harness asks about: the event, the tool and input under review, and
    where and in which agent session it happens."""

    event: str
    tool: str
    input: Mapping[str, Any]
    session: str | None = None
    cwd: str | None = None
    tool_use_id: str | None = None


@dataclass(frozen=True, slots=True)
class Reply:
    """What the hook writes: JSON on stdout (``None``: nothing), its exit code, and a line
    on stderr (which some harnesses show the agent with exit code 2)."""

    output: dict[str, Any] | None = None
    code: int = 0
    stderr: str = ""


class Adapter(Protocol):
    """One harness's hook contract: its input read into a ``HookCall``, a decision written
    back the way the harness reads it (and a deny when the input itself is wrong)."""

    name: str
    label: str
    help: str
    # Whether the harness runs an edited input (Claude Code's updatedInput): only then may a
    # reviewer edit the call before allowing it.
    edits: bool

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        """Flags of this harness's ``relay hook`` beyond the shared ones."""
        ...

    def read(self, data: Mapping[str, Any], args: argparse.Namespace) -> HookCall:
        """The tool use in ``data``; raises ``BadHookInput`` if it is not one."""
        ...

    def reply(self, call: HookCall, decision: Decided | None) -> Reply:
        """The answer for ``decision`` (``None``: no opinion, the harness decides)."""
        ...

    def refuse(self, message: str) -> Reply:
        """A deny for input the hook cannot read (the event itself is unknown)."""
        ...


def load_event(text: str) -> Mapping[str, Any]:
    """The hook's stdin as a JSON object; raises ``BadHookInput`` otherwise."""
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise BadHookInput(f"the hook input is not JSON ({exc})") from None
    if not isinstance(data, Mapping):
        raise BadHookInput("the hook input is not a JSON object")
    return data


def text_field(data: Mapping[str, Any], *keys: str) -> str | None:
    """The first of ``keys`` holding a non-empty string."""
    for key in keys:
        value = data.get(key)
        if isinstance(value, str) and value:
            return value
    return None


def object_input(value: Any, what: str) -> dict[str, Any]:
    """A tool's arguments as an object: harnesses send them as an object or as a JSON
    string (Copilot's ``toolArgs``, Cursor's MCP ``tool_input``); missing means none."""
    if value is None:
        return {}
    if isinstance(value, str):
        try:
            value = json.loads(value) if value.strip() else {}
        except ValueError:
            raise BadHookInput(f"{what} is a string that is not JSON") from None
    if not isinstance(value, Mapping):
        raise BadHookInput(f"{what} is not a JSON object")
    return dict(value)
