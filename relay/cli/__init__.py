"""The ``relay`` command: serve the relay, ask a question, export the audit trail, preview,
print the manifest.

Each subcommand lives in its own module with an ``add_<name>(commands)`` function that
registers its parser and sets ``handler``; a handler returns the exit code. Failures print one
line, ``relay: error: CODE: message``, never a traceback.

A module's top-level imports are what its parser and its no-connection paths need; the
clients a handler uses (the MCP SDK, slack-sdk, aiohttp, the server) are imported inside
it, so each command loads only its own: Claude Code's hook, decided by its rules, starts in
about 0.3 s instead of 2.5 (``bench.cli_start``; ``tests/flows/test_hook_claude_code.py``
holds it to loading none of them).
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from relay.cli.common import CommandError, Commands, Parser, error_line

if TYPE_CHECKING:
    from relay.cli.preview import BLOCK_KIT_BUILDER, builder_url

__all__ = ["BLOCK_KIT_BUILDER", "builder_url", "main"]

# The subcommands, in the order `relay --help` lists them: the name and the module whose
# ``add_<module>`` registers it. Only the one named on the command line is imported (the
# help imports all): ``relay hook``, run before every tool call, loads no other command.
_SUBCOMMANDS: tuple[tuple[str, str], ...] = (
    ("serve", "serve"),
    ("ask", "ask"),
    ("mcp", "mcp"),
    ("hook", "hook"),
    ("exec", "exec_"),
    ("audit", "audit"),
    ("verify", "verify"),
    ("rules", "rules"),
    ("report", "report"),
    ("doctor", "doctor"),
    ("webhook-secret", "webhook_secret"),
    ("preview", "preview"),
    ("manifest", "manifest"),
)


def __getattr__(name: str) -> Any:
    if name in ("BLOCK_KIT_BUILDER", "builder_url"):
        return getattr(importlib.import_module("relay.cli.preview"), name)
    raise AttributeError(f"module 'relay.cli' has no attribute {name!r}")


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The ``relay`` argument parser with every subcommand registered (or just ``only``,
    when it names one)."""
    from relay import __version__

    parser = Parser(
        prog="relay",
        description="Ask a team of humans a question in Slack from an AI agent.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(title="commands", metavar="COMMAND")
    named = only if any(only == name for name, _ in _SUBCOMMANDS) else None
    for name, module in _SUBCOMMANDS:
        if named is None or name == named:
            # ``relay.cli.exec_`` registers with ``add_exec``, the others ``add_<module>``.
            add: Callable[[Commands], None] = getattr(
                importlib.import_module(f"relay.cli.{module}"), f"add_{module.rstrip('_')}"
            )
            add(commands)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the ``relay`` command with ``argv`` (default ``sys.argv[1:]``); return the exit code."""
    argv = sys.argv[1:] if argv is None else argv
    parser = build_parser(argv[0] if argv else None)
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse exits for --help, --version and usage errors
        return exc.code if isinstance(exc.code, int) else 0 if exc.code is None else 2
    handler: Callable[[argparse.Namespace], int] | None = getattr(args, "handler", None)
    if handler is None:
        parser.print_help(sys.stderr)
        return 2
    try:
        return handler(args)
    except Exception as exc:
        if not isinstance(exc, _one_line_errors()):
            raise
        sys.stderr.write(error_line(getattr(exc, "code", ""), str(exc)))
        return 2


def _one_line_errors() -> tuple[type[Exception], ...]:
    # Imported when one is raised: the rules' error class would load the gate for every command.
    from relay.errors import HarnessError, RelayConfigError
    from relay.gate.rules import RulesError

    return (CommandError, HarnessError, RelayConfigError, RulesError)
