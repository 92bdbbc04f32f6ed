"""``/v1/plans``: a plan put up for review, a door into the Decider like ``/v1/approvals``.

``POST /v1/plans`` derives the plan's scope (``relay.plans.scope``), binds it by the
operator's rules and posts the plan with its scope in plain words; the route returns the
plan's id (its review ask's). ``GET /v1/plans/{id}?wait=S`` long-polls; reading a reviewed
plan asks the Decider, which makes the approved plan live for this token and agent (once,
whichever replica reads first). ``DELETE`` withdraws a pending plan or stops a live one.
A client proposes steps but never sets the scope: it is what relay derived and showed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from aiohttp import web

from relay.asks.records import iso_time
from relay.errors import ErrorCode
from relay.gate.decider import Decider, PlanProposal, PlanReview
from relay.plans.scope import describe_scope
from relay.plans.steps import read_steps
from relay.seam.questions import AgentRef
from relay.server.api import OWNER, AskApi, not_found
from relay.server.errors import ApiError
from relay.server.limits import start_refused
from relay.server.shapes import check_body
from relay.store.record import AskRecord

__all__ = ["PlanApi"]


def plan_json(review: PlanReview, record: AskRecord | None = None) -> dict[str, Any]:
    """The documented ``Plan`` object."""
    plan = review.plan
    if plan is None:
        denied = review.denied
        return {
            "id": None,
            "status": "denied",
            "message": denied.message if denied is not None else "the plan was refused",
        }
    out: dict[str, Any] = {
        "id": plan.id,
        "status": plan.status,
        "agent": plan.agent,
        "scope": plan.scope.to_json(),
        "scope_words": describe_scope(plan.scope),
        "expires_at": plan.expires_at.isoformat(),
    }
    if plan.approved_by is not None:
        out["approved_by"] = plan.approved_by.to_dict()
    if plan.approved_at is not None:
        out["approved_at"] = plan.approved_at.isoformat()
    if plan.ended_by is not None:
        out["ended_by"] = plan.ended_by
    if plan.narrowed_by is not None:
        out["narrowed_by"] = plan.narrowed_by
        out["dropped"] = list(plan.dropped)
    out["covered"] = [c.to_json() for c in plan.covered]
    out["covered_count"] = plan.covered_count
    if review.feedback is not None:
        out["feedback"] = review.feedback
    if record is not None and record.deadline is not None and plan.status == "pending":
        out["deadline"] = iso_time(record.deadline)
    return out


class PlanApi:
    """Handlers for ``/v1/plans``; requests arrive authenticated (``request[OWNER]``)."""

    def __init__(self, *, asks: AskApi, decider: Decider) -> None:
        self._asks = asks
        self.decider = decider

    def routes(self) -> list[web.RouteDef]:
        """The routes to add to the application."""
        return [
            web.post("/v1/plans", self.create),
            web.get("/v1/plans/{ask_id}", self.read),
            web.delete("/v1/plans/{ask_id}", self.delete),
        ]

    async def create(self, request: web.Request) -> web.Response:
        """``POST /v1/plans``: the pending plan (201), or the rules' deny (200)."""
        owner: str = request[OWNER]
        wait = self._asks.wait_param(request)
        body = await self._asks.json_body(request, hint="send a shorter plan")
        proposal = _read_plan(body, owner)
        with start_refused():
            review, record = await self.decider.propose_plan(proposal)
        if record is None:
            return web.json_response(plan_json(review))
        if wait > 0 and record.pending:
            record = await self._asks.long_poll(request, record.id, wait)
            review = await self.decider.conclude_plan(record) or review
        return web.json_response(
            plan_json(review, record),
            status=201,
            headers={"Location": f"/v1/plans/{record.id}"},
        )

    async def read(self, request: web.Request) -> web.Response:
        """``GET /v1/plans/{id}``: the plan; with ``?wait=S`` long-polls while in review."""
        wait = self._asks.wait_param(request)
        record = await self._asks.waited(request, await self._owned(request), wait)
        return web.json_response(plan_json(await self._concluded(record), record))

    async def delete(self, request: web.Request) -> web.Response:
        """``DELETE /v1/plans/{id}``: withdraw a plan in review, or stop a live one."""
        record = await self._owned(request)
        if record.pending:
            record = await self._asks.channel.abort(record.id) or record
        await self._concluded(record)
        plan = await self.decider.stop_plan(
            owner=request[OWNER], plan_id=record.id, by="the agent's token"
        )
        return web.json_response(plan_json(PlanReview(plan=plan), record))

    async def _concluded(self, record: AskRecord) -> PlanReview:
        review = await self.decider.conclude_plan(record)
        if review is None:
            raise not_found("plan", record.id)
        return review

    async def _owned(self, request: web.Request) -> AskRecord:
        record = await self._asks.owned(request, what="plan")
        plan = await self.decider.grants.get_plan(owner=request[OWNER], plan_id=record.id)
        if plan is None:
            raise not_found("plan", record.id)  # an ordinary ask reads like a missing plan
        return record


def _read_plan(body: object, owner: str) -> PlanProposal:
    """Read the ``PlanRequest`` body: its shape is the schema's (``relay.server.shapes``)."""
    check_body(body, "PlanRequest")
    assert isinstance(body, Mapping)  # (the schema's type: object)
    try:
        steps = read_steps(body.get("steps"))
    except ValueError as exc:  # (the schema says the same; read_steps makes the steps)
        raise ApiError(ErrorCode.BAD_REQUEST, str(exc)) from None
    agent = AgentRef(id=body["agent"]["id"], name=body["agent"].get("name"))
    return PlanProposal(
        text=body["plan"], agent=agent, owner=owner, steps=tuple(steps), cwd=body.get("cwd")
    )
