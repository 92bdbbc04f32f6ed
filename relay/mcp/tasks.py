"""MCP tasks (protocol 2025-11-25): a tool call that answers with a task id at once.

The installed SDK (``mcp`` 2.3) has the task types but dispatches none of ``tasks/*``, so the
relay serves them itself. A task-augmented ``tools/call`` (``params.task``) starts the ask in
a task of its own and returns ``{"task": {...}}``; ``tasks/get`` reports its status,
``tasks/result`` waits for and returns the tool's result, ``tasks/cancel`` withdraws the
question, ``tasks/list`` lists the caller's tasks. Tasks belong to the owner that created them
(the API token's fingerprint on ``/mcp``, the process on stdio): to anyone else a task id is
not found. A task is forgotten ``ttl`` ms after it was created; one still waiting then is
withdrawn, since nobody can fetch its answer any more.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

import anyio
import mcp_types as types
from mcp.shared.exceptions import MCPError

from relay.seam.abort import AbortController, AbortSignal

__all__ = ["DEFAULT_TTL_MS", "MAX_TASKS", "MAX_TTL_MS", "POLL_INTERVAL_MS", "TaskBook"]

DEFAULT_TTL_MS = 60 * 60 * 1000
"""How long a task is kept when the client asks for no ``ttl`` (an hour)."""
MAX_TTL_MS = 24 * 60 * 60 * 1000
"""The longest ``ttl`` granted (a day); a client asking for more gets this."""
MAX_TASKS = 200
"""The most tasks one owner may hold (working or awaiting collection) at once."""
POLL_INTERVAL_MS = 5000
"""The ``pollInterval`` suggested to clients: people take minutes, not milliseconds."""
RELATED_TASK_KEY = "io.modelcontextprotocol/related-task"
_WITHDRAW_WITHIN = 20.0
Status = Literal["working", "input_required", "completed", "failed", "cancelled"]
Work = Callable[[AbortSignal], Coroutine[Any, Any, types.CallToolResult]]


def _now() -> str:
    return datetime.now(UTC).isoformat().replace("+00:00", "Z")


@dataclass(slots=True)
class _Entry:
    owner: str
    task_id: str
    ttl: int
    created: float
    created_at: str
    updated_at: str
    controller: AbortController
    runner: asyncio.Task[None] | None = None
    status: Status = "working"
    message: str | None = "Waiting for a reviewer in Slack"
    result: types.CallToolResult | None = None
    done: asyncio.Event = field(default_factory=asyncio.Event)

    def wire(self) -> dict[str, Any]:
        task = types.Task(
            task_id=self.task_id,
            status=self.status,
            status_message=self.message,
            created_at=self.created_at,
            last_updated_at=self.updated_at,
            ttl=self.ttl,
            poll_interval=POLL_INTERVAL_MS,
        )
        return task.model_dump(by_alias=True, mode="json", exclude_none=True)


def _not_found(task_id: str) -> MCPError:
    return MCPError(
        types.INVALID_PARAMS,
        f"no task {task_id!r} for this client (it expired, or was never yours); call the"
        " tool again",
    )


class TaskBook:
    """The tasks of one MCP server, by owner: started, polled, fetched, cancelled."""

    def __init__(self) -> None:
        self._tasks: dict[str, _Entry] = {}

    def _sweep(self) -> None:
        now = asyncio.get_running_loop().time()
        for task_id, entry in list(self._tasks.items()):
            if now - entry.created >= entry.ttl / 1000:
                del self._tasks[task_id]
                entry.controller.abort("the MCP task expired before anyone fetched its answer")

    def _find(self, owner: str, task_id: str) -> _Entry:
        self._sweep()
        entry = self._tasks.get(task_id)
        if entry is None or entry.owner != owner:
            raise _not_found(task_id)
        return entry

    def start(self, owner: str, ttl: int | None, work: Work) -> dict[str, Any]:
        """Run ``work`` as a new task of ``owner``'s; the ``CreateTaskResult`` for it."""
        self._sweep()
        held = sum(1 for e in self._tasks.values() if e.owner == owner)
        if held >= MAX_TASKS:
            # Bad input changes no state: nothing is asked.
            raise MCPError(
                types.INVALID_PARAMS,
                f"this client holds {held} MCP tasks, the most relay keeps; fetch or cancel"
                " some (tasks/result, tasks/cancel) before starting another",
            )
        loop = asyncio.get_running_loop()
        granted = DEFAULT_TTL_MS if ttl is None or ttl <= 0 else min(ttl, MAX_TTL_MS)
        stamp = _now()
        entry = _Entry(
            owner=owner,
            task_id=f"task_{secrets.token_urlsafe(16)}",
            ttl=granted,
            created=loop.time(),
            created_at=stamp,
            updated_at=stamp,
            controller=AbortController(),
        )
        self._tasks[entry.task_id] = entry

        async def run() -> None:
            try:
                result = await work(entry.controller.signal)
            except Exception:
                if entry.status == "working":
                    entry.status, entry.message = "failed", "relay failed to ask; see its logs"
            else:
                if entry.status == "working":
                    entry.result = result
                    entry.status = "failed" if result.is_error else "completed"
                    entry.message = None
            finally:
                entry.updated_at = _now()
                entry.done.set()

        entry.runner = loop.create_task(run(), name=f"relay-mcp-{entry.task_id}")
        return {"task": entry.wire()}

    def get(self, owner: str, task_id: str) -> dict[str, Any]:
        """``tasks/get``: the task's state."""
        return self._find(owner, task_id).wire()

    def list(self, owner: str) -> dict[str, Any]:
        """``tasks/list``: the owner's tasks, oldest first."""
        self._sweep()
        return {"tasks": [e.wire() for e in self._tasks.values() if e.owner == owner]}

    async def result(self, owner: str, task_id: str) -> dict[str, Any]:
        """``tasks/result``: wait for the task to end, then the tool's result."""
        entry = self._find(owner, task_id)
        await entry.done.wait()
        if entry.result is None:
            raise MCPError(
                types.INVALID_PARAMS,
                f"task {task_id!r} is {entry.status}: it has no result; call the tool again",
            )
        body = entry.result.model_dump(by_alias=True, mode="json", exclude_none=True)
        body["_meta"] = {**body.get("_meta", {}), RELATED_TASK_KEY: {"taskId": task_id}}
        return body

    async def cancel(self, owner: str, task_id: str) -> dict[str, Any]:
        """``tasks/cancel``: withdraw the task's question; the task, now cancelled."""
        entry = self._find(owner, task_id)
        if entry.status != "working":
            raise MCPError(
                types.INVALID_PARAMS,
                f"task {task_id!r} is already {entry.status}: only a working task can be cancelled",
            )
        entry.status, entry.message = "cancelled", "withdrawn by the client"
        entry.controller.abort("the MCP client cancelled the task")
        if entry.runner is not None:
            # The withdrawal lands in Slack before the client hears it is done.
            with anyio.move_on_after(_WITHDRAW_WITHIN), contextlib.suppress(Exception):
                await asyncio.shield(entry.runner)
        entry.updated_at = _now()
        return entry.wire()

    async def close(self) -> None:
        """Withdraw every task still waiting (the server is stopping)."""
        for entry in self._tasks.values():
            entry.controller.abort("the relay is stopping")
        runners = [e.runner for e in self._tasks.values() if e.runner is not None]
        if runners:
            await asyncio.wait(runners, timeout=_WITHDRAW_WITHIN)
