"""The one decision core: what is under review, and what a grant made from it may cover. Pure.

Every entry point (``/v1/approvals``, ``/mcp``, the hook, ``relay exec``, ``relay mcp``)
puts the same thing to a reviewer: the tool, its input as given (shown by
``relay.gate.describe``), and the scope of any grant. That scope is derived here from a
rule's pattern and the input shown, and only if the pattern covers that input strictly
(every part of the command, the very path); else the grant covers exactly this input. A
scope a client proposes is checked the same way: never one for another input, another tool,
or every use of a tool.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from relay.canonical.match import Pattern, subject

__all__ = ["BAD_PATTERN", "ScopeError", "checked_scope", "grant_scope"]

BAD_PATTERN = "BAD_PATTERN"


class ScopeError(ValueError):
    """A proposed grant scope the relay will not offer; the message says why and what to do."""

    code = BAD_PATTERN


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


def checked_scope(tool: str, tool_input: Mapping[str, Any], proposed: Pattern) -> Pattern:
    """``proposed`` if the relay may offer it for this use; ``ScopeError`` says why not."""
    if proposed.digest is not None:
        raise ScopeError(
            "pattern.digest is not accepted: the relay computes the exact scope itself (leave"
            " pattern out to offer a grant for exactly this input)"
        )
    if not _narrow(proposed):
        raise ScopeError(
            "pattern must name commands or paths: a grant for every use of a tool is never"
            " offered (leave pattern out to offer a grant for exactly this input)"
        )
    if proposed.tools and tuple(proposed.tools) != (tool,):
        raise ScopeError(f"pattern.tools must be [{tool!r}], the tool under review, or unset")
    scope = _narrowed(tool, proposed)
    if not scope.matches(subject(tool, tool_input)):
        raise ScopeError(
            "pattern does not cover this input (every part of the command, the very path):"
            " a grant may only be offered for what the reviewer is shown"
        )
    return scope
