"""The MCP task book on its own: owners, ttl expiry withdrawing the question, the cap."""

from __future__ import annotations

import asyncio

import mcp_types as types
import pytest
from mcp.shared.exceptions import MCPError

from relay.mcp import tasks as tasks_module
from relay.mcp.tasks import TaskBook
from relay.seam.abort import AbortSignal


def waiting(aborted: list[str]) -> tasks_module.Work:
    async def work(signal: AbortSignal) -> types.CallToolResult:
        await signal.wait()
        aborted.append(str(signal.reason))
        return types.CallToolResult(content=[types.TextContent(text="withdrawn")], is_error=True)

    return work


async def test_an_expired_task_is_withdrawn_and_forgotten() -> None:
    book = TaskBook()
    aborted: list[str] = []
    task = book.start("alice", 50, waiting(aborted))["task"]
    assert task["ttl"] == 50
    with pytest.raises(MCPError, match="no task"):
        book.get("bob", task["taskId"])  # another owner: not found
    await asyncio.sleep(0.06)  # the ttl itself is what is tested: it must pass
    with pytest.raises(MCPError, match="no task"):
        book.get("alice", task["taskId"])
    for _ in range(100):
        if aborted:
            break
        await asyncio.sleep(0.01)
    assert aborted == ["the MCP task expired before anyone fetched its answer"]


async def test_an_owner_holds_at_most_max_tasks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tasks_module, "MAX_TASKS", 2)
    book = TaskBook()
    aborted: list[str] = []
    for _ in range(2):
        book.start("alice", 60_000, waiting(aborted))
    with pytest.raises(MCPError, match="holds 2 MCP tasks"):
        book.start("alice", 60_000, waiting(aborted))
    assert len(book.list("alice")["tasks"]) == 2  # the refused one asked nothing
    book.start("bob", 60_000, waiting(aborted))  # another owner's count is its own
    await book.close()
    assert len(aborted) == 3
