"""Flow: MCP tasks (2025-11-25) on ``/mcp`` and ``relay mcp``, with the SDK's own client.

The SDK's client speaks no tasks (mcp 2.3 has the types only and checks a ``tools/call`` result
against ``CallToolResult``), so these requests go raw through its dispatcher: the same
connection, session and headers as its typed calls. The status notifications the server sends
reach the client through its own extension hook (a ``NotificationBinding``). ``relay serve``
and ``relay mcp`` run as subprocesses; people answer in FakeSlack.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import mcp_types as types
import pytest
from mcp import Client
from mcp.client.extension import ClientExtension, NotificationBinding
from mcp.shared.exceptions import MCPError

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
