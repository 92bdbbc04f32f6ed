"""Flow: the real Claude Code CLI (offline, scripted model) makes three parallel tool calls;
its ``relay hook`` asks a real ``relay serve`` for each, and FakeSlack's team sees **one**
message. *Allow all shown* allows exactly the calls one person may decide; the call the
operator's rules give to another approver stays pending until they decide it.
"""

from __future__ import annotations

import json
from pathlib import Path

from relay.asks.batches import batch_of
from relay.testing import FakeSlack
from tests.claude_env import claude, claude_env, hook_settings, result, scripted_claude
from tests.cli_harness import team_rules
from tests.gate_env import write_rules
from tests.server_env import SECRET, TOKEN, relay_server

OPERATOR_RULES = """
approvers = ["U0ALICE"]
default = "ask"

[[rules]]
action = "ask"
tools = ["Bash"]
commands = ["cat *"]
approvers = ["U0BOSS"]
"""


async def test_three_parallel_calls_arrive_as_one_message(tmp_path: Path) -> None:
    rules = write_rules(tmp_path, team_rules(timeout=120))
    operator = tmp_path / "operator.toml"
    operator.write_text(OPERATOR_RULES)
    work = tmp_path / "work"
    work.mkdir()
    (work / "notes.txt").write_text("hello from the notes\n")
    async with (
        FakeSlack(signing_secret=SECRET) as slack,
        relay_server(slack, RELAY_RULES_FILE=str(operator), RELAY_BATCH_WINDOW="2") as relay,
        scripted_claude("ls", parallel=("pwd", "cat notes.txt")) as model,
    ):
        for user in ("U0ALICE", "U0BOSS"):
            slack.add_user(user, name=user[2:].lower())
        settings = hook_settings(tmp_path / "settings.json", rules)
        env = claude_env(tmp_path / "home", model, RELAY_URL=relay.url, RELAY_TOKEN=TOKEN)
        run = await claude(work, env, "--settings", str(settings), "look around")
        message = await slack.wait_for_message(timeout=60)
        shown = json.dumps(message.blocks, ensure_ascii=False)
        for command in ("ls", "pwd", "cat notes.txt"):
            assert command in shown
        assert "needs approval by <@U0BOSS>" in shown
        await slack.click(message, "Allow all shown (2)", user="U0ALICE")
        await slack.wait_until(lambda: "1 waiting" in json.dumps(message.blocks), timeout=30)
        # The cat call is the boss's: still pending, with its own buttons.
        own = next(
            block["block_id"]
            for block in message.blocks
            if block.get("type") == "actions" and block["block_id"].endswith(":0:act")
        )
        ask_id = own.split(":")[1]
        assert batch_of(ask_id) is not None
        status, body = await relay.request("GET", f"/v1/approvals/{ask_id}")
        assert (status, body["status"]) == (200, "pending")
        await slack.click(message, "Allow once", user="U0BOSS", block_id=own)
        done = await result(run)
        assert done["result"] == "done"
        assert len(slack.messages) == 1
        # Every call was allowed, none denied. How Claude Code words parallel results is its
        # own business (one result per call, or all in the first as "--- entry N ---"), and
        # about once in ten runs it answers some calls allowed after the first one ran with
        # its own "Tool result missing due to internal error" / "error: no result" instead of
        # running them: the decisions are the relay's, what the CLI does with them its own
        # (docs/fewer-approvals.md says so).
        returned = " ".join(model.all_results().values())
        assert "denied" not in returned.lower()
        dropped = "Tool result missing due to internal error" in returned or "no result" in returned
        assert "hello from the notes" in returned or dropped, returned
        await slack.wait_until(lambda: "none waiting" in json.dumps(message.blocks), timeout=30)
        assert json.dumps(message.blocks).count("Allowed by") == 3
