"""tests/kinds.py: which tests --quick leaves out, read from what their code calls."""

from __future__ import annotations

import subprocess
import sys

import pytest
from kinds import ProcessWatch, reaches

from tests.cli_harness import start_cli
from tests.server_env import relay_server


def _runs_python() -> None:
    subprocess.run([sys.executable, "-c", ""], check=True)


def _through_a_helper() -> None:
    _runs_python()


async def _through_relay_server() -> None:
    async with relay_server(None):  # type: ignore[arg-type]
        pass


async def _through_a_cli() -> None:
    await start_cli("codex", "@openai/codex")  # type: ignore[call-arg]


def _in_process() -> int:
    return len([1, 2, 3])


def test_a_process_started_here_or_through_helpers_is_a_subprocess() -> None:
    assert reaches(_runs_python) == {"subprocess"}
    assert reaches(_through_a_helper) == {"subprocess"}
    assert reaches(_through_relay_server) == {"subprocess"}


def test_an_agent_cli_is_a_cli_and_in_process_code_is_nothing() -> None:
    assert reaches(_through_a_cli) == {"cli", "subprocess"}
    assert reaches(_in_process) == frozenset()


def test_this_file_is_marked_only_where_it_starts_a_process(request: pytest.FixtureRequest) -> None:
    assert request.node.get_closest_marker("subprocess") is None


def test_the_watch_sees_a_process_start() -> None:
    watch = ProcessWatch()
    watch.watching = True
    _runs_python()
    watch.watching = False
    _runs_python()
    assert len(watch.started) == 1
    assert watch.started[0].startswith("subprocess.Popen")
