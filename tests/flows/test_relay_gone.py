"""Issue 37, point 5: when the relay dies while ``relay exec`` or the hook waits for a
decision, they give up at the reviewer's time plus a bounded grace: exit 102 for exec (the
command never runs), a deny for the hook. Both run as subprocesses against ``relay serve``,
which is killed mid-wait."""

from __future__ import annotations

import json
import signal
import sys
from pathlib import Path

from relay.cli.exec_ import EXIT_FAILED
from relay.gate.approval import DECISION_GRACE
from relay.testing import FakeSlack
from tests.gate_env import clean_env, finish, start, write_rules
from tests.server_env import SECRET, TOKEN, relay_server

TIMEOUT = 2
# Long enough for the reviewer's time and the grace, and then some: never reached when
# exec gives up, reached (a failure) when it polls forever.
BOUND = TIMEOUT + DECISION_GRACE + 20


async def test_exec_gives_up_with_102_when_the_relay_dies_mid_wait(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    touch = [sys.executable, "-c", f"open({str(marker)!r}, 'w')"]
    async with FakeSlack(signing_secret=SECRET) as slack, relay_server(slack) as relay:
        env = clean_env(RELAY_URL=relay.url, RELAY_TOKEN=TOKEN)
        pending = await start("exec", "--timeout", str(TIMEOUT), "--", *touch, env=env)
        await slack.wait_for_message(timeout=15)
        # Killed while the caller long-polls for the decision (not while it posts).
        await relay.wait_for_metric("relay_long_polls", 1, timeout=15)
        await relay.stop(signal.SIGKILL)
        run = await finish(pending, timeout=BOUND)
    assert run.code == EXIT_FAILED, run.err
    assert run.err.startswith("relay: error: FAILED: relay got no decision within 17 s"), run.err
    assert not marker.exists()


async def test_the_hook_denies_when_the_relay_dies_mid_wait(tmp_path: Path) -> None:
    rules = write_rules(tmp_path, f"timeout = {TIMEOUT}\n")
    event = {
        "hook_event_name": "PreToolUse",
        "session_id": "s1",
        "cwd": str(tmp_path),
        "tool_name": "Bash",
        "tool_input": {"command": "make deploy"},
        "tool_use_id": "t1",
    }
    async with FakeSlack(signing_secret=SECRET) as slack, relay_server(slack) as relay:
        env = clean_env(RELAY_URL=relay.url, RELAY_TOKEN=TOKEN)
        pending = await start(
            "hook", "claude-code", "--rules", rules, env=env, stdin=json.dumps(event)
        )
        await slack.wait_for_message(timeout=15)
        # Killed while the caller long-polls for the decision (not while it posts).
        await relay.wait_for_metric("relay_long_polls", 1, timeout=15)
        await relay.stop(signal.SIGKILL)
        run = await finish(pending, timeout=BOUND)
    assert run.code == 0, run.err
    decision = run.json()["hookSpecificOutput"]
    assert decision["permissionDecision"] == "deny"
    assert "no decision within 17 s" in decision["permissionDecisionReason"]
