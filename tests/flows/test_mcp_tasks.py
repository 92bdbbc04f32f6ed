"""Flow: MCP tasks (2025-11-25, and 2026-07-28's extension) on ``/mcp`` and ``relay mcp``,
with the SDK's own client.

The SDK's client speaks no tasks (mcp 2.3 has the types only and checks a ``tools/call`` result
against ``CallToolResult``), so these requests go raw through its dispatcher: the same
connection, session and headers as its typed calls. The status notifications the server sends
reach the client through its own extension hook (a ``NotificationBinding``). The 2026-07-28
extension goes through the client's other hook: a ``ResultClaim`` for ``resultType: "task"``
that polls ``tasks/get``, so ``call_tool`` itself returns the answer. ``relay serve`` and
``relay mcp`` run as subprocesses; people answer in FakeSlack.
"""

from __future__ import annotations

# Looks inside: the SDK's client has no call for a raw tasks/* request: its dispatcher sends one.
import asyncio
import json
from typing import Any, Literal

import mcp_types as types
import pytest
from mcp import Client
from mcp.client.extension import ClaimContext, ClientExtension, NotificationBinding, ResultClaim
from mcp.client.session import ClientSession
from mcp.shared.exceptions import MCPError
from pydantic import Field, TypeAdapter

from relay.testing import FakeSlack
from tests.mcp_env import http_client, stdio_client, wait_withdrawn
from tests.server_env import OTHER_TOKEN, SECRET, TOKEN, relay_server

QUESTION = {"questions": [{"id": "go", "question": "Ship it?", "options": [{"label": "yes"}]}]}
ANSWER = '{"answers":[{"id":"go","selected":["yes"]}]}'


class TaskStatuses(ClientExtension):
    """Collects the ``notifications/tasks/status`` a server sends, through the SDK client."""

    identifier = "dev.relay.tests/task-status"

    def __init__(self) -> None:
        self.seen: list[types.TaskStatusNotificationParams] = []
        self._changed = asyncio.Condition()

    def notifications(self) -> list[NotificationBinding[types.TaskStatusNotificationParams]]:
        return [
            NotificationBinding(
                method="notifications/tasks/status",
                params_type=types.TaskStatusNotificationParams,
                handler=self._seen,
            )
        ]

    async def _seen(self, params: types.TaskStatusNotificationParams) -> None:
        async with self._changed:
            self.seen.append(params)
            self._changed.notify_all()

    async def wait_for(self, task_id: str, status: str) -> types.TaskStatusNotificationParams:
        """The notification saying task ``task_id`` moved to ``status``, once it came."""

        def found() -> types.TaskStatusNotificationParams | None:
            hits = [p for p in self.seen if p.task_id == task_id and p.status == status]
            return hits[0] if hits else None

        async with asyncio.timeout(15), self._changed:
            await self._changed.wait_for(lambda: found() is not None)
        hit = found()
        assert hit is not None
        return hit


async def raw(client: Client, method: str, params: dict[str, Any]) -> dict[str, Any]:
    """One JSON-RPC request on ``client``'s connection; its result as sent."""
    result: dict[str, Any] = await client.session._dispatcher.send_raw_request(
        method, params, {"timeout": 60}
    )
    return result


async def start(client: Client, ttl: int | None = 60_000) -> dict[str, Any]:
    created = await raw(
        client,
        "tools/call",
        {"name": "ask_user_question", "arguments": QUESTION, "task": {"ttl": ttl}},
    )
    task: dict[str, Any] = created["task"]
    return task


async def tasks_flow(
    client: Client, slack: FakeSlack, other: Client | None, statuses: TaskStatuses
) -> None:
    assert client.protocol_version == "2025-11-25"
    caps = client.server_capabilities.model_dump(by_alias=True, exclude_none=True)
    assert caps["tasks"]["requests"] == {"tools": {"call": {}}}
    assert "cancel" in caps["tasks"]
    tools = {t.name: t for t in (await client.list_tools()).tools}
    for tool in tools.values():
        assert tool.execution is not None
        assert tool.execution.task_support == "optional"

    # Answered: a task id at once, working while people decide, then the answer.
    task = await start(client)
    assert task["status"] == "working"
    assert task["ttl"] == 60_000
    assert task["pollInterval"] > 0
    message = await slack.wait_for_message(timeout=15)
    polled = await raw(client, "tasks/get", {"taskId": task["taskId"]})
    assert polled["status"] == "working"
    listed = await raw(client, "tasks/list", {})
    assert [t["taskId"] for t in listed["tasks"]] == [task["taskId"]]
    if other is not None:
        # Another token's client cannot see, fetch or cancel it.
        for method in ("tasks/get", "tasks/cancel", "tasks/result"):
            with pytest.raises(MCPError, match="no task"):
                await raw(other, method, {"taskId": task["taskId"]})
        assert (await raw(other, "tasks/list", {}))["tasks"] == []
    assert statuses.seen == []  # (nothing changed yet)
    await slack.click(message, "yes", user="U0ALICE")
    # The client hears the task ended without polling: the task as tasks/get has it.
    told = await statuses.wait_for(task["taskId"], "completed")
    assert told.meta is None  # no related-task key: the task id is in the params
    result = await raw(client, "tasks/result", {"taskId": task["taskId"]})
    assert result["content"] == [{"type": "text", "text": ANSWER}]
    assert result["_meta"]["io.modelcontextprotocol/related-task"] == {"taskId": task["taskId"]}
    polled = await raw(client, "tasks/get", {"taskId": task["taskId"]})
    assert polled["status"] == "completed"
    assert told.model_dump(by_alias=True, mode="json", exclude_none=True) == polled

    # Cancelled: the question is withdrawn in Slack, the task says so, and has no result.
    task = await start(client, ttl=None)
    assert task["ttl"] == 3_600_000  # the default when the client names none
    message = await slack.wait_for_message(count=2, timeout=15)
    cancelled = await raw(client, "tasks/cancel", {"taskId": task["taskId"]})
    assert cancelled["status"] == "cancelled"
    await statuses.wait_for(task["taskId"], "cancelled")
    await wait_withdrawn(slack, message)
    with pytest.raises(MCPError, match="cancelled"):
        await raw(client, "tasks/result", {"taskId": task["taskId"]})
    with pytest.raises(MCPError, match="already cancelled"):
        await raw(client, "tasks/cancel", {"taskId": task["taskId"]})
    assert "Withdrawn" in json.dumps(message.blocks)

    # The blocking form still works on the same connection.
    call = asyncio.create_task(client.call_tool("ask_user_question", QUESTION))
    message = await slack.wait_for_message(count=3, timeout=15)
    await slack.click(message, "yes", user="U0ALICE")
    blocking = await asyncio.wait_for(call, 15)
    assert blocking.content[0].model_dump()["text"] == ANSWER  # type: ignore[union-attr]


async def test_tasks_over_http_are_the_tokens() -> None:
    async with (
        FakeSlack(signing_secret=SECRET) as slack,
        relay_server(slack) as relay,
        http_client(relay, mode="legacy", extensions=[statuses := TaskStatuses()]) as client,
        http_client(relay, token=OTHER_TOKEN, mode="legacy") as other,
    ):
        await tasks_flow(client, slack, other, statuses)


async def test_tasks_over_stdio() -> None:
    async with (
        FakeSlack(signing_secret=SECRET) as slack,
        relay_server(slack) as relay,
    ):
        env = {"RELAY_URL": relay.url, "RELAY_TOKEN": TOKEN}
        statuses = TaskStatuses()
        async with stdio_client(env, mode="legacy", extensions=[statuses]) as client:
            await tasks_flow(client, slack, None, statuses)
            # A task still waiting when its client goes away has nobody to fetch it.
            await start(client)
            message = await slack.wait_for_message(count=4, timeout=15)
        await wait_withdrawn(slack, message)


class ModernTask(types.Result):
    """A ``CreateTaskResult`` of the 2026-07-28 tasks extension (``resultType: "task"``)."""

    result_type: Literal["task"] = Field(alias="resultType")
    task_id: str = Field(alias="taskId")
    status: str
    ttl_ms: int | None = Field(alias="ttlMs")
    poll_interval_ms: int | None = Field(default=None, alias="pollIntervalMs")


class TasksExtension(ClientExtension):
    """The 2026-07-28 tasks extension, client side, through the SDK's own extension hooks: it
    declares ``io.modelcontextprotocol/tasks`` on each request and resolves a task result by
    polling ``tasks/get`` (what a client of the extension does), so ``call_tool`` returns
    the tool's result as it would without tasks."""

    identifier = "io.modelcontextprotocol/tasks"

    def __init__(self) -> None:
        self.created: list[ModernTask] = []
        self.polled: list[dict[str, Any]] = []
        self.started = asyncio.Event()

    def claims(self) -> list[ResultClaim[ModernTask]]:
        return [ResultClaim(result_type="task", model=ModernTask, resolve=self._resolve)]

    async def _resolve(self, task: ModernTask, ctx: ClaimContext) -> types.CallToolResult:
        self.created.append(task)
        while True:
            polled = await get_task(ctx.session, task.task_id)
            self.polled.append(polled)
            self.started.set()  # (once polled: the task is known to tasks/get)
            if polled["status"] == "completed":
                return types.CallToolResult.model_validate(polled["result"])
            if polled["status"] in ("failed", "cancelled"):
                message = f"task {polled['status']}"
                return types.CallToolResult(
                    content=[types.TextContent(text=message)], is_error=True
                )
            # (the server suggests 5 s; a test need not wait that long between polls)
            await asyncio.sleep(0.05)


async def get_task(session: ClientSession, task_id: str) -> dict[str, Any]:
    """``tasks/get`` through the SDK's session (stamped with the request envelope)."""
    request = types.GetTaskRequest(params=types.GetTaskRequestParams(task_id=task_id))
    result: dict[str, Any] = await session.send_request(request, TypeAdapter(dict[str, Any]))
    return result


async def modern_tasks_flow(
    client: Client, slack: FakeSlack, tasks: TasksExtension, *, posted: int
) -> None:
    """Answered and cancelled tasks of the 2026-07-28 extension; ``posted``: messages so far."""
    assert client.protocol_version == "2026-07-28"
    caps = client.server_capabilities.model_dump(by_alias=True, exclude_none=True)
    assert caps["extensions"]["io.modelcontextprotocol/tasks"] == {}
    assert "tasks" not in caps  # the 2025-11-25 capability is not this era's

    # Answered: a task at once, working while people decide, then the result inline.
    call = asyncio.create_task(client.call_tool("ask_user_question", QUESTION))
    message = await slack.wait_for_message(count=posted + 1, timeout=15)
    await asyncio.wait_for(tasks.started.wait(), 15)
    created = tasks.created[0]
    assert created.status == "working"
    assert created.ttl_ms == 3_600_000
    assert created.poll_interval_ms == 5000
    assert tasks.polled[0]["status"] == "working"
    await slack.click(message, "yes", user="U0ALICE")
    result = await asyncio.wait_for(call, 15)
    assert result.content[0].model_dump()["text"] == ANSWER  # type: ignore[union-attr]
    done = tasks.polled[-1]
    assert done["taskId"] == created.task_id
    assert done["resultType"] == "complete"
    assert done["result"]["content"] == [{"type": "text", "text": ANSWER}]

    # Cancelled: an empty acknowledgement, the question withdrawn, the task cancelled.
    tasks.started.clear()
    call = asyncio.create_task(client.call_tool("ask_user_question", QUESTION))
    message = await slack.wait_for_message(count=posted + 2, timeout=15)
    await asyncio.wait_for(tasks.started.wait(), 15)
    task_id = tasks.created[1].task_id
    cancel = types.CancelTaskRequest(params=types.CancelTaskRequestParams(task_id=task_id))
    ack = await client.session.send_request(cancel, TypeAdapter(dict[str, Any]))
    assert {k: v for k, v in ack.items() if k != "_meta"} == {"resultType": "complete"}
    cancelled = await asyncio.wait_for(call, 15)
    assert cancelled.is_error
    assert (await get_task(client.session, task_id))["status"] == "cancelled"
    await wait_withdrawn(slack, message)
    # Cancelling again is acknowledged as well; an unknown task is an error.
    await client.session.send_request(cancel, TypeAdapter(dict[str, Any]))
    with pytest.raises(MCPError, match="no task"):
        await get_task(client.session, "task_nobody")


async def test_2026_tasks_extension_over_http_and_stdio() -> None:
    async with (
        FakeSlack(signing_secret=SECRET) as slack,
        relay_server(slack) as relay,
    ):
        async with http_client(relay, extensions=[tasks := TasksExtension()]) as client:
            await modern_tasks_flow(client, slack, tasks, posted=0)
        env = {"RELAY_URL": relay.url, "RELAY_TOKEN": TOKEN}
        async with stdio_client(env, extensions=[tasks := TasksExtension()]) as client:
            await modern_tasks_flow(client, slack, tasks, posted=2)


async def test_2026_without_the_extension_the_call_blocks() -> None:
    async with (
        FakeSlack(signing_secret=SECRET) as slack,
        relay_server(slack) as relay,
        http_client(relay) as client,
    ):
        assert client.protocol_version == "2026-07-28"
        call = asyncio.create_task(client.call_tool("ask_user_question", QUESTION))
        message = await slack.wait_for_message(timeout=15)
        await slack.click(message, "yes", user="U0ALICE")
        result = await asyncio.wait_for(call, 15)
        assert result.content[0].model_dump()["text"] == ANSWER  # type: ignore[union-attr]
