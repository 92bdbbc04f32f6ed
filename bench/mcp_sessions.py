"""MCP sessions on ``relay serve``: memory per session, and what the session caps bound.

A ``relay serve`` process (FakeSlack in this process) gets ``--sessions`` 2025-protocol
sessions opened on ``/mcp`` (``initialize`` and ``notifications/initialized``, as the SDK's
client does), spread over two API tokens; its RSS (``/proc/<pid>/status``) is read before and
after. Per 1,000 sessions is the growth divided by N/1000. Then the default caps
(``RELAY_MCP_SESSIONS_PER_TOKEN`` 20, ``RELAY_MCP_MAX_SESSIONS`` 1000) are applied to that
figure: the most memory sessions can take on a relay run with defaults.

    .venv/bin/python -m bench.mcp_sessions [--smoke] [--sessions N]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

import aiohttp

from bench.common import BOT_TOKEN, SECRET, bench_slack, free_port
from relay.config.mcp import McpSettings

TOKENS = ("bench-mcp-token-one-0123456789", "bench-mcp-token-two-0123456789")
ACCEPT = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "bench", "version": "1"},
    },
}
MIB = 1024 * 1024


def rss(pid: int) -> int:
    """The process's resident set, in bytes."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS")


async def open_session(http: aiohttp.ClientSession, url: str, token: str) -> None:
    headers = {**ACCEPT, "Authorization": f"Bearer {token}"}
    async with http.post(url, json=INIT, headers=headers) as response:
        response.raise_for_status()
        session = response.headers["mcp-session-id"]
        await response.read()
    more = {**headers, "mcp-session-id": session, "mcp-protocol-version": "2025-11-25"}
    note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    async with http.post(url, json=note, headers=more) as response:
        response.raise_for_status()


async def measure(sessions: int) -> dict[str, Any]:
    async with bench_slack(signing_secret=SECRET) as slack:
        port = free_port()
        env = {
            **{k: v for k, v in os.environ.items() if not k.startswith(("SLACK_", "RELAY_"))},
            "SLACK_BOT_TOKEN": BOT_TOKEN,
            "SLACK_SIGNING_SECRET": SECRET,
            "SLACK_API_URL": slack.base_url,
            "RELAY_API_TOKENS": ",".join(TOKENS),
            "RELAY_CHANNEL": "C0BENCH",
            "RELAY_HOST": "127.0.0.1",
            "PORT": str(port),
            "RELAY_RATE_LIMIT": "1000000",
            # Caps out of the way: the figure is per session, whatever the caps allow.
            "RELAY_MCP_SESSIONS_PER_TOKEN": str(sessions),
            "RELAY_MCP_MAX_SESSIONS": str(sessions * 2 + 1),
        }
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "relay.cli", "serve", env=env, stderr=asyncio.subprocess.PIPE
        )
        assert process.stderr is not None
        while b"relay listening" not in await process.stderr.readline():
            pass
        url = f"http://127.0.0.1:{port}/mcp"
        try:
            async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=32)) as http:
                await open_session(http, url, TOKENS[0])  # warm: the first session's imports
                before = rss(process.pid)
                await asyncio.gather(
                    *(open_session(http, url, TOKENS[i % 2]) for i in range(sessions))
                )
                after = rss(process.pid)
        finally:
            process.terminate()
            await process.wait()
    per_thousand = (after - before) / sessions * 1000
    defaults = McpSettings()
    return {
        "sessions": sessions,
        "rss_before_mib": round(before / MIB, 1),
        "rss_after_mib": round(after / MIB, 1),
        "mib_per_1000_sessions": round(per_thousand / MIB, 1),
        "default_max_sessions": defaults.max_sessions,
        "default_per_token": defaults.sessions_per_token,
        "mib_at_default_cap": round(per_thousand * defaults.max_sessions / 1000 / MIB, 1),
        "mib_per_token_at_default_cap": round(
            per_thousand * defaults.sessions_per_token / 1000 / MIB, 1
        ),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="a few sessions, no figures")
    parser.add_argument("--sessions", type=int, default=2000)
    args = parser.parse_args()
    figures = asyncio.run(measure(20 if args.smoke else args.sessions))
    print(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
