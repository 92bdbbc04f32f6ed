"""``/v1/approvals``: a door into the Decider (``relay.gate.decider``), which decides.

``POST /v1/approvals`` turns its body into a proposal: the Decider answers at once (the
operator's rules, a grant) or posts the approval question (rendered from the tool and its
input, so the reviewer sees exactly what will run) and the route returns its id.
``GET /v1/approvals/{id}?wait=S`` long-polls; reading a decided approval asks the Decider
for its decision, which records the grant a reviewer chose (once, whichever replica reads
first). No endpoint creates a grant from what a client says, and a client never sets a
grant's scope: a ``pattern`` in the body is refused (``BAD_PATTERN``); the scope is derived
from the operator's rules, or is exactly the input shown.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from aiohttp import web

from relay.asks.channel import AskChannel
from relay.asks.records import iso_time
from relay.asks.target import UNSET, AskTarget
from relay.gate.approval import QUESTION_ID, ApprovalRequest, Decision
from relay.gate.core import BAD_PATTERN
from relay.gate.decider import Decider, Proposal
from relay.seam.questions import AgentRef
from relay.server.api import OWNER, REPLAYED, AskApi, not_found, slack_target
from relay.server.errors import ApiError
from relay.server.idempotency import read_key
from relay.server.limits import start_refused
from relay.server.shapes import check_body
from relay.store.record import AskRecord

__all__ = ["ApprovalApi", "approval_json"]

_OWN_STEPS = ("pattern", "callback_url", "callback_events")  # checked after the schema


def approval_json(
    ask_id: str | None, decision: Decision | None, record: AskRecord | None = None
) -> dict[str, Any]:
    """The documented ``Approval`` object."""
    out: dict[str, Any] = {
        "id": ask_id,
        "status": "pending" if decision is None else "decided",
        "decision": decision.to_json() if decision is not None else None,
    }
    if record is not None and record.deadline is not None:
        out["deadline"] = iso_time(record.deadline)
    return out


class ApprovalApi:
    """Handlers for ``/v1/approvals``; requests arrive authenticated (``request[OWNER]``)."""

    def __init__(self, *, asks: AskApi, decider: Decider) -> None:
        # Approvals are asks: read, limited and long-polled exactly as /v1/asks reads them.
        self._asks = asks
        self._provider: AskChannel = asks.channel
        self.decider = decider
        self.grants = decider.grants

    def routes(self) -> list[web.RouteDef]:
        """The routes to add to the application."""
        return [
            web.post("/v1/approvals", self.create),
            web.get("/v1/approvals/{ask_id}", self.read),
            web.delete("/v1/approvals/{ask_id}", self.delete),
        ]

    async def create(self, request: web.Request) -> web.Response:
        """``POST /v1/approvals``: a decision at once (200), or a pending ask (201)."""
        owner: str = request[OWNER]
        wait = self._asks.wait_param(request)
        read_key(request)  # a malformed key is refused even where the rules decide at once
        body = await self._asks.json_body(request, hint="send less of the tool input")
        approval, target = _read_approval(body)
        proposal = Proposal(approval, owner=owner, target=target)
        judged = self.decider.ruled_at_once(proposal)
        if isinstance(judged, Decision):
            return web.json_response(approval_json(None, judged))  # nothing was posted
        subscription = self._asks.callback(body)  # checked before anything is posted
        headers: dict[str, str] = {}
        async with self._asks.keys.create(
            request, owner=owner, route="approvals", body=body
        ) as slot:
            if slot is not None and slot.replay is not None:
                record = await self._asks.replayed(request, slot.replay)
                headers[REPLAYED] = "true"
            else:
                with start_refused():
                    opened = await self.decider.open(proposal)
                if isinstance(opened, Decision):
                    # A grant answered at once: nothing was posted.
                    return web.json_response(approval_json(None, opened))
                record = opened
                if slot is not None:
                    slot.bind(record.id)
        webhooks = self._asks.webhooks
        if subscription is not None and webhooks is not None:
            # The ask's end is sent as for /v1/asks (again on a replay, as there).
            await webhooks.subscribe(record, subscription)
        record = await self._asks.waited(request, record, wait)
        decision = await self.decider.conclude(record)
        return web.json_response(
            approval_json(record.id, decision, record),
            status=201,
            headers={"Location": f"/v1/approvals/{record.id}", **headers},
        )

    async def read(self, request: web.Request) -> web.Response:
        """``GET /v1/approvals/{id}``: the approval; with ``?wait=S`` long-polls while pending."""
        wait = self._asks.wait_param(request)
        record = await self._asks.waited(request, await self._owned(request), wait)
        return web.json_response(
            approval_json(record.id, await self.decider.conclude(record), record)
        )

    async def delete(self, request: web.Request) -> web.Response:
        """``DELETE /v1/approvals/{id}``: withdraw a pending approval (a deny); the final state."""
        record = await self._owned(request)
        if record.pending:
            record = await self._provider.abort(record.id) or record
        return web.json_response(
            approval_json(record.id, await self.decider.conclude(record), record)
        )

    async def decision(self, record: AskRecord) -> Decision | None:
        """The decision of a finished approval (recording its grant); ``None`` while pending."""
        return await self.decider.conclude(record)

    async def owned(self, request: web.Request) -> AskRecord:
        """The approval named in the path if this request's token asked it, else
        ``NOT_FOUND`` (an ordinary ask too)."""
        return await self._owned(request)

    async def _owned(self, request: web.Request) -> AskRecord:
        record = await self._asks.owned(request, what="approval")
        # An ordinary ask reads exactly like a missing approval.
        offer = await self.grants.get_offer(ask_id=record.id)
        if offer is None or record.request.questions[0].id != QUESTION_ID:
            raise not_found("approval", record.id)
        return record


def _read_approval(body: object) -> tuple[ApprovalRequest, Any]:
    """Read the ``ApprovalRequest`` body: its shape is the schema's (``relay.server.shapes``);
    then what no schema says: a ``pattern`` is refused, and the ``slack`` section is read.
    An optional field set to null is unset."""
    # A pattern is refused whatever its shape (BAD_PATTERN); a callback's fields are the
    # webhook policy's to judge (CALLBACK_NOT_ALLOWED, as on /v1/asks).
    check_body(body, "ApprovalRequest", checked_after=_OWN_STEPS)
    assert isinstance(body, Mapping)  # (the schema's type: object)
    if body.get("pattern") is not None:
        raise ApiError(
            BAD_PATTERN,
            "pattern is not accepted: the relay derives a grant's scope from its own rules"
            " (RELAY_RULES_FILE), else a grant covers exactly the input shown; leave pattern out",
        )
    slack = body.get("slack")
    target = slack_target(slack) if slack is not None else None  # (the schema's object)

    def opt(key: str, default: Any) -> Any:
        value = body.get(key)
        return default if value is None else value

    schema = body.get("input_schema")
    approval = ApprovalRequest(
        tool=body["tool"],
        input=dict(opt("input", {})),
        agent=AgentRef(id=body["agent"]["id"], name=body["agent"].get("name")),
        tool_use_id=body.get("tool_use_id"),
        context=dict(opt("context", {})),
        session_grants=opt("session_grants", True),
        grant_minutes=opt("grant_minutes", 30),
        reason=body.get("reason"),
        approvals=body.get("approvals_required"),
        deny_vetoes=body.get("deny_vetoes"),
        editable=opt("editable", False),
        input_schema=dict(schema) if schema is not None else None,
        rules_allow=body.get("client_verdict") == "allow",
        **(_asked_of(target) if target is not None else {}),
    )
    return approval, target


def _asked_of(target: AskTarget) -> dict[str, Any]:
    """What the body's ``slack`` section asks of the approval, as the Decider reads it (who
    may answer, where, how long): the operator's requirements then override it."""

    def given(value: Any) -> bool:
        return value is not UNSET and value is not None

    asked: dict[str, Any] = {}
    if target.channel:
        asked["channel"] = target.channel
    if given(target.allowed_users):
        asked["approvers"] = tuple(target.allowed_users)  # type: ignore[arg-type]
    if given(target.allowed_groups):
        asked["approver_groups"] = tuple(target.allowed_groups)  # type: ignore[arg-type]
    if given(target.timeout):
        asked["timeout"] = target.timeout
    if given(target.remind_after):
        asked["remind_after"] = target.remind_after
    if given(target.reminders):
        asked["reminders"] = target.reminders
    return asked
