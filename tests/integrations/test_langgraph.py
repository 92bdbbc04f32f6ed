"""LangChain's human-in-the-loop middleware answered in Slack: a fake chat model (no LLM)
calls gated tools; reviewers answer in FakeSlack through a real ``SlackProvider``; the
graph resumes from its checkpointer with ``Command(resume=…)`` and the model reads it."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain.agents.middleware import HumanInTheLoopMiddleware
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver

from relay import AgentRef
from relay.errors import RelayConfigError
from relay.gate.local import slack_approver
from relay.grants.memory import MemoryGrants
from relay.integrations import langgraph as relay_lg
from relay.slack import SlackProvider
from relay.testing import FakeSlack

AGENT = AgentRef("ops-bot", "Ops bot")
DELETED: list[str] = []


class FakeChat(GenericFakeChatModel):
    """LangChain's fake chat model, taking the tools ``create_agent`` binds."""

    def bind_tools(self, tools: Any, **kw: Any) -> Any:
        return self


@tool
def delete_file(path: str) -> str:
    """Delete a file."""
    DELETED.append(path)
    return f"deleted {path}"


def build(*paths: str, mode: Any = "batched", decisions: Any = True) -> Any:
    turns = iter(
        [
            AIMessage(
                content="",
                tool_calls=[
                    {"name": "delete_file", "args": {"path": p}, "id": f"call-{n}"}
                    for n, p in enumerate(paths)
                ],
            ),
            AIMessage(content="done"),
        ]
    )
    return create_agent(
        FakeChat(messages=turns),
        tools=[delete_file],
        middleware=[
            HumanInTheLoopMiddleware(interrupt_on={"delete_file": decisions}, interrupt_mode=mode)
        ],
        checkpointer=InMemorySaver(),
    )


def tool_results(state: Any) -> dict[str, str]:
    return {
        str(m.tool_call_id): str(m.content)
        for m in state.value["messages"]
        if isinstance(m, ToolMessage)
    }


CONFIG: Any = {"configurable": {"thread_id": "t1"}}


async def review(slack: FakeSlack, count: int) -> None:
    for n in range(1, count + 1):
        message = await slack.wait_for_message(count=n, timeout=15)
        if "/srv/db" in str(message.blocks):
            await slack.type(message, "that is production", user="U0BOB")
            await slack.press_enter(message, user="U0BOB")
        else:
            await slack.click(message, "Allow once", user="U0ALICE")


@pytest.mark.parametrize("mode", ["batched", "per_call"])
async def test_several_held_calls_one_allowed_one_denied_with_a_reason(
    fake_slack: FakeSlack, slack_provider: SlackProvider, mode: str
) -> None:
    DELETED.clear()
    graph = build("/var/cache/a", "/srv/db", mode=mode)
    first = await graph.ainvoke(
        {"messages": [{"role": "user", "content": "clean up"}]}, CONFIG, version="v2"
    )
    assert first.interrupts
    approver = slack_approver(slack_provider, MemoryGrants(), owner="local")
    reviewing = asyncio.create_task(review(fake_slack, 2))
    command = await relay_lg.approve(first.interrupts, approver, AGENT)
    await reviewing
    second = await graph.ainvoke(command, CONFIG, version="v2")
    assert second.interrupts == ()
    assert tool_results(second) == {
        "call-0": "deleted /var/cache/a",
        "call-1": "User rejected the tool call for `delete_file` with reason:"
        " bob denied this in Slack: that is production",
    }
    assert DELETED == ["/var/cache/a"]


async def test_no_answer_in_time_rejects_and_says_so(
    fake_slack: FakeSlack, slack_provider: SlackProvider
) -> None:
    DELETED.clear()
    graph = build("/var/cache/a")
    first = await graph.ainvoke({"messages": [{"role": "user", "content": "go"}]}, CONFIG)
    interrupts = (await graph.aget_state(CONFIG)).interrupts
    assert "__interrupt__" in first
    approver = slack_approver(slack_provider, MemoryGrants(), owner="local")
    command = await relay_lg.approve(interrupts, approver, AGENT, timeout=1.0)
    second = await graph.ainvoke(command, CONFIG, version="v2")
    said = tool_results(second)["call-0"]
    assert "No reviewer answered within 1 s, so relay denied this" in said
    assert DELETED == []


async def test_a_tool_relay_could_not_deny_is_refused_before_anyone_is_asked(
    fake_slack: FakeSlack,
) -> None:
    graph = build("/var/cache/a", decisions={"allowed_decisions": ["approve"]})
    first = await graph.ainvoke(
        {"messages": [{"role": "user", "content": "go"}]}, CONFIG, version="v2"
    )
    with pytest.raises(RelayConfigError, match="allow both approve and reject"):
        relay_lg.pending_calls(first.interrupts)
    assert fake_slack.messages == []


async def edit_path(slack: FakeSlack, path: str) -> None:
    message = await slack.wait_for_message(timeout=15)
    await slack.click(message, "Edit…", user="U0ALICE")
    modal = await slack.wait_for_modal(user="U0ALICE", timeout=10)
    modal.fill("path", path)
    assert (await slack.submit_view(modal)).outcome == "closed"


async def test_a_reviewers_edit_runs_as_the_middlewares_edited_action(
    fake_slack: FakeSlack, slack_provider: SlackProvider
) -> None:
    DELETED.clear()
    graph = build("/srv/app")
    first = await graph.ainvoke(
        {"messages": [{"role": "user", "content": "clean up"}]}, CONFIG, version="v2"
    )
    approver = slack_approver(slack_provider, MemoryGrants(), owner="local")
    reviewing = asyncio.create_task(edit_path(fake_slack, "/srv/app/tmp"))
    command = await relay_lg.approve(first.interrupts, approver, AGENT)
    await reviewing
    second = await graph.ainvoke(command, CONFIG, version="v2")
    said = tool_results(second)["call-0"]
    # The middleware tells the model the call was replaced, then what the tool returned.
    assert "a human reviewer replaced this tool call" in said
    assert said.endswith("deleted /srv/app/tmp")
    assert DELETED == ["/srv/app/tmp"]


async def test_a_tool_whose_entry_allows_no_edit_is_offered_none(
    fake_slack: FakeSlack, slack_provider: SlackProvider
) -> None:
    graph = build("/srv/app", decisions={"allowed_decisions": ["approve", "reject"]})
    first = await graph.ainvoke(
        {"messages": [{"role": "user", "content": "clean up"}]}, CONFIG, version="v2"
    )
    approver = slack_approver(slack_provider, MemoryGrants(), owner="local")
    deciding = asyncio.create_task(relay_lg.approve(first.interrupts, approver, AGENT))
    message = await fake_slack.wait_for_message(timeout=15)
    assert "Allow once" in str(message.blocks)
    assert "Edit…" not in str(message.blocks)
    await fake_slack.click(message, "Deny", user="U0ALICE")
    command = await deciding
    second = await graph.ainvoke(command, CONFIG, version="v2")
    assert "alice denied this in Slack" in tool_results(second)["call-0"]
