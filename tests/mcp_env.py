"""MCP clients (the official SDK's own ``Client``) wired to relay's MCP server under test."""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any

import httpx2
import mcp_types as types
from mcp import Client, StdioServerParameters
from mcp.client.extension import ClientExtension
from mcp.client.streamable_http import streamable_http_client

from relay.testing import FakeMessage, FakeSlack
from tests.server_env import TOKEN, Relay

__all__ = ["http_client", "result_json", "result_text", "stdio_client", "wait_withdrawn"]


def stdio_params(env: dict[str, str], *args: str) -> StdioServerParameters:
    """``relay mcp`` as an MCP client's configuration would start it."""
    return StdioServerParameters(
        command=sys.executable, args=["-m", "relay.cli", "mcp", *args], env=env
    )


@asynccontextmanager
async def stdio_client(
    env: dict[str, str],
    *args: str,
    mode: str = "auto",
    extensions: Sequence[ClientExtension] | None = None,
) -> AsyncIterator[Client]:
    """A connected client of a ``relay mcp`` subprocess."""
    async with Client(stdio_params(env, *args), mode=mode, extensions=extensions) as client:
        yield client


@asynccontextmanager
async def http_client(
    relay: Relay,
    *,
    token: str = TOKEN,
    mode: str = "auto",
    extensions: Sequence[ClientExtension] | None = None,
) -> AsyncIterator[Client]:
    """A connected client of ``relay serve``'s ``/mcp``, with the bearer token."""
    async with httpx2.AsyncClient(
        headers={"Authorization": f"Bearer {token}"}, timeout=httpx2.Timeout(60, read=300)
    ) as http:
        transport = streamable_http_client(f"{relay.url}/mcp", http_client=http)
        async with Client(transport, mode=mode, extensions=extensions) as client:
            yield client


def result_text(result: types.CallToolResult) -> str:
    """The one text block of a tool result."""
    assert len(result.content) == 1, result
    block = result.content[0]
    assert isinstance(block, types.TextContent), block
    return block.text


def result_json(result: types.CallToolResult) -> Any:
    """The tool result's text, parsed as JSON."""
    return json.loads(result_text(result))


async def wait_withdrawn(slack: FakeSlack, message: FakeMessage) -> None:
    """Wait until ``message`` was updated to say it is withdrawn."""
    await slack.wait_until(lambda: "Withdrawn" in json.dumps(message.blocks), timeout=15)
