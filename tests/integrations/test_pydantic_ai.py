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

from relay import AgentRef
from relay.gate.local import slack_approver
from relay.grants.memory import MemoryGrants
from relay.integrations import pydantic_ai as relay_pai
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
    calls = iter([[ToolCallPart("delete_file", {"path": "/etc/hosts"}, tool_call_id="c1")]])

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        step = next(calls, None)
        if step is not None:
            return ModelResponse(parts=step)
        last = messages[-1].parts[0]
        assert isinstance(last, ToolReturnPart)
        return ModelResponse(parts=[TextPart(f"model saw: {last.content}")])

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
