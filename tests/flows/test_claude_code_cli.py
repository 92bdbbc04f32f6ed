"""Flow: the real Claude Code CLI (``claude -p``, offline against a scripted model) runs
``relay hook claude-code`` as its ``PreToolUse`` hook, with a real ``relay serve`` and
FakeSlack as the team, including ``defer`` for a wait longer than the run.
"""

from __future__ import annotations

import json
from pathlib import Path

from relay.testing import FakeMessage, FakeSlack
from tests.claude_env import (
    claude,
    claude_env,
    hook_settings,
    result,
    scripted_claude,
    settings_file,
)
from tests.cli_harness import RELAY, team_and_relay, team_rules
from tests.gate_env import write_rules
from tests.server_env import TOKEN

RULES = team_rules(timeout=120)


async def edit_in_slack(slack: FakeSlack, message: FakeMessage, command: str) -> None:
    """Alice opens Edit… on ``message``, makes the command ``command`` and submits it."""
    await slack.click(message, "Edit…", user="U0ALICE")
    modal = await slack.wait_for_modal(user="U0ALICE", timeout=10)
    modal.fill("command", command)
    assert (await slack.submit_view(modal)).outcome == "closed"


async def test_the_rules_deny_before_anything_runs(tmp_path: Path) -> None:
    rules = write_rules(tmp_path, RULES)
    work = tmp_path / "work"
    (work / "keep").mkdir(parents=True)
    async with scripted_claude("rm -rf keep") as model:
        settings = hook_settings(tmp_path / "settings.json", rules)
        env = claude_env(tmp_path / "home", model)
        done = await result(await claude(work, env, "--settings", str(settings), "tidy up"))
        assert done["result"] == "done"
        assert (work / "keep").is_dir()
        (returned,) = model.results()
        assert "recursive deletes are never allowed" in returned


async def test_a_deferred_call_runs_on_resume_with_the_teams_allow(tmp_path: Path) -> None:
    rules = write_rules(tmp_path, RULES)
    work = tmp_path / "work"
    work.mkdir()
    async with team_and_relay() as (slack, relay), scripted_claude("touch made-by-claude") as model:
        settings = hook_settings(tmp_path / "settings.json", rules, "--defer-after", "2")
        env = claude_env(tmp_path / "home", model, RELAY_URL=relay.url, RELAY_TOKEN=TOKEN)
        first = await result(await claude(work, env, "--settings", str(settings), "make it"))
        assert first.get("stop_reason") == "tool_deferred", first
        assert first["deferred_tool_use"]["id"] == "toolu_e2e"
        assert not (work / "made-by-claude").exists()
        (message,) = slack.messages
        assert "touch made-by-claude" in json.dumps(message.blocks)
        await slack.click(message, "Allow once", user="U0ALICE")
        # The resumed run asks nothing new: the hook finds the team's decision.
        session = first["session_id"]
        resumed = await claude(work, env, "--settings", str(settings), "--resume", session)
        await result(resumed)
        assert (work / "made-by-claude").exists()
        assert len(slack.messages) == 1


async def test_the_readme_permission_request_hook_hands_the_prompt_to_the_team(
    tmp_path: Path,
) -> None:
    # The README's hook command as written: relay on PATH, the rules under
    # $CLAUDE_PROJECT_DIR (so a later cd cannot lose them).
    work = tmp_path / "work"
    (work / ".claude").mkdir(parents=True)
    (work / ".claude" / "relay-rules.toml").write_text(RULES)
    command = 'relay hook claude-code --rules "$CLAUDE_PROJECT_DIR"/.claude/relay-rules.toml'
    settings = settings_file(tmp_path / "settings.json", "PermissionRequest", "*", command)
    async with team_and_relay() as (slack, relay), scripted_claude("touch approved-file") as model:
        env = claude_env(tmp_path / "home", model, RELAY_URL=relay.url, RELAY_TOKEN=TOKEN)
        env["PATH"] = f"{RELAY.parent}:{env.get('PATH', '')}"
        run = await claude(work, env, "--settings", str(settings), "make it")
        message = await slack.wait_for_message(timeout=60)
        assert "touch approved-file" in json.dumps(message.blocks)
        assert not (work / "approved-file").exists()
        await slack.click(message, "Allow once", user="U0ALICE")
        await result(run)
        assert (work / "approved-file").exists()


async def test_a_reviewers_edit_is_the_call_claude_code_runs(tmp_path: Path) -> None:
    # Issue 40: the hook answers with updatedInput, and Claude Code itself runs that input.
    rules = write_rules(tmp_path, RULES)
    work = tmp_path / "work"
    work.mkdir()
    async with team_and_relay() as (slack, relay), scripted_claude("touch proposed-file") as model:
        settings = hook_settings(tmp_path / "settings.json", rules)
        env = claude_env(tmp_path / "home", model, RELAY_URL=relay.url, RELAY_TOKEN=TOKEN)
        run = await claude(work, env, "--settings", str(settings), "make it")
        message = await slack.wait_for_message(timeout=60)
        assert "touch proposed-file" in json.dumps(message.blocks)
        await edit_in_slack(slack, message, "touch edited-file")
        await result(run)
        assert (work / "edited-file").exists()
        assert not (work / "proposed-file").exists()
        await slack.wait_until(lambda: "Edited by" in str(message.blocks), timeout=10)


async def test_a_permission_request_hook_runs_the_reviewers_edit(tmp_path: Path) -> None:
    # PermissionRequest's own field: hookSpecificOutput.decision.updatedInput.
    work = tmp_path / "work"
    work.mkdir()
    rules = write_rules(tmp_path, RULES)
    command = f"{RELAY} hook claude-code --rules {rules}"
    settings = settings_file(tmp_path / "settings.json", "PermissionRequest", "*", command)
    async with team_and_relay() as (slack, relay), scripted_claude("touch proposed-file") as model:
        env = claude_env(tmp_path / "home", model, RELAY_URL=relay.url, RELAY_TOKEN=TOKEN)
        run = await claude(work, env, "--settings", str(settings), "make it")
        message = await slack.wait_for_message(timeout=60)
        await edit_in_slack(slack, message, "touch edited-file")
        await result(run)
        assert (work / "edited-file").exists()
        assert not (work / "proposed-file").exists()
