"""MCP tasks (protocol 2025-11-25): a tool call that answers with a task id at once.

The installed SDK (``mcp`` 2.3) has the task types but dispatches none of ``tasks/*``, so the
relay serves them itself. A task-augmented ``tools/call`` (``params.task``) starts the ask in a
task of its own and returns ``{"task": {...}}``; ``tasks/get`` reports its status,
``tasks/result`` waits for and returns the tool's result, ``tasks/cancel`` withdraws the
question, ``tasks/list`` lists the caller's tasks. When a task's status changes (it ends:
completed, failed, cancelled) the server sends ``notifications/tasks/status`` with the task, as
the spec lets it (clients must not rely on it; polling still works). Tasks belong to the owner
that created them (the API token's fingerprint on ``/mcp``, the process on stdio): to anyone
else a task id is not found. A task is forgotten ``ttl`` ms after it was created; one still
waiting then is withdrawn, since nobody can fetch its answer any more.

The same tasks serve the 2026-07-28 tasks extension (``io.modelcontextprotocol/tasks``):
``TaskBook.detailed`` is its ``tasks/get`` shape (``ttlMs``, ``pollIntervalMs``, the result
inline), and its cancel acknowledges a task that already ended.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

import anyio
import mcp_types as types
from mcp.shared.exceptions import MCPError

from relay.seam.abort import AbortController, AbortSignal

__all__ = ["TaskBook"]

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
Notify = Callable[[dict[str, Any]], Awaitable[None]]
"""Sends a task's new state to its client (``notifications/tasks/status``), best effort."""
# How long one status notification may take before it is given up (a stalled client).
_NOTIFY_WITHIN = 10.0


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
    notify: Notify | None = None

    async def moved(self) -> None:
        """The status changed: stamp it and tell the client (never failing the task)."""
        self.updated_at = _now()
        if self.notify is not None:
            with anyio.move_on_after(_NOTIFY_WITHIN), contextlib.suppress(Exception):
                await self.notify(self.wire())

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

    def detailed(self) -> dict[str, Any]:
        """The task as the 2026-07-28 tasks extension has it (a ``DetailedTask``): ``ttlMs``
        and ``pollIntervalMs``, the result inline once there is one. There a tool result
        with ``isError`` is ``completed`` (``failed`` is kept for a JSON-RPC error)."""
        status: Status = "completed" if self.result is not None else self.status
        task: dict[str, Any] = {
            "taskId": self.task_id,
            "status": status,
            "createdAt": self.created_at,
            "lastUpdatedAt": self.updated_at,
            "ttlMs": self.ttl,
            "pollIntervalMs": POLL_INTERVAL_MS,
        }
        if self.message is not None:
            task["statusMessage"] = self.message
        if self.result is not None:
            task["result"] = self.result.model_dump(by_alias=True, mode="json", exclude_none=True)
        elif status == "failed":
            task["error"] = {"code": types.INTERNAL_ERROR, "message": self.message or "failed"}
        return task


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

    def start(
        self, owner: str, ttl: int | None, work: Work, notify: Notify | None = None
    ) -> dict[str, Any]:
        """Run ``work`` as a new task of ``owner``'s; the ``CreateTaskResult`` for it.
        ``notify`` is told each status the task moves to."""
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
            notify=notify,
        )
        self._tasks[entry.task_id] = entry

        async def run() -> None:
            ended = False  # here, not by tasks/cancel (which tells the client itself)
            try:
                result = await work(entry.controller.signal)
            except Exception:
                if entry.status == "working":
                    entry.status, entry.message = "failed", "relay failed to ask; see its logs"
                    ended = True
            else:
                if entry.status == "working":
                    entry.result = result
                    entry.status = "failed" if result.is_error else "completed"
                    entry.message = None
                    ended = True
            finally:
                entry.updated_at = _now()
                entry.done.set()
            if ended:
                await entry.moved()

        entry.runner = loop.create_task(run(), name=f"relay-mcp-{entry.task_id}")
        return {"task": entry.wire()}

    def get(self, owner: str, task_id: str) -> dict[str, Any]:
        """``tasks/get``: the task's state."""
        return self._find(owner, task_id).wire()

    def detailed(self, owner: str, task_id: str) -> dict[str, Any]:
        """``tasks/get`` of the 2026-07-28 tasks extension: the state, with the result."""
        return self._find(owner, task_id).detailed()

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

    async def cancel(self, owner: str, task_id: str, *, ended_ok: bool = False) -> dict[str, Any]:
        """``tasks/cancel``: withdraw the task's question; the task, now cancelled.
        ``ended_ok``: a task that already ended is left as it is, not refused (the 2026-07-28
        extension acknowledges every cancel of a known task)."""
        entry = self._find(owner, task_id)
        if entry.status != "working" and ended_ok:
            return entry.wire()
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
        await entry.moved()
        return entry.wire()

    async def close(self) -> None:
        """Withdraw every task still waiting (the server is stopping)."""
        for entry in self._tasks.values():
            entry.controller.abort("the relay is stopping")
        runners = [e.runner for e in self._tasks.values() if e.runner is not None]
        if runners:
            await asyncio.wait(runners, timeout=_WITHDRAW_WITHIN)
