"""Flow: ``relay doctor`` says in one line what is missing, and what it says is what the real
clients do. Codex's trust is checked against the real ``codex exec`` (offline): untrusted,
trusted by the script in docs/harnesses/codex.md, and trusted before the hook changed. The
relay is a real ``relay serve``; the Slack app is FakeSlack's.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

from relay.testing import FakeSlack
from tests.cli_harness import finished, team_and_relay, team_rules
from tests.codex_env import codex_home, relay_hook, scripted_model
from tests.flows.test_codex_trust import SCRIPT, codex_exec_reviewed_hooks_only
from tests.gate_env import Run, clean_env, finish, start, write_rules
from tests.server_env import BOT_TOKEN, SECRET, TOKEN


async def doctor(env: dict[str, str], *args: str, cwd: Path | None = None) -> Run:
    """``relay doctor ARGS``, finished."""
    return await finish(await start("doctor", *args, env=env, cwd=cwd), 60)


def problems(run: Run) -> list[str]:
    """The report's PROBLEM lines."""
    return [line for line in run.out.splitlines() if line.startswith("PROBLEM: ")]


async def test_doctor_tells_codex_trust_as_codex_exec_acts_on_it(tmp_path: Path) -> None:
    rules = write_rules(tmp_path, team_rules(timeout=60))
    work = tmp_path / "work"
    work.mkdir()
    async with team_and_relay() as (slack, relay), scripted_model("touch made-by-codex") as model:
        hooks = relay_hook("PermissionRequest", rules)
        home = codex_home(tmp_path / "codex", model, hooks)
        env = clean_env(
            CODEX_HOME=str(home), RELAY_URL=relay.url, RELAY_TOKEN=TOKEN, HOME=str(tmp_path)
        )

        # Untrusted: doctor names it, and codex exec indeed skips the hook.
        run = await doctor(env, cwd=work)
        assert run.code == 1
        (problem,) = problems(run)
        assert "Codex has not trusted relay's hook" in problem
        assert "Trust all" in problem
        await finished(await codex_exec_reviewed_hooks_only(work, env), 90)
        assert slack.messages == []

        # Trusted by the documented script: doctor is content, and the team is asked.
        assert SCRIPT is not None
        trust = await asyncio.create_subprocess_exec(sys.executable, "-c", SCRIPT[1], env=env)
        assert await asyncio.wait_for(trust.wait(), 30) == 0
        run = await doctor(env, cwd=work)
        assert (run.code, problems(run)) == (0, []), run.out
        assert "ok: Codex trusts relay's hook" in run.out
        codex = await codex_exec_reviewed_hooks_only(work, env)
        message = await slack.wait_for_message(timeout=60)
        await slack.click(message, "Allow once", user="U0ALICE")
        await finished(codex, 90)
        assert (work / "made-by-codex").exists()

        # The hook changed after it was trusted: doctor says so, and Codex skips it again.
        hooks["PermissionRequest"][0]["hooks"][0]["timeout"] = 121
        (home / "hooks.json").write_text(json.dumps({"hooks": hooks}))
        (work / "made-by-codex").unlink()
        run = await doctor(env, cwd=work)
        assert run.code == 1
        (problem,) = problems(run)
        assert "before it changed" in problem
        await finished(await codex_exec_reviewed_hooks_only(work, env), 90)
        assert len(slack.messages) == 1
        assert not (work / "made-by-codex").exists()


async def test_doctor_checks_the_relay_and_the_token(tmp_path: Path) -> None:
    async with team_and_relay() as (_, relay):
        base = clean_env(HOME=str(tmp_path), RELAY_URL=relay.url)
        run = await doctor({**base, "RELAY_TOKEN": TOKEN}, cwd=tmp_path)
        assert (run.code, problems(run)) == (0, []), run.out
        assert "ok: RELAY_TOKEN is accepted" in run.out
        run = await doctor({**base, "RELAY_TOKEN": "not-a-token-of-this-relay"}, cwd=tmp_path)
        assert run.code == 1
        assert problems(run) == [
            f"PROBLEM: the relay at {relay.url.rstrip('/')} refuses RELAY_TOKEN: use a token"
            " from its RELAY_API_TOKENS"
        ]
        run = await doctor(base, cwd=tmp_path)
        assert problems(run) == ["PROBLEM: RELAY_TOKEN is not set: set it to your API token"]
    gone = await doctor({**base, "RELAY_TOKEN": TOKEN}, cwd=tmp_path)  # the relay has stopped
    assert gone.code == 1
    (problem,) = problems(gone)
    assert "does not answer" in problem
    assert problem.endswith(": start it")


async def test_doctor_checks_the_slack_app(tmp_path: Path) -> None:
    async with (
        FakeSlack(signing_secret=SECRET, bot_token=BOT_TOKEN) as slack,
        team_and_relay() as (
            _,
            relay,
        ),
    ):
        base = clean_env(
            HOME=str(tmp_path),
            RELAY_URL=relay.url,
            RELAY_TOKEN=TOKEN,
            SLACK_API_URL=slack.base_url,
            SLACK_BOT_TOKEN=BOT_TOKEN,
        )
        run = await doctor({**base, "SLACK_SIGNING_SECRET": SECRET}, cwd=tmp_path)
        assert (run.code, problems(run)) == (0, []), run.out
        assert "ok: SLACK_BOT_TOKEN is the bot" in run.out
        assert "ok: SLACK_SIGNING_SECRET is set" in run.out

        run = await doctor(base, cwd=tmp_path)
        assert run.code == 1
        (problem,) = problems(run)
        assert problem.startswith("PROBLEM: SLACK_SIGNING_SECRET is not set")
        assert "Basic Information" in problem

        wrong = {**base, "SLACK_BOT_TOKEN": "xoxb-not-this-apps", "SLACK_SIGNING_SECRET": SECRET}
        run = await doctor(wrong, cwd=tmp_path)
        assert run.code == 1
        (problem,) = problems(run)
        assert problem.startswith("PROBLEM: Slack refuses SLACK_BOT_TOKEN (invalid_auth)")
        assert BOT_TOKEN not in run.out + run.err
        assert "xoxb-not-this-apps" not in run.out


async def test_doctor_reads_the_rules_files_the_hooks_name(tmp_path: Path) -> None:
    project = tmp_path / "project"
    (project / ".cursor").mkdir(parents=True)
    (project / ".cursor" / "relay-rules.toml").write_text('default = "sometimes"\n')
    hooks = {
        "version": 1,
        "hooks": {
            "beforeShellExecution": [
                {"command": "relay hook cursor --rules .cursor/relay-rules.toml"}
            ]
        },
    }
    (project / ".cursor" / "hooks.json").write_text(json.dumps(hooks))
    async with team_and_relay() as (_, relay):
        env = clean_env(HOME=str(tmp_path), RELAY_URL=relay.url, RELAY_TOKEN=TOKEN)
        run = await doctor(env, "--project", str(project), cwd=tmp_path)
        assert run.code == 1
        assert "ok: Cursor:" in run.out
        (problem,) = problems(run)
        assert "relay-rules.toml" in problem
        assert "default" in problem
        (project / ".cursor" / "relay-rules.toml").write_text('default = "ask"\n')
        run = await doctor(env, "--project", str(project), cwd=tmp_path)
        assert (run.code, problems(run)) == (0, []), run.out
        assert "ok: the rules file" in run.out
