"""Flow: an unanswered ask times out, as an abort that says so (never a refusal)."""

from __future__ import annotations

import asyncio

import pytest

from relay import ErrorCode, UserInteractionError
from relay.slack import SlackTarget
from tests.slack_env import ask_id_of, question, slack_env


async def test_the_ask_times_out_with_a_message_that_says_so() -> None:
    async with slack_env(timeout=0.3) as env:
        task = env.ask(question())
        message = await env.message()
        with pytest.raises(UserInteractionError) as info:
            await asyncio.wait_for(task, 5)
        assert info.value.code == ErrorCode.ASK_ABORTED
        assert info.value.reason == "timed_out"
        assert str(info.value) == (
            "ask_user_question timed out after 0.3 s before the user answered"
        )
        await env.slack.wait_until(lambda: message.updated)
        assert "Timed out" in str(message.blocks)
        assert not [b for b in message.blocks if b["type"] in ("actions", "input")]


async def test_a_click_after_the_timeout_is_told_it_timed_out() -> None:
    async with slack_env(timeout=0.2) as env:
        task = env.ask(question())
        message = await env.message()
        with pytest.raises(UserInteractionError):
            await asyncio.wait_for(task, 5)
        await env.slack.click(message, "prod", user="U0ALICE", version=0)
        notice = await env.slack.wait_for_ephemeral(user="U0ALICE")
        assert "timed out" in notice.args["text"]


async def test_the_message_shows_when_it_times_out() -> None:
    async with slack_env(timeout=600) as env:
        env.ask(question())
        message = await env.message()
        assert "<!date^" in str(message.blocks)
        assert "times out" in str(message.blocks)


async def test_a_target_with_timeout_none_waits_forever() -> None:
    async with slack_env(timeout=0.1, route=lambda _: SlackTarget("C0X", timeout=None)) as env:
        task = env.ask(question())
        message = await env.message()
        assert "times out" not in str(message.blocks)
        record = await env.provider.store.get(ask_id=ask_id_of(message))
        assert record is not None
        assert record.deadline is None
        await env.slack.click(message, "prod", user="U0ALICE")
        assert (await asyncio.wait_for(task, 5)).answers[0].selected == ("prod",)
