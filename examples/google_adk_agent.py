"""A Google ADK agent whose risky tool waits for the team's confirmation in Slack, its session
paused in a SQLite session store meanwhile: this process stops, and a later one resumes the
session with the decision.

    RELAY_URL=http://127.0.0.1:3000 RELAY_TOKEN=… python examples/google_adk_agent.py start
    (answer in Slack, or on the sandbox page at http://127.0.0.1:3000/)
    RELAY_URL=http://127.0.0.1:3000 RELAY_TOKEN=… python examples/google_adk_agent.py resume

It needs ``pip install 'slack-relay[google-adk]'``. With no ``MODEL`` set, a scripted model
stands in for the LLM (it calls the tool once, then repeats what the tool said); set
``MODEL`` (``gemini-2.5-flash``, …) and ``GOOGLE_API_KEY`` for a real one. The session is
kept in ``RUN_FILE`` (``google-adk-run.sqlite``) and its tickets next to it.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import AsyncGenerator
from pathlib import Path
from typing import Any

from google.adk.agents import LlmAgent
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.runners import Runner
from google.adk.sessions.sqlite_session_service import SqliteSessionService
from google.adk.tools import FunctionTool
from google.genai import types

from relay import AgentRef
from relay.integrations import google_adk as relay_adk
from relay.integrations.core import RelayApprovals

ME = AgentRef("cleanup-bot", "Cleanup bot")
RUN_FILE = Path(os.environ.get("RUN_FILE", "google-adk-run.sqlite"))
TICKETS = RUN_FILE.with_suffix(".tickets.json")
APP, USER, SESSION = "cleanup", "ops", "cleanup-1"


class ScriptedLlm(BaseLlm):
    """Calls ``delete_branch`` first; afterwards says what the tool returned."""

    model: str = "scripted"

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        last = llm_request.contents[-1]
        results = [p.function_response for p in last.parts or [] if p.function_response]
        if results:
            response = results[-1].response or {}
            part = types.Part(text=str(response.get("result") or response.get("error")))
        else:
            call = types.FunctionCall(name="delete_branch", args={"name": "stale"}, id="call-1")
            part = types.Part(function_call=call)
        yield LlmResponse(content=types.Content(role="model", parts=[part]))


def delete_branch(name: str) -> str:
    """Delete a git branch on the shared remote."""
    return f"deleted branch {name}"


agent = LlmAgent(
    name="cleanup",
    model=os.environ.get("MODEL") or ScriptedLlm(),
    tools=[FunctionTool(delete_branch, require_confirmation=True)],
    # The model reads who denied the call and why, not only ADK's "rejected".
    after_tool_callback=relay_adk.reason_to_model,
)


def save(tickets: dict[str, Any]) -> None:
    TICKETS.write_text(json.dumps(tickets))


def load() -> dict[str, Any]:
    return dict(json.loads(TICKETS.read_text()))


def forget() -> None:
    for path in (RUN_FILE, TICKETS):
        path.unlink()


async def start(runner: Runner, approvals: RelayApprovals) -> int:
    await runner.session_service.create_session(app_name=APP, user_id=USER, session_id=SESSION)
    ask = types.Content(role="user", parts=[types.Part(text="Delete the stale branch.")])
    events = [e async for e in runner.run_async(user_id=USER, session_id=SESSION, new_message=ask)]
    tickets = await relay_adk.submit(events, approvals, ME, run=SESSION)
    save(tickets)
    asked = len(relay_adk.pending_in(events))
    print(f"paused: {asked} approval(s) asked in Slack; run `resume` later")
    return 3


async def resume(runner: Runner, approvals: RelayApprovals) -> int:
    session = await runner.session_service.get_session(
        app_name=APP, user_id=USER, session_id=SESSION
    )
    assert session is not None
    message = await relay_adk.collect(session.events, approvals, ME, load(), run=SESSION)
    events = [
        e async for e in runner.run_async(user_id=USER, session_id=SESSION, new_message=message)
    ]
    last = events[-1].content
    print(last.parts[0].text if last and last.parts else "")
    return 0


async def main(command: str) -> int:
    runner = Runner(agent=agent, app_name=APP, session_service=SqliteSessionService(str(RUN_FILE)))
    async with RelayApprovals(os.environ["RELAY_URL"], os.environ["RELAY_TOKEN"]) as approvals:
        code = await (start if command == "start" else resume)(runner, approvals)
    await runner.close()
    if command == "resume":
        forget()  # the run is over
    return code


if __name__ == "__main__":
    sys.exit(asyncio.run(main(sys.argv[1] if len(sys.argv) > 1 else "start")))
