"""Every recorded harness payload (``tests/payloads/hooks/``) through ``relay hook``: the
tool and its input reach the rules and the team, and an input field the harness renamed or
dropped is a deny naming it, never a question showing ``{}``.

Copilot CLI 1.0.102 sends ``permissionRequest`` the input as ``toolInput`` and
``preToolUse`` as ``toolArgs``: relay read ``toolArgs`` for both, so a reviewer saw ``{}``
and allowed ``rm -rf ./scratch`` blind, and a deny rule for ``rm -rf *`` never applied.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from relay.cli import build_parser
from relay.hooks import ADAPTERS, BadHookInput
from relay.hooks.intake import load_event
from relay.testing import FakeSlack
from tests.gate_env import clean_env, finish, start, write_rules
from tests.server_env import SECRET, TOKEN, relay_server

PAYLOADS = Path(__file__).parent / "payloads" / "hooks"
RULES = """
timeout = 20
default = "ask"

[[rules]]
action = "deny"
tools = ["Bash"]
commands = ["rm -rf *"]
reason = "recursive deletes are never allowed"
"""
# What each recorded payload must be read as: harness, tool, input, session, cwd, tool use.
PROJECT = "/home/dev/project"
RM = {"command": "rm -rf ./scratch"}
EXPECTED: dict[str, tuple[str, str, dict[str, Any], str, str | None]] = {
    "claude-code-PreToolUse": (
        "claude-code",
        "Bash",
        {**RM, "description": "the task needs it"},
        "eff26664-48b8-434a-b1b8-c83b7dfccf04",
        "toolu_e2e",
    ),
    "claude-code-PermissionRequest": (
        "claude-code",
        "Bash",
        {**RM, "description": "the task needs it"},
        "eff26664-48b8-434a-b1b8-c83b7dfccf04",
        None,
    ),
    "codex-PreToolUse": ("codex", "Bash", RM, "01a24b0b-3035-7391-909c-7a76591ca562", "call_1"),
    "codex-PermissionRequest": (
        "codex",
        "Bash",
        {**RM, "description": "the task needs it"},
        "01a24b0b-3035-7391-909c-7a76591ca562",
        "01a24b0b-3049-7fe3-b460-d2e046bc6e3f",
    ),
    "copilot-permissionRequest": (
        "copilot",
        "Bash",
        RM,
        "6900f424-e747-4901-9a44-228d6ab857af",
        None,
    ),
    "copilot-preToolUse": (
        "copilot",
        "Bash",
        {**RM, "description": "clean up"},
        "6900f424-e747-4901-9a44-228d6ab857af",
        None,
    ),
    "copilot-PreToolUse": (
        "copilot",
        "Bash",
        {**RM, "description": "clean up"},
        "6900f424-e747-4901-9a44-228d6ab857af",
        None,
    ),
    "cursor-beforeShellExecution": (
        "cursor",
        "Bash",
        RM,
        "b2c4e6f8-1a3b-4c5d-8e9f-0a1b2c3d4e5f",
        None,
    ),
    "cursor-beforeMCPExecution": (
        "cursor",
        "deploy",
        {"env": "prod", "service": "api"},
        "b2c4e6f8-1a3b-4c5d-8e9f-0a1b2c3d4e5f",
        None,
    ),
}
# Where each payload keeps the tool's input (what a renamed field would lose).
INPUT_KEY = {
    "claude-code": "tool_input",
    "codex": "tool_input",
    "copilot-permissionRequest": "toolInput",
    "copilot-preToolUse": "toolArgs",
    "copilot-PreToolUse": "tool_input",
    "cursor-beforeShellExecution": "command",
    "cursor-beforeMCPExecution": "tool_input",
}


def payload(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((PAYLOADS / f"{name}.json").read_text())
    return loaded


def input_key(name: str) -> str:
    return INPUT_KEY.get(name) or INPUT_KEY[EXPECTED[name][0]]


def is_deny(harness: str, out: str, code: int) -> bool:
    """Whether the hook's answer is its harness's deny for either of its events."""
    if code == 2:
        return harness in ("claude-code", "codex") and out == ""
    answer = json.loads(out)
    if harness == "cursor":
        return bool(answer["permission"] == "deny")
    if harness == "copilot":
        return "deny" in (answer.get("behavior"), answer.get("permissionDecision"))
    specific = answer["hookSpecificOutput"]
    return "deny" in (
        specific.get("permissionDecision"),
        specific.get("decision", {}).get("behavior"),
    )


def test_every_recorded_payload_has_a_table_entry() -> None:
    assert sorted(p.stem for p in PAYLOADS.glob("*.json")) == sorted(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_recorded_payload_is_read_by_its_table(name: str) -> None:
    harness, tool, tool_input, session, tool_use_id = EXPECTED[name]
    adapter = ADAPTERS[harness]
    args = build_parser().parse_args(["hook", harness])
    call = adapter.read(load_event((PAYLOADS / f"{name}.json").read_bytes()), args)
    assert (call.tool, dict(call.input)) == (tool, tool_input)
    assert (call.session, call.cwd, call.tool_use_id) == (session, PROJECT, tool_use_id)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_a_missing_or_renamed_input_field_is_named_in_the_deny(name: str) -> None:
    harness = EXPECTED[name][0]
    adapter = ADAPTERS[harness]
    args = build_parser().parse_args(["hook", harness])
    key = input_key(name)
    data = payload(name)
    renamed = {("input" if k == key else k): v for k, v in data.items()}
    for broken in ({k: v for k, v in data.items() if k != key}, renamed, {**data, key: None}):
        with pytest.raises(BadHookInput) as caught:
            adapter.read(load_event(json.dumps(broken).encode()), args)
        assert f"has no {key}" in str(caught.value)
        assert "\n" not in str(caught.value)


@pytest.mark.parametrize("name", sorted(EXPECTED))
async def test_each_recorded_payload_meets_the_rules_through_relay_hook(
    tmp_path: Path, name: str
) -> None:
    harness = EXPECTED[name][0]
    rules = write_rules(tmp_path, RULES)
    data = payload(name)
    if name == "cursor-beforeMCPExecution":  # an MCP tool: deny it by name instead
        rules = write_rules(tmp_path, RULES + '\n[[rules]]\naction = "deny"\ntools = ["deploy"]\n')
    run = await finish(
        await start("hook", harness, "--rules", rules, env=clean_env(), stdin=json.dumps(data))
    )
    assert run.code == 0, run.err
    assert is_deny(harness, run.out, run.code), run.out
    if name != "cursor-beforeMCPExecution":
        assert "recursive deletes are never allowed" in run.out
    # The same payload without its input field: a deny naming the field, one line on stderr.
    key = input_key(name)
    del data[key]
    run = await finish(
        await start("hook", harness, "--rules", rules, env=clean_env(), stdin=json.dumps(data))
    )
    assert is_deny(harness, run.out, run.code), (run.out, run.err)
    assert run.err.count("\n") == 1, run.err
    assert f"has no {key}" in run.err
    assert "Traceback" not in run.err


async def test_the_team_sees_each_recorded_payloads_tool_input(tmp_path: Path) -> None:
    rules = write_rules(tmp_path, 'timeout = 20\ndefault = "ask"\n')
    async with FakeSlack(signing_secret=SECRET) as slack, relay_server(slack) as relay:
        slack.add_user("U0ALICE", name="alice")
        env = clean_env(RELAY_URL=relay.url, RELAY_TOKEN=TOKEN)
        for n, name in enumerate(sorted(EXPECTED), start=1):
            harness, _, tool_input, _, _ = EXPECTED[name]
            pending = await start(
                "hook", harness, "--rules", rules, env=env, stdin=json.dumps(payload(name))
            )
            message = await slack.wait_for_message(count=n, timeout=15)
            shown = json.dumps(message.blocks)
            for value in tool_input.values():
                assert json.dumps(value)[1:-1] in shown, (name, shown)
            await slack.click(message, "Deny", user="U0ALICE")
            run = await finish(pending)
            assert is_deny(harness, run.out, run.code), (name, run.out)


def test_the_copilot_page_names_the_fields_relay_reads() -> None:
    from relay.hooks.copilot import FIELDS

    page = (Path(__file__).parent.parent / "docs" / "harnesses" / "copilot.md").read_text()
    table = page.split("<!-- fields: copilot -->\n", 1)[1].split("\n\n", 1)[0]
    rows = [line.split("|")[1:-1] for line in table.splitlines()[2:]]
    documented = {
        _first_code(event): (_first_code(tool_input), _first_code(tool), _first_code(session))
        for event, tool_input, tool, session, _ in rows
    }
    assert documented == {
        event: (fields.input, fields.tool, fields.session[0])
        for event, fields in FIELDS.items()
        if event != "PermissionRequest"  # not sent by 1.0.102: the same as permissionRequest
    }


def _first_code(cell: str) -> str:
    return cell.split("`")[1]
