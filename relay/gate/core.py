"""The one decision core: what is under review, and what a grant made from it may cover. Pure.

Every entry point (``/v1/approvals``, ``/mcp``, the hook, ``relay exec``, ``relay mcp``)
puts the same thing to a reviewer: the tool, its input as given (shown by
``relay.gate.describe``), and the scope of any grant. That scope is derived here from a
rule's pattern and the input shown, and only if the pattern covers that input strictly
(every part of the command, the very path); else the grant covers exactly this input. A
client never proposes a scope (``BAD_PATTERN``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from relay.canonical.match import Pattern, subject
from relay.errors import ErrorCode

__all__ = ["BAD_PATTERN", "grant_scope"]

BAD_PATTERN = ErrorCode.BAD_PATTERN


def _narrowed(tool: str, pattern: Pattern) -> Pattern:
    """``pattern``'s commands and paths for ``tool`` alone."""
    return Pattern(
        tools=(tool,),
        commands=pattern.commands,
        command_regex=pattern.command_regex,
        paths=pattern.paths,
        path_regex=pattern.path_regex,
    )


def _narrow(pattern: Pattern) -> bool:
    return bool(pattern.commands or pattern.command_regex or pattern.paths or pattern.path_regex)


def grant_scope(tool: str, tool_input: Mapping[str, Any], rule: Pattern | None) -> Pattern:
    """What a grant for this use covers: ``rule``'s commands or paths for this tool when they
    cover this very input, else exactly this input. Checked without a working directory,
    as grants are looked up."""
    if rule is not None and rule.digest is None and _narrow(rule):
        scope = _narrowed(tool, rule)
        if scope.matches(subject(tool, tool_input)):
            return scope
    return Pattern.exact(tool, tool_input)
