"""The docs' `relay ask` lines run against the sandbox as written: its ids are accepted.

A shell block preceded by ``<!-- sandbox-test -->`` (in README.md or a docs page) names the
sandbox's people, channels and group. Each ``relay ask`` line in it is run against
``relay serve --sandbox``; the sandbox must take its ask (the relay logs it created), not
refuse it with a 400 for an id the sandbox does not have. Then it is stopped with SIGTERM,
which withdraws the question (exit 4).
"""

from __future__ import annotations

import asyncio
import json
import re
import shlex
import signal
import sys
from pathlib import Path

from tests.sandbox_env import TOKEN, running_sandbox
from tests.test_examples import base_env, finish, run

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
MARKED = re.compile(r"<!-- sandbox-test -->\n```sh\n(.*?)\n```", re.S)


def ask_lines() -> list[tuple[str, list[str]]]:
    """(page, the arguments after ``relay``) for each ``relay ask`` line of a marked block."""
    found = []
    for page in PAGES:
        for block in MARKED.findall(page.read_text(encoding="utf-8")):
            for line in block.replace("\\\n", " ").splitlines():
                words = shlex.split(line, comments=True)
                if words[:2] in (["relay", "ask"], [".venv/bin/relay", "ask"]):
                    found.append((page.name, words[1:]))
    return found


def test_the_sandbox_examples_are_marked() -> None:
    assert len(ask_lines()) >= 3


async def test_every_docs_relay_ask_line_is_asked_in_the_sandbox(tmp_path: Path) -> None:
    # The files the examples read, as a user's project would have them.
    (tmp_path / "CHANGELOG.md").write_text("# 1.4\n\n- faster deploys\n")
    request = {"questions": [{"id": "go", "question": "Go?", "options": [{"label": "Go"}]}]}
    (tmp_path / "request.json").write_text(json.dumps(request))
    refused = []
    # One sandbox for every line (starting one takes seconds); each line ends withdrawn.
    async with running_sandbox() as relay:
        env = base_env(RELAY_URL=relay.url, RELAY_TOKEN=TOKEN)
        for n, (where, args) in enumerate(ask_lines()):
            # Tagged, so that the relay's log says when this very ask was created.
            tagged = [*args, "--agent", f"docs-example-{n:03d}"]
            process = await run(sys.executable, "-m", "relay.cli", *tagged, env=env, cwd=tmp_path)
            created = asyncio.create_task(relay.wait_for_log(f"agent=docs-example-{n:03d}", 30))
            exited = asyncio.create_task(process.wait())
            await asyncio.wait({created, exited}, return_when=asyncio.FIRST_COMPLETED)
            created.cancel()
            if process.returncode is None:
                process.send_signal(signal.SIGTERM)
            code, out, err = await finish(process)
            await exited
            if code != 4 or "ASK_ABORTED" not in err:
                refused.append(f"{where}: relay {shlex.join(args)}: exit {code}\n{out}{err}")
    assert not refused, "\n".join(refused)
