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
import sys
from collections.abc import Callable

from relay import __version__
from relay.cli.ask import add_ask
from relay.cli.audit import add_audit
from relay.cli.common import CommandError, Commands, Parser
from relay.cli.exec_ import add_exec
from relay.cli.hook import add_hook
from relay.cli.manifest import add_manifest
from relay.cli.mcp import add_mcp
from relay.cli.preview import BLOCK_KIT_BUILDER, add_preview, builder_url
from relay.cli.serve import add_serve
from relay.cli.verify import add_verify
from relay.cli.webhook_secret import add_webhook_secret
from relay.errors import HarnessError, RelayConfigError
from relay.gate.rules import RulesError

__all__ = ["BLOCK_KIT_BUILDER", "build_parser", "builder_url", "main"]

# The subcommands, in the order `relay --help` lists them.
_SUBCOMMANDS: tuple[Callable[[Commands], None], ...] = (
    add_serve,
    add_ask,
    add_mcp,
    add_hook,
    add_exec,
    add_audit,
    add_verify,
    add_webhook_secret,
    add_preview,
    add_manifest,
)


def build_parser() -> argparse.ArgumentParser:
    """The ``relay`` argument parser with every subcommand registered."""
    parser = Parser(
        prog="relay",
        description="Ask a team of humans a question in Slack from an AI agent.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(title="commands", metavar="COMMAND")
    for add in _SUBCOMMANDS:
        add(commands)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the ``relay`` command with ``argv`` (default ``sys.argv[1:]``); return the exit code."""
    parser = build_parser()
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
    except (CommandError, HarnessError, RelayConfigError, RulesError) as exc:
        sys.stderr.write(f"relay: error: {exc.code}: {exc}\n")
        return 2
