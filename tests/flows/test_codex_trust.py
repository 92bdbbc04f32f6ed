"""Flow: Codex runs only hooks someone reviewed. The script docs/harnesses/codex.md gives for
CI marks ``relay hook codex`` as reviewed the way Codex's own *Trust all* does, and then the
real ``codex exec`` (offline, without ``--dangerously-bypass-hook-trust``) asks the team.
"""

from __future__ import annotations

import asyncio
import json
import re
import sys
from pathlib import Path
from typing import Any

from tests.cli_harness import finished, start_cli, team_and_relay, team_rules
from tests.codex_env import codex_home, relay_hook, scripted_model
from tests.gate_env import clean_env, write_rules
from tests.server_env import TOKEN

PAGE = Path(__file__).resolve().parents[2] / "docs" / "harnesses" / "codex.md"
SCRIPT = re.search(r"```python\n(# trust_codex_hooks\.py.*?)\n```", PAGE.read_text(), re.S)


async def codex_exec_reviewed_hooks_only(workdir: Path, env: dict[str, str]) -> Any:
    """``codex exec`` as CI runs it, trusting only the hooks config.toml says were reviewed."""
    args = ("exec", "--skip-git-repo-check", "--approve-for-me", "make the file")
    env = {"SCRIPTED_API_KEY": "offline", **env}
    return await start_cli("codex", "@openai/codex", *args, cwd=workdir, env=env)


async def test_the_documented_trust_step_makes_codex_exec_ask_the_team(tmp_path: Path) -> None:
    assert SCRIPT is not None, "docs/harnesses/codex.md lost its trust script"
    rules = write_rules(tmp_path, team_rules(timeout=60))
    work = tmp_path / "work"
    work.mkdir()
    async with team_and_relay() as (slack, relay), scripted_model("touch made-by-codex") as model:
        home = codex_home(tmp_path / "codex", model, relay_hook("PermissionRequest", rules))
        env = clean_env(CODEX_HOME=str(home), RELAY_URL=relay.url, RELAY_TOKEN=TOKEN)
        trust = await asyncio.create_subprocess_exec(sys.executable, "-c", SCRIPT[1], env=env)
        assert await asyncio.wait_for(trust.wait(), 30) == 0
        state = (home / "config.toml").read_text()
        key = json.dumps(f"{(home / 'hooks.json').resolve()}:permission_request:0:0")
        assert f'[hooks.state.{key}]\ntrusted_hash = "sha256:' in state
        codex = await codex_exec_reviewed_hooks_only(work, env)
        message = await slack.wait_for_message(timeout=60)  # the hook ran: the team is asked
        assert "touch made-by-codex" in json.dumps(message.blocks)
        await slack.click(message, "Allow once", user="U0ALICE")
        await finished(codex, 90)
        assert (work / "made-by-codex").exists()


async def test_an_unreviewed_hook_is_skipped_and_the_team_never_hears(tmp_path: Path) -> None:
    rules = write_rules(tmp_path, team_rules(timeout=60))
    work = tmp_path / "work"
    work.mkdir()
    async with team_and_relay() as (slack, relay), scripted_model("touch made-by-codex") as model:
        home = codex_home(tmp_path / "codex", model, relay_hook("PermissionRequest", rules))
        env = clean_env(CODEX_HOME=str(home), RELAY_URL=relay.url, RELAY_TOKEN=TOKEN)
        await finished(await codex_exec_reviewed_hooks_only(work, env), 90)
        assert slack.messages == []  # why the docs' trust step exists
        assert not (work / "made-by-codex").exists()
