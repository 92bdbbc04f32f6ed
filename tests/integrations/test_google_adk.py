"""Google ADK's tool confirmations answered in Slack: a fake ``BaseLlm`` (no LLM, as ADK's
own tests use) calls tools with ``require_confirmation=True``; reviewers answer in FakeSlack
through a real ``SlackProvider``; the run goes on with their ``ToolConfirmation``s and the
model reads who denied what and why."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncGenerator
from typing import Any

import pytest
from google.adk.agents import LlmAgent
from google.adk.events import Event
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.runners import InMemoryRunner
from google.adk.tools import FunctionTool
from google.genai import types
from pydantic import Field

from relay import AgentRef
from relay.errors import RelayConfigError
from relay.gate.local import slack_approver
from relay.grants.memory import MemoryGrants
from relay.integrations import google_adk as relay_adk
from relay.slack import SlackProvider
from relay.testing import FakeSlack

AGENT = AgentRef("ops-bot", "Ops bot")
DELETED: list[str] = []


class FakeLlm(BaseLlm):
    """Calls ``delete_file`` for each path at once; then answers with every tool result."""

    model: str = "fake"
    paths: list[str] = Field(default_factory=list)

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        last = llm_request.contents[-1]
        results = [p.function_response for p in last.parts or [] if p.function_response]
        if not results:
            parts = [
                types.Part(
                    function_call=types.FunctionCall(
                        name="delete_file", args={"path": path}, id=f"call-{n}"
                    )
                )
                for n, path in enumerate(self.paths)
            ]
        else:
            said = {r.id: r.response for r in results}
            parts = [types.Part(text=json.dumps(said))]
        yield LlmResponse(content=types.Content(role="model", parts=parts))


def delete_file(path: str) -> str:
    """Delete a file."""
    DELETED.append(path)
    return f"deleted {path}"


async def run(*paths: str) -> tuple[InMemoryRunner, str, list[Event]]:
    agent = LlmAgent(
        name="ops",
        model=FakeLlm(paths=list(paths)),
        tools=[FunctionTool(delete_file, require_confirmation=True)],
        after_tool_callback=relay_adk.reason_to_model,
    )
    runner = InMemoryRunner(agent=agent, app_name="ops")
    session = await runner.session_service.create_session(app_name="ops", user_id="u1")
    hello = types.Content(role="user", parts=[types.Part(text="clean up")])
    events = [
        e async for e in runner.run_async(user_id="u1", session_id=session.id, new_message=hello)
    ]
    return runner, session.id, events


async def resume(runner: InMemoryRunner, session_id: str, message: types.Content) -> Any:
    events = [
        e async for e in runner.run_async(user_id="u1", session_id=session_id, new_message=message)
    ]
    text = events[-1].content.parts[0].text if events[-1].content else None
    return json.loads(str(text))


async def test_several_confirmations_one_allowed_one_denied_with_a_reason(
    fake_slack: FakeSlack, slack_provider: SlackProvider
) -> None:
    DELETED.clear()
    runner, session_id, events = await run("/var/cache/a", "/srv/db")
    assert [c.tool for c in relay_adk.pending_in(events)] == ["delete_file", "delete_file"]
    approver = slack_approver(slack_provider, MemoryGrants(), owner="local")

    async def review() -> None:
        for n in (1, 2):
            message = await fake_slack.wait_for_message(count=n, timeout=15)
            if "/srv/db" in str(message.blocks):
                await fake_slack.type(message, "that is production", user="U0BOB")
                await fake_slack.press_enter(message, user="U0BOB")
            else:
                await fake_slack.click(message, "Allow once", user="U0ALICE")

    reviewing = asyncio.create_task(review())
    message = await relay_adk.approve(events, approver, AGENT)
    await reviewing
    assert message is not None
    said = await resume(runner, session_id, message)
    assert said == {
        "call-0": {"result": "deleted /var/cache/a"},
        "call-1": {"error": "bob denied this in Slack: that is production"},
    }
    assert DELETED == ["/var/cache/a"]
    # Answered: the stored session holds no pending confirmation any more.
    session = await runner.session_service.get_session(
        app_name="ops", user_id="u1", session_id=session_id
    )
    assert session is not None
    assert relay_adk.pending_in(session.events) == []


async def test_no_answer_in_time_rejects_and_says_so(
    fake_slack: FakeSlack, slack_provider: SlackProvider
) -> None:
    DELETED.clear()
    runner, session_id, events = await run("/var/cache/a")
    approver = slack_approver(slack_provider, MemoryGrants(), owner="local")
    message = await relay_adk.approve(events, approver, AGENT, timeout=1.0)
    assert message is not None
    said = await resume(runner, session_id, message)
    assert said["call-0"]["error"].startswith(
        "No reviewer answered within 1 s, so relay denied this"
    )
    assert DELETED == []


def test_a_confirmation_wanting_a_payload_of_its_own_is_refused() -> None:
    asked = types.FunctionCall(
        name=relay_adk.CONFIRMATION,
        id="adk-1",
        args={
            "originalFunctionCall": {"name": "book", "args": {}, "id": "c1"},
            "toolConfirmation": {"hint": "pick a seat", "payload": {"seat": None}},
        },
    )
    event = Event(author="ops", content=types.Content(parts=[types.Part(function_call=asked)]))
    with pytest.raises(RelayConfigError, match="confirmation payload of its own"):
        relay_adk.pending_in([event])
