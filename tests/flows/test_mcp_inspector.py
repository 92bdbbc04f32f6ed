"""Flow: the MCP Inspector runs task-augmented calls against ``/mcp``.

The Inspector's one-shot ``--cli`` has no task mode (its ``tools/call`` asks for a task only
when a tool requires one; relay's are ``optional``), so this drives its connection CLI,
``mcpdo``, from the same package: ``tools/call --task`` on a 2025-11-25 session waits for the
task's result, and ``tasks/get`` on the same connection reads the task afterwards. On the
2026-07-28 era (``--era modern``) the Inspector speaks the tasks extension and the server
decides. Each run has a private daemon (its own directory and token, stopped at the end) and a
home of its own, so nothing of the machine's Inspector is read or written.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import secrets
import shutil
import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from tests.cli_harness import finished, start_cli, team_and_relay
from tests.server_env import TOKEN, Relay

QUESTION = {"questions": [{"id": "go", "question": "Ship it?", "options": [{"label": "yes"}]}]}
ANSWER = '{"answers":[{"id":"go","selected":["yes"]}]}'
PACKAGE = "@modelcontextprotocol/inspector"


class Mcpdo:
    """The Inspector's ``mcpdo``, with a private daemon and home under ``home``."""

    def __init__(self, home: Path) -> None:
        self.home = home
        daemon = home / "d"
        daemon.mkdir(mode=0o700)
        self.env = {
            **os.environ,
            "HOME": str(home),
            "MCP_CATALOG_PATH": str(home / "mcp.json"),
            "MCP_INSPECTOR_DAEMON_DIR": str(daemon),
            "MCP_INSPECTOR_DAEMON_TOKEN": secrets.token_urlsafe(24),
            "MCP_INSPECTOR_SECRET_STORE": "file",
        }

    async def run(self, *args: str, within: float = 60) -> str:
        """``mcpdo ARGS``'s stdout, once it exited 0."""
        process = await start_cli("mcpdo", PACKAGE, *args, cwd=self.home, env=self.env)
        return (await finished(process, within)).decode()


@asynccontextmanager
async def inspector(relay: Relay, era: str) -> AsyncIterator[Mcpdo]:
    """``mcpdo`` connected to ``relay``'s ``/mcp`` as connection ``relay``, in ``era``."""
    # A short path: the daemon's Unix socket lives in it.
    home = Path(tempfile.mkdtemp(prefix="mcpdo-"))
    mcpdo = Mcpdo(home)
    try:
        await mcpdo.run(
            "connect",
            "--server-url",
            f"{relay.url}/mcp",
            "--transport",
            "http",
            "--header",
            f"Authorization: Bearer {TOKEN}",
            "--connection",
            "relay",
            "--era",
            era,
        )
        yield mcpdo
    finally:
        # The daemon outlives each command: stop it (it disconnects the connection).
        try:
            await mcpdo.run("daemon", "stop")
        finally:
            shutil.rmtree(home, ignore_errors=True)


async def answered_task(mcpdo: Mcpdo, slack: object, count: int) -> str:
    """Run ``ask_user_question`` as a task, answer it in Slack; the Inspector's output."""
    call = asyncio.create_task(
        mcpdo.run(
            "--connection",
            "relay",
            "tools/call",
            "ask_user_question",
            "--tool-args-json",
            json.dumps(QUESTION),
            "--task",
        )
    )
    message = await slack.wait_for_message(count=count, timeout=30)  # type: ignore[attr-defined]
    await slack.click(message, "yes", user="U0ALICE")  # type: ignore[attr-defined]
    return await asyncio.wait_for(call, 60)


@pytest.mark.parametrize("era", ["legacy", "modern"])
async def test_the_inspector_runs_a_task_and_reads_it_back(era: str) -> None:
    async with team_and_relay() as (slack, relay), inspector(relay, era) as mcpdo:
        shown = await answered_task(mcpdo, slack, count=1)
        assert ANSWER in shown
        # The call went as a task, in the era's own form.
        form = "2025-11-25" if era == "legacy" else "2026-07-28 tasks extension"
        started = await relay.wait_for_log("MCP task task_")
        assert f"ask_user_question ({form})" in started, started
        if era == "legacy":
            # The result names its task; the task, read on the same connection, completed.
            found = re.search(r'"taskId":\s*"(task_[\w-]+)"', shown)
            assert found is not None, shown
            task = await mcpdo.run(
                "--format", "json", "--connection", "relay", "tasks/get", found.group(1)
            )
            assert '"completed"' in task, task
