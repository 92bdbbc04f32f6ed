"""Flow: the real Codex CLI (``codex exec``, offline against a scripted model) runs
``relay hook codex`` as its ``PermissionRequest`` and ``PreToolUse`` hooks, with a real
``relay serve`` and FakeSlack as the team. The command runs only on the team's allow.
"""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema

from tests.cli_harness import RELAY, finished, team_and_relay, team_rules
from tests.codex_env import captured, codex_exec, codex_home, relay_hook, scripted_model
from tests.gate_env import clean_env, write_rules
from tests.server_env import TOKEN
from tests.test_hook_contracts import schema

RULES = team_rules(timeout=60)


async def test_the_team_allows_and_the_command_runs(tmp_path: Path) -> None:
    rules = write_rules(tmp_path, RULES)
    work = tmp_path / "work"
    work.mkdir()
    async with team_and_relay() as (slack, relay), scripted_model("touch made-by-codex") as model:
        capture = tmp_path / "hook"
        hooks = relay_hook("PermissionRequest", rules, capture=capture)
        home = codex_home(tmp_path / "codex", model, hooks)
        env = clean_env(CODEX_HOME=str(home), RELAY_URL=relay.url, RELAY_TOKEN=TOKEN)
        codex = await codex_exec(work, env)
        message = await slack.wait_for_message(timeout=60)
        shown = json.dumps(message.blocks)
        assert "Codex" in shown
        assert "touch made-by-codex" in shown
        assert not (work / "made-by-codex").exists()  # nothing runs before the team decides
        await slack.click(message, "Allow once", user="U0ALICE")
        await finished(codex, 90)
        assert (work / "made-by-codex").exists()
        assert "exited with code 0" in model.outputs()[0]
        # What this Codex sent and what relay answered, against its own schemas.
        sent, answered = captured(capture)
        jsonschema.validate(sent, schema("permission-request.command.input"))
        jsonschema.validate(answered, schema("permission-request.command.output"))


async def test_the_team_denies_with_a_reason_and_nothing_runs(tmp_path: Path) -> None:
    rules = write_rules(tmp_path, RULES)
    work = tmp_path / "work"
    work.mkdir()
    async with team_and_relay() as (slack, relay), scripted_model("touch never-made") as model:
        home = codex_home(tmp_path / "codex", model, relay_hook("PermissionRequest", rules))
        env = clean_env(CODEX_HOME=str(home), RELAY_URL=relay.url, RELAY_TOKEN=TOKEN)
        codex = await codex_exec(work, env)
        message = await slack.wait_for_message(timeout=60)
        await slack.type(message, "not in this repo", user="U0BOB")
        await slack.press_enter(message, user="U0BOB")
        await finished(codex, 90)
        assert not (work / "never-made").exists()
        (output,) = model.outputs()
        assert "not in this repo" in output


async def test_the_rules_block_a_command_before_it_runs_without_any_connection(
    tmp_path: Path,
) -> None:
    rules = write_rules(tmp_path, RULES)
    work = tmp_path / "work"
    (work / "keep").mkdir(parents=True)
    async with scripted_model("rm -rf keep") as model:
        capture = tmp_path / "hook"
        hooks = relay_hook("PreToolUse", rules, capture=capture)
        home = codex_home(tmp_path / "codex", model, hooks)
        codex = await codex_exec(work, clean_env(CODEX_HOME=str(home)))
        await finished(codex, 90)
        assert (work / "keep").is_dir()
        (output,) = model.outputs()
        assert "recursive deletes are never allowed" in output
        sent, answered = captured(capture)
        jsonschema.validate(sent, schema("pre-tool-use.command.input"))
        jsonschema.validate(answered, schema("pre-tool-use.command.output"))


async def test_codex_asks_the_team_through_mcp_under_approval_policy_never(
    tmp_path: Path,
) -> None:
    # The README's MCP configuration: required = true (codex exec waits for relay's tools)
    # and read-only tools, which approval_policy = "never" (codex exec's) lets through.
    work = tmp_path / "work"
    work.mkdir()
    question = {
        "questions": [
            {
                "id": "env",
                "question": "Which environment?",
                "header": "Deploy",
                "options": [{"label": "staging"}, {"label": "prod"}],
            }
        ]
    }
    async with (
        team_and_relay() as (slack, relay),
        scripted_model("", tool="ask_user_question", arguments=question) as model,
    ):
        server = (
            "\n[mcp_servers.relay]\n"
            f'command = "{RELAY}"\n'
            'args = ["mcp", "--timeout", "60"]\n'
            f'env = {{ RELAY_URL = "{relay.url}" }}\n'
            'env_vars = ["RELAY_TOKEN"]\n'
            "required = true\n"
            "tool_timeout_sec = 90\n"
        )
        home = codex_home(tmp_path / "codex", model, {}, server)
        env = clean_env(CODEX_HOME=str(home), RELAY_TOKEN=TOKEN)
        codex = await codex_exec(work, env, "ask the team", auto_review=False)
        message = await slack.wait_for_message(timeout=60)
        assert "Which environment?" in json.dumps(message.blocks)
        await slack.click(message, "prod", user="U0ALICE")
        await finished(codex, 90)
        (output,) = model.outputs()
        parts = json.loads(output)  # an MCP result: a list of text parts
        text = " ".join(p["text"] for p in parts) if isinstance(parts, list) else str(parts)
        assert '{"answers":[{"id":"env","selected":["prod"]}]}' in text
