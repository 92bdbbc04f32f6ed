"""An OpenAI Agents SDK agent whose risky tool waits for the team's approval in Slack, with
the run paused on disk (``RunState.to_json()``) meanwhile: this process stops, and a later
one resumes with the decision.

    RELAY_URL=http://127.0.0.1:3000 RELAY_TOKEN=… python examples/openai_agents_agent.py start
    (answer in Slack, or on the sandbox page at http://127.0.0.1:3000/)
    RELAY_URL=http://127.0.0.1:3000 RELAY_TOKEN=… python examples/openai_agents_agent.py resume

It needs ``pip install 'slack-relay[openai-agents]'``. With no ``MODEL`` set, a scripted
model stands in for the LLM (it calls the tool once, then repeats what the tool said); set
``MODEL`` (``gpt-5``, …) and ``OPENAI_API_KEY`` for a real one. Keep ``RUN_FILE`` where the
agent cannot write in production: the SDK's docs say to restore state only from trusted
storage.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
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
from relay.integrations import openai_agents as relay_oa
from relay.integrations.core import RelayApprovals

ME = AgentRef("cleanup-bot", "Cleanup bot")
RUN_FILE = Path(os.environ.get("RUN_FILE", "openai-agents-run.json"))
RUN = RUN_FILE.name  # names the paused run: its tickets answer no other


class ScriptedModel(Model):
    """Calls ``delete_branch`` first; afterwards says what the tool returned."""

    async def get_response(self, system_instructions: Any, input: Any, *a: Any, **k: Any) -> Any:
        outputs = [
            i for i in input if isinstance(i, dict) and i.get("type") == "function_call_output"
        ]
        if not outputs:
            call = ResponseFunctionToolCall(
                type="function_call",
                call_id="call-1",
                name="delete_branch",
                arguments='{"name": "stale"}',
            )
            return ModelResponse(output=[call], usage=Usage(), response_id=None)
        text = ResponseOutputText(
            type="output_text", text=str(outputs[-1]["output"]), annotations=[]
        )
        message = ResponseOutputMessage(
            id="msg-1", type="message", role="assistant", status="completed", content=[text]
        )
        return ModelResponse(output=[message], usage=Usage(), response_id=None)

    def stream_response(self, *a: Any, **k: Any) -> Any:
        raise NotImplementedError


@function_tool(needs_approval=True)
def delete_branch(name: str) -> str:
    """Delete a git branch on the shared remote."""
    return f"deleted branch {name}"


if not os.environ.get("MODEL"):
    set_tracing_disabled(True)  # no OpenAI account to send traces to
agent = Agent(
    name="cleanup", model=os.environ.get("MODEL") or ScriptedModel(), tools=[delete_branch]
)


def save(run: dict[str, Any]) -> None:
    RUN_FILE.write_text(json.dumps(run))


def load() -> dict[str, Any]:
    return dict(json.loads(RUN_FILE.read_text()))


async def start(approvals: RelayApprovals) -> int:
    result = await Runner.run(agent, "Delete the stale branch.")
    if not result.interruptions:
        print(result.final_output)
        return 0
    tickets = await relay_oa.submit(result, approvals, ME, run=RUN)
    save({"state": result.to_state().to_json(), "tickets": tickets})
    print(f"paused: {len(result.interruptions)} approval(s) asked in Slack; run `resume` later")
    return 3


async def resume(approvals: RelayApprovals) -> int:
    saved = load()
    state = await RunState.from_json(agent, saved["state"])
    await relay_oa.collect(state, approvals, ME, saved["tickets"], run=RUN)
    result = await Runner.run(agent, state)
    RUN_FILE.unlink()  # noqa: ASYNC240 - the run is over; a small local file
    print(result.final_output)
    return 0


async def main(command: str) -> int:
    async with RelayApprovals(os.environ["RELAY_URL"], os.environ["RELAY_TOKEN"]) as approvals:
        return await (start(approvals) if command == "start" else resume(approvals))


if __name__ == "__main__":
    sys.exit(asyncio.run(main(sys.argv[1] if len(sys.argv) > 1 else "start")))
