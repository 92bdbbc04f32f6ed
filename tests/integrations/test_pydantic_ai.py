"""pydantic-ai's deferred approvals decided in Slack: its own ``TestModel``/``FunctionModel``
calls tools with ``requires_approval=True``; reviewers answer in FakeSlack through a real
``SlackProvider``; the run resumes with what they decided and the model reads it."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from pydantic_ai import Agent, DeferredToolRequests
from pydantic_ai.capabilities import HandleDeferredToolCalls
from pydantic_ai.messages import (
    ModelMessage,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.test import TestModel
from pydantic_ai.toolsets import FunctionToolset

from relay import AgentRef, UserInteractionService
from relay.gate.local import slack_approver
from relay.grants.memory import MemoryGrants
from relay.integrations import pydantic_ai as relay_pai
from relay.integrations.core import seam_approver
from relay.slack import SlackProvider
from relay.testing import FakeSlack

AGENT = AgentRef("ops-bot", "Ops bot")
DELETED: list[str] = []


def build(model: Any = None, **kw: Any) -> Agent[None, str | DeferredToolRequests]:
    agent: Agent[None, str | DeferredToolRequests] = Agent(
        model or TestModel(), output_type=[str, DeferredToolRequests], **kw
    )

    @agent.tool_plain(requires_approval=True)
    def delete_file(path: str) -> str:
        """Delete a file."""
        DELETED.append(path)
        return f"deleted {path}"

    @agent.tool_plain(requires_approval=True)
    def restart(service: str) -> str:
        """Restart a service."""
        return f"restarted {service}"

    return agent


def deletes(path: str) -> Any:
    """A model that calls ``delete_file(path)`` once, then says what the tool returned."""
    calls = iter([[ToolCallPart("delete_file", {"path": path}, tool_call_id="c1")]])

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        step = next(calls, None)
        if step is not None:
            return ModelResponse(parts=step)
        last = messages[-1].parts[0]
        assert isinstance(last, ToolReturnPart)
        return ModelResponse(parts=[TextPart(f"model saw: {last.content}")])

    return model


async def shown(slack: FakeSlack, tool: str, count: int) -> Any:
    message = await slack.wait_for_message(count=count, timeout=15)
    assert f"{tool}: permission request" in str(message.blocks)
    return message


async def test_several_pending_calls_one_allowed_one_denied_with_a_reason(
    fake_slack: FakeSlack, slack_provider: SlackProvider
) -> None:
    DELETED.clear()
    agent = build()
    first = await agent.run("clean up")
    requests = first.output
    assert isinstance(requests, DeferredToolRequests)
    assert len(requests.approvals) == 2  # both asked at once, each its own approval
    approver = slack_approver(slack_provider, MemoryGrants(), owner="local")

    async def review() -> None:
        messages = [await fake_slack.wait_for_message(count=n, timeout=15) for n in (1, 2)]
        for message in messages:
            if "delete_file: permission request" in str(message.blocks):
                assert "path" in str(message.blocks)
                await fake_slack.click(message, "Allow once", user="U0ALICE")
            else:
                await fake_slack.type(message, "not during business hours", user="U0BOB")
                await fake_slack.press_enter(message, user="U0BOB")

    reviewing = asyncio.create_task(review())
    results = await relay_pai.approve(requests, approver, AGENT)
    await reviewing
    assert results.answered_by == {
        "pyd_ai_tool_call_id__delete_file": "U0ALICE",
        "pyd_ai_tool_call_id__restart": "U0BOB",
    }
    second = await agent.run(message_history=first.all_messages(), deferred_tool_results=results)
    # TestModel answers with what every tool returned: the model read the reviewer's reason.
    said = json.loads(str(second.output))
    assert said["delete_file"] == "deleted a"
    assert said["restart"] == "bob denied this in Slack: not during business hours"
    assert DELETED == ["a"]


async def test_the_handler_keeps_the_run_going_and_a_plain_deny_reaches_the_model(
    fake_slack: FakeSlack, slack_provider: SlackProvider
) -> None:
    DELETED.clear()
    model = deletes("/etc/hosts")

    approver = slack_approver(slack_provider, MemoryGrants(), owner="local")
    handler = relay_pai.handler(approver, AGENT, context={"Host": "web-1"})
    agent = build(FunctionModel(model), capabilities=[HandleDeferredToolCalls(handler=handler)])

    running = asyncio.create_task(agent.run("tidy"))
    message = await shown(fake_slack, "delete_file", 1)
    assert "web-1" in str(message.blocks)
    assert "/etc/hosts" in str(message.blocks)
    await fake_slack.click(message, "Deny", user="U0ALICE")
    result = await running
    assert result.output == "model saw: alice denied this in Slack"
    assert DELETED == []


async def test_no_answer_in_time_denies_and_says_so(
    fake_slack: FakeSlack, slack_provider: SlackProvider
) -> None:
    DELETED.clear()
    agent = build()
    first = await agent.run("clean up")
    assert isinstance(first.output, DeferredToolRequests)
    approver = slack_approver(slack_provider, MemoryGrants(), owner="local")
    results = await relay_pai.approve(first.output, approver, AGENT, timeout=1.0)
    second = await agent.run(message_history=first.all_messages(), deferred_tool_results=results)
    said = json.loads(str(second.output))
    assert said["delete_file"].startswith("No reviewer answered within 1 s, so relay denied this")
    assert DELETED == []


async def test_a_toolset_behind_approval_required_is_asked_too(
    fake_slack: FakeSlack, slack_provider: SlackProvider
) -> None:
    # How pydantic-ai gates MCP servers' tools: any toolset, wrapped in ApprovalRequiredToolset.
    dropped: list[str] = []

    def drop_table(table: str) -> str:
        """Drop a table."""
        dropped.append(table)
        return f"dropped {table}"

    toolset = FunctionToolset([drop_table]).approval_required()
    approver = slack_approver(slack_provider, MemoryGrants(), owner="local")
    agent: Agent[None, str] = Agent(
        TestModel(),
        toolsets=[toolset],
        capabilities=[HandleDeferredToolCalls(handler=relay_pai.handler(approver, AGENT))],
    )
    running = asyncio.create_task(agent.run("drop it"))
    message = await shown(fake_slack, "drop_table", 1)
    await fake_slack.click(message, "Allow once", user="U0ALICE")
    result = await running
    assert json.loads(result.output) == {"drop_table": "dropped a"}
    assert dropped == ["a"]


async def test_through_the_seams_registered_provider(
    fake_slack: FakeSlack, relay_service: UserInteractionService
) -> None:
    DELETED.clear()
    agent = build()
    first = await agent.run("clean up")
    assert isinstance(first.output, DeferredToolRequests)
    approver = seam_approver(relay_service)

    async def review() -> None:
        for n in (1, 2):
            message = await fake_slack.wait_for_message(count=n, timeout=15)
            await fake_slack.click(message, "Allow once", user="U0ALICE")

    reviewing = asyncio.create_task(review())
    results = await relay_pai.approve(first.output, approver, AGENT)
    await reviewing
    second = await agent.run(message_history=first.all_messages(), deferred_tool_results=results)
    assert json.loads(str(second.output)) == {"delete_file": "deleted a", "restart": "restarted a"}


async def test_a_reviewers_edit_is_what_the_tool_runs(
    fake_slack: FakeSlack, slack_provider: SlackProvider
) -> None:
    # ToolApproved(override_args=…) is pydantic-ai's edited call: reviewers get Edit…, and
    # the tool runs with exactly the arguments they left in the form.
    DELETED.clear()
    model = deletes("/srv/app")

    agent = build(FunctionModel(model))
    first = await agent.run("tidy")
    assert isinstance(first.output, DeferredToolRequests)
    approver = slack_approver(slack_provider, MemoryGrants(), owner="local")

    async def review() -> None:
        message = await shown(fake_slack, "delete_file", 1)
        await fake_slack.click(message, "Edit…", user="U0ALICE")
        modal = await fake_slack.wait_for_modal(user="U0ALICE", timeout=10)
        modal.fill("path", "/srv/app/tmp")
        assert (await fake_slack.submit_view(modal)).outcome == "closed"

    reviewing = asyncio.create_task(review())
    results = await relay_pai.approve(first.output, approver, AGENT)
    await reviewing
    second = await agent.run(message_history=first.all_messages(), deferred_tool_results=results)
    assert second.output == "model saw: deleted /srv/app/tmp"
    assert DELETED == ["/srv/app/tmp"]
