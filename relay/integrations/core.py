"""What every framework adapter shares: a tool call that waits for approval, the team's
``CallVerdict`` on it, and the two ways to get one.

- Waiting in this process: ``decide`` asks any ``Approver`` (``relay.gate.local.
  slack_approver`` over a ``SlackProvider``, ``seam_approver`` over the seam, or
  ``relay.gate.remote.RemoteApprover`` through a hosted relay) for every call at once.
- A paused run: ``RelayApprovals.submit`` posts the calls to a hosted relay's
  ``/v1/approvals`` and returns tickets (approval ids) to store with the run's state; any
  process later calls ``RelayApprovals.collect`` with the same calls, tickets and run id, so
  an approval that takes an hour needs no process to stay up meanwhile. Whoever can write the
  run's state can swap or copy its tickets, so the relay decides what one runs
  (``POST /v1/approvals/{id}/consume``): only the call its reviewers were shown, in the run it
  was asked for, once.

Quorum, reminders, escalation, timeouts and grants are the relay's, as for any approval.
Anything but a reviewer's allow (or a grant, or the relay's allow rule) is a deny.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import random
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from relay.errors import ErrorCode, RelayConfigError, UserInteractionError
from relay.gate.approval import ApprovalRequest, Approver, Decision, decide_error
from relay.gate.decider import Decider
from relay.gate.local import LocalApprover, SeamChannel
from relay.gate.remote import ApprovalsAPI, approval_body
from relay.gate.rulings import Rulings
from relay.grants.base import GrantStore
from relay.grants.memory import MemoryGrants
from relay.seam.abort import AbortSignal
from relay.seam.questions import AgentRef
from relay.seam.replies import RETRYABLE, Retry
from relay.seam.service import UserInteractionService

__all__ = [
    "CallVerdict",
    "PendingCall",
    "RelayApprovals",
    "Tickets",
    "approval_request",
    "decide",
    "seam_approver",
    "verdict",
]

# call id -> {"id": approval id, "digest": what was asked, "run": the run it was asked for}:
# JSON, stored with the run.
Tickets = dict[str, dict[str, str]]


@dataclass(frozen=True, slots=True)
class PendingCall:
    """One tool call a framework holds back until someone approves it."""

    call_id: str
    tool: str
    args: Mapping[str, Any]
    editable: bool = False
    """Whether the framework runs the call with edited arguments (``CallVerdict.edited_args``):
    only then are reviewers offered *Edit…*."""

    @property
    def digest(self) -> str:
        """What the reviewer is shown, hashed: a ticket only answers the call it was made for."""
        canonical = json.dumps([self.tool, self.args], sort_keys=True, default=str)
        return hashlib.sha256(canonical.encode()).hexdigest()


@dataclass(frozen=True, slots=True)
class CallVerdict:
    """The team's answer to one call: the decision, and the reviewer's edited arguments.

    ``edited_args`` is a reviewer's edit of the tool's input (the whole new input), for a
    call that said it takes one (``PendingCall.editable``); ``None`` when allowed as asked.
    """

    decision: Decision
    edited_args: dict[str, Any] | None = field(default=None)

    @property
    def allowed(self) -> bool:
        """Whether the call may run."""
        return self.decision.allowed

    @property
    def message(self) -> str:
        """Who decided and why, for the model (a reviewer's typed reason is in it)."""
        return self.decision.message


def verdict(decision: Decision) -> CallVerdict:
    """The verdict ``decision`` is: with the reviewer's edited input, if they edited it."""
    edited = decision.updated_input
    return CallVerdict(decision, edited_args=dict(edited) if edited is not None else None)


def approval_request(call: PendingCall, agent: AgentRef, **fields: Any) -> ApprovalRequest:
    """The relay approval for ``call``; ``fields`` are any other ``ApprovalRequest`` field
    (``context``, ``reason``, ``channel``, ``timeout``, …)."""
    return ApprovalRequest(
        tool=call.tool,
        input=dict(call.args),
        agent=agent,
        tool_use_id=call.call_id,
        editable=call.editable,
        **fields,
    )


async def decide(
    calls: Sequence[PendingCall],
    approver: Approver,
    agent: AgentRef,
    *,
    signal: AbortSignal | None = None,
    **fields: Any,
) -> dict[str, CallVerdict]:
    """Every call's verdict, asked all at once and waited for in this process."""
    decisions = await asyncio.gather(
        *(approver.approve(approval_request(c, agent, **fields), signal=signal) for c in calls)
    )
    return {c.call_id: verdict(d) for c, d in zip(calls, decisions, strict=True)}


def seam_approver(service: UserInteractionService, grants: GrantStore | None = None) -> Approver:
    """An ``Approver`` asking through the seam's registered provider (in this process).

    The provider's own channel and timeout apply; grants a reviewer makes are kept in
    ``grants`` (this process's memory unless given)."""

    decider = Decider(
        rulings=Rulings(rules=lambda _: None),
        grants=grants if grants is not None else MemoryGrants(),
        channel=SeamChannel(service.ask),
    )
    return LocalApprover(decider)


_POST_TRIES = 5  # posting an approval or its use: ~3 s of backoff in all before giving up


class RelayApprovals:
    """Approvals on a hosted relay (``relay serve`` at ``url``, bearer ``token``) that a run
    can be paused on: post them, store the tickets, collect the decisions from any process.

    ``run`` names the paused run (a LangGraph thread id, an ADK session id, an id of your
    own): a ticket answers only the run it was submitted for. ``fields`` are
    ``ApprovalRequest`` fields for every approval (``context``, ``reason``, ``timeout``,
    ``channel``, …). Close it with ``aclose()`` or use ``async with``.
    """

    def __init__(self, url: str, token: str, *, poll: float = 30.0, **fields: Any) -> None:
        if not url.startswith(("http://", "https://")):
            raise RelayConfigError(f"url must be the relay's http(s) URL (got {url!r})")
        if not token:
            raise RelayConfigError("token is empty: pass one of the relay's API tokens")
        # Reading a ticket backs off on a 429 as on a restart: the approval lives on there.
        self._api = ApprovalsAPI(url=url, token=token, url_name="its URL", retry_rate_limited=True)
        self._poll = poll
        self._fields = fields

    async def submit(self, calls: Sequence[PendingCall], agent: AgentRef, *, run: str) -> Tickets:
        """Post an approval per call of ``run``, all at once; the tickets of those still
        pending (a call a grant answered at once is simply posted again by ``collect``).
        Raises ``UserInteractionError`` when the relay cannot take them: nothing is paused."""
        created = await asyncio.gather(*(self._create(call, agent, run) for call in calls))
        tickets: Tickets = {}
        for call, approval in zip(calls, created, strict=True):
            approval_id = approval.get("id")
            if isinstance(approval_id, str) and approval.get("status") == "pending":
                tickets[call.call_id] = _ticket(approval_id, call, run)
        return tickets

    async def collect(
        self,
        calls: Sequence[PendingCall],
        agent: AgentRef,
        tickets: Tickets,
        *,
        run: str,
        wait: bool = True,
    ) -> dict[str, CallVerdict] | None:
        """Every call's verdict, reading each ticket's approval (waiting for it unless
        ``wait`` is false: then ``None`` while any is pending). A call with no ticket, or
        whose input differs from what its ticket was asked for, is asked afresh and its new
        ticket written into ``tickets`` (store them again if this returns ``None``). A ticket
        of another ``run`` is denied. Each allow is used only once every call is decided,
        and runs its call once: the relay records the use, so the same ticket collected
        again is denied."""

        async def read(call: PendingCall) -> tuple[Decision | None, str | None]:
            """The call's decision (``None`` while pending), and the approval to use."""
            ticket = tickets.get(call.call_id) or {}
            approval_id = ticket.get("id")
            asked_for = ticket.get("run")
            if approval_id and asked_for is not None and asked_for != run:
                return _other_run(asked_for, run), None
            if not approval_id or asked_for is None or ticket.get("digest") != call.digest:
                created = await self._create(call, agent, run)
                approval_id = created.get("id")
                if not isinstance(approval_id, str):
                    # A grant or the relay's rules answered at once: no approval to use.
                    found = _decision(created)
                    return found or decide_error(RuntimeError("the relay gave no decision")), None
                tickets[call.call_id] = _ticket(approval_id, call, run)
            return await self._read(approval_id, wait=wait), approval_id

        async def settle(
            call: PendingCall, decision: Decision, approval_id: str | None
        ) -> Decision:
            if decision.allowed and approval_id is not None:
                return await self._use(call, approval_id, run)
            return decision

        read_all = await asyncio.gather(*(read(c) for c in calls))
        decided = [(c, d, a) for c, (d, a) in zip(calls, read_all, strict=True) if d is not None]
        if len(decided) < len(calls):
            return None  # nothing is used until every call is decided
        decisions = await asyncio.gather(*(settle(c, d, a) for c, d, a in decided))
        return {c.call_id: verdict(d) for c, d in zip(calls, decisions, strict=True)}

    async def withdraw(self, tickets: Mapping[str, Mapping[str, str]]) -> None:
        """Withdraw pending approvals (each is then a deny), e.g. when the run is abandoned."""
        for ticket in tickets.values():
            if ticket.get("id"):
                await self._api.call("DELETE", f"/v1/approvals/{ticket['id']}")

    async def _create(self, call: PendingCall, agent: AgentRef, run: str) -> dict[str, Any]:
        """Post one approval for ``call`` of ``run`` (its ``tool_use_id``: the relay runs the
        approval for this run's call only), sent again while the relay restarts, is
        overloaded (503, 429) or the reply is lost: under one ``Idempotency-Key``, so that it
        is posted once."""
        request = replace(
            approval_request(call, agent, **self._fields), tool_use_id=_use_id(call, run)
        )
        body = approval_body(request)
        last = await self._post("/v1/approvals", body)
        if isinstance(last, dict):
            return last
        raise UserInteractionError(
            ErrorCode.PROVIDER_FAILED,
            f"the relay could not take the approval in {_POST_TRIES} tries ({last}); check"
            " that relay serve and its store are up, then run the agent again",
        )

    async def _use(self, call: PendingCall, approval_id: str, run: str) -> Decision:
        """Use the allow of ``approval_id`` to run ``call``: the relay answers it only for the
        call and run it was asked for, and only once; anything else is a deny."""
        body = {"tool": call.tool, "input": dict(call.args), "tool_use_id": _use_id(call, run)}
        try:
            used = await self._post(f"/v1/approvals/{approval_id}/consume", body)
        except UserInteractionError as exc:
            return Decision.deny(f"relay did not let this call run ({exc}), so it is denied")
        if not isinstance(used, dict):
            return decide_error(used)
        decision = _decision(used)
        if decision is None:
            return decide_error(RuntimeError("the relay answered a decided approval as pending"))
        return decision

    async def _post(self, path: str, body: dict[str, Any]) -> dict[str, Any] | Exception:
        """The relay's reply to ``POST path``, sent again while the relay restarts, is
        overloaded or the reply is lost (under one ``Idempotency-Key``: the relay acts
        once); the last failure if every try failed."""
        headers = {"Idempotency-Key": f"relay-{uuid.uuid4()}"}
        last: Exception = RuntimeError("not sent")
        for attempt in range(_POST_TRIES):
            if attempt:
                await asyncio.sleep(min(5.0, 0.2 * 2**attempt) * (0.5 + random.random() / 2))  # noqa: S311
            try:
                return await self._api.call("POST", path, json=body, headers=headers)
            except (Retry, *RETRYABLE) as exc:
                last = exc
        return last

    async def _read(self, approval_id: str, *, wait: bool) -> Decision | None:
        attempt = 0
        while True:
            try:
                polled = await self._api.call(
                    "GET",
                    f"/v1/approvals/{approval_id}",
                    params={"wait": str(self._poll if wait else 0)},
                    timeout=self._poll + 30,
                    retry=True,
                )
            except (Retry, *RETRYABLE):
                # The relay restarted or the connection dropped: the approval lives on there.
                if not wait:
                    return None
                attempt += 1
                await asyncio.sleep(min(5.0, 0.2 * 2**attempt) * (0.5 + random.random() / 2))  # noqa: S311
                continue
            except UserInteractionError as exc:
                return decide_error(exc)  # gone, refused: fail closed
            found = _decision(polled)
            if found is not None or not wait:
                return found
            attempt = 0

    async def aclose(self) -> None:
        """Close the HTTP session."""
        await self._api.aclose()

    async def __aenter__(self) -> RelayApprovals:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


def _use_id(call: PendingCall, run: str) -> str:
    """The approval's ``tool_use_id``: the run and the call, which the relay binds it to."""
    return f"{run}/{call.call_id}"


def _ticket(approval_id: str, call: PendingCall, run: str) -> dict[str, str]:
    return {"id": approval_id, "digest": call.digest, "run": run}


def _other_run(asked_for: str, run: str) -> Decision:
    return Decision.deny(
        f"this call's ticket was submitted for run {asked_for!r}, not for run {run!r}, so it is"
        " denied; submit this run's calls to ask for them"
    )


def _decision(approval: Mapping[str, Any]) -> Decision | None:
    raw = approval.get("decision")
    if not isinstance(raw, Mapping):
        return None
    try:
        return Decision.from_json(raw)
    except (KeyError, ValueError, TypeError) as exc:
        return decide_error(exc)
