"""``/v1/approvals``: ask a reviewer whether an agent may use a tool; grants live here.

``POST /v1/approvals`` answers at once when one of the token's grants covers the use, else
posts the approval question (rendered here, from the tool and its input, so the reviewer
sees exactly what will run) and returns its id. ``GET /v1/approvals/{id}?wait=S`` long-polls
for the decision; reading a decided approval whose reviewer chose a grant records that
grant (once, whichever replica reads first), with who chose it and when from the signed
click. No endpoint creates a grant from what a client says: a coding agent holds its own
API token, so anything the token alone could do, the agent could forge. A ``pattern`` in the
body is only a proposal, checked by ``relay.gate.core.checked_scope``: no digest, no
pattern for every use of a tool, none that does not cover the very input shown
(``BAD_PATTERN``); the option text then says exactly what the grant would cover.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from aiohttp import web

from relay.errors import HarnessError
from relay.gate.approval import (
    QUESTION_ID,
    ApprovalRequest,
    Decision,
    approval_question,
    decide_answer,
    decide_error,
    offer_for,
)
from relay.gate.core import ScopeError, checked_scope, grant_scope
from relay.gate.match import Pattern, subject
from relay.gate.policy import Policy, combine
from relay.gate.rules import Verdict
from relay.grants.base import GrantStore
from relay.questions import MAX_APPROVALS, AgentRef
from relay.records import iso_time
from relay.server.api import OWNER, REPLAYED, AskApi, read_slack_section
from relay.server.errors import ApiError
from relay.server.idempotency import read_key
from relay.slack.provider import SlackProvider, SlackTarget
from relay.store.record import AskRecord, AskStatus, utcnow

__all__ = ["ApprovalApi", "approval_json"]

_log = logging.getLogger("relay.server")
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
# How long an offer outlives its ask's timeout, so a late read can still record the grant.
_OFFER_GRACE = 24 * 3600.0


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

    def __init__(
        self,
        *,
        asks: AskApi,
        grants: GrantStore,
        min_approvals: int | None = None,
        policy: Policy | None = None,
    ) -> None:
        # Approvals are asks: read, limited and long-polled exactly as /v1/asks reads them.
        self._asks = asks
        self._provider: SlackProvider = asks.provider
        self.grants = grants
        # The operator's RELAY_APPROVALS_REQUIRED: a body may ask for more people, not fewer
        # (a coding agent holds its own token, so it must not lower its own quorum).
        self._min_approvals = min_approvals
        # The operator's RELAY_RULES_FILE: what is allowed or denied without a person, and
        # the scope of a grant, decided where the agent cannot write.
        self._policy = policy

    def routes(self) -> list[web.RouteDef]:
        """The routes to add to the application."""
        return [
            web.post("/v1/approvals", self.create),
            web.get("/v1/approvals/{ask_id}", self.read),
            web.delete("/v1/approvals/{ask_id}", self.delete),
        ]

    async def create(self, request: web.Request) -> web.Response:
        """``POST /v1/approvals``: a grant's decision at once (200), or a pending ask (201)."""
        owner: str = request[OWNER]
        wait = self._asks.wait_param(request)
        read_key(request)  # a malformed key is refused even where the rules decide at once
        body = await self._asks.json_body(request, hint="send less of the tool input")
        approval, target = _read_approval(body)
        client = body.get("client_verdict") if isinstance(body, Mapping) else None
        ruled = self._by_rules(approval, owner, client or "ask")
        if isinstance(ruled, Decision):
            return web.json_response(approval_json(None, ruled))  # nothing was posted
        approval = ruled
        target = self._who_approves(target, owner, approval)
        subscription = self._asks.callback(body)  # checked before anything is posted
        if self._min_approvals is not None and self._min_approvals > (approval.approvals or 1):
            approval = replace(approval, approvals=self._min_approvals)
        headers: dict[str, str] = {}
        async with self._asks.keys.create(
            request, owner=owner, route="approvals", body=body
        ) as slot:
            if slot is not None and slot.replay is not None:
                record = await self._asks.replayed(request, slot.replay)
                headers[REPLAYED] = "true"
            else:
                started = await self._start(approval, target, owner)
                if not isinstance(started, AskRecord):
                    return started  # a grant answered at once: nothing was posted
                record = started
                if slot is not None:
                    slot.bind(record.id)
        webhooks = self._asks.webhooks
        if subscription is not None and webhooks is not None:
            # The ask's end is sent as for /v1/asks (again on a replay, as there).
            await webhooks.subscribe(record, subscription)
        if wait > 0 and record.pending:
            record = await self._asks.long_poll(request, record.id, wait)
        decision = await self._decision(record)
        return web.json_response(
            approval_json(record.id, decision, record),
            status=201,
            headers={"Location": f"/v1/approvals/{record.id}", **headers},
        )

    def _by_rules(
        self, approval: ApprovalRequest, owner: str, client: object
    ) -> ApprovalRequest | Decision:
        """The operator's rules and the client's verdict, the stricter deciding: a deny or an
        allow at once, else the approval to post (with the operator's rule's grant scope)."""
        if client not in ("allow", "ask"):
            raise _bad('client_verdict must be "allow" or "ask": what the client\'s rules say')
        rules = self._policy.for_owner(owner) if self._policy is not None else None
        use = subject(approval.tool, approval.input)
        operator = rules.verdict(use) if rules is not None else Verdict("pass")
        action = combine(str(client), operator)
        source = "the relay's rules (RELAY_RULES_FILE)"
        if action == "deny":
            return Decision.deny(operator.reason(source))
        if action == "allow":
            why = operator.reason(source) if operator.action == "allow" else "allowed by the"
            if operator.action != "allow":
                why += " client's rules (the relay has no rules file)"
            return Decision(behavior="allow", message=why, outcome="allowed")
        rule = operator.rule
        if approval.pattern is None and rule is not None and rule.action == "ask" and rule.narrow:
            scope = grant_scope(approval.tool, approval.input, rule.pattern)
            if scope.digest is None:
                approval = replace(approval, pattern=scope)
        return approval

    def _who_approves(
        self, target: SlackTarget | None, owner: str, approval: ApprovalRequest
    ) -> SlackTarget | None:
        """The operator's approvers for this use (its ask rule's, else the file's): a body may
        name fewer of them, never others."""
        if self._policy is None:
            return target
        rules = self._policy.for_owner(owner)
        rule = rules.verdict(subject(approval.tool, approval.input)).rule
        users = rule.approvers if rule is not None and rule.approvers is not None else None
        groups = rule.approver_groups if rule is not None else None
        users = users if users is not None else rules.approvers
        groups = groups if groups is not None else rules.approver_groups
        if users is None and groups is None:
            return target
        current = target if target is not None else SlackTarget(channel="")
        return replace(
            current,
            allowed_users=_within(current.allowed_users, users),
            allowed_groups=_within(current.allowed_groups, groups),
        )

    async def _start(
        self, approval: ApprovalRequest, target: Any, owner: str
    ) -> AskRecord | web.Response:
        """A grant's decision at once, or the posted approval ask (with its offer stored)."""
        grant = await self.grants.find(
            owner=owner,
            agent=approval.agent.id,
            use=subject(approval.tool, approval.input),
            now=utcnow(),
        )
        if grant is not None:
            allowed = Decision(
                behavior="allow",
                message=grant.describe(),
                outcome="allowed",
                by=grant.granted_by,
                at=grant.granted_at,
                grant=grant,
            )
            return web.json_response(approval_json(None, allowed))
        question = approval_question(approval)
        try:
            record = await self._provider.start(question, target=target, owner=owner)
        except HarnessError as exc:
            raise ApiError.of(exc) from None
        offer = approval.offer(owner)
        ttl = (record.target.timeout or 7 * 24 * 3600.0) + _OFFER_GRACE
        # Stored even when no grant is offered: it marks the ask as an approval.
        await self.grants.put_offer(ask_id=record.id, offer=offer, ttl=ttl)
        return record

    async def read(self, request: web.Request) -> web.Response:
        """``GET /v1/approvals/{id}``: the approval; with ``?wait=S`` long-polls while pending."""
        wait = self._asks.wait_param(request)
        record = await self._owned(request)
        if record.pending and wait > 0:
            record = await self._asks.long_poll(request, record.id, wait)
        return web.json_response(approval_json(record.id, await self._decision(record), record))

    async def delete(self, request: web.Request) -> web.Response:
        """``DELETE /v1/approvals/{id}``: withdraw a pending approval (a deny); the final state."""
        record = await self._owned(request)
        if record.pending:
            record = await self._provider.abort(record.id) or record
        return web.json_response(approval_json(record.id, await self._decision(record), record))

    async def decision(self, record: AskRecord) -> Decision | None:
        """The decision of a finished approval (recording its grant); ``None`` while pending."""
        return await self._decision(record)

    async def _decision(self, record: AskRecord) -> Decision | None:
        """The decision of a finished approval (recording its grant); ``None`` while pending."""
        if record.pending:
            return None
        if record.status is not AskStatus.ANSWERED:
            error = record.error.to_exception() if record.error is not None else None
            return decide_error(
                error or RuntimeError(f"the approval ended as {record.status.value}"),
                timeout=record.target.timeout,
            )
        offer = await self.grants.get_offer(ask_id=record.id)
        item = record.answer().answers[0]
        question = record.request.questions[0]
        intent = question.intent
        decision, kind = decide_answer(
            item,
            session=offer.session if offer else False,
            minutes=offer.minutes if offer else 0,
            # Edits were offered only if the client said it runs an edited input.
            editable=intent is not None and intent.edit is not None,
        )
        if kind is None or offer is None or decision.by is None or decision.at is None:
            return decision
        if intent is not None and intent.edit is not None:
            offer = offer_for(offer, intent.edit.tool, decision)
        grant = offer.grant(ask_id=record.id, kind=kind, by=decision.by, at=decision.at)
        if await self.grants.add(grant=grant):
            _log.info(
                "grant %s recorded: %s for agent %s by %s",
                grant.id,
                grant.pattern.describe(),
                grant.agent,
                grant.granted_by.id,
            )
        return Decision(
            behavior="allow",
            message=f"{decision.message}; {grant.describe()}",
            outcome="granted",
            by=decision.by,
            at=decision.at,
            grant=grant,
        )

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
                "NOT_FOUND",
                f"no approval {record.id} for this token (it never existed, expired, or belongs"
                " to another token)",
            )
        return record


def _within(asked: object, operator: tuple[str, ...] | None) -> Any:
    """The body's list if it names only the operator's ids, else the operator's."""
    if operator is None:
        return asked
    if isinstance(asked, list | tuple | frozenset | set) and set(asked) <= set(operator):
        return asked
    return operator


def _bad(message: str) -> ApiError:
    return ApiError("BAD_REQUEST", message)


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
    pattern = None
    raw_pattern = opt("pattern", None)
    if raw_pattern is not None:
        if not isinstance(raw_pattern, Mapping):
            raise _bad("pattern must be an object")
        try:
            pattern = Pattern.from_json({k: v for k, v in raw_pattern.items() if v is not None})
        except (ValueError, re.error) as exc:
            raise _bad(f"pattern: {exc}") from None
        if isinstance(tool, str) and isinstance(tool_input, Mapping):
            try:
                # Never a scope for what the reviewer is not shown (relay.gate.core).
                pattern = checked_scope(tool, tool_input, pattern)
            except ScopeError as exc:
                raise ApiError(exc.code, str(exc)) from None
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
        pattern=pattern,
        session_grants=session,
        grant_minutes=minutes,
        reason=body.get("reason"),
        approvals=approvals,
        deny_vetoes=vetoes,
        editable=editable,
        input_schema=dict(schema) if schema is not None else None,
    )
    return approval, target
