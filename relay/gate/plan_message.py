"""The Decider's plan decisions as a plan's review message reaches them (``PlanDoor``).

*Stop the plan* on an approved plan's message ends it through ``stop_plan``; the *Edit…*
form's narrowing of a plan's scope is checked here (``narrowing_refusal``) before it is
recorded, and again by ``narrow`` when the approval is read: the kept items must be items
of the scope relay derived, none of them *ask each time*. One rule, at both times.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

from relay.asks.plan_door import PlanStop, ScopeChoice
from relay.grants.base import GrantStore
from relay.plans.record import Plan
from relay.plans.scope import PlanScope, describe_scope
from relay.plans.steps import Step
from relay.seam.questions import Responder
from relay.store.record import AskRecord, utcnow

__all__ = ["PlanMessages", "narrow"]


def item_key(step: Step) -> str:
    """The key naming scope item ``step`` in the Edit form (short: Slack's option values
    hold 150 characters)."""
    return hashlib.sha256(f"{step.kind}\0{step.text}".encode()).hexdigest()[:16]


def narrow(scope: PlanScope, keep: Sequence[str]) -> tuple[PlanScope, tuple[str, ...]] | str:
    """``scope`` with only the items whose keys are in ``keep``, and the items dropped (as
    "run pytest -q", "write src/"); or
    why not: a key that names no item of the derived scope (an ask-each-time item never is
    one) refuses the whole narrowing."""
    items = {item_key(step): step for step in scope.items()}
    unknown = [k for k in keep if k not in items]
    if unknown:
        return (
            "the narrowed scope names an item that is not in the scope relay derived for this"
            " plan; nothing was changed: open the form again from the plan's message"
        )
    kept = [items[k] for k in keep]
    dropped = tuple(f"{s.kind} {s.text}" for s in scope.items() if s not in kept)
    return scope.narrowed(kept), dropped


class PlanMessages:
    """The part of the ``Decider`` a plan's review message reaches (``PlanDoor``)."""

    grants: GrantStore

    async def conclude_plan(self, record: AskRecord) -> object:
        raise NotImplementedError

    async def stop_plan(self, *, owner: str, plan_id: str, by: str) -> Plan | None:
        raise NotImplementedError

    async def stop_from_review(self, record: AskRecord, *, by: Responder) -> PlanStop:
        """End the plan review ask ``record`` approved (its answer read first, once), as
        ``by`` chose from its message; a plan already ended or expired stays as it is."""
        await self.conclude_plan(record)
        plan = await self.grants.get_plan(owner=record.owner or "local", plan_id=record.id)
        if plan is None:
            return PlanStop("none")
        if not plan.live(utcnow()):
            status = "expired" if plan.status == "active" else plan.status
            return PlanStop("ended", status=status, by=plan.ended_by)
        name = by.display_name
        stopped = await self.stop_plan(owner=plan.owner, plan_id=plan.id, by=name)
        if stopped is None or stopped.status != "stopped" or stopped.ended_by != name:
            ended = stopped or plan
            return PlanStop("ended", status=ended.status, by=ended.ended_by)
        return PlanStop("stopped", status="stopped", by=name)

    async def scope_choices(self, record: AskRecord) -> tuple[ScopeChoice, ...] | None:
        """The scope items of the plan under review in ``record``, as the Edit form shows
        them: each that runs without asking, then each that stays ask each time (and why)."""
        plan = await self.grants.get_plan(owner=record.owner or "local", plan_id=record.id)
        if plan is None or plan.status != "pending":
            return None
        scope = plan.scope
        choices = [ScopeChoice(item_key(step), _words(scope, step)) for step in scope.items()]
        choices += [
            ScopeChoice(f"asked-{i}", _words(scope, Step(a.kind, a.text)), a.why)
            for i, a in enumerate(scope.asked)
        ]
        return tuple(choices)

    async def narrowing_refusal(self, record: AskRecord, keep: Sequence[str]) -> str | None:
        """Why approving ``record``'s plan with only ``keep`` is refused (``narrow``)."""
        plan = await self.grants.get_plan(owner=record.owner or "local", plan_id=record.id)
        if plan is None or plan.status != "pending":
            return "this plan is no longer under review; nothing was changed"
        narrowed = narrow(plan.scope, keep)
        return narrowed if isinstance(narrowed, str) else None


def _words(scope: PlanScope, step: Step) -> str:
    """One item in plain words, as the plan's message says it (without the list mark)."""
    one = PlanScope(
        root=scope.root,
        writes=(step.text,) if step.kind == "write" else (),
        tools=(step.text,) if step.kind == "tool" else (),
        mcp_servers=(step.text,) if step.kind == "mcp_server" else (),
    )
    line = describe_scope(one)[0] if step.kind != "run" else f"- runs `{step.text}`"
    return line.removeprefix("- ")
