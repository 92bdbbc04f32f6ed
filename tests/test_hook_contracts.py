"""Each ``relay hook HARNESS`` against its harness's published contract, as a subprocess.

Codex publishes JSON schemas for its hooks (those of the version the end-to-end test
runs, vendored in ``tests/data/codex/``, see its NOTICE): the inputs here are validated
against the input schemas first (so they are inputs Codex can send), and every output the
hook writes against the output schemas. Copilot and Cursor publish tables, not schemas: the
schemas below transcribe those tables (the field names and values the docs list, nothing
else). Every failure path must come out as the harness's own deny.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from tests.gate_env import Run, clean_env, finish, start, write_rules
from tests.server_env import TOKEN, free_port

CODEX = Path(__file__).parent / "data" / "codex"
RULES = """
timeout = 20
default = "ask"

[[rules]]
action = "allow"
tools = ["Bash"]
commands = ["git status"]

[[rules]]
action = "allow"
tools = ["view", "read_docs"]

[[rules]]
action = "deny"
tools = ["Bash"]
commands = ["rm -rf *"]
reason = "recursive deletes are never allowed"
"""


def schema(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((CODEX / f"{name}.schema.json").read_text())
    return loaded


def codex_event(event: str, command: str) -> dict[str, Any]:
    common = {
        "session_id": "0199-thread",
        "transcript_path": None,
        "cwd": "/repo",
        "hook_event_name": event,
        "model": "gpt-5.5",
        "permission_mode": "default",
        "tool_name": "Bash",
    }
    if event == "PermissionRequest":
        data = {**common, "turn_id": "turn-1", "tool_input": {"command": command}}
        data["tool_input"]["description"] = "run it"
        jsonschema.validate(data, schema("permission-request.command.input"))
    else:
        data = {
            **common,
            "turn_id": "turn-1",
            "tool_use_id": "call_1",
            "tool_input": {"command": command},
        }
        jsonschema.validate(data, schema("pre-tool-use.command.input"))
    return data


async def hook(harness: str, data: Any, *args: str, env: dict[str, str] | None = None) -> Run:
    stdin = data if isinstance(data, str) else json.dumps(data)
    return await finish(await start("hook", harness, *args, env=env or clean_env(), stdin=stdin))


async def test_codex_permission_request_answers_in_its_schema(tmp_path: Path) -> None:
    rules = write_rules(tmp_path, RULES)
    out = schema("permission-request.command.output")
    allowed = await hook("codex", codex_event("PermissionRequest", "git status"), "--rules", rules)
    assert allowed.code == 0, allowed.err
    jsonschema.validate(allowed.json(), out)
    assert allowed.json() == {
        "hookSpecificOutput": {
            "hookEventName": "PermissionRequest",
            "decision": {"behavior": "allow"},
        }
    }
    denied = await hook("codex", codex_event("PermissionRequest", "rm -rf /"), "--rules", rules)
    jsonschema.validate(denied.json(), out)
    decision = denied.json()["hookSpecificOutput"]["decision"]
    assert decision == {"behavior": "deny", "message": "recursive deletes are never allowed"}
    # Nothing Codex reserves (it would fail closed on them).
    assert not {"updatedInput", "updatedPermissions", "interrupt"} & set(decision)


async def test_codex_pre_tool_use_only_ever_denies(tmp_path: Path) -> None:
    rules = write_rules(tmp_path, RULES)
    denied = await hook("codex", codex_event("PreToolUse", "rm -rf /"), "--rules", rules)
    jsonschema.validate(denied.json(), schema("pre-tool-use.command.output"))
    assert denied.json()["hookSpecificOutput"] == {
        "hookEventName": "PreToolUse",
        "permissionDecision": "deny",
        "permissionDecisionReason": "recursive deletes are never allowed",
    }
    allowed = await hook("codex", codex_event("PreToolUse", "git status"), "--rules", rules)
    assert (allowed.code, allowed.out) == (0, "")  # an allow is Codex's own policy's to make


async def test_codex_fails_closed_in_its_schema(tmp_path: Path) -> None:
    out = schema("permission-request.command.output")
    npm = codex_event("PermissionRequest", "npm publish")
    down = clean_env(RELAY_URL=f"http://127.0.0.1:{free_port()}", RELAY_TOKEN=TOKEN)
    runs = (
        await hook("codex", npm),  # nothing configured to ask with
        await hook("codex", npm, env=down),  # a relay that is not there
        await hook("codex", npm, "--rules", write_rules(tmp_path, 'default = "maybe"\n')),
    )
    for run, why in zip(runs, ("USAGE", "cannot reach the relay", "BAD_RULES"), strict=True):
        assert run.code == 0, run.err
        jsonschema.validate(run.json(), out)
        decision = run.json()["hookSpecificOutput"]["decision"]
        assert decision["behavior"] == "deny"
        assert why in decision["message"]
    # Input that is no Codex event: exit 2 with the reason on stderr is Codex's deny.
    for bad in ("not json", {"hook_event_name": "Stop"}, {**npm, "tool_input": "rm -rf /"}):
        run = await hook("codex", bad)
        assert run.code == 2
        assert run.err.startswith("relay: error: BAD_HOOK_INPUT: ")
        assert run.out == ""


# GitHub's "Copilot CLI hooks reference": permissionRequest and preToolUse decision control.
COPILOT_PERMISSION = {
    "type": "object",
    "additionalProperties": False,
    "required": ["behavior"],
    "properties": {
        "behavior": {"enum": ["allow", "deny"]},
        "message": {"type": "string"},
        "interrupt": {"type": "boolean"},
    },
}
COPILOT_PRE_TOOL_USE = {
    "type": "object",
    "additionalProperties": False,
    "required": ["permissionDecision"],
    "properties": {
        "permissionDecision": {"enum": ["allow", "deny", "ask"]},
        "permissionDecisionReason": {"type": "string"},
        "modifiedArgs": {"type": "object"},
    },
}


PAYLOADS = Path(__file__).parent / "payloads" / "hooks"


def copilot_event(tool: str, args: Any, event: str = "permissionRequest") -> dict[str, Any]:
    """Copilot CLI 1.0.102's input for ``event`` (recorded), with this tool and input."""
    data: dict[str, Any] = json.loads((PAYLOADS / f"copilot-{event}.json").read_text())
    data["toolName"] = tool
    data["toolInput" if event == "permissionRequest" else "toolArgs"] = args
    return data


@pytest.mark.parametrize("as_string", [False, True])
async def test_copilot_answers_each_event_in_its_documented_fields(
    tmp_path: Path, as_string: bool
) -> None:
    rules = write_rules(tmp_path, RULES)

    def args(value: dict[str, Any]) -> Any:
        return json.dumps(value) if as_string else value  # a JSON string is read too

    allowed = await hook(
        "copilot", copilot_event("bash", args({"command": "git status"})), "--rules", rules
    )
    jsonschema.validate(allowed.json(), COPILOT_PERMISSION)
    assert allowed.json() == {"behavior": "allow"}
    denied = await hook(
        "copilot", copilot_event("bash", args({"command": "rm -rf /"})), "--rules", rules
    )
    assert denied.json() == {"behavior": "deny", "message": "recursive deletes are never allowed"}
    # preToolUse names no event: its input is read as preToolUse's, --event or not.
    pre_tool_use = copilot_event("bash", args({"command": "rm -rf /"}), "preToolUse")
    for flags in ((), ("--event", "preToolUse")):
        pre = await hook("copilot", pre_tool_use, "--rules", rules, *flags)
        jsonschema.validate(pre.json(), COPILOT_PRE_TOOL_USE)
        assert pre.json()["permissionDecision"] == "deny"
    viewed = await hook(
        "copilot", copilot_event("view", args({"path": "README.md"})), "--rules", rules
    )
    assert viewed.json() == {"behavior": "allow"}


async def test_copilot_reads_the_vs_code_compatible_form(tmp_path: Path) -> None:
    rules = write_rules(tmp_path, RULES)
    data = {
        "hook_event_name": "PreToolUse",
        "session_id": "s-1",
        "timestamp": "2026-12-05T12:00:00Z",
        "cwd": "/repo",
        "tool_name": "bash",
        "tool_input": {"command": "rm -rf /"},
    }
    run = await hook("copilot", data, "--rules", rules)
    jsonschema.validate(run.json(), COPILOT_PRE_TOOL_USE)
    assert run.json()["permissionDecision"] == "deny"


async def test_copilot_fails_closed(tmp_path: Path) -> None:
    npm = copilot_event("bash", {"command": "npm publish"})
    down = clean_env(RELAY_URL=f"http://127.0.0.1:{free_port()}", RELAY_TOKEN=TOKEN)
    run = await hook("copilot", npm, env=down)
    jsonschema.validate(run.json(), COPILOT_PERMISSION)
    assert run.json()["behavior"] == "deny"
    assert "cannot reach the relay" in run.json()["message"]
    run = await hook("copilot", copilot_event("bash", {"command": "npm publish"}, "preToolUse"))
    jsonschema.validate(run.json(), COPILOT_PRE_TOOL_USE)
    assert run.json()["permissionDecision"] == "deny"
    bad_rules = write_rules(tmp_path, "timeout = -1\n")
    run = await hook("copilot", npm, "--rules", bad_rules)
    jsonschema.validate(run.json(), COPILOT_PERMISSION)
    assert run.json()["behavior"] == "deny"
    assert "BAD_RULES" in run.json()["message"]
    # Unreadable input, whichever event it was for: a deny both events read.
    run = await hook("copilot", "[]")
    assert run.code == 0
    assert run.json()["behavior"] == run.json()["permissionDecision"] == "deny"
    assert "BAD_HOOK_INPUT" in run.json()["message"]


# Cursor's hooks docs: beforeShellExecution and beforeMCPExecution output.
CURSOR_OUTPUT = {
    "type": "object",
    "additionalProperties": False,
    "required": ["permission"],
    "properties": {
        "permission": {"enum": ["allow", "deny", "ask"]},
        "user_message": {"type": "string"},
        "agent_message": {"type": "string"},
    },
}


def cursor_event(event: str, **fields: Any) -> dict[str, Any]:
    return {
        "hook_event_name": event,
        "conversation_id": "conv-1",
        "generation_id": "gen-1",
        "workspace_roots": ["/repo"],
        **fields,
    }


async def test_cursor_answers_shell_and_mcp_calls(tmp_path: Path) -> None:
    rules = write_rules(tmp_path, RULES)
    shell = cursor_event("beforeShellExecution", command="rm -rf /", cwd="/repo")
    run = await hook("cursor", shell, "--rules", rules)
    jsonschema.validate(run.json(), CURSOR_OUTPUT)
    assert run.json() == {
        "permission": "deny",
        "user_message": "recursive deletes are never allowed",
        "agent_message": "recursive deletes are never allowed",
    }
    ok = await hook("cursor", {**shell, "command": "git status"}, "--rules", rules)
    assert ok.json() == {"permission": "allow"}
    for tool_input in ({"q": "x"}, json.dumps({"q": "x"})):
        mcp = cursor_event(
            "beforeMCPExecution", tool_name="read_docs", tool_input=tool_input, url="http://x"
        )
        run = await hook("cursor", mcp, "--rules", rules)
        jsonschema.validate(run.json(), CURSOR_OUTPUT)
        assert run.json() == {"permission": "allow"}


async def test_cursor_fails_closed(tmp_path: Path) -> None:
    npm = cursor_event("beforeShellExecution", command="npm publish", cwd="/repo")
    bad_rules = write_rules(tmp_path, "[[rules]]\naction = 1\n")
    down = clean_env(RELAY_URL=f"http://127.0.0.1:{free_port()}", RELAY_TOKEN=TOKEN)
    runs = (
        await hook("cursor", npm),
        await hook("cursor", npm, "--rules", bad_rules),
        await hook("cursor", npm, env=down),
    )
    for run, why in zip(runs, ("USAGE", "BAD_RULES", "cannot reach the relay"), strict=True):
        assert run.code == 0
        jsonschema.validate(run.json(), CURSOR_OUTPUT)
        assert run.json()["permission"] == "deny"
        assert why in run.json()["agent_message"]
    for bad in ("{", cursor_event("afterFileEdit"), cursor_event("beforeShellExecution")):
        run = await hook("cursor", bad)
        assert run.code == 0
        jsonschema.validate(run.json(), CURSOR_OUTPUT)
        assert run.json()["permission"] == "deny"
        assert "BAD_HOOK_INPUT" in run.json()["agent_message"]
