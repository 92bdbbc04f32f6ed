"""The OpenAI Agents SDK: tools with ``needs_approval`` decided by the team in Slack. Needs
``pip install 'slack-relay[openai-agents]'``.

A run that reaches such a tool stops with ``result.interruptions`` (``ToolApprovalItem``);
each becomes a relay approval, and the team's decision is applied to the run's ``RunState``
with ``state.approve(item)`` or ``state.reject(item, rejection_message=…)`` (the model reads
who denied it and their reason); ``Runner.run(agent, state)`` then goes on.

- In this process: ``approve(result, approver, agent)`` returns the state to run on.
- Paused: ``submit`` posts the approvals to a hosted relay and returns tickets; store them
  with ``state.to_json()``; later, in any process, ``RunState.from_json`` and ``collect``.

The SDK has no field for edited arguments, so reviewers are offered no *Edit…*; an edited
call reaching it anyway is rejected with the reviewer's arguments in the message, so the
model calls again with them and that call is asked again: nothing runs unapproved.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from agents import RunResult, RunResultStreaming, RunState, ToolApprovalItem

from relay.gate.approval import Approver
from relay.integrations.core import CallVerdict, PendingCall, RelayApprovals, Tickets, decide
from relay.seam.abort import AbortSignal
from relay.seam.questions import AgentRef

__all__ = ["apply", "approve", "collect", "pending_calls", "submit"]

State = RunState[Any, Any]


def _call_id(item: ToolApprovalItem, index: int) -> str:
    return item.call_id or f"approval-{index}"


def _args(item: ToolApprovalItem) -> dict[str, Any]:
    raw = item.arguments
    if not raw:
        return {}
    try:
        parsed = json.loads(raw)
    except ValueError:
        return {"input": raw}
    return parsed if isinstance(parsed, dict) else {"input": parsed}


def pending_calls(items: Sequence[ToolApprovalItem]) -> list[PendingCall]:
    """The calls awaiting approval, by call id, tool and parsed arguments."""
    return [
        PendingCall(
            call_id=_call_id(item, i),
            tool=item.qualified_name or item.name or "tool",
            args=_args(item),
        )
        for i, item in enumerate(items)
    ]


def _state(run: RunResult | RunResultStreaming | State) -> State:
    return run if isinstance(run, RunState) else run.to_state()


def apply(state: State, verdicts: dict[str, CallVerdict]) -> None:
    """Approve or reject each pending item of ``state`` as ``verdicts`` say (no verdict:
    left pending)."""
    for i, item in enumerate(state.get_interruptions()):
        verdict = verdicts.get(_call_id(item, i))
        if verdict is None:
            continue
        if verdict.allowed and verdict.edited_args is None:
            state.approve(item)
        elif verdict.allowed:
            state.reject(
                item,
                rejection_message=(
                    f"{verdict.message}, with these arguments instead:"
                    f" {json.dumps(verdict.edited_args)}; call the tool again with them"
                ),
            )
        else:
            state.reject(item, rejection_message=verdict.message)


async def approve(
    run: RunResult | RunResultStreaming | State,
    approver: Approver,
    agent: AgentRef,
    *,
    signal: AbortSignal | None = None,
    **fields: Any,
) -> State:
    """Ask for every interruption at once, wait here, and return the state to run on with
    ``Runner.run(agent, state)``."""
    state = _state(run)
    calls = pending_calls(state.get_interruptions())
    apply(state, await decide(calls, approver, agent, signal=signal, **fields))
    return state


async def submit(
    result: RunResult | RunResultStreaming | State,
    approvals: RelayApprovals,
    agent: AgentRef,
    *,
    run: str,
) -> Tickets:
    """Post the interruptions of ``run`` (an id of yours) to the relay; the tickets to store
    with ``state.to_json()``."""
    calls = pending_calls(_state(result).get_interruptions())
    return await approvals.submit(calls, agent, run=run)


async def collect(
    state: State,
    approvals: RelayApprovals,
    agent: AgentRef,
    tickets: Tickets,
    *,
    run: str,
    wait: bool = True,
) -> bool:
    """Apply the team's decisions to ``state`` once all are made; ``False`` (nothing applied)
    while any is pending and ``wait`` is false."""
    calls = pending_calls(state.get_interruptions())
    verdicts = await approvals.collect(calls, agent, tickets, run=run, wait=wait)
    if verdicts is None:
        return False
    apply(state, verdicts)
    return True
