"""Flow: a plan review, approved, or sent back with feedback."""

from __future__ import annotations

import asyncio

from relay import review_plan
from tests.slack_env import slack_env

PLAN = "# Migrate the database\n\n1. Snapshot\n2. Run migrations\n3. Verify"


async def test_approve_is_the_primary_button_and_approves() -> None:
    async with slack_env() as env:
        task = env.spawn(review_plan(env.service, PLAN))
        message = await env.message()
        assert [b["text"] for b in message.blocks if b["type"] == "markdown"] == [PLAN]
        await env.slack.click(message, "Approve", user="U0ALICE")
        verdict = await asyncio.wait_for(task, 5)
        assert verdict.approved
        assert verdict.feedback is None


async def test_feedback_typed_then_keep_planning_goes_back_to_the_agent() -> None:
    async with slack_env() as env:
        task = env.spawn(review_plan(env.service, PLAN))
        message = await env.message()
        await env.slack.type(message, "Add a rollback step", user="U0ALICE")
        await env.slack.click(message, "Keep planning", user="U0ALICE")
        verdict = await asyncio.wait_for(task, 5)
        assert not verdict.approved
        assert verdict.feedback == "Add a rollback step"


async def test_feedback_sent_with_enter_keeps_planning() -> None:
    async with slack_env() as env:
        task = env.spawn(review_plan(env.service, PLAN))
        message = await env.message()
        await env.slack.type(message, "Too risky on a Friday", user="U0BOB")
        await env.slack.press_enter(message, user="U0BOB")
        verdict = await asyncio.wait_for(task, 5)
        assert (verdict.approved, verdict.feedback) == (False, "Too risky on a Friday")


async def test_approve_with_feedback_typed_is_not_silently_an_approval() -> None:
    async with slack_env() as env:
        task = env.spawn(review_plan(env.service, PLAN))
        message = await env.message()
        await env.slack.type(message, "but skip step 3", user="U0ALICE")
        await env.slack.click(message, "Approve", user="U0ALICE")
        await env.slack.wait_for_ephemeral(user="U0ALICE")
        assert not task.done()
