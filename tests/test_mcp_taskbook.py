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


async def test_each_status_change_is_told_once_and_a_failing_client_fails_nothing() -> None:
    book = TaskBook()
    told: list[tuple[str, str]] = []
    release = asyncio.Event()

    async def notify(task: dict[str, object]) -> None:
        told.append((str(task["taskId"]), str(task["status"])))

    async def broken(task: dict[str, object]) -> None:
        raise ConnectionResetError("the client went away")

    async def answered(signal: AbortSignal) -> types.CallToolResult:
        await release.wait()
        return types.CallToolResult(content=[types.TextContent(text="yes")])

    done = book.start("alice", 60_000, answered, notify)["task"]["taskId"]
    aborted: list[str] = []
    cancelled = book.start("alice", 60_000, waiting(aborted), notify)["task"]["taskId"]
    quiet = book.start("alice", 60_000, answered, broken)["task"]["taskId"]
    assert told == []  # working is where a task starts: no change yet
    release.set()
    assert (await book.result("alice", done))["content"] == [{"type": "text", "text": "yes"}]
    assert (await book.cancel("alice", cancelled))["status"] == "cancelled"
    assert (await book.result("alice", quiet))["content"][0]["text"] == "yes"
    assert book.get("alice", quiet)["status"] == "completed"
    await book.close()
    # Told after the result was ready (a client may fetch it at once), once per change.
    assert sorted(told) == sorted([(done, "completed"), (cancelled, "cancelled")])
    assert aborted == ["the MCP client cancelled the task"]
