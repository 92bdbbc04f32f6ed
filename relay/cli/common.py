"""What every ``relay`` subcommand shares: its error type, parser, and input readers."""

from __future__ import annotations

import argparse
import os
import re
import sys
import textwrap
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NoReturn, TypeAlias

from relay.errors import ErrorCode, RelayException
from relay.seam import safejson

__all__ = [
    "CANNOT_READ",
    "USAGE",
    "CommandError",
    "Commands",
    "HelpFormatter",
    "Parser",
    "error_line",
    "parse_json",
    "plain",
    "read_text",
    "relay_command",
]

USAGE = ErrorCode.USAGE
CANNOT_READ = "CANNOT_READ"


class CommandError(RelayException):
    """A failure of the command itself (bad flags, unreadable input), with a stable code."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


class HelpFormatter(argparse.HelpFormatter):
    """Prose is filled to the terminal, indented blocks keep their lines, and all text wraps
    at spaces only: ``claude-code`` or ``comma-separated`` is never cut at its
    hyphen."""

    def _split_lines(self, text: str, width: int) -> list[str]:
        return textwrap.wrap(" ".join(text.split()), width, break_on_hyphens=False)

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        def fill(line: str, lead: str) -> list[str]:
            return textwrap.wrap(
                line, width, initial_indent=lead, subsequent_indent=lead, break_on_hyphens=False
            ) or [""]

        out: list[str] = []
        for paragraph in re.split(r"\n\s*\n", text.strip("\n")):
            lines = paragraph.splitlines()
            if all(line == line.lstrip() for line in lines):  # prose: fill it as one
                out.extend(fill(" ".join(lines), indent))
            else:  # an indented block (a list, an example): line by line, as written
                for line in lines:
                    out.extend(fill(line.strip(), indent + line[: len(line) - len(line.lstrip())]))
            out.append("")
        return "\n".join(out[:-1])


# Where the deepest (sub)command that parsed the line keeps its name in the namespace, so a
# flag the whole line left over is reported against that command's help, not `relay --help`.
_COMMAND = "_relay_command"


class Parser(argparse.ArgumentParser):
    """An argparse parser whose usage errors are one line in the relay's error format, naming
    the help of the (sub)command the line was for."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", HelpFormatter)
        super().__init__(*args, **kwargs)

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        """As argparse's, noting which (sub)command parsed the line: the innermost one does
        first, as a subcommand's parser returns before its parent's."""
        parsed, extras = super().parse_known_args(args, namespace)
        if not hasattr(parsed, _COMMAND):
            setattr(parsed, _COMMAND, self.prog)
        return parsed, extras

    def parse_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> argparse.Namespace:
        """As argparse's; a flag no parser took is a usage error of the subcommand it followed."""
        parsed, extras = self.parse_known_args(args, namespace)
        command = getattr(parsed, _COMMAND, self.prog)
        delattr(parsed, _COMMAND)
        if extras:
            message = f"unrecognized arguments: {' '.join(extras)}"
            self.exit(2, error_line(USAGE, f"{message} (see `{command} --help`)"))
        return parsed

    def error(self, message: str) -> NoReturn:
        """Print ``relay: error: USAGE: …`` with where to get help, and exit 2."""
        self.exit(2, error_line(USAGE, f"{message} (see `{self.prog} --help`)"))


def error_line(code: str, message: str) -> str:
    """The one line every ``relay`` command prints for a failure, whichever side (this
    process, the relay or Slack) found it: ``relay: error: CODE: message``."""
    return f"relay: error: {code}: {message}\n"


def plain(doc: str | None) -> str:
    """A module docstring as ``--help`` shows it: the reStructuredText literals (double
    backticks), which mean nothing in a terminal, dropped."""
    return re.sub(r"``(.+?)``", r"\1", doc or "", flags=re.DOTALL)


if TYPE_CHECKING:
    Commands: TypeAlias = argparse._SubParsersAction[Parser]
else:
    Commands = argparse._SubParsersAction


def read_text(file: str) -> str:
    """The text of ``file`` (``-`` for stdin), or a ``CANNOT_READ`` error saying why not."""
    try:
        if file == "-":
            return sys.stdin.read()
        with open(file, encoding="utf-8") as f:
            return f.read()
    except UnicodeDecodeError:
        raise CommandError(ErrorCode.BAD_REQUEST, f"{file} is not UTF-8 text") from None
    except OSError as exc:
        reason = (exc.strerror or str(exc)).lower()
        raise CommandError(CANNOT_READ, f"cannot read {file}: {reason}") from None


def parse_json(text: str, source: str) -> object:
    """Parse ``text`` as JSON, or a ``BAD_REQUEST`` error saying why not (the line and
    column of a syntax error; JSON nested too deep or with numbers too large)."""
    try:
        return safejson.loads(text)
    except ValueError as exc:
        raise CommandError(ErrorCode.BAD_REQUEST, f"{source} is not valid JSON: {exc}") from None


def relay_command() -> str:
    """How to run ``relay`` again from this shell: ``relay`` when that is on ``PATH`` and is
    this program, else the path it was started by (``.venv/bin/relay`` after scripts/serve)."""
    started = sys.argv[0] if sys.argv else ""
    if os.path.basename(started) != "relay":
        return f"{os.path.basename(sys.executable)} -m relay.cli"
    import shutil  # (with its compression modules: not for commands that never need it)

    found = shutil.which("relay")
    if found is not None and os.path.realpath(found) == os.path.realpath(started):
        return "relay"
    relative = os.path.relpath(started)
    return relative if not relative.startswith("..") else os.path.abspath(started)
