"""Flow: the agent aborts, its task is cancelled, or the provider closes while pending."""

from __future__ import annotations

import asyncio

import pytest

from relay import AbortController, AskUserQuestionRequest, ErrorCode, UserInteractionError
from tests.slack_env import question, slack_env


def withdrawn(message: object) -> bool:
    blocks = getattr(message, "blocks", [])
    return "Withdrawn" in str(blocks) and not [
        b for b in blocks if b["type"] in ("actions", "input")
    ]


async def test_aborting_the_signal_withdraws_the_question() -> None:
    async with slack_env() as env:
        controller = AbortController()
        task = env.ask(question(), signal=controller.signal)
        message = await env.message()
        controller.abort("user pressed Esc")
        with pytest.raises(UserInteractionError) as info:
            await asyncio.wait_for(task, 5)
        assert info.value.code == ErrorCode.ASK_ABORTED
        assert info.value.reason == "aborted"
        assert str(info.value) == "ask_user_question was aborted before the user answered"
        await env.slack.wait_until(lambda: withdrawn(message))
        assert "the agent no longer needs an answer" in str(message.blocks)


async def test_an_already_aborted_signal_posts_nothing() -> None:
    async with slack_env() as env:
        controller = AbortController()
        controller.abort()
        with pytest.raises(UserInteractionError) as info:
            await env.ask(question(), signal=controller.signal)
        assert info.value.reason == "aborted"
        assert not env.slack.calls_to("chat.postMessage")


async def test_cancelling_the_task_withdraws_the_question_and_propagates() -> None:
    async with slack_env() as env:
        task = env.ask(question())
        message = await env.message()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await env.slack.wait_until(lambda: withdrawn(message))
        await env.slack.click(message, "prod", user="U0ALICE", version=0)
        notice = await env.slack.wait_for_ephemeral(user="U0ALICE")
        assert "withdrew it" in notice.args["text"]


async def test_closing_the_provider_rejects_every_pending_ask() -> None:
    async with slack_env() as env:
        tasks = [env.ask(question(f"q{i}", "Ok?", "yes", "no")) for i in range(3)]
        messages = [await env.message(i) for i in (1, 2, 3)]
        await env.provider.aclose()
        for task in tasks:
            with pytest.raises(UserInteractionError) as info:
                await asyncio.wait_for(task, 5)
            assert info.value.code == ErrorCode.ASK_ABORTED
            assert info.value.reason == "closed"
            assert "provider was closed" in str(info.value)
        for message in messages:
            assert withdrawn(message)
            assert "relay shut down" in str(message.blocks)
        await env.provider.aclose()  # idempotent
        with pytest.raises(UserInteractionError) as after:
            await env.service.ask(AskUserQuestionRequest([question()]))
        assert after.value.reason == "closed"
