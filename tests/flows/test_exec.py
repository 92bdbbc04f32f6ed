"""Flow: ``relay exec -- CMD`` asks before running a command, and runs it only if allowed.

The command's exit status passes through (a signal too); relay's own outcomes have their
own codes (100 denied, 101 timed out, 102 failed); signals reach the running command.
"""

from __future__ import annotations

import asyncio
import json
import signal
import sys
from pathlib import Path

from relay.cli.exec_ import EXIT_DENIED, EXIT_FAILED, EXIT_TIMED_OUT
from relay.testing import FakeSlack
from tests.gate_env import clean_env, finish, start, write_rules
from tests.mcp_env import wait_withdrawn
from tests.server_env import SECRET, TOKEN, free_port, relay_server

# A command that says it started, then waits; SIGTERM makes it exit 42.
TRAP = (
    "import signal, sys, time\n"
    "signal.signal(signal.SIGTERM, lambda *_: sys.exit(42))\n"
    "print('started', flush=True)\n"
    "time.sleep(60)\n"
)


async def test_an_allowed_command_runs_and_its_exit_code_passes_through(tmp_path: Path) -> None:
    async with FakeSlack(signing_secret=SECRET) as slack, relay_server(slack) as relay:
        env = clean_env(
            RELAY_URL=relay.url,
            RELAY_TOKEN=TOKEN,
            GITHUB_ACTIONS="true",
            GITHUB_REPOSITORY="acme/api",
            GITHUB_RUN_ID="77",
            GITHUB_JOB="deploy",
            GITHUB_ACTOR="octo",
        )
        code = "import sys; print('ran'); sys.exit(7)"
        pending = await start("exec", "--", sys.executable, "-c", code, env=env, cwd=tmp_path)
        message = await slack.wait_for_message(timeout=15)
        shown = json.dumps(message.blocks)
        assert "sys.exit(7)" in shown
        assert str(tmp_path) in shown
        assert "GitHub Actions acme/api job deploy by octo" in shown
        await slack.click(message, "Allow once", user="U0ALICE")
        run = await finish(pending)
        assert (run.code, run.out) == (7, "ran\n")
        assert run.err.startswith("relay: ALLOWED: ")


async def test_denied_timed_out_and_failed_have_their_own_codes(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    touch = [sys.executable, "-c", f"open({str(marker)!r}, 'w')"]
    async with FakeSlack(signing_secret=SECRET) as slack, relay_server(slack) as relay:
        env = clean_env(RELAY_URL=relay.url, RELAY_TOKEN=TOKEN)
        pending = await start("exec", "--", *touch, env=env)
        message = await slack.wait_for_message(timeout=15)
        await slack.click(message, "Deny", user="U0ALICE")
        run = await finish(pending)
        assert run.code == EXIT_DENIED
        assert run.err.startswith("relay: DENIED: ")

        run = await finish(await start("exec", "--timeout", "1", "--", *touch, env=env))
        assert run.code == EXIT_TIMED_OUT
        assert "No reviewer answered within 1 s" in run.err

    down = clean_env(RELAY_URL=f"http://127.0.0.1:{free_port()}", RELAY_TOKEN=TOKEN)
    run = await finish(await start("exec", "--", *touch, env=down))
    assert run.code == EXIT_FAILED
    assert "cannot reach the relay" in run.err

    rules = write_rules(tmp_path, '[[rules]]\naction = "deny"\ncommands = ["*ran*"]\n')
    run = await finish(await start("exec", "--rules", rules, "--", *touch, env=clean_env()))
    assert run.code == EXIT_DENIED
    assert not marker.exists()

    run = await finish(await start("exec", env=clean_env()))
    assert run.code == 2
    assert run.err.startswith("relay: error: USAGE: say what to run")


async def test_rules_allow_outright_and_signals_reach_the_command(tmp_path: Path) -> None:
    rules = write_rules(tmp_path, '[[rules]]\naction = "allow"\ntools = ["exec"]\n')
    pending = await start(
        "exec", "--rules", rules, "--", sys.executable, "-c", TRAP, env=clean_env()
    )
    assert pending.stdout is not None
    assert await asyncio.wait_for(pending.stdout.readline(), 20) == b"started\n"
    pending.send_signal(signal.SIGTERM)
    assert await asyncio.wait_for(pending.wait(), 20) == 42

    # A command killed by a signal: relay exec dies of the same signal.
    sleeper = [sys.executable, "-c", "print('started', flush=True); import time; time.sleep(60)"]
    pending = await start("exec", "--rules", rules, "--", *sleeper, env=clean_env())
    assert pending.stdout is not None
    assert await asyncio.wait_for(pending.stdout.readline(), 20) == b"started\n"
    pending.send_signal(signal.SIGTERM)
    assert await asyncio.wait_for(pending.wait(), 20) == -signal.SIGTERM

    missing = await finish(
        await start("exec", "--rules", rules, "--", "no-such-command-here", env=clean_env())
    )
    assert missing.code == 127


async def test_stopping_while_waiting_withdraws_the_question() -> None:
    async with FakeSlack(signing_secret=SECRET) as slack, relay_server(slack) as relay:
        env = clean_env(RELAY_URL=relay.url, RELAY_TOKEN=TOKEN)
        pending = await start("exec", "--", "true", env=env)
        message = await slack.wait_for_message(timeout=15)
        pending.send_signal(signal.SIGINT)
        run = await finish(pending)
        assert run.code == 128 + signal.SIGINT
        assert "withdrawn" in run.err
        await wait_withdrawn(slack, message)


async def test_only_the_rules_approvers_may_approve_in_the_channel_asked(tmp_path: Path) -> None:
    rules = write_rules(tmp_path, 'approvers = ["U0ALICE"]\n')
    async with (
        FakeSlack(signing_secret=SECRET) as slack,
        relay_server(slack, RELAY_ALLOWED_CHANNELS="C0OTHER") as relay,
    ):
        env = clean_env(RELAY_URL=relay.url, RELAY_TOKEN=TOKEN)
        pending = await start(
            "exec", "--rules", rules, "--channel", "C0OTHER", "--", "true", env=env
        )
        message = await slack.wait_for_message(timeout=15)
        assert message.channel == "C0OTHER"  # the flag, not the relay's default channel
        await slack.click(message, "Allow once", user="U0EVE")
        notice = await slack.wait_for_ephemeral(user="U0EVE")
        assert "not" in notice.args["text"]
        assert pending.returncode is None  # still waiting for someone allowed
        await slack.click(message, "Allow once", user="U0ALICE")
        run = await finish(pending)
        assert run.code == 0
        assert "u0alice" in run.err.lower()


async def test_a_reviewers_edit_is_the_command_that_runs_and_a_reason_reaches_stderr(
    tmp_path: Path,
) -> None:
    # Issue 40: the edited command runs (split as a shell splits words), not the proposed one.
    async with FakeSlack(signing_secret=SECRET) as slack, relay_server(slack) as relay:
        env = clean_env(RELAY_URL=relay.url, RELAY_TOKEN=TOKEN)
        proposed = [sys.executable, "-c", "print('proposed')"]
        pending = await start("exec", "--", *proposed, env=env, cwd=tmp_path)
        message = await slack.wait_for_message(timeout=15)
        await slack.click(message, "Edit…", user="U0ALICE")
        modal = await slack.wait_for_modal(user="U0ALICE", timeout=10)
        modal.fill("command", f"{sys.executable} -c \"print('edited, then run')\"")
        assert (await slack.submit_view(modal)).outcome == "closed"
        run = await finish(pending)
        assert (run.code, run.out) == (0, "edited, then run\n")
        assert "the reviewer edited the call" in run.err

        pending = await start("exec", "--", *proposed, env=env, cwd=tmp_path)
        message = await slack.wait_for_message(count=2, timeout=15)
        await slack.type(message, "print something useful instead", user="U0BOB")
        await slack.press_enter(message, user="U0BOB")
        run = await finish(pending)
        assert run.code == EXIT_DENIED
        assert run.out == ""
        assert "denied this in Slack: print something useful instead;" in run.err
