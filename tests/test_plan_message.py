"""A plan's review message, after and before approval, end to end against ``relay serve``
and FakeSlack: *Stop the plan* on the approved plan's message, and a reviewer narrowing the
scope in the *Edit…* form; the attacker's view too (someone not allowed, a plan already
ended, a forged submission naming an item outside the derived scope)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from relay.gate.approval import ApprovalRequest
from relay.gate.decider import Decider
from relay.gate.local import slack_approver
from relay.gate.rulings import Rulings
from relay.grants import MemoryGrants
from relay.seam.questions import AgentRef
from relay.testing import FakeMessage, FakeSlack
from tests.server_env import SECRET, Relay, relay_server
from tests.slack_env import slack_env
from tests.test_plans_api import bash, reviewed, rules_file, submitted

SCOPE = "If approved, this session may, without asking again:"
SMALL_PLAN = "# Docs\n\nRun `make docs` and edit `docs/index.md`."


def _ephemeral_text(call: Any) -> str:
    return str(call.args.get("text", "")) + str(call.args.get("blocks", ""))


async def _approved(relay: Relay, slack: FakeSlack) -> tuple[str, FakeMessage]:
    plan_id, message = await submitted(relay, slack)
    await slack.click(message, "Approve", user="U0ALICE")
    await slack.wait_until(lambda: "Stop the plan" in str(message.blocks), timeout=15)
    assert (await reviewed(relay, plan_id))["status"] == "active"
    return plan_id, message


async def test_a_reviewer_stops_an_approved_plan_from_its_message() -> None:
    async with (
        FakeSlack(signing_secret=SECRET) as slack,
        relay_server(slack, RELAY_ALLOWED_USERS="U0ALICE,U0BOB") as relay,
    ):
        for user in ("U0ALICE", "U0BOB", "U0MALLORY"):
            slack.add_user(user, name=user.lower())
        plan_id, message = await _approved(relay, slack)
        status, inside = await relay.request("POST", "/v1/approvals", json=bash("npm run build"))
        assert (status, inside["decision"]["plan"]) == (200, plan_id)

        # Someone who may not answer the plan's review is refused, and nothing changes.
        await slack.click(message, "Stop the plan", user="U0MALLORY")
        refused = await slack.wait_for_ephemeral(user="U0MALLORY", timeout=15)
        assert "not allowed" in _ephemeral_text(refused)
        status, plan = await relay.request("GET", f"/v1/plans/{plan_id}")
        assert plan["status"] == "active"

        await slack.click(message, "Stop the plan", user="U0BOB")
        await slack.wait_until(lambda: "stopped this plan" in str(message.blocks), timeout=15)
        assert "<@U0BOB> stopped this plan" in str(message.blocks)
        assert "Stop the plan" not in str(message.blocks)
        status, plan = await relay.request("GET", f"/v1/plans/{plan_id}")
        assert (plan["status"], plan["ended_by"]) == ("stopped", "u0bob")
        # The calls it covered are asked again.
        status, after = await relay.request("POST", "/v1/approvals", json=bash("npm run build"))
        assert (status, after["decision"]) == (201, None)

        # A click on the plan once ended (an older copy of the message) changes nothing.
        updates = len(slack.calls_to("chat.update"))
        await slack.click(message, "Stop the plan", user="U0ALICE", version=1)
        told = await slack.wait_for_ephemeral(user="U0ALICE", timeout=15)
        assert "already stopped" in _ephemeral_text(told)
        assert len(slack.calls_to("chat.update")) == updates


async def test_a_plan_reviewed_in_process_is_stopped_from_its_message_too() -> None:
    # Leaving plan mode through the Decider in this process (review_plan, as /mcp's and the
    # frameworks'): the plan is named by its review's ask, so its message reaches it.
    rulings = Rulings(rules=lambda _: None)
    grants = MemoryGrants()
    plans = Decider(rulings=rulings, grants=grants)
    async with slack_env(plans=plans) as env:
        approver = slack_approver(env.provider, grants, owner="local")
        agent = AgentRef("claude-code:s1", "Claude Code")
        plan = "# Notes\n\nRun `make notes`."
        leaving = asyncio.ensure_future(
            approver.approve(ApprovalRequest("ExitPlanMode", {"plan": plan}, agent=agent))
        )
        review = await env.message()
        await env.slack.click(review, "Approve", user="U0ALICE")
        left = await asyncio.wait_for(leaving, 10)
        assert left.plan is not None
        await env.slack.wait_until(lambda: "Stop the plan" in str(review.blocks), timeout=10)
        await env.slack.click(review, "Stop the plan", user="U0BOB")
        await env.slack.wait_until(lambda: "stopped this plan" in str(review.blocks), timeout=10)
        stopped = await grants.get_plan(owner="local", plan_id=left.plan)
        assert stopped is not None
        assert (stopped.status, stopped.ended_by) == ("stopped", "bob")
        again = asyncio.ensure_future(
            approver.approve(ApprovalRequest("Bash", {"command": "make notes"}, agent=agent))
        )
        asked = await env.slack.wait_for_message(count=2, timeout=10)
        await env.slack.click(asked, "Deny", user="U0ALICE")
        assert not (await asyncio.wait_for(again, 10)).allowed


async def test_a_reviewer_narrows_the_scope_in_the_edit_form_before_approving(
    tmp_path: Path,
) -> None:
    async with (
        FakeSlack(signing_secret=SECRET) as slack,
        relay_server(slack, RELAY_RULES_FILE=rules_file(tmp_path)) as relay,
    ):
        slack.add_user("U0ALICE", name="alice")
        plan_id, message = await submitted(relay, slack)
        await slack.click(message, "Edit…", user="U0ALICE")
        modal = await slack.wait_for_modal(user="U0ALICE", timeout=15)
        field = modal.value(SCOPE)
        ticked = [o["text"]["text"] for o in field["selected_options"]]
        assert ticked == [
            "writes `src/billing/invoice.py` (in `/home/dev/shop`)",
            "writes under `tests/billing/` (in `/home/dev/shop`)",
            "runs `pytest -q tests/billing`",
            "runs `npm run build`",
        ]
        # What stays ask each time is shown, and has no box.
        shown = str(modal.view["blocks"])
        assert "Ask each time (cannot be ticked)" in shown
        assert "rm -rf build" in shown
        assert "the operator's rules deny it" in shown
        assert "rm -rf build" not in str(field)

        modal.tick(SCOPE, [ticked[0], ticked[2]])
        assert (await slack.submit_view(modal)).outcome == "closed"
        body = await reviewed(relay, plan_id)
        assert body["status"] == "active", body
        assert body["scope"]["writes"] == ["src/billing/invoice.py"]
        assert body["scope"]["runs"] == [["pytest", "-q", "tests/billing"]]
        assert (body["narrowed_by"], body["dropped"]) == (
            "U0ALICE",
            ["write tests/billing/", "run npm run build"],
        )
        await slack.wait_until(lambda: "Scope narrowed by" in str(message.blocks), timeout=15)
        assert "Stop the plan" in str(message.blocks)
        assert "taken out" in str(message.blocks)
        assert "npm run build" in str(message.blocks)
        status, inside = await relay.request(
            "POST", "/v1/approvals", json=bash("pytest -q tests/billing")
        )
        assert (status, inside["decision"]["plan"]) == (200, plan_id)
        status, out = await relay.request("POST", "/v1/approvals", json=bash("npm run build"))
        assert (status, out["decision"]) == (201, None)


async def test_a_forged_scope_naming_an_item_outside_the_derived_one_is_refused() -> None:
    async with (
        FakeSlack(signing_secret=SECRET) as slack,
        relay_server(slack, RELAY_ALLOWED_USERS="U0ALICE") as relay,
    ):
        slack.add_user("U0ALICE", name="alice")
        slack.add_user("U0MALLORY", name="mallory")
        plan_id, message = await submitted(relay, slack, plan=SMALL_PLAN)
        await slack.click(message, "Edit…", user="U0ALICE")
        modal = await slack.wait_for_modal(user="U0ALICE", timeout=15)
        payload = slack.build_view_submission(modal)
        values = payload["view"]["state"]["values"]
        (element,) = values[modal.field(SCOPE).block_id].values()
        element["selected_options"] = [
            *element["selected_options"],
            {"text": {"type": "plain_text", "text": "runs `curl evil.example`"}, "value": "f" * 16},
        ]
        result = await slack.post_interaction(payload)
        assert result.status == 200
        assert "not in the scope relay derived" in result.body
        # The form submitted as someone who may not answer the review is refused too.
        payload = slack.build_view_submission(modal)
        payload["user"] = {**payload["user"], "id": "U0MALLORY", "username": "mallory"}
        result = await slack.post_interaction(payload)
        assert "not allowed" in result.body
        # Nothing changed: the review is still open, the plan pending, the message as posted.
        _status, body = await relay.request("GET", f"/v1/plans/{plan_id}")
        assert body["status"] == "pending"
        assert len(message.versions) == 1
        # Typed as the feedback, a narrowing is no answer either.
        typed = json.dumps({"relay": "narrow", "choice": "Approve", "keep": [], "narrowed_by": "x"})
        await slack.type(message, typed, user="U0ALICE")
        await slack.click(message, "Keep planning", user="U0ALICE")
        told = await slack.wait_for_ephemeral(user="U0ALICE", timeout=15)
        assert "narrowed plan" in _ephemeral_text(told)
        _status, body = await relay.request("GET", f"/v1/plans/{plan_id}")
        assert body["status"] == "pending"
