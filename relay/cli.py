"""The ``relay`` command: print the Slack app manifest, preview how a request renders.

Each subcommand is one ``_add_<name>`` function that registers its parser on the subparsers
and sets ``handler``; ``_SUBCOMMANDS`` lists them. A handler takes the parsed arguments and
returns the exit code. Every failure prints one line, ``relay: error: CODE: message``, and
exits 2; no traceback reaches the user.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, TypeAlias
from urllib.parse import quote

from relay import __version__
from relay.errors import HarnessError, RelayConfigError
from relay.manifest import build_manifest, manifest_text
from relay.questions import AskUserQuestionRequest, validate_request
from relay.slack.render import RenderedQuestion, render_question

__all__ = ["BLOCK_KIT_BUILDER", "build_parser", "builder_url", "main"]

BLOCK_KIT_BUILDER = "https://app.slack.com/block-kit-builder#"

_USAGE = "USAGE"
_CANNOT_READ = "CANNOT_READ"


class _CommandError(Exception):
    """A failure of the command itself (bad flags, unreadable input), with a stable code."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


class _Parser(argparse.ArgumentParser):
    """An argparse parser whose usage errors are one line in the relay's error format."""

    def error(self, message: str) -> NoReturn:
        """Print ``relay: error: USAGE: …`` with where to get help, and exit 2."""
        self.exit(2, f"relay: error: {_USAGE}: {message} (see `{self.prog} --help`)\n")


if TYPE_CHECKING:
    _Commands: TypeAlias = argparse._SubParsersAction[_Parser]


# --- relay manifest --------------------------------------------------------------------------


def _add_manifest(commands: _Commands) -> None:
    parser = commands.add_parser(
        "manifest",
        help="print the Slack app manifest to create the relay's app from",
        description=(
            "Print the Slack app manifest (JSON, which Slack's manifest editor accepts as"
            " YAML too). Paste it into https://api.slack.com/apps?new_app=1 → From a manifest."
        ),
    )
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument(
        "--socket-mode",
        action="store_true",
        help="clicks arrive over a WebSocket: no public URL needed (needs SLACK_APP_TOKEN)",
    )
    mode.add_argument(
        "--request-url",
        metavar="URL",
        help="HTTP mode: the public https URL Slack posts clicks to, ending in /slack/events",
    )
    parser.add_argument("--name", default="relay", help="the app's name in Slack (default relay)")
    parser.set_defaults(handler=_run_manifest)


def _run_manifest(args: argparse.Namespace) -> int:
    if not args.socket_mode and args.request_url is None:
        raise _CommandError(
            _USAGE,
            "choose a mode: --socket-mode (no public URL needed) or"
            " --request-url https://<host>/slack/events",
        )
    manifest = build_manifest(
        socket_mode=args.socket_mode, request_url=args.request_url, name=args.name
    )
    sys.stdout.write(manifest_text(manifest))
    return 0


# --- relay preview ---------------------------------------------------------------------------


def _add_preview(commands: _Commands) -> None:
    parser = commands.add_parser(
        "preview",
        help="render a request's questions as Slack messages, without calling Slack",
        description=(
            'Read a request in the JSON wire form ({"questions": [...], "agent": {...}}),'
            " check it as the relay would, and print each question's Slack message with a"
            " Block Kit Builder link to see it rendered."
        ),
    )
    parser.add_argument("file", metavar="FILE", help="the request JSON file, or - for stdin")
    parser.set_defaults(handler=_run_preview)


def _run_preview(args: argparse.Namespace) -> int:
    source = "stdin" if args.file == "-" else args.file
    data = _parse_json(_read_text(args.file), source)
    request = AskUserQuestionRequest.from_dict(data, strict=True)
    validate_request(request)
    count = len(request.questions)
    messages = [
        _preview_message(
            render_question(
                question,
                ask_id="preview",
                index=index,
                count=count,
                agent=request.agent,
                deadline=None,
            )
        )
        for index, question in enumerate(request.questions)
    ]
    sys.stdout.write(json.dumps({"messages": messages}, indent=2, ensure_ascii=False) + "\n")
    return 0


def _read_text(file: str) -> str:
    try:
        if file == "-":
            return sys.stdin.read()
        return Path(file).read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise _CommandError("BAD_REQUEST", f"{file} is not UTF-8 text") from None
    except OSError as exc:
        reason = (exc.strerror or str(exc)).lower()
        raise _CommandError(_CANNOT_READ, f"cannot read {file}: {reason}") from None


def _parse_json(text: str, source: str) -> object:
    try:
        data: object = json.loads(text)
    except json.JSONDecodeError as exc:
        raise _CommandError(
            "BAD_REQUEST",
            f"{source} is not valid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}",
        ) from None
    return data


def _preview_message(rendered: RenderedQuestion) -> dict[str, Any]:
    return {
        "text": rendered.text,
        "blocks": rendered.blocks,
        "builder_url": builder_url(rendered.blocks),
        "detail_overflow": list(rendered.detail_overflow),
    }


def builder_url(blocks: Sequence[dict[str, Any]]) -> str:
    """A Block Kit Builder link that opens with ``blocks`` loaded (the JSON, URL-encoded)."""
    payload = json.dumps({"blocks": list(blocks)}, separators=(",", ":"), ensure_ascii=False)
    return BLOCK_KIT_BUILDER + quote(payload, safe="")


# --- wiring ----------------------------------------------------------------------------------

# The subcommands, in the order `relay --help` lists them.
# To add one (`serve`, `ask`): write `_add_<name>(commands)` above, which calls
# `commands.add_parser("<name>", help=...)`, adds its arguments and
# `set_defaults(handler=_run_<name>)`; the handler returns the exit code (an async command
# returns `asyncio.run(...)`) and raises HarnessError / RelayConfigError for failures that
# `main` prints as one line. Then list `_add_<name>` here.
_SUBCOMMANDS: tuple[Callable[[_Commands], None], ...] = (
    _add_manifest,
    _add_preview,
)


def build_parser() -> argparse.ArgumentParser:
    """The ``relay`` argument parser with every subcommand registered."""
    parser = _Parser(
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
    except (_CommandError, HarnessError, RelayConfigError) as exc:
        sys.stderr.write(f"relay: error: {exc.code}: {exc}\n")
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
