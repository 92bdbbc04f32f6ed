"""The Decider in this process (``relay mcp``/the hook asking Slack themselves, the
frameworks): leaving plan mode is the plan's review, and the approved plan holds the session
to its scope, through the same ``decide`` every door uses."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

from relay.canonical.match import fingerprint
from relay.gate.approval import ApprovalRequest, approval_question
from relay.gate.decider import Decider, PlanProposal, Proposal
from relay.gate.local import slack_approver
from relay.gate.planning import review_plan_through
from relay.gate.rules import parse_rules
from relay.gate.rulings import Rulings
from relay.grants import MemoryGrants
from relay.plans.record import Plan
from relay.plans.scope import derive_scope
from relay.seam.questions import AgentRef
from tests.slack_env import slack_env

AGENT = AgentRef("claude-code:s1", "Claude Code")
CWD = "/home/dev/project"
PLAN = "# Release notes\n\nRun `make notes` and edit `NOTES.md`. Run `rm -rf dist`."
RULES = parse_rules(
    {"rules": [{"action": "deny", "commands": ["rm -rf *"], "reason": "no recursive deletes"}]},
    source="test rules",
)


def call(tool: str, agent: AgentRef = AGENT, **tool_input: str) -> ApprovalRequest:
    return ApprovalRequest(tool=tool, input=tool_input, agent=agent, cwd=CWD)


async def test_an_approved_plan_allows_its_scope_in_process_and_rules_still_deny() -> None:
    async with slack_env() as env:
        env.slack.add_user("U0ALICE", name="alice")
        approver = slack_approver(env.provider, MemoryGrants(), owner="local", rules=RULES)
        leaving = asyncio.ensure_future(approver.approve(call("ExitPlanMode", plan=PLAN)))
        review = await env.message()
        shown = str(review.blocks)
        assert "ask each time: run `rm -rf dist` (the operator's rules deny it)" in shown
        await env.slack.click(review, "Approve", user="U0ALICE")
        left = await asyncio.wait_for(leaving, 10)
        assert left.allowed, left.message
        assert left.plan is not None

        notes = await approver.approve(call("Bash", command="make notes"))
        assert (notes.allowed, notes.plan) == (True, left.plan)
        edit = await approver.approve(call("Write", file_path=f"{CWD}/NOTES.md", content="x"))
        assert edit.plan == left.plan
        denied = await approver.approve(call("Bash", command="rm -rf dist"))
        assert not denied.allowed
        assert denied.message == "no recursive deletes"
        assert len(env.slack.messages) == 1

        # Another agent of the same owner is asked, and not told of this plan.
        other = asyncio.ensure_future(
            approver.approve(call("Bash", AgentRef("claude-code:s2"), command="make notes"))
        )
        asked = await env.slack.wait_for_message(count=2, timeout=10)
        assert "outside the approved plan" not in str(asked.blocks)
        await env.slack.click(asked, "Deny", user="U0ALICE")
        assert not (await asyncio.wait_for(other, 10)).allowed


async def test_a_plan_without_a_heading_is_denied_and_posts_nothing() -> None:
    async with slack_env() as env:
        approver = slack_approver(env.provider, MemoryGrants(), owner="local")
        left = await approver.approve(call("ExitPlanMode", plan="just do it"))
        assert not left.allowed
        assert "'# ' heading" in left.message
        assert not env.slack.messages


async def test_a_call_needing_other_approvers_stays_asked_inside_the_plan() -> None:
    rules = parse_rules(
        {"rules": [{"action": "ask", "commands": ["make deploy*"], "approvers": ["U0BOSS"]}]},
        source="test rules",
    )
    plan = "# Ship\n\nRun `make test`, then run `make deploy`."
    async with slack_env() as env:
        env.slack.add_user("U0ALICE", name="alice")
        env.slack.add_user("U0BOSS", name="boss")
        approver = slack_approver(env.provider, MemoryGrants(), owner="local", rules=rules)
        leaving = asyncio.ensure_future(approver.approve(call("ExitPlanMode", plan=plan)))
        review = await env.message()
        assert (
            "ask each time: run `make deploy` (the operator's rules need other or more"
            " approvers for it)" in str(review.blocks)
        )
        await env.slack.click(review, "Approve", user="U0ALICE")
        assert (await asyncio.wait_for(leaving, 10)).allowed
        assert (await approver.approve(call("Bash", command="make test"))).plan is not None
        deploy = asyncio.ensure_future(approver.approve(call("Bash", command="make deploy")))
        asked = await env.slack.wait_for_message(count=2, timeout=10)
        shown = str(asked.blocks)
        assert "outside the approved plan" in shown
        # Alice approved the plan, not this: the boss decides, and may not add it to the plan.
        assert "Add to the plan's scope" not in shown
        await env.slack.click(asked, "Allow once", user="U0BOSS")
        decided = await asyncio.wait_for(deploy, 10)
        assert decided.allowed
        assert decided.plan is None


async def test_the_seams_review_plan_proposes_through_the_decider_with_an_approver() -> None:
    async with slack_env() as env:
        env.slack.add_user("U0ALICE", name="alice")
        approver = slack_approver(env.provider, MemoryGrants(), owner="local")
        sent_back = asyncio.ensure_future(review_plan_through(approver, PLAN, agent=AGENT, cwd=CWD))
        review = await env.message()
        assert "runs `make notes`" in str(review.blocks)
        await env.slack.type(review, "Add a rollback step", user="U0ALICE")
        await env.slack.click(review, "Keep planning", user="U0ALICE")
        verdict = await asyncio.wait_for(sent_back, 10)
        assert (verdict.approved, verdict.feedback) == (False, "Add a rollback step")

        approved = asyncio.ensure_future(review_plan_through(approver, PLAN, agent=AGENT, cwd=CWD))
        review = await env.slack.wait_for_message(count=2, timeout=10)
        await env.slack.click(review, "Approve", user="U0ALICE")
        assert (await asyncio.wait_for(approved, 10)).approved
        notes = await approver.approve(call("Bash", command="make notes"))
        assert notes.plan is not None


def test_a_call_inside_the_scope_asked_for_other_approvers_is_not_called_outside_it() -> None:
    # The rules changed since the plan was approved (or name other people for the call): the
    # question says the call is inside the plan, and why it is asked all the same.
    now = datetime.now(UTC)
    plan = Plan(
        id="plan-1",
        owner="local",
        agent=AGENT.id,
        text=PLAN,
        scope=derive_scope(PLAN, root=CWD),
        status="active",
        submitted_at=now,
        expires_at=now + timedelta(hours=1),
    )
    asked = replace(call("Bash", command="make notes"), plan=plan, plan_inside=True)
    shown = str(approval_question(asked).to_dict())
    assert "Inside the approved plan" in shown
    assert "need other approvers" in shown
    outside = str(approval_question(replace(asked, plan_inside=False)).to_dict())
    assert "Outside the approved plan" in outside
    assert "Inside the approved plan" not in outside


class Told:
    """A ``Witness`` that keeps what it was told."""

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []

    def decided_at_once(self, **said: Any) -> None:
        self.calls.append(said)


async def test_a_plan_review_the_rules_deny_at_once_is_told_to_the_witness() -> None:
    rules = parse_rules(
        {"rules": [{"action": "deny", "tools": ["ExitPlanMode"], "reason": "no plans today"}]},
        source="test rules",
    )
    told = Told()
    decider = Decider(
        rulings=Rulings(rules=lambda _: rules, source="test rules"),
        grants=MemoryGrants(),
        witness=told,
    )
    # Leaving plan mode at a door (decide), and a plan put up at /v1/plans (propose_plan):
    # denied by the rules with nobody asked, each has its receipt like any call so decided.
    left = await decider.decide(Proposal(call("ExitPlanMode", plan=PLAN), owner="local"))
    assert (left.allowed, left.message) == (False, "no plans today")
    review, record = await decider.propose_plan(PlanProposal(text=PLAN, agent=AGENT, owner="o"))
    assert (review.plan, record) == (None, None)
    assert [(c["owner"], c["tool"], c["decision"]) for c in told.calls] == [
        ("local", "ExitPlanMode", "deny"),
        ("o", "ExitPlanMode", "deny"),
    ]
    assert told.calls[0]["by"]["rule"]["number"] == 1
    assert told.calls[0]["call"] == fingerprint("ExitPlanMode", {"plan": PLAN})
