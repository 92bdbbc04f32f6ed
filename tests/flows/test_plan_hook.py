"""Claude Code leaving plan mode through ``relay hook`` and a hosted relay: ``ExitPlanMode``
is the plan's review (``POST /v1/plans``, one proposal path); approved, the session's calls
in its scope are allowed by the relay without a post, and one outside it is asked."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from relay.testing import FakeMessage, FakeSlack
from tests.gate_env import clean_env, finish, start, write_rules
from tests.server_env import SECRET, TOKEN, relay_server

CWD = "/home/dev/project"
PLAN = "# Tidy the docs\n\n1. Edit `docs/index.md`.\n2. Run `make docs`.\n"


def event(tool: str, tool_input: dict[str, Any], session: str = "s1") -> str:
    return json.dumps(
        {
            "session_id": session,
            "cwd": CWD,
            "hook_event_name": "PreToolUse",
            "tool_name": tool,
            "tool_input": tool_input,
            "tool_use_id": f"toolu_{tool}",
        }
    )


def decision(out: str) -> tuple[str, str]:
    shown = json.loads(out)["hookSpecificOutput"]
    return shown["permissionDecision"], shown.get("permissionDecisionReason", "")


def _outside(message: FakeMessage) -> bool:
    return "outside the approved plan" in str(message.blocks)


async def test_leaving_plan_mode_reviews_the_plan_and_holds_the_session_to_it(
    tmp_path: Path,
) -> None:
    rules = write_rules(tmp_path, 'timeout = 30\ndefault = "ask"\n')
    async with FakeSlack(signing_secret=SECRET) as slack, relay_server(slack) as relay:
        slack.add_user("U0ALICE", name="alice")
        env = clean_env(RELAY_URL=relay.url, RELAY_TOKEN=TOKEN)

        async def hook(tool: str, tool_input: dict[str, Any], session: str = "s1") -> Any:
            return await start(
                "hook",
                "claude-code",
                "--rules",
                rules,
                env=env,
                stdin=event(tool, tool_input, session),
            )

        pending = await hook("ExitPlanMode", {"plan": PLAN})
        review = await slack.wait_for_message(timeout=30)
        shown = str(review.blocks)
        assert "Tidy the docs" in shown
        assert "writes `docs/index.md` (in `/home/dev/project`)" in shown
        assert "runs `make docs`" in shown
        await slack.click(review, "Approve", user="U0ALICE")
        run = await finish(pending)
        assert decision(run.out)[0] == "allow", run.out

        for tool, tool_input in (
            ("Bash", {"command": "make docs"}),
            ("Edit", {"file_path": f"{CWD}/docs/index.md", "old_string": "a", "new_string": "b"}),
        ):
            run = await finish(await hook(tool, tool_input))
            behavior, reason = decision(run.out)
            assert behavior == "allow", run.out
            assert "inside plan" in reason
        assert len(slack.messages) == 1  # only the plan was posted

        # Another session of the same token is not held to (or helped by) this plan.
        other = await hook("Bash", {"command": "make docs"}, session="s2")
        asked = await slack.wait_for_message(count=2, timeout=30)
        assert not _outside(asked)
        await slack.click(asked, "Deny", user="U0ALICE")
        assert decision((await finish(other)).out)[0] == "deny"

        outside = await hook("Bash", {"command": "git push"})
        message = await slack.wait_for_message(where=_outside, timeout=30)
        assert "Tidy the docs" in str(message.blocks)
        await slack.click(message, "Stop the plan", user="U0ALICE")
        behavior, reason = decision((await finish(outside)).out)
        assert behavior == "deny"
        assert "stopped the approved plan" in reason

        # A stopped plan: the in-scope call is asked again.
        again = await hook("Bash", {"command": "make docs"})
        asked = await slack.wait_for_message(count=4, timeout=30)
        assert not _outside(asked)
        await slack.click(asked, "Allow once", user="U0ALICE")
        assert decision((await finish(again)).out)[0] == "allow"


async def test_keep_planning_denies_leaving_plan_mode_with_the_feedback(tmp_path: Path) -> None:
    rules = write_rules(tmp_path, 'timeout = 30\ndefault = "ask"\n')
    async with FakeSlack(signing_secret=SECRET) as slack, relay_server(slack) as relay:
        slack.add_user("U0ALICE", name="alice")
        env = clean_env(RELAY_URL=relay.url, RELAY_TOKEN=TOKEN)
        pending = await start(
            "hook",
            "claude-code",
            "--rules",
            rules,
            env=env,
            stdin=event("ExitPlanMode", {"plan": PLAN}),
        )
        review = await slack.wait_for_message(timeout=30)
        await slack.type(review, "Also update the changelog", user="U0ALICE")
        await slack.click(review, "Keep planning", user="U0ALICE")
        behavior, reason = decision((await finish(pending)).out)
        assert behavior == "deny"
        assert "Also update the changelog" in reason
