"""Flow: ``/mcp`` on ``relay serve`` is held to what ``/v1`` is (issue 37, point 4).

Real ``relay serve`` processes with FakeSlack; the MCP SDK's own client where a client
behaves, raw HTTP where the test plays a client that does not: the token's rate limit, its
session cap and the global one with idle expiry, Origin and Host checks, the body deadline,
a legacy (2025) client hanging up mid-question, session ids the relay never issued, and one
quiet log line per answered call.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from relay.testing import FakeSlack
from tests.mcp_env import http_client, result_json, wait_withdrawn
from tests.server_env import OTHER_TOKEN, SECRET, TOKEN, Relay, relay_server

ACCEPT = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
LEGACY = "2025-11-25"


def _init(number: int = 1) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": number,
        "method": "initialize",
        "params": {
            "protocolVersion": LEGACY,
            "capabilities": {},
            "clientInfo": {"name": "probe", "version": "1"},
        },
    }


def _auth(token: str = TOKEN, **more: str) -> dict[str, str]:
    return {**ACCEPT, "Authorization": f"Bearer {token}", **more}


async def _open(http: aiohttp.ClientSession, relay: Relay, token: str = TOKEN) -> tuple[int, Any]:
    """Open a legacy session: the status, and the session id (or the error body)."""
    async with http.post(f"{relay.url}/mcp", json=_init(), headers=_auth(token)) as response:
        if response.status != 200:
            return response.status, await response.json(content_type=None)
        session = response.headers["mcp-session-id"]
        await response.read()
    headers = _auth(token, **{"mcp-session-id": session, "mcp-protocol-version": LEGACY})
    note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    async with http.post(f"{relay.url}/mcp", json=note, headers=headers) as response:
        assert response.status == 202, await response.text()
    return 200, session


async def _close(http: aiohttp.ClientSession, relay: Relay, session: str) -> None:
    headers = _auth(**{"mcp-session-id": session, "mcp-protocol-version": LEGACY})
    async with http.delete(f"{relay.url}/mcp", headers=headers) as response:
        assert response.status == 200, await response.text()


async def test_mcp_has_the_same_per_token_rate_limit_as_v1() -> None:
    async with (
        FakeSlack(signing_secret=SECRET) as slack,
        relay_server(slack, RELAY_RATE_LIMIT="5") as relay,
        aiohttp.ClientSession() as http,
    ):

        async def listing(token: str) -> tuple[int, str | None, Any]:
            async with http.post(
                f"{relay.url}/mcp", json=_init(), headers=_auth(token)
            ) as response:
                return (
                    response.status,
                    response.headers.get("Retry-After"),
                    json.loads(await response.text()) if response.status == 429 else None,
                )

        answers = await asyncio.gather(*(listing(TOKEN) for _ in range(20)))
        refused = [a for a in answers if a[0] == 429]
        assert len(refused) >= 10, [a[0] for a in answers]
        for _, retry_after, body in refused:
            assert body["error"]["code"] == "RATE_LIMITED"
            assert "RELAY_RATE_LIMIT" in body["error"]["message"]
            assert retry_after is not None
            assert int(retry_after) >= 1
        # Another token is not slowed by the first one's burst.
        assert (await listing(OTHER_TOKEN))[0] == 200


async def test_one_token_cannot_take_every_session_and_idle_ones_expire() -> None:
    async with (
        FakeSlack(signing_secret=SECRET) as slack,
        relay_server(
            slack,
            RELAY_MCP_SESSIONS_PER_TOKEN="3",
            RELAY_MCP_MAX_SESSIONS="4",
            RELAY_MCP_SESSION_IDLE="6",  # longer than the steps before the expiry take
            RELAY_RATE_LIMIT="1000",
        ) as relay,
        aiohttp.ClientSession() as http,
    ):
        opened = await asyncio.gather(*(_open(http, relay) for _ in range(10)))
        sessions = [s for status, s in opened if status == 200]
        assert len(sessions) == 3, opened
        for status, body in opened:
            if status != 200:
                assert status == 429, body
                assert body["error"]["code"] == "TOO_MANY_SESSIONS"
                assert "RELAY_MCP_SESSIONS_PER_TOKEN" in body["error"]["message"]
        # The other token still gets a session: the first cannot lock it out.
        status, other = await _open(http, relay, OTHER_TOKEN)
        assert status == 200, other
        # Now the relay is full (4): a fifth session waits for one to end.
        status, body = await _open(http, relay, OTHER_TOKEN)
        assert (status, body["error"]["code"]) == (503, "MCP_SESSIONS_FULL"), body
        assert "RELAY_MCP_MAX_SESSIONS" in body["error"]["message"]
        await _close(http, relay, sessions[0])
        status, again = await _open(http, relay)
        assert status == 200, again
        # Idle sessions expire (RELAY_MCP_SESSION_IDLE) and free their places.
        await relay.wait_for_log("idle, closed (RELAY_MCP_SESSION_IDLE); sessions open: 0", 30)
        status, fresh = await _open(http, relay)
        assert status == 200, fresh


async def test_origin_and_host_are_checked() -> None:
    async with (
        FakeSlack(signing_secret=SECRET) as slack,
        relay_server(slack, RELAY_MCP_ALLOWED_ORIGINS="https://app.example.com") as relay,
        aiohttp.ClientSession() as http,
    ):
        url = f"{relay.url}/mcp"
        for origin in ("https://evil.example", "null", "http://127.0.0.1.evil.example"):
            headers = _auth(Origin=origin)
            async with http.post(url, json=_init(), headers=headers) as response:
                assert response.status == 403, origin
                body = await response.json()
                assert body["error"]["code"] == "ORIGIN_NOT_ALLOWED"
                assert "RELAY_MCP_ALLOWED_ORIGINS" in body["error"]["message"]
        # Checked before the token: a page cannot even learn whether its token is good.
        async with http.post(
            url, json=_init(), headers={**ACCEPT, "Origin": "https://evil.example"}
        ) as response:
            assert response.status == 403
        for origin in ("https://app.example.com", f"http://127.0.0.1:{relay.port}"):
            async with http.post(url, json=_init(), headers=_auth(Origin=origin)) as response:
                assert response.status == 200, (origin, await response.text())
        # DNS rebinding: a name that resolves to the relay, in the Host header.
        for host in ("evil.example", f"evil.example:{relay.port}", "127.0.0.1.nip.io"):
            async with http.post(url, json=_init(), headers=_auth(Host=host)) as response:
                assert response.status == 421, host
                body = await response.json()
                assert body["error"]["code"] == "HOST_NOT_ALLOWED"
                assert "RELAY_MCP_ALLOWED_HOSTS" in body["error"]["message"]
        async with http.post(url, json=_init(), headers=_auth(Host="localhost")) as response:
            assert response.status == 200
    async with (
        FakeSlack(signing_secret=SECRET) as slack,
        relay_server(slack, RELAY_MCP_ALLOWED_HOSTS="relay.example.com") as relay,
        aiohttp.ClientSession() as http,
    ):
        headers = _auth(Host="relay.example.com")
        async with http.post(f"{relay.url}/mcp", json=_init(), headers=headers) as response:
            assert response.status == 200
        async with http.post(f"{relay.url}/mcp", json=_init(), headers=_auth()) as response:
            assert response.status == 421  # loopback is no longer listed


async def test_a_body_that_never_arrives_is_cut_off_at_the_read_deadline() -> None:
    async with (
        FakeSlack(signing_secret=SECRET) as slack,
        relay_server(slack, RELAY_READ_TIMEOUT="1") as relay,
    ):
        reader, writer = await asyncio.open_connection("127.0.0.1", relay.port)
        head = (
            "POST /mcp HTTP/1.1\r\n"
            f"Host: 127.0.0.1:{relay.port}\r\n"
            f"Authorization: Bearer {TOKEN}\r\n"
            "Accept: application/json, text/event-stream\r\n"
            "Content-Type: application/json\r\n"
            "Content-Length: 400\r\n\r\n"
        )
        writer.write(head.encode() + b'{"jsonrpc": "2.0", ')
        await writer.drain()
        try:
            answer = await asyncio.wait_for(reader.read(4096), 15)
        finally:
            writer.close()
        assert answer.startswith(b"HTTP/1.1 408"), answer
        assert b"REQUEST_TIMEOUT" in answer


async def test_a_legacy_client_that_hangs_up_has_its_question_withdrawn() -> None:
    async with (
        FakeSlack(signing_secret=SECRET) as slack,
        relay_server(slack) as relay,
    ):
        async with aiohttp.ClientSession() as http:
            status, session = await _open(http, relay)
            assert status == 200
        call = {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {
                "name": "ask_user_question",
                "arguments": {
                    "questions": [
                        {"id": "go", "question": "Ship it?", "options": [{"label": "yes"}]}
                    ]
                },
            },
        }
        headers = _auth(**{"mcp-session-id": session, "mcp-protocol-version": LEGACY})
        async with aiohttp.ClientSession() as http:
            response = await http.post(f"{relay.url}/mcp", json=call, headers=headers)
            assert response.status == 200
            message = await slack.wait_for_message(timeout=15)
            # The client goes away mid-stream, with no cancellation sent.
            response.close()
        await wait_withdrawn(slack, message)


@contextlib.asynccontextmanager
async def _modern_client(relay: Relay, **headers: str) -> AsyncIterator[Client]:
    async with httpx2.AsyncClient(
        headers={"Authorization": f"Bearer {TOKEN}", **headers},
        timeout=httpx2.Timeout(60, read=300),
    ) as http:
        transport = streamable_http_client(f"{relay.url}/mcp", http_client=http)
        async with Client(transport, mode="auto") as client:
            yield client


async def test_a_session_id_the_relay_never_issued_is_offered_no_grants() -> None:
    async with (
        FakeSlack(signing_secret=SECRET) as slack,
        relay_server(slack) as relay,
        aiohttp.ClientSession() as http,
    ):
        status, real = await _open(http, relay, OTHER_TOKEN)
        assert status == 200
        args = {"tool_name": "Bash", "input": {"command": "npm test"}}
        for invented in ("made-up-session", real):  # another token's session is not ours
            async with _modern_client(relay, **{"Mcp-Session-Id": invented}) as client:
                call = asyncio.create_task(client.call_tool("approve_tool_use", args))
                message = await slack.wait_for_message(count=len(slack.messages) + 1)
                shown = json.dumps(message.blocks)
                assert "Allow for this session" not in shown
                assert "Allow" in shown
                await slack.click(message, "Allow once", user="U0ALICE")
                assert result_json(await asyncio.wait_for(call, 15))["behavior"] == "allow"


async def test_an_answered_call_logs_one_info_line_and_no_traceback() -> None:
    async with FakeSlack(signing_secret=SECRET) as slack, relay_server(slack) as relay:
        args = {"tool_name": "Bash", "input": {"command": "npm test"}}
        async with http_client(relay, mode="legacy") as client:
            call = asyncio.create_task(client.call_tool("approve_tool_use", args))
            message = await slack.wait_for_message(timeout=15)
            await slack.click(message, "Deny", user="U0BOB")
            assert result_json(await asyncio.wait_for(call, 15))["behavior"] == "deny"
        await relay.wait_for_log("approve_tool_use Bash")
        await relay.stop()
    assert not [line for line in relay.log if "Traceback" in line or " ERROR " in line], "".join(
        relay.log
    )
    lines = [line for line in relay.log if "approve_tool_use" in line]
    assert len(lines) == 1, lines
    assert " INFO " in lines[0], lines
