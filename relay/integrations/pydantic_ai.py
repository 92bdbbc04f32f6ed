"""pydantic-ai: tools with ``requires_approval=True`` (or raising ``ApprovalRequired``),
decided by the team in Slack. Needs ``pip install 'slack-relay[pydantic-ai]'``.

A run whose model calls such a tool ends with ``DeferredToolRequests`` (put it in the
agent's ``output_type``); its ``approvals`` become relay approvals, and the team's decisions
come back as the ``DeferredToolResults`` the next run takes (``deferred_tool_results=``):
``ToolApproved`` (with ``override_args`` when a reviewer edited the call) or
``ToolDenied`` whose message, with the reviewer's reason, is what the model reads.

- In this process: ``approve`` (or ``handler`` with ``HandleDeferredToolCalls``, which
  keeps the run going instead of ending it).
- Paused: ``submit`` posts them to a hosted relay and returns tickets; store them with
  ``result.all_messages_json()``; later, in any process, ``collect`` gives the results
  to resume with ``message_history=``.

The reviewer is shown the arguments the tool will receive (``validated_args``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from pydantic_ai import DeferredToolRequests, DeferredToolResults, RunContext
from pydantic_ai.tools import ToolApproved, ToolDenied

from relay.gate.approval import Approver
from relay.integrations.core import CallVerdict, PendingCall, RelayApprovals, Tickets, decide
from relay.seam.abort import AbortSignal
from relay.seam.questions import AgentRef

__all__ = ["approve", "collect", "handler", "pending_calls", "results", "submit"]


def pending_calls(requests: DeferredToolRequests) -> list[PendingCall]:
    """The calls awaiting approval, with the arguments their tools will receive."""
    return [
        PendingCall(
            call_id=call.tool_call_id,
            tool=call.tool_name,
            args=requests.validated_args.get(call.tool_call_id) or call.args_as_dict(),
            editable=True,  # ToolApproved(override_args=…) runs the edited call
        )
        for call in requests.approvals
    ]


def results(verdicts: dict[str, CallVerdict]) -> DeferredToolResults:
    """The ``DeferredToolResults`` carrying ``verdicts`` (and who decided each)."""
    approvals: dict[str, bool | ToolApproved | ToolDenied] = {}
    answered_by: dict[str, str] = {}
    for call_id, verdict in verdicts.items():
        if verdict.allowed:
            approvals[call_id] = ToolApproved(override_args=verdict.edited_args)
        else:
            approvals[call_id] = ToolDenied(verdict.message)
        if verdict.decision.by is not None:
            answered_by[call_id] = verdict.decision.by.id
    return DeferredToolResults(approvals=approvals, answered_by=answered_by)


async def approve(
    requests: DeferredToolRequests,
    approver: Approver,
    agent: AgentRef,
    *,
    signal: AbortSignal | None = None,
    **fields: Any,
) -> DeferredToolResults:
    """Ask for every pending approval at once and wait here for the team's decisions."""
    verdicts = await decide(pending_calls(requests), approver, agent, signal=signal, **fields)
    return results(verdicts)


def handler(
    approver: Approver, agent: AgentRef, **fields: Any
) -> Callable[[RunContext[Any], DeferredToolRequests], Awaitable[DeferredToolResults | None]]:
    """A ``HandleDeferredToolCalls(handler=…)`` handler: the run waits for the team and goes on
    with the approved calls run and the denied ones reported to the model. Calls that are not
    approvals (external tools) are left to the next handler, or end the run as usual."""

    async def handle(
        ctx: RunContext[Any], requests: DeferredToolRequests
    ) -> DeferredToolResults | None:
        if not requests.approvals:
            return None
        return await approve(requests, approver, agent, **fields)

    return handle


async def submit(
    requests: DeferredToolRequests, approvals: RelayApprovals, agent: AgentRef, *, run: str
) -> Tickets:
    """Post the pending approvals of ``run`` (an id of yours) to the relay; the tickets to
    store with the run."""
    return await approvals.submit(pending_calls(requests), agent, run=run)


async def collect(
    requests: DeferredToolRequests,
    approvals: RelayApprovals,
    agent: AgentRef,
    tickets: Tickets,
    *,
    run: str,
    wait: bool = True,
) -> DeferredToolResults | None:
    """The results to resume ``run`` with, once every approval is decided (``None`` while
    any is pending and ``wait`` is false)."""
    calls = pending_calls(requests)
    verdicts = await approvals.collect(calls, agent, tickets, run=run, wait=wait)
    return None if verdicts is None else results(verdicts)
