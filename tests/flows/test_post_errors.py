"""Flow: Slack refuses or throttles the post; retries, clear errors, nothing left pending."""

from __future__ import annotations

import asyncio
import logging

import pytest

from relay import ErrorCode, UserInteractionError
from tests.slack_env import question, result, slack_env


@pytest.mark.parametrize(
    ("error", "advice"),
    [
        ("channel_not_found", "check the channel id"),
        ("not_in_channel", "invite the bot to the channel"),
        ("invalid_auth", "SLACK_BOT_TOKEN"),
    ],
)
async def test_a_refused_post_fails_at_once_naming_the_error_and_the_fix(
    error: str, advice: str
) -> None:
    async with slack_env() as env:
        env.slack.fail("chat.postMessage", error=error)
        with pytest.raises(UserInteractionError) as info:
            await asyncio.wait_for(env.ask(question()), 5)
        assert info.value.code == ErrorCode.PROVIDER_FAILED
        assert error in str(info.value)
        assert advice in str(info.value)
        assert await env.provider.store.count_pending() == 0


async def test_a_failure_on_the_second_question_withdraws_the_first() -> None:
    async with slack_env() as env:
        # Faults apply in order: the first post succeeds (a little slowly), the second fails.
        env.slack.fail("chat.postMessage", delay=0.01)
        env.slack.fail("chat.postMessage", error="is_archived")
        with pytest.raises(UserInteractionError) as info:
            await asyncio.wait_for(env.ask(question("a"), question("b")), 5)
        assert info.value.code == ErrorCode.PROVIDER_FAILED
        assert "is_archived" in str(info.value)
        (first,) = env.slack.messages
        await env.slack.wait_until(lambda: first.updated)
        assert "Not delivered" in str(first.blocks)
        assert not [b for b in first.blocks if b["type"] in ("actions", "input")]
        assert await env.provider.store.count_pending() == 0


async def test_429_then_success_is_retried_after_retry_after() -> None:
    async with slack_env() as env:
        env.slack.fail("chat.postMessage", status=429, retry_after=1, times=1)
        task = env.ask(question())
        message = await env.message()
        assert [c.status for c in env.slack.calls_to("chat.postMessage")] == [429, 200]
        await env.slack.click(message, "prod", user="U0ALICE")
        assert (await result(task)).answers[0].selected == ("prod",)


async def test_5xx_then_success_is_retried() -> None:
    async with slack_env() as env:
        env.slack.fail("chat.postMessage", status=503, times=1)
        env.ask(question())
        await env.message()
        assert [c.status for c in env.slack.calls_to("chat.postMessage")] == [503, 200]


async def test_a_failed_update_after_an_answer_is_logged_and_the_answer_returns(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async with slack_env() as env:
        env.slack.fail("chat.update", error="message_not_found", times=5)
        task = env.ask(question())
        message = await env.message()
        with caplog.at_level(logging.WARNING, logger="relay.ask"):
            await env.slack.click(message, "prod", user="U0ALICE")
            assert (await result(task)).answers[0].selected == ("prod",)
            await env.provider.drain()
        assert any("event=slack_error" in r.getMessage() for r in caplog.records)
