"""Google ADK: tools with ``require_confirmation`` confirmed or rejected by the team in Slack.
Needs ``pip install 'slack-relay[google-adk]'``.

A tool that needs confirmation makes ADK emit an ``adk_request_confirmation`` function call
(its args: the ``originalFunctionCall`` and a ``ToolConfirmation{hint, confirmed,
payload}``) and the run waits for its ``FunctionResponse``. Each becomes a relay approval;
``resume_message`` is the user message carrying the team's ``ToolConfirmation``s back, to
send with ``runner.run_async(new_message=…)``.

ADK tells the model only "This tool call is rejected."; add ``reason_to_model`` as the
agent's ``after_tool_callback`` so it reads who denied the call and why (the reason travels
in the confirmation's ``payload``). ADK has no field for edited arguments, so reviewers are
offered no *Edit…* (an edit reaching it anyway is rejected, the arguments in the reason).

The paused run lives in ADK's session service, as ADK intends: with a persistent one
(``SqliteSessionService``, ``DatabaseSessionService``), ``submit``, let the process go, and
later, in any process, ``pending_in(session.events)`` and ``collect``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from google.adk.events import Event
from google.adk.tools.base_tool import BaseTool
from google.adk.tools.tool_context import ToolContext
from google.genai import types

from relay.errors import RelayConfigError
from relay.gate.approval import Approver
from relay.integrations.core import CallVerdict, PendingCall, RelayApprovals, Tickets, decide
from relay.seam.abort import AbortSignal
from relay.seam.questions import AgentRef

__all__ = [
    "CONFIRMATION",
    "approve",
    "collect",
    "pending_in",
    "reason_to_model",
    "resume_message",
    "submit",
]

CONFIRMATION = "adk_request_confirmation"
"""The function call ADK makes to ask for a ``ToolConfirmation``."""
_PAYLOAD_KEY = "relay"


def pending_in(events: Iterable[Event]) -> list[PendingCall]:
    """The confirmations ``events`` ask for and no later event answers (a run's events, or
    a stored session's ``session.events``), with the tool call each one holds back. Raises
    ``RelayConfigError`` for one that wants a payload of the tool's own."""
    asked: dict[str, PendingCall] = {}
    for event in events:
        for call in event.get_function_calls():
            if call.name != CONFIRMATION or not call.id:
                continue
            args = call.args or {}
            original = args.get("originalFunctionCall") or {}
            wanted = (args.get("toolConfirmation") or {}).get("payload")
            if wanted is not None:
                raise RelayConfigError(
                    f"the tool {original.get('name')} asks for a confirmation payload of its"
                    " own (request_confirmation(payload=…)), which a reviewer cannot fill in;"
                    " use require_confirmation for tools relay confirms",
                    setting="require_confirmation",
                )
            asked[call.id] = PendingCall(
                call_id=call.id,
                tool=str(original.get("name") or "tool"),
                args=dict(original.get("args") or {}),
            )
        for response in event.get_function_responses():
            if response.name == CONFIRMATION and response.id:
                asked.pop(response.id, None)
    return list(asked.values())


def _confirmation(verdict: CallVerdict) -> dict[str, Any]:
    message = verdict.message
    if verdict.allowed and verdict.edited_args is not None:
        message = (
            f"{message}, with these arguments instead: {json.dumps(verdict.edited_args)};"
            " call the tool again with them"
        )
    confirmed = verdict.allowed and verdict.edited_args is None
    by = verdict.decision.by
    return {
        "confirmed": confirmed,
        "payload": {_PAYLOAD_KEY: {"message": message, "by": by.id if by is not None else None}},
    }


def resume_message(verdicts: Mapping[str, CallVerdict]) -> types.Content:
    """The user message answering each confirmation request with the team's decision."""
    parts = [
        types.Part(
            function_response=types.FunctionResponse(
                name=CONFIRMATION, id=request_id, response=_confirmation(verdict)
            )
        )
        for request_id, verdict in verdicts.items()
    ]
    return types.Content(role="user", parts=parts)


def reason_to_model(
    tool: BaseTool, args: dict[str, Any], tool_context: ToolContext, tool_response: Any
) -> dict[str, Any] | None:
    """An ``after_tool_callback``: a rejected call's result says who denied it and why."""
    confirmation = tool_context.tool_confirmation
    if confirmation is None or confirmation.confirmed:
        return None
    payload = confirmation.payload
    relayed = payload.get(_PAYLOAD_KEY) if isinstance(payload, Mapping) else None
    message = relayed.get("message") if isinstance(relayed, Mapping) else None
    return {"error": message} if isinstance(message, str) else None


async def approve(
    events: Sequence[Event],
    approver: Approver,
    agent: AgentRef,
    *,
    signal: AbortSignal | None = None,
    **fields: Any,
) -> types.Content | None:
    """Ask for every pending confirmation at once, wait here, and return the message to run
    on with; ``None`` when nothing waits for one."""
    calls = pending_in(events)
    if not calls:
        return None
    return resume_message(await decide(calls, approver, agent, signal=signal, **fields))


async def submit(
    events: Sequence[Event], approvals: RelayApprovals, agent: AgentRef, *, run: str
) -> Tickets:
    """Post the pending confirmations of ``run`` (the session id) to the relay; the tickets
    to keep with the session id."""
    return await approvals.submit(pending_in(events), agent, run=run)


async def collect(
    events: Sequence[Event],
    approvals: RelayApprovals,
    agent: AgentRef,
    tickets: Tickets,
    *,
    run: str,
    wait: bool = True,
) -> types.Content | None:
    """The message to resume with once every confirmation is decided (``None`` while any is
    pending and ``wait`` is false, or when nothing waits)."""
    calls = pending_in(events)
    if not calls:
        return None
    verdicts = await approvals.collect(calls, agent, tickets, run=run, wait=wait)
    return None if verdicts is None else resume_message(verdicts)
