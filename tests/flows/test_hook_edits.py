"""Flow: Copilot's ``preToolUse`` and Cursor's ``preToolUse`` hooks offer the team *Edit…*,
and answer an edited allow in the field each harness runs instead of the call it proposed:
Copilot's ``modifiedArgs`` (its published hook output schema), Cursor's ``updated_input``
(what ``@cursor/sdk`` 1.0.18's hook runtime validates and merges into the call). Events
that cannot run an edit offer none. The inputs are the recorded Copilot CLI 1.0.102
payloads and the fields Cursor's runtime builds.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema

from relay.hooks.common import HookCall, RulesDecision
from relay.hooks.cursor import CURSOR
from relay.testing import FakeMessage, FakeSlack
from tests.gate_env import clean_env, finish, start, write_rules
from tests.server_env import SECRET, TOKEN, relay_server
from tests.test_hook_contracts import COPILOT_PRE_TOOL_USE, copilot_event

RULES = 'timeout = 20\ndefault = "ask"\n'

# What Cursor's runtime (@cursor/sdk 1.0.18) sends a generic preToolUse hook.
CURSOR_PRE_TOOL_USE = {
    "hook_event_name": "preToolUse",
    "conversation_id": "conv-1",
    "generation_id": "gen-1",
    "model": "scripted",
    "workspace_roots": ["/repo"],
    "tool_name": "Shell",
    "tool_use_id": "tool-1",
    "cwd": "/repo",
}
# Cursor's validation of a preToolUse answer, as its runtime checks it.
CURSOR_ANSWER = {
    "type": "object",
    "properties": {
        "permission": {"enum": ["allow", "deny", "ask"]},
        "user_message": {"type": "string"},
        "agent_message": {"type": "string"},
        "updated_input": {"type": "object"},
    },
}


async def edit_in_slack(slack: FakeSlack, message: FakeMessage, field: str, value: str) -> None:
    """Alice opens Edit…, sets ``field`` to ``value`` and submits."""
    await slack.click(message, "Edit…", user="U0ALICE")
    modal = await slack.wait_for_modal(user="U0ALICE", timeout=10)
    modal.fill(field, value)
    assert (await slack.submit_view(modal)).outcome == "closed"


def offers_edit(message: FakeMessage) -> bool:
    """Whether the question shows an Edit… button."""
    return "Edit…" in json.dumps(message.blocks, ensure_ascii=False)


async def test_copilot_pre_tool_use_runs_the_reviewers_edit(tmp_path: Path) -> None:
    rules = write_rules(tmp_path, RULES)
    async with FakeSlack(signing_secret=SECRET) as slack, relay_server(slack) as relay:
        slack.add_user("U0ALICE", name="alice")
        env = clean_env(RELAY_URL=relay.url, RELAY_TOKEN=TOKEN)
        event = copilot_event("bash", {"command": "make deploy"}, "preToolUse")
        pending = await start("hook", "copilot", "--rules", rules, env=env, stdin=json.dumps(event))
        message = await slack.wait_for_message(timeout=15)
        assert offers_edit(message)
        await edit_in_slack(slack, message, "command", "make deploy-staging")
        run = await finish(pending)
        assert run.code == 0, run.err
        answer: dict[str, Any] = run.json()
        jsonschema.validate(answer, COPILOT_PRE_TOOL_USE)
        assert answer["permissionDecision"] == "allow"
        assert answer["modifiedArgs"] == {"command": "make deploy-staging"}

        # permissionRequest has no field for an edited input: no Edit… is offered there.
        event = copilot_event("bash", {"command": "make release"})
        pending = await start("hook", "copilot", "--rules", rules, env=env, stdin=json.dumps(event))
        message = await slack.wait_for_message(count=2, timeout=15)
        assert not offers_edit(message)
        await slack.click(message, "Allow once", user="U0ALICE")
        assert (await finish(pending)).json() == {"behavior": "allow"}


async def test_cursor_pre_tool_use_runs_the_reviewers_edit(tmp_path: Path) -> None:
    rules = write_rules(tmp_path, RULES)
    async with FakeSlack(signing_secret=SECRET) as slack, relay_server(slack) as relay:
        slack.add_user("U0ALICE", name="alice")
        env = clean_env(RELAY_URL=relay.url, RELAY_TOKEN=TOKEN)
        event = {**CURSOR_PRE_TOOL_USE, "tool_input": {"command": "make deploy"}}
        pending = await start("hook", "cursor", "--rules", rules, env=env, stdin=json.dumps(event))
        message = await slack.wait_for_message(timeout=15)
        assert offers_edit(message)
        await edit_in_slack(slack, message, "command", "make deploy-staging")
        run = await finish(pending)
        assert run.code == 0, run.err
        jsonschema.validate(run.json(), CURSOR_ANSWER)
        assert run.json() == {
            "permission": "allow",
            "updated_input": {"command": "make deploy-staging"},
        }

        # beforeShellExecution takes no edited command: no Edit… there.
        shell = {
            **{k: v for k, v in CURSOR_PRE_TOOL_USE.items() if k not in ("tool_name", "model")},
            "hook_event_name": "beforeShellExecution",
            "command": "make release",
        }
        pending = await start("hook", "cursor", "--rules", rules, env=env, stdin=json.dumps(shell))
        message = await slack.wait_for_message(count=2, timeout=15)
        assert not offers_edit(message)
        await slack.click(message, "Allow once", user="U0ALICE")
        assert (await finish(pending)).json() == {"permission": "allow"}


def test_cursor_denies_an_edit_it_would_merge_into_another_call() -> None:
    # Cursor merges updated_input into the call's arguments: a key the edit dropped would
    # stay, so the call that ran would not be the one approved.
    call = HookCall("preToolUse", "Shell", {"command": "make", "cwd": "/srv"})
    edited = RulesDecision("allow", "ok", {"command": "make"})
    answer = CURSOR.reply(call, edited).output
    assert answer is not None
    assert answer["permission"] == "deny"
    assert "'cwd'" in answer["agent_message"]
    assert "updated_input" not in answer
    whole = RulesDecision("allow", "ok", {"command": "make -n", "cwd": "/srv"})
    assert CURSOR.reply(call, whole).output == {
        "permission": "allow",
        "updated_input": {"command": "make -n", "cwd": "/srv"},
    }
