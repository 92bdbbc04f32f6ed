"""Flow: the real Copilot CLI (npm ``@github/copilot``, pinned in scripts/test), offline
with its BYOK provider mode against a scripted Anthropic Messages API, runs ``relay hook
copilot`` as a repository ``preToolUse`` hook: the team edits the proposed command in Slack,
and the edited command is the one Copilot runs (``modifiedArgs``).
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.claude_env import scripted_claude
from tests.cli_harness import RELAY, finished, start_cli, team_and_relay
from tests.flows.test_claude_code_cli import edit_in_slack
from tests.gate_env import clean_env, write_rules
from tests.server_env import TOKEN

RULES = 'timeout = 60\ndefault = "ask"\n'


def copilot_repo(work: Path, command: str) -> None:
    """A repository whose .github/hooks/relay.json runs ``command`` on preToolUse."""
    hooks = work / ".github" / "hooks"
    hooks.mkdir(parents=True)
    entry = {"type": "command", "bash": command, "cwd": ".", "timeoutSec": 120}
    (hooks / "relay.json").write_text(json.dumps({"version": 1, "hooks": {"preToolUse": [entry]}}))


async def test_copilot_runs_the_reviewers_edit(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    rules = write_rules(tmp_path, RULES)
    copilot_repo(work, f"{RELAY} hook copilot --event preToolUse --rules {rules}")
    async with (
        team_and_relay() as (slack, relay),
        scripted_claude("touch proposed-file", tool="bash") as model,
    ):
        env = clean_env(
            HOME=str(tmp_path / "home"),
            RELAY_URL=relay.url,
            RELAY_TOKEN=TOKEN,
            COPILOT_OFFLINE="true",
            COPILOT_PROVIDER_TYPE="anthropic",
            COPILOT_PROVIDER_BASE_URL=model.url,
            COPILOT_PROVIDER_API_KEY="offline",
            COPILOT_MODEL="scripted",
            # Repository hooks run under -p only in a trusted folder, or with this.
            GITHUB_COPILOT_PROMPT_MODE_REPO_HOOKS="true",
        )
        args = ("-p", "make the file", "--allow-all-tools")
        run = await start_cli("copilot", "@github/copilot", *args, cwd=work, env=env)
        message = await slack.wait_for_message(timeout=90)
        assert "touch proposed-file" in json.dumps(message.blocks)
        await edit_in_slack(slack, message, "touch edited-file")
        await finished(run, 90)
        assert (work / "edited-file").exists()
        assert not (work / "proposed-file").exists()
