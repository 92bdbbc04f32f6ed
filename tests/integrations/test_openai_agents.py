"""The Agents SDK's tool approvals decided in Slack: a fake ``Model`` (no LLM) calls tools
with ``needs_approval=True``; reviewers answer in FakeSlack through a real
``SlackProvider``; the ``RunState`` goes on with what they decided and the model reads it."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from agents import (
    Agent,
    ModelResponse,
    Runner,
    RunState,
    Usage,
    function_tool,
    set_tracing_disabled,
)
from agents.models.interface import Model
from openai.types.responses import (
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
)

from relay import AgentRef
from relay.gate.approval import Decision
from relay.gate.local import slack_approver
from relay.grants.memory import MemoryGrants
from relay.integrations import openai_agents as relay_oa
from relay.integrations.core import CallVerdict
from relay.slack import SlackProvider
from relay.testing import FakeSlack

AGENT = AgentRef("ops-bot", "Ops bot")
DELETED: list[str] = []
set_tracing_disabled(True)


class FakeModel(Model):
    """Calls ``delete_file`` for each path at once; then answers with every tool output."""

    def __init__(self, *paths: str) -> None:
        self.paths = paths

    async def get_response(self, system_instructions: Any, input: Any, *a: Any, **k: Any) -> Any:
        outputs = [
            i for i in input if isinstance(i, dict) and i.get("type") == "function_call_output"
        ]
        if not outputs:
            calls = [
                ResponseFunctionToolCall(
                    type="function_call",
                    call_id=f"call-{n}",
                    name="delete_file",
                    arguments=json.dumps({"path": path}),
                )
                for n, path in enumerate(self.paths)
            ]
            return ModelResponse(output=calls, usage=Usage(), response_id=None)
        said = json.dumps({o["call_id"]: o["output"] for o in outputs})
        text = ResponseOutputText(type="output_text", text=said, annotations=[])
        message = ResponseOutputMessage(
            id="m1", type="message", role="assistant", status="completed", content=[text]
        )
        return ModelResponse(output=[message], usage=Usage(), response_id=None)

    def stream_response(self, *a: Any, **k: Any) -> Any:
        raise NotImplementedError


@function_tool(needs_approval=True)
def delete_file(path: str) -> str:
    """Delete a file."""
    DELETED.append(path)
    return f"deleted {path}"


def build(*paths: str) -> Agent[Any]:
    return Agent(name="ops", model=FakeModel(*paths), tools=[delete_file])


async def test_several_interruptions_one_allowed_one_denied_with_a_reason(
    fake_slack: FakeSlack, slack_provider: SlackProvider
) -> None:
    DELETED.clear()
    agent = build("/var/cache/a", "/srv/db")
    first = await Runner.run(agent, "clean up")
    assert len(first.interruptions) == 2
    approver = slack_approver(slack_provider, MemoryGrants(), owner="local")

    async def review() -> None:
        for n in (1, 2):
            message = await fake_slack.wait_for_message(count=n, timeout=15)
            if "/var/cache/a" in str(message.blocks):
                await fake_slack.click(message, "Allow once", user="U0ALICE")
            else:
                assert "/srv/db" in str(message.blocks)
                await fake_slack.type(message, "that is production", user="U0BOB")
                await fake_slack.press_enter(message, user="U0BOB")

    reviewing = asyncio.create_task(review())
    state = await relay_oa.approve(first, approver, AGENT)
    await reviewing
    # The decided state survives a round trip through its JSON, as a paused run does.
    state = await RunState.from_json(agent, state.to_json())
    second = await Runner.run(agent, state)
    said = json.loads(str(second.final_output))
    assert said == {
        "call-0": "deleted /var/cache/a",
        "call-1": "bob denied this in Slack: that is production",
    }
    assert DELETED == ["/var/cache/a"]


async def test_no_answer_in_time_denies_and_says_so(
    fake_slack: FakeSlack, slack_provider: SlackProvider
) -> None:
    DELETED.clear()
    agent = build("/var/cache/a")
    first = await Runner.run(agent, "clean up")
    approver = slack_approver(slack_provider, MemoryGrants(), owner="local")
    state = await relay_oa.approve(first, approver, AGENT, timeout=1.0)
    second = await Runner.run(agent, state)
    said = json.loads(str(second.final_output))
    assert said["call-0"].startswith("No reviewer answered within 1 s, so relay denied this")
    assert DELETED == []
    assert len(fake_slack.messages) == 1


async def test_an_edit_is_a_rejection_naming_the_reviewers_arguments() -> None:
    # The SDK has no edited-arguments field (issue 40's edits map here once they exist).
    DELETED.clear()
    agent = build("/var/cache/a")
    first = await Runner.run(agent, "clean up")
    state = first.to_state()
    allowed = Decision(behavior="allow", message="alice allowed this", outcome="approved")
    relay_oa.apply(state, {"call-0": CallVerdict(allowed, edited_args={"path": "/var/cache/b"})})
    second = await Runner.run(agent, state)
    said = json.loads(str(second.final_output))["call-0"]
    assert said.startswith("alice allowed this, with these arguments instead:")
    assert '{"path": "/var/cache/b"}' in said
    assert DELETED == []
