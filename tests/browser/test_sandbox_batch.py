"""A batch in the sandbox, in a real browser: the real Claude Code CLI (offline, scripted
model) makes three parallel calls through ``relay hook``; the sandbox's page shows **one**
message; *Allow all shown* clicked in the page allows exactly the calls its reviewer may decide,
each with its own receipt, and the call the operator's rules give to another person waits."""

from __future__ import annotations

import base64
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from selenium.webdriver.remote.webdriver import WebDriver

from tests.browser.browser import Page
from tests.claude_env import claude, claude_env, hook_settings, result, scripted_claude
from tests.cli_harness import team_rules
from tests.gate_env import write_rules
from tests.sandbox_env import ALICE, BOB, TOKEN, running_sandbox
from tests.server_env import Relay

# The operator's rules: Alice approves, but reading a file is Bob's to decide.
OPERATOR_RULES = f"""
approvers = ["{ALICE}"]
default = "ask"

[[rules]]
action = "ask"
tools = ["Bash"]
commands = ["cat *"]
approvers = ["{BOB}"]
"""


@pytest.fixture
async def batching_sandbox(tmp_path: Path) -> AsyncIterator[Relay]:
    operator = tmp_path / "operator.toml"
    operator.write_text(OPERATOR_RULES)
    async with running_sandbox(RELAY_RULES_FILE=str(operator), RELAY_BATCH_WINDOW="2") as relay:
        yield relay


async def test_three_parallel_claude_code_calls_are_one_message_in_the_page(
    chromium: WebDriver, batching_sandbox: Relay, tmp_path: Path
) -> None:
    relay = batching_sandbox
    page = Page(chromium, relay.url)
    rules = write_rules(tmp_path, team_rules(timeout=120))
    work = tmp_path / "work"
    work.mkdir()
    (work / "notes.txt").write_text("hello from the notes\n")
    try:
        async with scripted_claude("ls", parallel=("pwd", "cat notes.txt")) as model:
            await page.open(ALICE)
            settings = hook_settings(tmp_path / "settings.json", rules)
            env = claude_env(tmp_path / "home", model, RELAY_URL=relay.url, RELAY_TOKEN=TOKEN)
            run = await claude(work, env, "--settings", str(settings), "look around")
            shown = await page.wait_for_text("cat notes.txt", "Allow all shown (2)")
            for command in ("ls", "pwd", "cat notes.txt"):
                assert command in shown
            assert "needs approval by" in shown
            assert (
                await page.script("return document.querySelectorAll('#messages .message').length")
                == 1
            )
            await page.click("cat notes.txt", "Allow all shown (2)")
            await page.wait_for_text("cat notes.txt", "1 waiting")
            # Bob decides his call on the same message, with its own button.
            await page.become(BOB)
            await page.click("cat notes.txt", "Allow once")
            done = await result(run)
            assert done["result"] == "done"
            await page.wait_for_text("cat notes.txt", "none waiting")
            returned = " ".join(model.all_results().values())
            assert "denied" not in returned.lower()
        # Each call has its own signed receipt, and the three name the one batch.
        status, listing = await relay.request("GET", "/v1/receipts", token=TOKEN)
        assert status == 200, listing
        payloads = [_payload(item["receipt"]) for item in listing["receipts"]]
        assert len({payload["ask"] for payload in payloads}) == 3
        assert {payload["outcome"]["status"] for payload in payloads} == {"answered"}
        deciders = sorted(p["outcome"]["decisions"][0]["by"]["user"] for p in payloads)
        assert deciders == sorted([ALICE, ALICE, BOB])
        assert len({json.dumps(payload.get("batch", {}).get("id")) for payload in payloads}) == 1
    finally:
        chromium.get("about:blank")


def _payload(token: str) -> dict[str, Any]:
    """A compact JWS's payload, read (its signature is relay verify's to check)."""
    body = token.split(".")[1]
    decoded: dict[str, Any] = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
    return decoded
