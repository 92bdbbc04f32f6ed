"""Permission hooks for coding agents: one small adapter per harness.

Each adapter (``relay.hooks.claude_code``, ``codex``, ``copilot``, ``cursor``) reads its
harness's hook JSON (loaded within ``relay.hooks.intake``'s bounds) into a
``relay.hooks.common.HookCall``, the tool use under review, by a table of where each event
keeps what (``relay.hooks.fields``), and writes a decision back in that event's shape;
``relay hook HARNESS`` (``relay.cli.hook``) runs the same rules, grants and team decision
for all of them. The
adapters are pure and import only the standard library, so a hook the rules decide starts
as fast as the interpreter allows.
"""

from __future__ import annotations

from relay.hooks.claude_code import CLAUDE_CODE
from relay.hooks.codex import CODEX
from relay.hooks.common import Adapter, BadHookInput, HookCall, Reply
from relay.hooks.copilot import COPILOT
from relay.hooks.cursor import CURSOR

__all__ = ["ADAPTERS", "Adapter", "BadHookInput", "HookCall", "Reply"]

# The harnesses, in the order ``relay hook --help`` lists them.
ADAPTERS: dict[str, Adapter] = {a.name: a for a in (CLAUDE_CODE, CODEX, COPILOT, CURSOR)}
