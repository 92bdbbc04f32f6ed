"""What every hook adapter shares: the tool use under review, the reply, one-line reasons.

Pure and standard-library only: the hook's start-up is paid on every tool call a harness
sends it, so nothing here may pull in the clients a question to the team needs.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol

from relay.errors import RelayException

if TYPE_CHECKING:
    import argparse

__all__ = [
    "Adapter",
    "BadHookInput",
    "Decided",
    "HookCall",
    "Reply",
    "RulesDecision",
    "one_line",
    "refusal",
    "shown",
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
    """A decision the rules file made alone (``ClientGate.decide``'s allow or deny, same words)."""

    behavior: Literal["allow", "deny"]
    message: str
    updated_input: Mapping[str, Any] | None = None

    @property
    def allowed(self) -> bool:
        """Whether the tool may run."""
        return self.behavior == "allow"


class BadHookInput(RelayException):
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

    def edits_on(self, event: str) -> bool:
        """Whether the harness runs an edited input answered for ``event`` (Claude Code's
        ``updatedInput``): only then may a reviewer edit the call before allowing it."""
        ...

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


def shown(value: object, limit: int = 60) -> str:
    """``value``'s ``repr`` cut to ``limit`` characters: part of a one-line reason, whatever
    size or characters the input had."""
    text = repr(value[:limit] if isinstance(value, str) else value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def one_line(message: str) -> str:
    """``message`` on one line (line breaks of any kind become spaces)."""
    return " ".join(message.splitlines())


def refusal(message: str) -> str:
    """The stderr line of a hook that denies input it cannot read."""
    return f"relay: error: BAD_HOOK_INPUT: {one_line(message)}\n"
