"""What ``relay serve`` imports to start: the MCP SDK (about a second of CPU, half of a
start) only once ``/mcp`` is first asked for (``relay.server.mcp_mount``)."""

from __future__ import annotations

import asyncio
import subprocess
import sys

import aiohttp

from relay.testing import FakeSlack
from tests.mcp_env import http_client
from tests.server_env import SECRET, relay_server
from tests.test_boundary_json import mcp_session


def test_starting_the_server_imports_no_mcp_sdk() -> None:
    probe = (
        "import sys, relay.server.main, relay.slack.serving, relay.cli.serve; "
        "print(sorted(m for m in sys.modules if m == 'mcp' or m.startswith(('mcp.', 'relay.mcp'))))"
    )
    done = subprocess.run(  # noqa: S603 - our interpreter, our code
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    )
    assert done.stdout.strip() == "[]", done.stdout


async def test_clients_arriving_together_at_a_new_relay_share_one_server() -> None:
    async with (
        FakeSlack(signing_secret=SECRET) as slack,
        relay_server(slack) as relay,
        aiohttp.ClientSession() as http,
    ):
        # Five sessions opened at once: the first request opens /mcp, the rest wait for it.
        sessions = await asyncio.gather(*(mcp_session(http, relay) for _ in range(5)))
        assert len({s["mcp-session-id"] for s in sessions}) == 5
        async with http_client(relay) as client:
            tools = [t.name for t in (await client.list_tools()).tools]
        assert "ask_user_question" in tools
