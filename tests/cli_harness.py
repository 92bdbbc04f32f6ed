"""What the offline runs of real agent CLIs (``tests/claude_env.py``, ``tests/codex_env.py``)
share: where the npm CLIs and ``relay`` are, a scripted model API on a free loopback port, the
team and relay a run asks, and starting and finishing a CLI run."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from aiohttp import web

from relay.testing import FakeSlack
from tests.server_env import SECRET, Relay, relay_server

ROOT = Path(__file__).resolve().parent.parent
# scripts/test installs the pinned CLIs here.
NPM_BIN = ROOT / ".venv" / "npm" / "node_modules" / ".bin"
RELAY = Path(sys.executable).parent / "relay"

# The rules both CLIs' hooks run under: deletes are denied by rule, anything else goes to the team.
RULES = """
timeout = {timeout}
default = "ask"

[[rules]]
action = "deny"
tools = ["Bash"]
commands = ["rm -rf *"]
reason = "recursive deletes are never allowed"
"""


def team_rules(timeout: int) -> str:
    """The rules file's text, with a team that has ``timeout`` seconds to answer."""
    return RULES.format(timeout=timeout)


def event_stream(events: list[dict[str, Any]]) -> web.Response:
    """``events`` as server-sent events, each named by its ``type``."""
    text = "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events)
    return web.Response(text=text, content_type="text/event-stream")


@asynccontextmanager
async def serve_model(
    path: str,
    answer: Callable[[web.Request], Awaitable[web.StreamResponse]],
    otherwise: dict[str, Any],
) -> AsyncIterator[str]:
    """Serve ``answer`` at ``POST path`` on a free loopback port (any other request gets
    ``otherwise`` as JSON); yields the server's base URL."""

    async def anything_else(request: web.Request) -> web.Response:
        return web.json_response(otherwise)

    app = web.Application()
    app.router.add_post(path, answer)
    app.router.add_route("*", "/{tail:.*}", anything_else)
    runner = web.AppRunner(app)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    try:
        yield f"http://127.0.0.1:{runner.addresses[0][1]}"
    finally:
        await runner.cleanup()


@asynccontextmanager
async def team_and_relay() -> AsyncIterator[tuple[FakeSlack, Relay]]:
    """FakeSlack with alice in the team, and a ``relay serve`` wired to it."""
    async with FakeSlack(signing_secret=SECRET) as slack, relay_server(slack) as relay:
        slack.add_user("U0ALICE", name="alice")
        yield slack, relay


async def start_cli(
    name: str, package: str, *args: str, cwd: Path, env: dict[str, str]
) -> asyncio.subprocess.Process:
    """Start the npm CLI ``name`` (from ``package``) with ``args``, its output piped."""
    cli = NPM_BIN / name
    assert cli.exists(), f"{cli} is missing: scripts/test installs {package} there"
    return await asyncio.create_subprocess_exec(
        str(cli),
        *args,
        cwd=cwd,
        env=env,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )


async def finished(process: asyncio.subprocess.Process, within: float) -> bytes:
    """The run's stdout, once it has exited 0 within ``within`` seconds."""
    out, err = await asyncio.wait_for(process.communicate(), within)
    assert process.returncode == 0, (out.decode()[-2000:], err.decode()[-2000:])
    return out
