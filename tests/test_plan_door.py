"""The Decider's plan decisions as a plan's message reaches them (``PlanDoor``), without a
server: an expired plan is not stopped, and a narrowing keeps only items of the derived
scope (an ask-each-time item, or any other key, refuses it whole)."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

from relay.asks.plan_door import ScopeChoice
from relay.gate.decider import Decider
from relay.gate.plan_message import item_key, narrow
from relay.gate.rulings import Rulings
from relay.grants import MemoryGrants
from relay.plans.record import Plan
from relay.plans.scope import derive_scope
from relay.plans.steps import Step
from relay.seam.plan_review import APPROVE, scoped_plan_question
from relay.seam.questions import AskUserQuestionAnswerItem, AskUserQuestionRequest, Responder
from relay.slack.editing.plan_form import SCOPE_BLOCK, plan_scope_view, read_kept
from relay.store.record import AskRecord, AskStatus, Target, utcnow
from relay.testing.modal_check import view_errors

PLAN = "# Docs\n\nRun `make docs` and `ls; rm -rf /`, then edit `docs/index.md`."
ROOT = "/home/dev/project"
ALICE = Responder(id="U0ALICE", name="alice")


def _plan(**changes: object) -> Plan:
    now = utcnow()
    plan = Plan(
        id="ask-1",
        owner="local",
        agent="claude-code:s1",
        text=PLAN,
        scope=derive_scope(PLAN, root=ROOT),
        status="active",
        submitted_at=now,
        expires_at=now + timedelta(hours=1),
        approved_by=ALICE,
        approved_at=now,
    )
    return replace(plan, **changes)  # type: ignore[arg-type]


def _review(status: AskStatus = AskStatus.ANSWERED) -> AskRecord:
    question = scoped_plan_question(PLAN, [])
    approve = AskUserQuestionAnswerItem(id=question.id, selected=(APPROVE,), answered_by=ALICE)
    return AskRecord(
        id="ask-1",
        request=AskUserQuestionRequest((question,)),
        target=Target(channel="C0PLANS"),
        created_at=utcnow(),
        status=status,
        responses=(approve if status is AskStatus.ANSWERED else None,),
        owner="local",
    )


def _decider(grants: MemoryGrants) -> Decider:
    return Decider(rulings=Rulings(rules=lambda _: None), grants=grants)


async def test_an_expired_plan_is_not_stopped_and_says_it_expired() -> None:
    grants = MemoryGrants()
    expired = _plan(expires_at=utcnow() - timedelta(seconds=1))
    await grants.add_plan(plan=expired)
    stop = await _decider(grants).stop_from_review(_review(), by=ALICE)
    assert (stop.outcome, stop.status) == ("ended", "expired")
    assert await grants.get_plan(owner="local", plan_id="ask-1") == expired


async def test_a_live_plan_is_stopped_once() -> None:
    grants = MemoryGrants()
    await grants.add_plan(plan=_plan())
    decider = _decider(grants)
    first = await decider.stop_from_review(_review(), by=ALICE)
    again = await decider.stop_from_review(_review(), by=Responder(id="U0BOB", name="bob"))
    assert (first.outcome, first.by) == ("stopped", "alice")
    assert (again.outcome, again.status, again.by) == ("ended", "stopped", "alice")


async def test_no_plan_behind_a_review_is_said_so() -> None:
    stop = await _decider(MemoryGrants()).stop_from_review(_review(), by=ALICE)
    assert stop.outcome == "none"


def test_a_narrowing_keeps_only_items_of_the_derived_scope() -> None:
    scope = derive_scope(PLAN, root=ROOT)
    docs = item_key(Step("run", "make docs"))
    narrowed = narrow(scope, [docs])
    assert not isinstance(narrowed, str)
    kept, dropped = narrowed
    assert kept.runs == (("make", "docs"),)
    assert kept.writes == ()
    assert dropped == ("write docs/index.md",)
    # An ask-each-time item is no key of the scope, nor is anything else: refused whole.
    for forged in (item_key(Step("run", "ls; rm -rf /")), "f" * 16, "asked-0"):
        assert isinstance(narrow(scope, [docs, forged]), str)


async def test_the_form_lists_the_scope_and_the_ask_each_time_items_apart() -> None:
    grants = MemoryGrants()
    await grants.add_plan(plan=_plan(status="pending"))
    choices = await _decider(grants).scope_choices(_review(AskStatus.PENDING))
    assert choices is not None
    free = [c.words for c in choices if c.asked is None]
    asked = [(c.words, c.asked) for c in choices if c.asked is not None]
    assert free == ["writes `docs/index.md` (in `/home/dev/project`)", "runs `make docs`"]
    assert len(asked) == 1
    assert "ls; rm -rf /" in asked[0][0]
    refusal = await _decider(grants).narrowing_refusal(_review(AskStatus.PENDING), ["f" * 16])
    assert refusal is not None
    assert "not in the scope relay derived" in refusal


def test_the_scope_form_is_a_view_slack_accepts_with_few_items_or_many() -> None:
    for count in (1, 10, 11, 100, 130):
        free = [ScopeChoice(f"k{i}", f"runs `make target-{i}` " + "x" * 90) for i in range(count)]
        asked = ScopeChoice("asked-0", "runs `ls; rm -rf /`", "it holds shell operators")
        choices = (*free, asked)
        view = plan_scope_view(choices, ask_id="ask-1", index=0, channel="C0PLANS", ts="1.2")
        assert view_errors(view) == [], count
        assert read_kept({}) is None
        assert read_kept({SCOPE_BLOCK: {"keep": {"selected_options": None}}}) == ()
        assert read_kept({SCOPE_BLOCK: {"keep": {"selected_options": [{"value": 3}]}}}) is None
