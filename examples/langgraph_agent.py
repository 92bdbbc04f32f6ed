"""A LangChain agent whose risky tool waits for the team's approval in Slack, its thread
paused in a SQLite checkpointer meanwhile: this process stops, and a later one resumes the
thread with the decision.

    RELAY_URL=http://127.0.0.1:3000 RELAY_TOKEN=… python examples/langgraph_agent.py start
    (answer in Slack, or on the sandbox page at http://127.0.0.1:3000/)
    RELAY_URL=http://127.0.0.1:3000 RELAY_TOKEN=… python examples/langgraph_agent.py resume

It needs ``pip install 'slack-relay[langgraph]' langgraph-checkpoint-sqlite``. With no
``MODEL`` set, a scripted chat model stands in for the LLM (it calls the tool once, then
repeats what the tool said); set ``MODEL`` (``openai:gpt-5``, …) for a real one. The thread
is kept in ``RUN_FILE`` (``langgraph-run.sqlite``) and its tickets next to it.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

from langchain.agents import create_agent
from langchain.agents.middleware import HumanInTheLoopMiddleware
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import tool
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

from relay import AgentRef
from relay.integrations import langgraph as relay_lg
from relay.integrations.core import RelayApprovals

ME = AgentRef("cleanup-bot", "Cleanup bot")
RUN_FILE = Path(os.environ.get("RUN_FILE", "langgraph-run.sqlite"))
TICKETS = RUN_FILE.with_suffix(".tickets.json")
THREAD: Any = {"configurable": {"thread_id": "cleanup-1"}}
RUN = THREAD["configurable"]["thread_id"]  # its tickets answer no other thread


class ScriptedChat(BaseChatModel):
    """Calls ``delete_branch`` first; afterwards says what the tool returned."""

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def bind_tools(self, tools: Any, **kw: Any) -> Any:
        return self

    def _generate(self, messages: list[BaseMessage], *a: Any, **k: Any) -> ChatResult:
        last = messages[-1]
        if isinstance(last, ToolMessage):
            reply = AIMessage(content=str(last.content))
        else:
            call = {"name": "delete_branch", "args": {"name": "stale"}, "id": "call-1"}
            reply = AIMessage(content="", tool_calls=[call])
        return ChatResult(generations=[ChatGeneration(message=reply)])


@tool
def delete_branch(name: str) -> str:
    """Delete a git branch on the shared remote."""
    return f"deleted branch {name}"


def build(checkpointer: AsyncSqliteSaver) -> Any:
    return create_agent(
        os.environ.get("MODEL") or ScriptedChat(),
        tools=[delete_branch],
        middleware=[HumanInTheLoopMiddleware(interrupt_on={"delete_branch": True})],
        checkpointer=checkpointer,
    )


def save(tickets: dict[str, Any]) -> None:
    TICKETS.write_text(json.dumps(tickets))


def load() -> dict[str, Any]:
    return dict(json.loads(TICKETS.read_text()))


def forget() -> None:
    for path in (RUN_FILE, TICKETS):
        path.unlink()


async def start(graph: Any, approvals: RelayApprovals) -> int:
    result = await graph.ainvoke(
        {"messages": [{"role": "user", "content": "Delete the stale branch."}]},
        THREAD,
        version="v2",
    )
    if not result.interrupts:
        print(result.value["messages"][-1].content)
        return 0
    save(await relay_lg.submit(result.interrupts, approvals, ME, run=RUN))
    calls = relay_lg.pending_calls(result.interrupts)
    print(f"paused: {len(calls)} approval(s) asked in Slack; run `resume` later")
    return 3


async def resume(graph: Any, approvals: RelayApprovals) -> int:
    interrupts = (await graph.aget_state(THREAD)).interrupts
    command = await relay_lg.collect(interrupts, approvals, ME, load(), run=RUN)
    result = await graph.ainvoke(command, THREAD, version="v2")
    print(result.value["messages"][-1].content)
    return 0


async def main(command: str) -> int:
    async with (
        AsyncSqliteSaver.from_conn_string(str(RUN_FILE)) as checkpointer,
        RelayApprovals(os.environ["RELAY_URL"], os.environ["RELAY_TOKEN"]) as approvals,
    ):
        graph = build(checkpointer)
        code = await (start if command == "start" else resume)(graph, approvals)
    if command == "resume":
        forget()  # the run is over; the checkpointer is closed
    return code


if __name__ == "__main__":
    sys.exit(asyncio.run(main(sys.argv[1] if len(sys.argv) > 1 else "start")))
