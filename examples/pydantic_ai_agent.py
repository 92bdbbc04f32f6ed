"""A pydantic-ai agent whose risky tool waits for the team's approval in Slack, with the run
paused on disk meanwhile: this process stops, and a later one resumes with the decision.

    RELAY_URL=http://127.0.0.1:3000 RELAY_TOKEN=… python examples/pydantic_ai_agent.py start
    (answer in Slack, or on the sandbox page at http://127.0.0.1:3000/)
    RELAY_URL=http://127.0.0.1:3000 RELAY_TOKEN=… python examples/pydantic_ai_agent.py resume

It needs ``pip install 'slack-relay[pydantic-ai]'``. The model is pydantic-ai's
``TestModel`` (it calls every tool, no LLM); set ``MODEL`` (``openai:gpt-5``, …) for a real
one. The paused run is kept in ``RUN_FILE`` (``pydantic-ai-run.json``): keep it where the
agent cannot write in production, as pydantic-ai's own docs say of a run's messages.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter
from pydantic_ai import Agent, DeferredToolRequests
from pydantic_ai.messages import ModelMessagesTypeAdapter
from pydantic_ai.models.test import TestModel

from relay import AgentRef
from relay.integrations import pydantic_ai as relay_pai
from relay.integrations.core import RelayApprovals

ME = AgentRef("cleanup-bot", "Cleanup bot")
RUN_FILE = Path(os.environ.get("RUN_FILE", "pydantic-ai-run.json"))
RUN = RUN_FILE.name  # names the paused run: its tickets answer no other
REQUESTS = TypeAdapter(DeferredToolRequests)

agent: Agent[None, str | DeferredToolRequests] = Agent(
    os.environ.get("MODEL") or TestModel(), output_type=[str, DeferredToolRequests]
)


@agent.tool_plain(requires_approval=True)
def delete_branch(name: str) -> str:
    """Delete a git branch on the shared remote."""
    return f"deleted branch {name}"


def save(run: dict[str, Any]) -> None:
    RUN_FILE.write_text(json.dumps(run))


def load() -> dict[str, Any]:
    return dict(json.loads(RUN_FILE.read_text()))


async def start(approvals: RelayApprovals) -> int:
    result = await agent.run("Delete the stale branch.")
    if not isinstance(result.output, DeferredToolRequests):
        print(result.output)
        return 0
    tickets = await relay_pai.submit(result.output, approvals, ME, run=RUN)
    save(
        {
            "messages": json.loads(result.all_messages_json()),
            "requests": REQUESTS.dump_python(result.output, mode="json"),
            "tickets": tickets,
        }
    )
    print(f"paused: {len(result.output.approvals)} approval(s) asked in Slack; run `resume` later")
    return 3


async def resume(approvals: RelayApprovals) -> int:
    saved = load()
    requests = REQUESTS.validate_python(saved["requests"])
    results = await relay_pai.collect(requests, approvals, ME, saved["tickets"], run=RUN)
    assert results is not None  # it waits for every decision
    history = ModelMessagesTypeAdapter.validate_python(saved["messages"])
    result = await agent.run(message_history=history, deferred_tool_results=results)
    RUN_FILE.unlink()  # noqa: ASYNC240 - the run is over; a small local file
    print(result.output)
    return 0


async def main(command: str) -> int:
    async with RelayApprovals(os.environ["RELAY_URL"], os.environ["RELAY_TOKEN"]) as approvals:
        return await (start(approvals) if command == "start" else resume(approvals))


if __name__ == "__main__":
    sys.exit(asyncio.run(main(sys.argv[1] if len(sys.argv) > 1 else "start")))
