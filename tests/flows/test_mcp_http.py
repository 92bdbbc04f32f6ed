"""Flow: an MCP client (the SDK's own) talks to ``relay serve``'s ``/mcp`` over HTTP.

``relay serve`` runs as a subprocess with FakeSlack; the client uses Streamable HTTP with
the API's bearer token, in both protocol eras the SDK speaks (the 2025 session handshake,
and 2026-07-28's self-contained requests).
"""

from __future__ import annotations

import asyncio
import json

import aiohttp
import anyio
import pytest

from relay.testing import FakeSlack
from tests.mcp_env import http_client, result_json, result_text, wait_withdrawn
from tests.server_env import OTHER_TOKEN, SECRET, TOKEN, relay_server

QUESTION = {"questions": [{"id": "go", "question": "Ship it?", "options": [{"label": "yes"}]}]}
MODES = ["legacy", "auto"]


@pytest.mark.parametrize("mode", MODES)
async def test_both_tools_over_http(mode: str) -> None:
    async with (
        FakeSlack(signing_secret=SECRET) as slack,
        relay_server(slack) as relay,
        http_client(relay, mode=mode) as client,
    ):
        names = {t.name for t in (await client.list_tools()).tools}
        assert names == {"ask_user_question", "approve_tool_use"}

        call = asyncio.create_task(client.call_tool("ask_user_question", QUESTION))
        message = await slack.wait_for_message(timeout=15)
        await slack.click(message, "yes", user="U0ALICE")
        result = await asyncio.wait_for(call, 15)
        assert result_text(result) == '{"answers":[{"id":"go","selected":["yes"]}]}'

        write = {"file_path": "/repo/NOTES.md", "content": "# Notes\nship <it>\n"}
        call = asyncio.create_task(
            client.call_tool("approve_tool_use", {"tool_name": "Write", "input": write})
        )
        message = await slack.wait_for_message(count=2, timeout=15)
        shown = json.dumps(message.blocks)
        # Grants need an agent identity: a session (2025 protocol); 2026-07-28 has none.
        assert ("Allow for this session" in shown) == (mode == "legacy")
        assert "+++ /repo/NOTES.md" in shown
        assert "+ship <it>" in shown
        await slack.click(message, "Deny", user="U0BOB")
        decision = result_json(await asyncio.wait_for(call, 15))
        assert decision["behavior"] == "deny"
        assert "denied this in Slack" in decision["message"]


@pytest.mark.parametrize("mode", MODES)
async def test_progress_streams_and_cancel_withdraws(mode: str) -> None:
    async with (
        FakeSlack(signing_secret=SECRET) as slack,
        relay_server(slack, RELAY_MCP_PROGRESS_INTERVAL="0.2") as relay,
        http_client(relay, mode=mode) as client,
    ):
        progress: list[float] = []
        seen = asyncio.Event()

        async def on_progress(value: float, total: float | None, text: str | None) -> None:
            progress.append(value)
            if len(progress) >= 2:
                seen.set()

        with anyio.move_on_after(30):
            async with anyio.create_task_group() as group:
                group.start_soon(
                    lambda: client.call_tool(
                        "approve_tool_use",
                        {"tool_name": "Bash", "input": {"command": "make release"}},
                        progress_callback=on_progress,
                    )
                )
                message = await slack.wait_for_message(timeout=15)
                # Two notifications before any answer: the response really streams.
                await asyncio.wait_for(seen.wait(), 10)
                group.cancel_scope.cancel()
        assert progress == sorted(progress)
        await wait_withdrawn(slack, message)


async def test_mcp_needs_the_api_token_and_sessions_stay_with_their_token() -> None:
    async with FakeSlack(signing_secret=SECRET) as slack, relay_server(slack) as relay:
        init = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "probe", "version": "1"},
            },
        }
        accept = {"Accept": "application/json, text/event-stream"}
        async with aiohttp.ClientSession() as http:
            async with http.post(f"{relay.url}/mcp", json=init, headers=accept) as response:
                assert response.status == 401
                assert response.headers["WWW-Authenticate"] == 'Bearer realm="relay"'
                assert (await response.json())["error"]["code"] == "UNAUTHORIZED"
            headers = {**accept, "Authorization": f"Bearer {TOKEN}"}
            async with http.post(f"{relay.url}/mcp", json=init, headers=headers) as response:
                assert response.status == 200
                session = response.headers["mcp-session-id"]
                await response.read()
            listing = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
            stolen = {
                **accept,
                "Authorization": f"Bearer {OTHER_TOKEN}",
                "mcp-session-id": session,
                "mcp-protocol-version": "2025-11-25",
            }
            async with http.post(f"{relay.url}/mcp", json=listing, headers=stolen) as response:
                assert response.status == 404  # as if the session did not exist


async def test_a_session_grant_over_mcp_is_the_tokens_and_the_sessions_only() -> None:
    async with FakeSlack(signing_secret=SECRET) as slack, relay_server(slack) as relay:
        args = {"tool_name": "Bash", "input": {"command": "npm test"}}
        async with http_client(relay, mode="legacy") as client:
            call = asyncio.create_task(client.call_tool("approve_tool_use", args))
            message = await slack.wait_for_message(timeout=15)
            await slack.click(message, "Allow for this session", user="U0ALICE")
            assert result_json(await asyncio.wait_for(call, 15))["behavior"] == "allow"
            again = await asyncio.wait_for(client.call_tool("approve_tool_use", args), 15)
            assert result_json(again)["behavior"] == "allow"
            assert len(slack.messages) == 1
        # Another MCP session (another agent) is asked again.
        async with http_client(relay, mode="legacy") as client:
            call = asyncio.create_task(client.call_tool("approve_tool_use", args))
            await slack.wait_for_message(count=2, timeout=15)
            call.cancel()


async def test_sigterm_with_an_mcp_session_open_stops_the_relay_at_once() -> None:
    async with FakeSlack(signing_secret=SECRET) as slack, relay_server(slack) as relay:
        async with http_client(relay, mode="legacy") as client:
            call = asyncio.create_task(client.call_tool("ask_user_question", QUESTION))
            message = await slack.wait_for_message(timeout=15)
            # relay.stop() allows 15 s: an open stream must not hold the shutdown that long.
            assert await relay.stop() == 0
            result = await asyncio.wait_for(call, 15)
            assert result.is_error or "answers" in result_text(result)
        await wait_withdrawn(slack, message)
