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
from relay.errors import ErrorCode, HarnessError
from relay.gate.approval import QUESTION_ID, ApprovalRequest, Decision
from relay.gate.core import BAD_PATTERN
from relay.gate.decider import Decider, Proposal
from relay.seam.questions import MAX_APPROVALS, AgentRef
from relay.server.api import OWNER, REPLAYED, AskApi, read_slack_section
from relay.server.errors import ApiError
from relay.server.idempotency import read_key
from relay.server.limits import pending_refused
from relay.store import PendingLimitReached
from relay.store.record import AskRecord

__all__ = ["ApprovalApi", "approval_json"]

_KEYS = frozenset(
    {
        "tool",
        "input",
        "tool_use_id",
        "agent",
        "context",
        "pattern",
        "reason",
        "session_grants",
        "grant_minutes",
        "approvals_required",
        "deny_vetoes",
        "slack",
        "callback_url",
        "callback_events",
        "client_verdict",
        "editable",
        "input_schema",
    }
)


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
                try:
                    opened = await self.decider.open(proposal)
                except HarnessError as exc:
                    raise ApiError.of(exc) from None
                except PendingLimitReached as exc:
                    raise pending_refused(exc) from None
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
        if wait > 0 and record.pending:
            record = await self._asks.long_poll(request, record.id, wait)
        decision = await self.decider.conclude(record)
        return web.json_response(
            approval_json(record.id, decision, record),
            status=201,
            headers={"Location": f"/v1/approvals/{record.id}", **headers},
        )

    async def read(self, request: web.Request) -> web.Response:
        """``GET /v1/approvals/{id}``: the approval; with ``?wait=S`` long-polls while pending."""
        wait = self._asks.wait_param(request)
        record = await self._owned(request)
        if record.pending and wait > 0:
            record = await self._asks.long_poll(request, record.id, wait)
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
            raise ApiError(
                ErrorCode.NOT_FOUND,
                f"no approval {record.id} for this token (it never existed, expired, or belongs"
                " to another token)",
            )
        return record


def _bad(message: str) -> ApiError:
    return ApiError(ErrorCode.BAD_REQUEST, message)


def _read_approval(body: object) -> tuple[ApprovalRequest, Any]:
    """Read the strict ``ApprovalRequest`` body; an optional field set to null is unset."""
    if not isinstance(body, Mapping):
        raise _bad("the body must be a JSON object with tool, input and agent")
    for key in body:
        if key not in _KEYS:
            raise _bad(f"{key} is not a known field")

    def opt(key: str, default: Any) -> Any:
        value = body.get(key)
        return default if value is None else value

    tool = body.get("tool")
    if not isinstance(tool, str) or not tool.strip():
        raise _bad("tool is required: the name of the tool the agent wants to use")
    tool_input = opt("input", {})
    if not isinstance(tool_input, Mapping):
        raise _bad("input must be an object: the tool's input")
    agent_raw = body.get("agent")
    if not isinstance(agent_raw, Mapping):
        raise _bad('agent is required: {"id": ..., "name": ...}, who asks')
    try:
        agent = AgentRef.from_dict(agent_raw, strict=True, path="agent")
    except HarnessError as exc:
        raise ApiError.of(exc) from None
    if not agent.id.strip():
        raise _bad("agent.id must not be blank")
    context = opt("context", {})
    if not isinstance(context, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in context.items()
    ):
        raise _bad("context must be an object of strings")
    if len(context) > 20:
        raise _bad("context may have at most 20 entries")
    if body.get("pattern") is not None:
        raise ApiError(
            BAD_PATTERN,
            "pattern is not accepted: the relay derives a grant's scope from its own rules"
            " (RELAY_RULES_FILE), else a grant covers exactly the input shown; leave pattern out",
        )
    for key in ("tool_use_id", "reason"):
        value = body.get(key)
        if value is not None and not isinstance(value, str):
            raise _bad(f"{key} must be a string")
    session = opt("session_grants", True)
    if not isinstance(session, bool):
        raise _bad("session_grants must be true or false")
    minutes = opt("grant_minutes", 30)
    if isinstance(minutes, bool) or not isinstance(minutes, int) or not 0 <= minutes <= 1440:
        raise _bad("grant_minutes must be a whole number from 0 to 1440")
    approvals = body.get("approvals_required")
    if approvals is not None and (
        isinstance(approvals, bool)
        or not isinstance(approvals, int)
        or not 1 <= approvals <= MAX_APPROVALS
    ):
        raise _bad(
            f"approvals_required must be a whole number from 1 to {MAX_APPROVALS}: how many"
            " distinct people must allow"
        )
    vetoes = body.get("deny_vetoes")
    if vetoes is not None and not isinstance(vetoes, bool):
        raise _bad("deny_vetoes must be true or false")
    editable = opt("editable", False)
    if not isinstance(editable, bool):
        raise _bad(
            "editable must be true or false: true only if the client runs decision.updated_input"
            " when a reviewer edits the call"
        )
    schema = body.get("input_schema")
    if schema is not None and not isinstance(schema, Mapping):
        raise _bad("input_schema must be an object: the tool's input JSON Schema")
    try:
        target = read_slack_section(body["slack"]) if body.get("slack") is not None else None
    except HarnessError as exc:
        raise ApiError.of(exc) from None
    approval = ApprovalRequest(
        tool=tool,
        input=dict(tool_input),
        agent=agent,
        tool_use_id=body.get("tool_use_id"),
        context=dict(context),
        session_grants=session,
        grant_minutes=minutes,
        reason=body.get("reason"),
        approvals=approvals,
        deny_vetoes=vetoes,
        editable=editable,
        input_schema=dict(schema) if schema is not None else None,
        rules_allow=_client_verdict(body) == "allow",
        **(_asked_of(target) if target is not None else {}),
    )
    return approval, target


def _client_verdict(body: Mapping[str, Any]) -> str:
    verdict = body.get("client_verdict")
    if verdict is None:
        return "ask"
    if verdict not in ("allow", "ask"):
        raise _bad('client_verdict must be "allow" or "ask": what the client\'s rules say')
    return str(verdict)


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
