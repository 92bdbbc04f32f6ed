"""Every ``relay`` subcommand's ``--help`` speaks one voice: plain words (no reStructuredText
literals), every option explained, every default stated; one spelling per concept."""

from __future__ import annotations

# Looks inside: the request the flags build (ask._request) is what the help promises.
import argparse
import re
import subprocess
import sys
from collections.abc import Iterator

import pytest

from relay.cli import build_parser, main
from relay.cli.ask import _request

# Options hidden from the help on purpose: old spellings kept working for existing scripts.
DEPRECATED = {"--allowed-user", "--allowed-group"}
# Metavars of values that always have some default worth stating (a time, a count).
STATE_DEFAULT = {"SECONDS", "N"}


def parsers(
    parser: argparse.ArgumentParser, name: str = "relay"
) -> Iterator[tuple[str, argparse.ArgumentParser]]:
    """``parser`` and every subcommand's parser below it, with the command line naming it."""
    yield name, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub, child in action.choices.items():
                yield from parsers(child, f"{name} {sub}")


@pytest.fixture
def commands(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, argparse.ArgumentParser]]:
    # Some defaults come from the environment (RELAY_RULES…): read the help as a new user's.
    for variable in ("RELAY_URL", "RELAY_RULES", "RELAY_SESSION", "RELAY_CHANNEL"):
        monkeypatch.delenv(variable, raising=False)
    found = list(parsers(build_parser()))
    names = {name for name, _ in found}
    assert {"relay ask", "relay hook claude-code", "relay audit", "relay serve"} <= names
    return found


def test_help_texts_have_no_restructuredtext_literals(
    commands: list[tuple[str, argparse.ArgumentParser]],
) -> None:
    for name, parser in commands:
        assert "``" not in parser.format_help(), name


def test_every_option_says_what_it_is_for(
    commands: list[tuple[str, argparse.ArgumentParser]],
) -> None:
    for name, parser in commands:
        for action in parser._actions:
            if isinstance(action, argparse._HelpAction | argparse._SubParsersAction):
                continue
            flag = max(action.option_strings, key=len, default=action.dest)
            if action.help == argparse.SUPPRESS:
                assert flag in DEPRECATED, f"{name} {flag} is hidden"
                continue
            assert action.help, f"{name} {flag} has no help"


def test_every_option_with_a_default_states_it(
    commands: list[tuple[str, argparse.ArgumentParser]],
) -> None:
    for name, parser in commands:
        for action in parser._actions:
            if action.help in (None, argparse.SUPPRESS) or not action.option_strings:
                continue
            flag = max(action.option_strings, key=len)
            has_default = action.default not in (None, False, [], argparse.SUPPRESS)
            if has_default or action.metavar in STATE_DEFAULT:
                assert "default" in str(action.help), f"{name} {flag}: {action.help}"
                if has_default and isinstance(action.default, str):
                    assert action.default in str(action.help), f"{name} {flag}"


def test_who_may_answer_is_spelled_alike_everywhere(
    commands: list[tuple[str, argparse.ArgumentParser]],
) -> None:
    spelled: dict[str, set[str]] = {}
    for name, parser in commands:
        for action in parser._actions:
            if action.help != argparse.SUPPRESS:
                for option in action.option_strings:
                    if option.startswith("--allowed-"):
                        spelled.setdefault(option, set()).add(name)
    assert set(spelled) == {"--allowed-users", "--allowed-groups"}
    assert {"relay ask", "relay mcp", "relay exec", "relay serve"} <= spelled["--allowed-users"]


def test_relay_ask_takes_the_old_one_id_flags_as_the_new_lists() -> None:
    parser = build_parser("ask")
    old_flags = ("--allowed-user", "U0A", "--allowed-user", "U0B", "--allowed-group", "S0OPS")
    old = parser.parse_args(["ask", "-q", "Ship?", *old_flags])
    new = parser.parse_args(
        ["ask", "-q", "Ship?", "--allowed-users", "U0A,U0B", "--allowed-groups", "S0OPS"]
    )
    assert _request(old)[1] == _request(new)[1]
    assert _request(new)[1] == {"allowed_users": ["U0A", "U0B"], "allowed_groups": ["S0OPS"]}


def test_hook_help_is_for_a_user_not_for_whoever_works_on_the_adapters() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "relay.cli", "hook", "--help"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "onFailure" not in result.stdout
    assert "#" not in result.stdout  # no issue numbers
    assert "relay hook HARNESS --help" in result.stdout


@pytest.mark.parametrize("columns", ["60", "80", "120"])
def test_help_never_cuts_a_name_at_its_hyphen(
    commands: list[tuple[str, argparse.ArgumentParser]],
    monkeypatch: pytest.MonkeyPatch,
    columns: str,
) -> None:
    monkeypatch.setenv("COLUMNS", columns)  # argparse wraps to the terminal's width
    for name, parser in commands:
        for line in parser.format_help().splitlines():
            assert not re.search(r"\w-$", line), f"{name} at {columns} columns: {line!r}"


@pytest.mark.parametrize(
    ("argv", "command"),
    [
        (["verify", "--keyz", "k.json", "f"], "relay verify"),
        (["hook", "claude-code", "--bogus"], "relay hook claude-code"),
        (["ask", "-q", "Ship?", "--nope"], "relay ask"),
        (["--bogus"], "relay"),
    ],
)
def test_a_mistyped_flag_points_at_the_help_of_its_subcommand(
    argv: list[str], command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("relay: error: USAGE: unrecognized arguments: "), err
    assert err.endswith(f"(see `{command} --help`)\n"), err
