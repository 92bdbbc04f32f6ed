"""LangGraph / LangChain: the human-in-the-loop middleware's interrupts answered by the team in
Slack. Needs ``pip install 'slack-relay[langgraph]'``.

``HumanInTheLoopMiddleware(interrupt_on=…)`` pauses the agent with a LangGraph
``interrupt()``: one per model turn listing every gated call (``interrupt_mode="batched"``,
a ``HITLRequest``) or one per call (``"per_call"``, a ``ToolApprovalRequest``). Each call
becomes a relay approval, and ``Command(resume=…)``, keyed by interrupt id, carries the
team's decisions back: ``{"type": "approve"}``, ``{"type": "reject", "message": …}`` (the
model reads who denied it and their reason), or, for a tool whose ``interrupt_on`` entry
allows ``"edit"`` (reviewers are then offered *Edit…*), ``{"type": "edit",
"edited_action": {"name": …, "args": …}}``.

The paused run lives in the graph's checkpointer, as LangGraph intends: with a persistent
one (``SqliteSaver``, ``PostgresSaver``), ``submit`` the approvals, let the process go, and
later, in any process, read ``graph.get_state(config).interrupts`` and ``collect``.
Interrupts of other shapes (a graph's own ``interrupt()``) are left alone.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from langgraph.types import Command, Interrupt

from relay.errors import RelayConfigError
from relay.gate.approval import Approver
from relay.integrations.core import CallVerdict, PendingCall, RelayApprovals, Tickets, decide
from relay.seam.abort import AbortSignal
from relay.seam.questions import AgentRef

__all__ = ["approve", "collect", "pending_calls", "resume", "submit"]

# (interrupt, position in it or None for a per-call interrupt, the action, its allowed decisions)
_Slot = tuple[Interrupt, int | None, Mapping[str, Any], Sequence[str]]
_EVERY = ("approve", "edit", "reject", "respond")


def _slots(interrupts: Sequence[Interrupt]) -> list[_Slot]:
    slots: list[_Slot] = []
    for interrupt in interrupts:
        value = interrupt.value
        if not isinstance(value, Mapping):
            continue
        if value.get("type") == "tool_approval":
            allowed = _allowed_per_call(interrupt)
            slots.append((interrupt, None, value, allowed))
        elif isinstance(value.get("action_requests"), list):
            configs = value.get("review_configs") or []
            by_name = {c.get("action_name"): c.get("allowed_decisions", []) for c in configs}
            for n, action in enumerate(value["action_requests"]):
                slots.append((interrupt, n, action, by_name.get(action.get("name"), [])))
    return slots


def _allowed_per_call(interrupt: Interrupt) -> Sequence[str]:
    """The decisions a per-call interrupt takes, read from its ``response_schema``: a
    discriminated union's tags, or one decision's ``type`` const; all when it says none."""
    schema = getattr(interrupt, "response_schema", None)
    if isinstance(schema, Mapping):
        discriminator = schema.get("discriminator")
        mapping = discriminator.get("mapping") if isinstance(discriminator, Mapping) else None
        if isinstance(mapping, Mapping):
            return tuple(str(tag) for tag in mapping)
        properties = schema.get("properties")
        kind = properties.get("type") if isinstance(properties, Mapping) else None
        const = kind.get("const") if isinstance(kind, Mapping) else None
        if isinstance(const, str):
            return (const,)
    return _EVERY


def _call_id(slot: _Slot) -> str:
    interrupt, position, action, _ = slot
    if position is None:
        return str(action.get("tool_call_id") or interrupt.id)
    return f"{interrupt.id}:{position}"


def pending_calls(interrupts: Sequence[Interrupt]) -> list[PendingCall]:
    """The tool calls the middleware's interrupts hold back. Raises ``RelayConfigError`` for
    a tool whose ``allowed_decisions`` lack ``"reject"``: relay must be able to deny."""
    calls = []
    for slot in _slots(interrupts):
        _, _, action, allowed = slot
        name = str(action.get("name") or "tool")
        if "approve" not in allowed or "reject" not in allowed:
            raise RelayConfigError(
                f"the tool {name} does not allow both approve and reject in its"
                " HumanInTheLoopMiddleware interrupt_on entry; allow them so relay can"
                " carry out either decision",
                setting="interrupt_on",
            )
        args = action.get("args")
        calls.append(
            PendingCall(
                call_id=_call_id(slot),
                tool=name,
                args=dict(args) if args is not None else {},
                editable="edit" in allowed,  # its edited_action runs the reviewer's edit
            )
        )
    return calls


def _decision(verdict: CallVerdict, name: str, allowed: Sequence[str]) -> dict[str, Any]:
    if not verdict.allowed:
        return {"type": "reject", "message": verdict.message}
    if verdict.edited_args is None:
        return {"type": "approve"}
    if "edit" in allowed:
        return {"type": "edit", "edited_action": {"name": name, "args": verdict.edited_args}}
    return {
        "type": "reject",
        "message": f"{verdict.message}, with these arguments instead:"
        f" {json.dumps(verdict.edited_args)}; call the tool again with them",
    }


def resume(interrupts: Sequence[Interrupt], verdicts: Mapping[str, CallVerdict]) -> Command[Any]:
    """The ``Command(resume=…)`` carrying ``verdicts`` to every interrupt they answer in full."""
    answers: dict[str, Any] = {}
    batched: dict[str, list[dict[str, Any] | None]] = {}
    for slot in _slots(interrupts):
        interrupt, position, action, allowed = slot
        verdict = verdicts.get(_call_id(slot))
        decision = None if verdict is None else _decision(verdict, str(action.get("name")), allowed)
        if position is None:
            if decision is not None:
                answers[interrupt.id] = decision
        else:
            batched.setdefault(interrupt.id, []).append(decision)
    for interrupt_id, decisions in batched.items():
        if all(d is not None for d in decisions):
            answers[interrupt_id] = {"decisions": decisions}
    return Command(resume=answers)


async def approve(
    interrupts: Sequence[Interrupt],
    approver: Approver,
    agent: AgentRef,
    *,
    signal: AbortSignal | None = None,
    **fields: Any,
) -> Command[Any]:
    """Ask for every held call at once, wait here, and return the ``Command`` to resume
    with (``graph.invoke(command, config)``)."""
    verdicts = await decide(pending_calls(interrupts), approver, agent, signal=signal, **fields)
    return resume(interrupts, verdicts)


async def submit(
    interrupts: Sequence[Interrupt], approvals: RelayApprovals, agent: AgentRef, *, run: str
) -> Tickets:
    """Post the held calls of ``run`` (the thread id) to the relay; the tickets to keep
    with the thread id."""
    return await approvals.submit(pending_calls(interrupts), agent, run=run)


async def collect(
    interrupts: Sequence[Interrupt],
    approvals: RelayApprovals,
    agent: AgentRef,
    tickets: Tickets,
    *,
    run: str,
    wait: bool = True,
) -> Command[Any] | None:
    """The ``Command`` to resume with once every approval is decided (``None`` while any is
    pending and ``wait`` is false)."""
    calls = pending_calls(interrupts)
    verdicts = await approvals.collect(calls, agent, tickets, run=run, wait=wait)
    return None if verdicts is None else resume(interrupts, verdicts)
