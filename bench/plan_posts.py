"""Posts per task with and without an approved plan (``docs/plans.md``).

A scripted ten-step task (edits, tests, a build, two steps the plan does not name) goes to a
``relay serve`` wired to ``FakeSlack`` through ``POST /v1/approvals``, once with no plan and
once after ``POST /v1/plans`` was approved; a simulated reviewer allows whatever is posted.
It counts the Slack messages each run posted (the plan review included). A count, not a
timing: it needs no quiet machine.

    .venv/bin/python -m bench.plan_posts [--smoke]

``--smoke`` runs the same (it takes seconds) and judges nothing.
"""

from __future__ import annotations

import asyncio
import os
import socket
import sys
from typing import Any

import aiohttp

from bench.common import (
    BOT_TOKEN,
    CHANNEL,
    SECRET,
    USER,
    arguments,
    print_table,
    report_targets,
    write_json,
)
from relay.testing import FakeMessage, FakeSlack

TOKEN = "bench-plan-token-0123456789"
ROOT = "/home/dev/shop"
PLAN = """# Bill in euros

1. Edit `src/billing/invoice.py` and `src/billing/currency.py`.
2. Write the new tests under `tests/billing/`.
3. Run `pytest -q tests/billing`, then `ruff check src`, then `npm run build`.
"""
TASK: list[tuple[str, dict[str, Any]]] = [
    ("Edit", {"file_path": f"{ROOT}/src/billing/invoice.py", "old_string": "$", "new_string": "€"}),
    (
        "Edit",
        {"file_path": f"{ROOT}/src/billing/currency.py", "old_string": "a", "new_string": "b"},
    ),
    ("Write", {"file_path": f"{ROOT}/tests/billing/test_eur.py", "content": "def test(): ..."}),
    ("Bash", {"command": "pytest -q tests/billing"}),
    ("Edit", {"file_path": f"{ROOT}/src/billing/invoice.py", "old_string": "b", "new_string": "c"}),
    ("Bash", {"command": "pytest -q tests/billing"}),
    ("Bash", {"command": "ruff check src"}),
    ("Bash", {"command": "npm run build"}),
    ("Bash", {"command": "git diff --stat"}),  # not in the plan: asked
    ("Write", {"file_path": f"{ROOT}/CHANGELOG.md", "content": "euros"}),  # not in the plan
]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def _serve(slack: FakeSlack) -> tuple[asyncio.subprocess.Process, str]:
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLACK_", "RELAY_"))}
    env.pop("REDIS_URL", None)
    env.update(
        SLACK_BOT_TOKEN=BOT_TOKEN,
        SLACK_SIGNING_SECRET=SECRET,
        SLACK_API_URL=slack.base_url,
        RELAY_API_TOKENS=TOKEN,
        RELAY_CHANNEL=CHANNEL,
        RELAY_HOST="127.0.0.1",
        PORT=str(port),
    )
    slack.issue_token(BOT_TOKEN)
    slack.add_channel(CHANNEL)
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "relay.cli", "serve", env=env, stderr=asyncio.subprocess.PIPE
    )
    assert process.stderr is not None
    while b"relay listening" not in await process.stderr.readline():
        if process.returncode is not None:
            raise RuntimeError("relay serve exited")
    slack.interactivity_url = f"http://127.0.0.1:{port}/slack/events"
    return process, f"http://127.0.0.1:{port}"


async def _run(with_plan: bool) -> int:
    async with FakeSlack(signing_secret=SECRET) as slack:
        slack.add_user(USER, name="alice")
        process, url = await _serve(slack)
        headers = {"Authorization": f"Bearer {TOKEN}"}
        agent = {"id": "session-1", "name": "bench agent"}
        try:
            async with aiohttp.ClientSession(url, headers=headers) as http:
                posted = 0
                if with_plan:
                    posted += 1
                    body = {"plan": PLAN, "agent": agent, "cwd": ROOT}
                    async with http.post("/v1/plans", json=body) as response:
                        plan_id = (await response.json())["id"]
                    await slack.click(
                        await slack.wait_for_message(timeout=30), "Approve", user=USER
                    )
                    async with http.get(f"/v1/plans/{plan_id}?wait=30") as response:
                        assert (await response.json())["status"] == "active"
                for tool, tool_input in TASK:
                    call = {"tool": tool, "input": tool_input, "agent": agent}
                    async with http.post("/v1/approvals", json=call) as response:
                        created = await response.json()
                    if created["id"] is None:
                        continue  # decided at once: nothing posted
                    posted += 1
                    message = await slack.wait_for_message(where=_top, count=posted, timeout=30)
                    await slack.click(message, "Allow once", user=USER)
                    async with http.get(f"/v1/approvals/{created['id']}?wait=30") as response:
                        assert (await response.json())["decision"]["behavior"] == "allow"
            return len([m for m in slack.messages if _top(m)])
        finally:
            process.terminate()
            await process.wait()


def _top(message: FakeMessage) -> bool:
    return message.thread_ts is None


# The two steps the plan does not name, and the plan review itself.
PLAN_POSTS = 3


async def run(smoke: bool) -> dict[str, Any]:
    """Run the task both ways; the posts and the target."""
    without = await _run(with_plan=False)
    with_plan = await _run(with_plan=True)
    print_table(
        "Posts per ten-step task",
        ["run", "posts"],
        [["no plan", without], ["approved plan (plan review included)", with_plan]],
    )
    targets = report_targets(
        {"posts with the plan": (with_plan, PLAN_POSTS, with_plan <= PLAN_POSTS)},
        smoke=smoke,
        measured="posts",
    )
    posts = {"no_plan": without, "plan": with_plan}
    return {"smoke": smoke, "steps": len(TASK), "posts": posts, "targets": targets}


def main() -> None:
    """Write ``bench/results/plan_posts[_smoke].json``."""
    args = arguments(__doc__ or "")
    data = asyncio.run(run(args.smoke))
    write_json("plan_posts_smoke" if args.smoke else "plan_posts", data)


if __name__ == "__main__":
    main()
