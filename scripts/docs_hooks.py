"""MkDocs hooks for the documentation site (``mkdocs.yml``: ``hooks``).

The CLI reference is generated from ``relay``'s own argument parser when the site is built,
so that it cannot drift from the commands: a page holding the marker line
``<!-- cli-reference -->`` gets one section per subcommand (usage, description, every option
with its help) in its place. ``tests/test_docs.py`` checks that every subcommand and option
is in what this writes.
"""

from __future__ import annotations

import argparse
import re
from typing import Any

MARKER = "<!-- cli-reference -->"


def _plain(text: str) -> str:
    """Help text as Markdown: reStructuredText's double backticks become single ones, and
    indented lines (a table of exit codes, say) stay as they are laid out."""
    text = re.sub(r"``([^`]+)``", r"`\1`", text).strip()
    lines: list[str] = []
    laid_out = False
    for line in text.splitlines():
        indented = line.startswith("  ")
        if indented != laid_out:
            lines += ["", "```text"] if indented else ["```", ""]
            laid_out = indented
        lines.append(line)
    if laid_out:
        lines.append("```")
    return "\n".join(lines)


def _cell(text: str) -> str:
    return _plain(text).replace("|", "\\|").replace("\n", " ")


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _section(name: str, parser: argparse.ArgumentParser, level: int) -> list[str]:
    usage = parser.format_usage().removeprefix("usage: ").strip()
    usage = re.sub(r"\s+", " ", usage)
    lines = [f"{'#' * level} `{name}`", "", "```text", usage, "```", ""]
    if parser.description:
        lines += [_plain(parser.description), ""]
    rows = []
    for action in parser._actions:
        if isinstance(action, argparse._HelpAction | argparse._SubParsersAction):
            continue
        if action.help == argparse.SUPPRESS:  # a hidden alias kept for old scripts
            continue
        if action.option_strings:
            flags = ", ".join(f"`{flag}`" for flag in action.option_strings)
            if action.metavar:
                flags += f" `{action.metavar}`"
        else:
            flags = f"`{action.metavar or action.dest}`"
        rows.append(f"| {flags} | {_cell(action.help or '')} |")
    if rows:
        lines += ["| argument | what |", "|---|---|", *rows, ""]
    for sub, subparser in _subcommands(parser).items():
        lines += _section(f"{name} {sub}", subparser, level + 1)
    return lines


def cli_reference() -> str:
    """The reference of every ``relay`` subcommand, as Markdown."""
    from relay.cli import build_parser

    lines: list[str] = []
    for name, parser in _subcommands(build_parser()).items():
        lines += _section(f"relay {name}", parser, 2)
    return "\n".join(lines)


def on_page_markdown(markdown: str, **_: Any) -> str:
    """MkDocs hook: put the generated CLI reference where a page asks for it."""
    if MARKER in markdown:
        return markdown.replace(MARKER, cli_reference())
    return markdown
