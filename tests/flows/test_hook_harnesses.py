"""Flow: Codex, Copilot and Cursor run ``relay hook codex|copilot|cursor`` against a real
``relay serve`` with FakeSlack as the team: the same rules, reviewer, grants and fail-closed
ends as Claude Code's hook, each answered in its harness's own shape.
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
from tests.gate_env import clean_env, finish, start, write_rules
from tests.mcp_env import wait_withdrawn
from tests.server_env import SECRET, TOKEN, relay_server

RULES = """
timeout = 20
default = "ask"

[[rules]]
action = "ask"
tools = ["Bash"]
commands = ["npm *"]  # a glob: a rule's regex never widens a grant
"""


def codex(command: str, session: str = "thread-1") -> str:
    return json.dumps(
        {
            "session_id": session,
            "turn_id": "turn-1",
            "transcript_path": None,
            "cwd": "/repo",
            "hook_event_name": "PermissionRequest",
            "model": "gpt-5.5",
            "permission_mode": "default",
            "tool_name": "Bash",
            "tool_input": {"command": command, "description": "install the deps"},
        }
    )


def copilot(command: str) -> str:
    """Copilot CLI 1.0.102's permissionRequest input (tests/payloads/hooks/)."""
    return json.dumps(
        {
            "hookName": "permissionRequest",
            "sessionId": "cp-1",
            "timestamp": 1,
            "cwd": "/repo",
            "toolName": "bash",
            "toolInput": {"command": command},
            "permissionSuggestions": [],
        }
    )


def cursor(command: str, conversation: str = "conv-1") -> str:
    return json.dumps(
        {
            "hook_event_name": "beforeShellExecution",
            "conversation_id": conversation,
            "generation_id": "gen-1",
            "workspace_roots": ["/repo"],
            "command": command,
            "cwd": "/repo",
        }
    )


async def hook(harness: str, stdin: str, env: dict[str, str], *args: str) -> Any:
    return await start("hook", harness, *args, env=env, stdin=stdin)


async def test_the_team_decides_for_codex_copilot_and_cursor(tmp_path: Path) -> None:
    rules = write_rules(tmp_path, RULES)
    # The grant's scope is the relay's: its operator's ask rule (the same npm rule here).
    async with (
        FakeSlack(signing_secret=SECRET) as slack,
        relay_server(slack, RELAY_RULES_FILE=rules) as relay,
    ):
        slack.add_user("U0ALICE", name="alice")
        env = clean_env(RELAY_URL=relay.url, RELAY_TOKEN=TOKEN)
        # Codex: the reviewer sees Codex and the command, and allows once.
        pending = await hook("codex", codex("npm install left-pad"), env, "--rules", rules)
        message = await slack.wait_for_message(timeout=15)
        shown = json.dumps(message.blocks)
        assert "Codex" in shown
        assert "npm install left-pad" in shown
        await slack.click(message, "Allow once", user="U0ALICE")
        run = await finish(pending)
        assert run.json() == {
            "hookSpecificOutput": {
                "hookEventName": "PermissionRequest",
                "decision": {"behavior": "allow"},
            }
        }
        # Copilot: the reviewer types a reason, which denies with it.
        pending = await hook("copilot", copilot("npm publish"), env, "--rules", rules)
        message = await slack.wait_for_message(count=2, timeout=15)
        assert "Copilot" in json.dumps(message.blocks)
        await slack.type(message, "not before the release notes", user="U0ALICE")
        await slack.press_enter(message, user="U0ALICE")
        run = await finish(pending)
        assert run.json()["behavior"] == "deny"
        assert "not before the release notes" in run.json()["message"]
        # Cursor: a session grant covers the rule's commands in this conversation only.
        pending = await hook("cursor", cursor("npm ci"), env, "--rules", rules)
        message = await slack.wait_for_message(count=3, timeout=15)
        assert "Cursor" in json.dumps(message.blocks)
        await slack.click(message, "Allow for this session", user="U0ALICE")
        assert (await finish(pending)).json() == {"permission": "allow"}
        again = await finish(await hook("cursor", cursor("npm test"), env, "--rules", rules))
        assert again.json() == {"permission": "allow"}
        assert len(slack.messages) == 3
        other = await hook(
            "cursor", cursor("npm test", conversation="conv-2"), env, "--rules", rules
        )
        message = await slack.wait_for_message(count=4, timeout=15)
        await slack.click(message, "Deny", user="U0ALICE")
        denied = (await finish(other)).json()
        assert denied["permission"] == "deny"
        assert "alice denied this" in denied["agent_message"]


async def test_a_stopped_or_timed_out_hook_denies_and_withdraws(tmp_path: Path) -> None:
    async with FakeSlack(signing_secret=SECRET) as slack, relay_server(slack) as relay:
        env = clean_env(RELAY_URL=relay.url, RELAY_TOKEN=TOKEN)
        # Killed by the harness (Copilot's timeoutSec, Cursor's timeout): the question goes.
        for n, (harness, stdin) in enumerate(
            (("cursor", cursor("deploy")), ("copilot", copilot("deploy")), ("codex", codex("x"))),
            start=1,
        ):
            pending = await hook(harness, stdin, env)
            message = await slack.wait_for_message(count=n, timeout=15)
            pending.send_signal(signal.SIGTERM)
            run = await finish(pending)
            assert run.code == 0
            assert "deny" in run.out
            await wait_withdrawn(slack, message)
        # Nobody answers within the rules' timeout: a deny, and the question says so.
        short = write_rules(tmp_path, "timeout = 1\n")
        run = await finish(await hook("codex", codex("deploy"), env, "--rules", short))
        decision = run.json()["hookSpecificOutput"]["decision"]
        assert decision["behavior"] == "deny"
        assert "No reviewer answered within 1 s" in decision["message"]
        run = await finish(await hook("copilot", copilot("deploy"), env, "--rules", short))
        assert run.json()["behavior"] == "deny"
        assert "No reviewer answered within 1 s" in run.json()["message"]
        run = await finish(await hook("cursor", cursor("deploy"), env, "--rules", short))
        assert run.json()["permission"] == "deny"
        assert "No reviewer answered within 1 s" in run.json()["agent_message"]


# A hook runs before every tool call its harness matches: one the rules decide must load
# nothing it does not need (bench.cli_start times it; this holds the reason it is fast).
_NOT_FOR_THE_RULES = {
    "asyncio",
    "aiohttp",
    "slack_sdk",
    "mcp",
    "relay.seam.questions",
    "relay.asks",
}
_RUN_AND_LIST = """
import json, sys
from relay.cli import main
code = main(sys.argv[1:])
sys.stderr.write("LOADED " + json.dumps(sorted(sys.modules)))
sys.exit(code)
"""


async def _loaded(harness: str, stdin: str, *args: str) -> tuple[str, set[str]]:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        _RUN_AND_LIST,
        "hook",
        harness,
        *args,
        env=clean_env(),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(process.communicate(stdin.encode()), 60)
    assert process.returncode == 0, err.decode()
    return out.decode(), set(json.loads(err.decode().rpartition("LOADED ")[2]))


@pytest.mark.parametrize(
    ("harness", "command", "word"),
    [
        ("codex", "rm -rf /", '"deny"'),
        ("copilot", "rm -rf /", '"deny"'),
        ("cursor", "rm -rf /", '"deny"'),
        ("cursor", "git status", '"allow"'),
    ],
)
async def test_a_use_the_rules_decide_loads_neither_asyncio_nor_a_client(
    tmp_path: Path, harness: str, command: str, word: str
) -> None:
    event = {"codex": codex, "copilot": copilot, "cursor": cursor}[harness]
    rules = write_rules(
        tmp_path,
        '[[rules]]\naction = "deny"\ntools = ["Bash"]\ncommands = ["rm -rf *"]\n\n'
        '[[rules]]\naction = "allow"\ntools = ["Bash"]\ncommands = ["git status"]\n',
    )
    out, loaded = await _loaded(harness, event(command), "--rules", rules)
    assert word in out
    assert loaded & _NOT_FOR_THE_RULES == set()
    # The other side: a use the team is asked about does load them (the list is not empty
    # by accident).
    _, asked = await _loaded(harness, event("npm publish"), "--rules", rules)
    assert "asyncio" in asked
