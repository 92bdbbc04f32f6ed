"""Issue 37, hole 3: what is allowed without a person is decided where the agent cannot
write. ``relay serve`` reads the operator's ``RELAY_RULES_FILE``; a hook's or client's rules
(a file the agent can edit) can only make a decision stricter. The hook and ``relay exec``
run as subprocesses against ``relay serve``."""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from typing import Any

from relay.cli.exec_ import EXIT_DENIED
from relay.testing import FakeSlack
from tests.gate_env import clean_env, finish, start, write_rules
from tests.mcp_env import http_client, result_json, stdio_client
from tests.server_env import OTHER_TOKEN, SECRET, TOKEN, relay_server

OTHER = hashlib.sha256(OTHER_TOKEN.encode()).hexdigest()[:32]
OPERATOR = f"""
default = "ask"
[[rules]]
action = "allow"
tools = ["Read"]
[[rules]]
action = "deny"
paths = ["/etc/*"]
reason = "nothing writes under /etc"

[tokens.{OTHER}]
default = "deny"
"""
# What an agent would write into its own project's rules file.
AGENTS_OWN = 'default = "allow"\n'


def event(tool: str, tool_input: dict[str, Any], cwd: Path) -> str:
    return json.dumps(
        {
            "hook_event_name": "PreToolUse",
            "session_id": "s1",
            "cwd": str(cwd),
            "tool_name": tool,
            "tool_input": tool_input,
            "tool_use_id": "t1",
        }
    )


def operator_file(tmp: Path) -> str:
    path = tmp / "operator.toml"
    path.write_text(OPERATOR)
    return str(path)


async def test_an_agent_written_allow_cannot_pass_the_operators_rules(tmp_path: Path) -> None:
    own = write_rules(tmp_path, AGENTS_OWN)
    async with (
        FakeSlack(signing_secret=SECRET) as slack,
        relay_server(slack, RELAY_RULES_FILE=operator_file(tmp_path)) as relay,
    ):
        slack.add_user("U0ALICE", name="alice")
        env = clean_env(RELAY_URL=relay.url, RELAY_TOKEN=TOKEN)

        async def hook(tool: str, tool_input: dict[str, Any]) -> Any:
            stdin = event(tool, tool_input, tmp_path)
            return await start("hook", "claude-code", "--rules", own, env=env, stdin=stdin)

        # The operator denies: the agent's own allow-everything file does not matter.
        run = await finish(
            await hook("Write", {"file_path": "/var/../etc/cron.d/x", "content": "x"})
        )
        out = run.json()["hookSpecificOutput"]
        assert out["permissionDecision"] == "deny", run
        assert out["permissionDecisionReason"] == "nothing writes under /etc"
        # The operator allows: at once, nothing posted.
        run = await finish(await hook("Read", {"file_path": str(tmp_path / "a.txt")}))
        assert run.json()["hookSpecificOutput"]["permissionDecision"] == "allow"
        assert not slack.messages
        # The operator would ask: a person is asked, whatever the agent's file says.
        pending = await hook("Bash", {"command": "make deploy"})
        message = await slack.wait_for_message(timeout=15)
        assert "make deploy" in str(message.blocks)
        await slack.click(message, "Deny", user="U0ALICE")
        run = await finish(pending)
        assert run.json()["hookSpecificOutput"]["permissionDecision"] == "deny"


async def test_exec_is_held_to_the_operators_rules_too(tmp_path: Path) -> None:
    own = write_rules(tmp_path, AGENTS_OWN)
    marker = tmp_path / "ran"
    touch = [sys.executable, "-c", f"open({str(marker)!r}, 'w')"]
    async with (
        FakeSlack(signing_secret=SECRET) as slack,
        relay_server(slack, RELAY_RULES_FILE=operator_file(tmp_path)) as relay,
    ):
        env = clean_env(RELAY_URL=relay.url, RELAY_TOKEN=TOKEN)
        pending = await start("exec", "--rules", own, "--", *touch, env=env)
        message = await slack.wait_for_message(timeout=15)
        await slack.click(message, "Deny", user="U0ALICE")
        run = await finish(pending)
        assert run.code == EXIT_DENIED, run.err
        assert not marker.exists()


async def test_a_tokens_section_and_the_client_verdict_on_the_api(tmp_path: Path) -> None:
    use = {"tool": "Bash", "input": {"command": "ls"}, "agent": {"id": "a1"}}
    async with (
        FakeSlack(signing_secret=SECRET) as slack,
        relay_server(slack, RELAY_RULES_FILE=operator_file(tmp_path)) as relay,
    ):
        # The other token's section denies what no rule names, even when its client allows.
        status, body = await relay.request(
            "POST", "/v1/approvals", json={**use, "client_verdict": "allow"}, token=OTHER_TOKEN
        )
        assert (status, body["decision"]["behavior"]) == (200, "deny")
        # A client's ask stays an ask even where the operator would allow (stricter wins).
        read = {**use, "tool": "Read", "input": {"file_path": "/srv/a"}}
        status, body = await relay.request("POST", "/v1/approvals", json=read)
        assert (status, body["decision"]) == (201, None)
        status, body = await relay.request(
            "POST", "/v1/approvals", json={**read, "client_verdict": "allow"}
        )
        assert (status, body["decision"]["outcome"]) == (200, "allowed")
        status, body = await relay.request(
            "POST", "/v1/approvals", json={**use, "client_verdict": "yes"}
        )
        assert (status, body["error"]["code"]) == (400, "BAD_REQUEST")
        assert len(slack.messages) == 1


async def test_relay_mcp_is_held_to_the_operators_rules_too(tmp_path: Path) -> None:
    own = write_rules(tmp_path, AGENTS_OWN)
    async with (
        FakeSlack(signing_secret=SECRET) as slack,
        relay_server(slack, RELAY_RULES_FILE=operator_file(tmp_path)) as relay,
        stdio_client({"RELAY_URL": relay.url, "RELAY_TOKEN": TOKEN}, "--rules", own) as client,
    ):
        write = {"file_path": "//etc/cron.d/x", "content": "x"}
        denied = await client.call_tool("approve_tool_use", {"tool_name": "Write", "input": write})
        assert result_json(denied)["behavior"] == "deny"
        read = {"file_path": str(tmp_path / "a")}
        allowed = await client.call_tool("approve_tool_use", {"tool_name": "Read", "input": read})
        assert result_json(allowed)["behavior"] == "allow"
        assert not slack.messages


async def test_approve_tool_use_on_slash_mcp_follows_the_operators_rules(tmp_path: Path) -> None:
    async with (
        FakeSlack(signing_secret=SECRET) as slack,
        relay_server(slack, RELAY_RULES_FILE=operator_file(tmp_path)) as relay,
        http_client(relay) as client,
    ):
        write = {"file_path": "/var/../etc/cron.d/x", "content": "x"}
        denied = await client.call_tool("approve_tool_use", {"tool_name": "Write", "input": write})
        assert result_json(denied)["behavior"] == "deny"
        read = {"file_path": "/srv/a"}
        allowed = await client.call_tool("approve_tool_use", {"tool_name": "Read", "input": read})
        assert result_json(allowed)["behavior"] == "allow"
        assert not slack.messages


async def test_a_tokens_section_holds_on_slash_mcp_too(tmp_path: Path) -> None:
    # The other token's section denies what no rule names: on /mcp as on /v1/approvals,
    # while the global rules still ask for the first token.
    async with (
        FakeSlack(signing_secret=SECRET) as slack,
        relay_server(slack, RELAY_RULES_FILE=operator_file(tmp_path)) as relay,
        http_client(relay, token=OTHER_TOKEN) as client,
    ):
        use = {"tool_name": "Bash", "input": {"command": "ls"}}
        denied = await client.call_tool("approve_tool_use", use)
        assert result_json(denied)["behavior"] == "deny"
        read = {"tool_name": "Read", "input": {"file_path": "/srv/a"}}
        allowed = await client.call_tool("approve_tool_use", read)
        assert result_json(allowed)["behavior"] == "allow"
        assert not slack.messages


async def test_the_operators_approvers_decide_who_may_answer(tmp_path: Path) -> None:
    path = tmp_path / "operator.toml"
    path.write_text(
        '[[rules]]\naction = "ask"\ncommands = ["make deploy*"]\napprovers = ["U0LEAD"]\n'
    )
    deploy = {"tool": "Bash", "input": {"command": "make deploy"}, "agent": {"id": "a1"}}
    async with (
        FakeSlack(signing_secret=SECRET) as slack,
        relay_server(slack, RELAY_RULES_FILE=str(path)) as relay,
    ):
        # The body names someone else: the operator's approvers stand instead.
        body = {**deploy, "slack": {"allowed_users": ["U0ALICE"]}}
        status, created = await relay.request("POST", "/v1/approvals", json=body)
        assert status == 201, created
        message = await slack.wait_for_message(timeout=15)
        await slack.click(message, "Allow once", user="U0ALICE")
        status, still = await relay.request("GET", f"/v1/approvals/{created['id']}")
        assert (status, still["status"]) == (200, "pending")
        await slack.click(message, "Allow once", user="U0LEAD")
        status, done = await relay.request("GET", f"/v1/approvals/{created['id']}?wait=5")
        assert done["decision"]["behavior"] == "allow"
        assert done["decision"]["by"]["id"] == "U0LEAD"
