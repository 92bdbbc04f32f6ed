"""Flow: the real Claude Code CLI in plan mode (``claude -p --permission-mode plan``,
offline against a scripted model), with ``relay hook claude-code`` on ``ExitPlanMode`` and
``Bash``, a real ``relay serve`` and FakeSlack as the team. Leaving plan mode posts the plan
and its scope; once approved, the planned command runs with no further post, and a command
outside the plan is asked, saying so; once a reviewer stops the plan from its message, even a
planned command is asked again."""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aiohttp import web

from relay.testing import FakeMessage
from tests.claude_env import anthropic_reply, claude, result, settings_file
from tests.cli_harness import RELAY, serve_model, team_and_relay, team_rules
from tests.gate_env import clean_env, write_rules
from tests.server_env import TOKEN

PLAN_FILE = "<the plan file>"
PLAN = "# Make the notes\n\n1. Run `touch notes.txt`.\n"


@dataclass
class PlanningClaude:
    """A Messages API that plays ``steps`` (tool name and input) one per turn, each once its
    previous step's result came back, then says ``done``."""

    steps: list[tuple[str, dict[str, Any]]]
    requests: list[dict[str, Any]] = field(default_factory=list)
    url: str = ""

    def results(self) -> dict[str, str]:
        """Each step's tool result, by its tool use id."""
        return {
            block["tool_use_id"]: json.dumps(block.get("content"))
            for body in self.requests[-1:]
            for message in body.get("messages", [])
            if isinstance(message.get("content"), list)
            for block in message["content"]
            if block.get("type") == "tool_result"
        }

    async def _messages(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        self.requests.append(body)
        answered = len(self.results())
        block: dict[str, Any]
        if answered < len(self.steps):
            name, arguments = self.steps[answered]
            if arguments.get("file_path") == PLAN_FILE:
                # Where Claude Code's plan mode told the model to write its plan.
                found = re.search(r"[^ \"'`]*/\.claude/plans/[^ \"'`]*\.md", json.dumps(body))
                assert found is not None, "no plan file named in the request"
                arguments = {**arguments, "file_path": found.group(0)}
            block = {"type": "tool_use", "id": f"toolu_{answered}", "name": name, "input": {}}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(arguments)}
            stop = "tool_use"
        else:
            block = {"type": "text", "text": ""}
            delta = {"type": "text_delta", "text": "done"}
            stop = "end_turn"
        return anthropic_reply(body, [(block, delta)], stop, number=len(self.requests))


@asynccontextmanager
async def planning_claude(steps: list[tuple[str, dict[str, Any]]]) -> AsyncIterator[PlanningClaude]:
    model = PlanningClaude(steps)
    async with serve_model("/v1/messages", model._messages, {}) as url:
        model.url = url
        yield model


def _outside(message: FakeMessage) -> bool:
    return "outside the approved plan" in str(message.blocks)


async def test_plan_mode_then_the_plan_holds_the_session(tmp_path: Path) -> None:
    rules = write_rules(tmp_path, team_rules(timeout=60))
    work = tmp_path / "work"
    work.mkdir()
    steps = [
        ("Write", {"file_path": PLAN_FILE, "content": PLAN}),
        ("ExitPlanMode", {}),
        ("Bash", {"command": "touch notes.txt", "description": "in the plan"}),
        ("Bash", {"command": "touch extra.txt", "description": "not in the plan"}),
        ("Bash", {"command": "touch notes.txt", "description": "in the plan, once stopped"}),
    ]
    async with team_and_relay() as (slack, relay), planning_claude(steps) as model:
        command = f"{RELAY} hook claude-code --rules {rules}"
        settings = settings_file(
            tmp_path / "settings.json", "PreToolUse", "Bash|ExitPlanMode", command
        )
        home = tmp_path / "home"
        home.mkdir()
        env = clean_env(
            HOME=str(home),
            ANTHROPIC_BASE_URL=model.url,
            ANTHROPIC_API_KEY="offline",
            DISABLE_TELEMETRY="1",
            CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
            DISABLE_AUTOUPDATER="1",
            RELAY_URL=relay.url,
            RELAY_TOKEN=TOKEN,
        )
        # Claude Code offers ExitPlanMode in -p only with a permission prompt tool: relay
        # mcp's, reaching the same relay (the hook decides first, so it is not called here).
        servers = {
            "mcpServers": {
                "relay": {
                    "command": str(RELAY),
                    "args": ["mcp"],
                    "env": {"RELAY_URL": relay.url, "RELAY_TOKEN": TOKEN},
                }
            }
        }
        run = await claude(
            work,
            env,
            "--settings",
            str(settings),
            "--mcp-config",
            json.dumps(servers),
            "--permission-prompt-tool",
            "mcp__relay__approve_tool_use",
            "--permission-mode",
            "plan",
            "make notes",
        )
        review = await slack.wait_for_message(timeout=60)
        shown = str(review.blocks)
        assert "Make the notes" in shown
        assert "runs `touch notes.txt`" in shown
        await slack.click(review, "Approve", user="U0ALICE")
        # Claude Code then asks its permission prompt tool too (ExitPlanMode needs a user
        # in -p): relay mcp's door puts the same plan up, for its own MCP session.
        again = await slack.wait_for_message(count=2, timeout=60)
        assert "Make the notes" in str(again.blocks)
        await slack.click(again, "Approve", user="U0ALICE")
        outside = await slack.wait_for_message(where=_outside, timeout=60)
        assert "touch extra.txt" in json.dumps(outside.blocks)
        assert "Make the notes" in str(outside.blocks)
        assert (work / "notes.txt").exists()  # in the plan: ran with no post of its own
        # The two reviews and the one step outside the plan: the planned step posted nothing.
        assert len([m for m in slack.messages if m.thread_ts is None]) == 3
        # A reviewer stops the plan from its own message; then even a planned step is asked.
        await slack.wait_until(lambda: "Stop the plan" in str(review.blocks), timeout=30)
        await slack.click(review, "Stop the plan", user="U0ALICE")
        await slack.wait_until(lambda: "Stop the plan" not in str(review.blocks), timeout=30)
        await slack.click(outside, "Deny", user="U0ALICE")
        asked = await slack.wait_for_message(count=4, timeout=60)
        assert "touch notes.txt" in json.dumps(asked.blocks)
        assert not _outside(asked)  # no live plan: an ordinary question
        await slack.click(asked, "Deny", user="U0ALICE")
        await result(run)
        assert not (work / "extra.txt").exists()
