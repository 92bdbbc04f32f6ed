"""Flow: Claude Code runs ``relay hook claude-code`` for PreToolUse and PermissionRequest.

The hook gets the hook JSON on stdin and must print the documented decision JSON and exit
0, or exit 2; it must fail closed on every failure: no configuration, a broken rules file,
an unreachable relay, a timeout, being stopped.
"""

from __future__ import annotations

import asyncio
import json
import signal
import sys
from pathlib import Path
from typing import Any

import pytest

from relay.testing import FakeSlack
from tests.gate_env import Run, clean_env, finish, start, write_rules
from tests.mcp_env import wait_withdrawn
from tests.server_env import SECRET, TOKEN, free_port, relay_server

RULES = """
timeout = 20
default = "ask"

[[rules]]
action = "allow"
tools = ["Read", "Glob", "Grep"]

[[rules]]
action = "deny"
tools = ["Bash"]
commands = ["rm -rf *"]
reason = "recursive deletes are never allowed"

[[rules]]
action = "ask"
tools = ["Bash"]
commands = ["npm *"]  # a glob: a rule's regex never widens a grant
"""


def event(name: str, tool: str, tool_input: dict[str, Any], session: str = "sess-1") -> str:
    return json.dumps(
        {
            "hook_event_name": name,
            "session_id": session,
            "cwd": "/repo",
            "permission_mode": "default",
            "tool_name": tool,
            "tool_input": tool_input,
            "tool_use_id": "toolu_01",
        }
    )


async def hook(stdin: str, env: dict[str, str], *args: str) -> Any:
    return await finish(await start("hook", "claude-code", *args, env=env, stdin=stdin))


async def test_the_rules_alone_allow_and_deny_without_any_connection(tmp_path: Path) -> None:
    rules = write_rules(tmp_path, RULES)
    env = clean_env()
    denied = await hook(event("PreToolUse", "Bash", {"command": "rm -rf /"}), env, "--rules", rules)
    assert denied.code == 0, denied.err
    assert denied.json() == {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": "recursive deletes are never allowed",
        }
    }
    allowed = await hook(
        event("PreToolUse", "Read", {"file_path": "/repo/a"}), env, "--rules", rules
    )
    assert allowed.json()["hookSpecificOutput"]["permissionDecision"] == "allow"
    asked = await hook(
        event("PermissionRequest", "Bash", {"command": "rm -rf build"}), env, "--rules", rules
    )
    assert asked.json() == {
        "hookSpecificOutput": {
            "hookEventName": "PermissionRequest",
            "decision": {"behavior": "deny", "message": "recursive deletes are never allowed"},
        }
    }


async def test_default_pass_leaves_the_decision_to_claude_code(tmp_path: Path) -> None:
    rules = write_rules(tmp_path, 'default = "pass"\n')
    run = await hook(event("PreToolUse", "Bash", {"command": "ls"}), clean_env(), "--rules", rules)
    assert (run.code, run.out) == (0, "")


async def test_failures_deny_with_a_reason_claude_sees(tmp_path: Path) -> None:
    # Nothing configured to ask with.
    run = await hook(event("PreToolUse", "Bash", {"command": "npm publish"}), clean_env())
    decision = run.json()["hookSpecificOutput"]
    assert decision["permissionDecision"] == "deny"
    assert "USAGE" in decision["permissionDecisionReason"]
    # A relay that is not there.
    down = clean_env(RELAY_URL=f"http://127.0.0.1:{free_port()}", RELAY_TOKEN=TOKEN)
    run = await hook(event("PermissionRequest", "Bash", {"command": "npm publish"}), down)
    decision = run.json()["hookSpecificOutput"]["decision"]
    assert decision["behavior"] == "deny"
    assert "cannot reach the relay" in decision["message"]
    # A broken rules file.
    bad = write_rules(tmp_path, '[[rules]]\naction = "maybe"\n')
    run = await hook(event("PreToolUse", "Bash", {"command": "ls"}), clean_env(), "--rules", bad)
    reason = run.json()["hookSpecificOutput"]["permissionDecisionReason"]
    assert "BAD_RULES" in reason
    assert "rules[0].action must be allow, ask or deny" in reason
    # Input that is not a hook event: exit 2 blocks, with one line on stderr.
    run = await hook("not json", clean_env())
    assert run.code == 2
    assert run.err.startswith("relay: error: BAD_HOOK_INPUT: the hook input is not JSON")


async def test_a_reviewer_decides_and_a_session_grant_is_the_sessions_only(tmp_path: Path) -> None:
    rules = write_rules(tmp_path, RULES)
    # The grant's scope is the relay's: its operator's ask rule (the same npm rule here).
    async with (
        FakeSlack(signing_secret=SECRET) as slack,
        relay_server(slack, RELAY_RULES_FILE=rules) as relay,
    ):
        slack.add_user("U0ALICE", name="alice")
        env = clean_env(RELAY_URL=relay.url, RELAY_TOKEN=TOKEN)
        npm = {"command": "npm install left-pad"}
        pending = await start(
            "hook",
            "claude-code",
            "--rules",
            rules,
            env=env,
            stdin=event("PermissionRequest", "Bash", npm),
        )
        message = await slack.wait_for_message(timeout=15)
        shown = json.dumps(message.blocks)
        assert "Claude Code" in shown
        assert "/repo" in shown
        await slack.click(message, "Allow for this session", user="U0ALICE")
        run = await finish(pending)
        assert run.json() == {
            "hookSpecificOutput": {
                "hookEventName": "PermissionRequest",
                "decision": {"behavior": "allow"},
            }
        }
        # The grant covers the rule's pattern (npm commands) for this session...
        again = await hook(
            event("PreToolUse", "Bash", {"command": "npm test"}), env, "--rules", rules
        )
        decision = again.json()["hookSpecificOutput"]
        assert decision["permissionDecision"] == "allow"
        assert "grant from alice" in decision["permissionDecisionReason"]
        assert len(slack.messages) == 1
        # ...and for no other session.
        other = await start(
            "hook",
            "claude-code",
            "--rules",
            rules,
            env=env,
            stdin=event("PreToolUse", "Bash", {"command": "npm test"}, session="sess-2"),
        )
        message = await slack.wait_for_message(count=2, timeout=15)
        await slack.type(message, "not on a Friday", user="U0BOB")
        await slack.press_enter(message, user="U0BOB")
        denied = (await finish(other)).json()["hookSpecificOutput"]
        assert denied["permissionDecision"] == "deny"
        assert "not on a Friday" in denied["permissionDecisionReason"]


async def test_a_timeout_denies_and_withdraws(tmp_path: Path) -> None:
    rules = write_rules(tmp_path, "timeout = 1\n")
    async with FakeSlack(signing_secret=SECRET) as slack, relay_server(slack) as relay:
        env = clean_env(RELAY_URL=relay.url, RELAY_TOKEN=TOKEN)
        run = await hook(event("PreToolUse", "Bash", {"command": "deploy"}), env, "--rules", rules)
        decision = run.json()["hookSpecificOutput"]
        assert decision["permissionDecision"] == "deny"
        assert "No reviewer answered within 1 s" in decision["permissionDecisionReason"]
        message = slack.messages[0]
        await slack.wait_until(lambda: "Timed out" in json.dumps(message.blocks), timeout=10)


async def test_stopping_the_hook_withdraws_the_question_and_denies() -> None:
    async with FakeSlack(signing_secret=SECRET) as slack, relay_server(slack) as relay:
        env = clean_env(RELAY_URL=relay.url, RELAY_TOKEN=TOKEN)
        pending = await start(
            "hook", "claude-code", env=env, stdin=event("PreToolUse", "Bash", {"command": "x"})
        )
        message = await slack.wait_for_message(timeout=15)
        pending.send_signal(signal.SIGTERM)
        run = await finish(pending)
        assert run.code == 0
        assert run.json()["hookSpecificOutput"]["permissionDecision"] == "deny"
        await wait_withdrawn(slack, message)


# What a process that only reads its arguments (and, for the hook, its rules) must not load:
# Claude Code runs the hook before every tool call it matches, and these took 1.5-2 s of
# imports (the MCP SDK, slack-sdk, aiohttp) in a hook that never connects.
_CLIENTS = {"mcp", "slack_sdk", "slack_bolt", "aiohttp", "redis", "pydantic", "starlette"}
_RUN_AND_LIST = """
import json, sys
from relay.cli import main
code = main(sys.argv[1:])
sys.stderr.write("LOADED " + json.dumps(sorted({m.partition(".")[0] for m in sys.modules})))
sys.exit(code)
"""


async def _loaded(stdin: str, env: dict[str, str], *args: str) -> tuple[Run, set[str]]:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        _RUN_AND_LIST,
        *args,
        env=env,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(process.communicate(stdin.encode()), 60)
    assert process.returncode is not None
    text, _, loaded = err.decode().rpartition("LOADED ")
    return Run(process.returncode, out.decode(), text), set(json.loads(loaded))


@pytest.mark.parametrize(
    ("tool", "tool_input", "decision"),
    [
        ("Read", {"file_path": "/repo/a"}, "allow"),
        ("Bash", {"command": "rm -rf /"}, "deny"),
    ],
)
async def test_a_use_the_rules_decide_loads_no_client(
    tmp_path: Path, tool: str, tool_input: dict[str, Any], decision: str
) -> None:
    rules = write_rules(tmp_path, RULES)
    run, loaded = await _loaded(
        event("PreToolUse", tool, tool_input), clean_env(), "hook", "claude-code", "--rules", rules
    )
    assert run.code == 0, run.err
    assert run.json()["hookSpecificOutput"]["permissionDecision"] == decision
    assert loaded & _CLIENTS == set()


async def test_the_help_loads_no_client() -> None:
    run, loaded = await _loaded("", clean_env(), "--help")
    assert run.code == 0
    assert "hook" in run.out
    assert loaded & _CLIENTS == set()


async def test_a_use_the_rules_ask_about_loads_the_client_it_asks_with(tmp_path: Path) -> None:
    # The other side of the two tests above: the list is not empty by accident.
    rules = write_rules(tmp_path, RULES)
    down = clean_env(RELAY_URL=f"http://127.0.0.1:{free_port()}", RELAY_TOKEN=TOKEN)
    run, loaded = await _loaded(
        event("PreToolUse", "Bash", {"command": "npm publish"}),
        down,
        "hook",
        "claude-code",
        "--rules",
        rules,
    )
    assert run.json()["hookSpecificOutput"]["permissionDecision"] == "deny"
    assert "aiohttp" in loaded


async def test_a_long_wait_defers_and_the_resumed_run_gets_the_decision_unasked(
    tmp_path: Path,
) -> None:
    # Claude Code's defer (headless -p): the run ends with the call undecided, and claude -p
    # --resume fires the hook again for the same tool use.
    rules = write_rules(tmp_path, RULES)
    async with FakeSlack(signing_secret=SECRET) as slack, relay_server(slack) as relay:
        slack.add_user("U0ALICE", name="alice")
        env = clean_env(RELAY_URL=relay.url, RELAY_TOKEN=TOKEN)
        npm = event("PreToolUse", "Bash", {"command": "npm publish"})
        deferred = await hook(npm, env, "--rules", rules, "--defer-after", "1")
        output = deferred.json()["hookSpecificOutput"]
        assert output["permissionDecision"] == "defer"
        assert "--resume" in output["permissionDecisionReason"]
        (message,) = slack.messages
        assert "Withdrawn" not in json.dumps(message.blocks)  # still open in Slack
        # The resumed run (the same hook command; a longer wait only so that the click below
        # lands inside it) waits on the same question; the team allows; nothing new is asked.
        resumed = await start(
            "hook", "claude-code", "--rules", rules, "--defer-after", "60", env=env, stdin=npm
        )
        await slack.click(message, "Allow once", user="U0ALICE")
        run = await finish(resumed)
        assert run.json()["hookSpecificOutput"]["permissionDecision"] == "allow"
        # Resumed once more: the recorded decision, at once.
        again = await hook(npm, env, "--rules", rules, "--defer-after", "1")
        assert again.json()["hookSpecificOutput"]["permissionDecision"] == "allow"
        assert len(slack.messages) == 1
        # Another tool use (another id) is its own question.
        other = json.loads(npm) | {"tool_use_id": "toolu_02"}
        second = await hook(json.dumps(other), env, "--rules", rules, "--defer-after", "1")
        assert second.json()["hookSpecificOutput"]["permissionDecision"] == "defer"
        assert len(slack.messages) == 2
