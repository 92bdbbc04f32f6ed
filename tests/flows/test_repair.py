"""Flow: a message whose final update never landed is repaired by the next click on it."""

from __future__ import annotations

import asyncio
import json
from datetime import timedelta

import pytest

from relay import ErrorCode, UserInteractionError
from tests.slack_env import question, result, slack_env


async def test_a_click_on_an_answered_question_still_showing_buttons_repairs_it() -> None:
    async with slack_env() as env:
        env.provider.repair_after = timedelta(0)  # in production: 10 s after the answer
        task = env.ask(question())
        message = await env.message()
        env.slack.fail("chat.update", error="internal_error")  # the winner's update is lost
        await env.slack.click(message, "prod", user="U0ALICE")
        assert (await result(task)).answers[0].selected == ("prod",)
        await env.provider.drain()
        assert not message.updated  # the buttons are still there

        await env.slack.click(message, "staging", user="U0BOB")
        notice = await env.slack.wait_for_ephemeral(user="U0BOB")
        assert "<@U0ALICE>" in notice.args["text"]
        await env.slack.wait_until(lambda: message.updated)
        assert "Answered by <@U0ALICE>" in json.dumps(message.blocks)
        assert not [b for b in message.blocks if b["type"] in ("actions", "input")]
        assert [c.ok for c in env.slack.calls_to("chat.update")] == [False, True]


async def test_a_click_right_after_the_answer_sends_no_second_update() -> None:
    async with slack_env() as env:
        task = env.ask(question())
        message = await env.message()
        env.slack.fail("chat.update", error="internal_error")
        await env.slack.click(message, "prod", user="U0ALICE")
        await result(task)
        await env.slack.click(message, "staging", user="U0BOB")
        await env.slack.wait_for_ephemeral(user="U0BOB")
        await env.provider.drain()
        assert len(env.slack.calls_to("chat.update")) == 1  # within 10 s: not yet stale


async def test_a_click_on_a_timed_out_question_still_showing_buttons_repairs_it() -> None:
    async with slack_env(timeout=0.3) as env:
        env.provider.repair_after = timedelta(0)
        env.slack.fail("chat.update", error="internal_error")  # the withdrawal is lost
        task = env.ask(question())
        message = await env.message()
        with pytest.raises(UserInteractionError) as info:
            await asyncio.wait_for(task, 5)
        assert info.value.code == ErrorCode.ASK_ABORTED  # reason: timeout
        await env.provider.drain()
        assert not message.updated

        await env.slack.click(message, "prod", user="U0ALICE")
        notice = await env.slack.wait_for_ephemeral(user="U0ALICE")
        assert "no longer" in notice.args["text"] or "timed out" in notice.args["text"].lower()
        await env.slack.wait_until(lambda: message.updated)
        assert "Timed out" in json.dumps(message.blocks)
