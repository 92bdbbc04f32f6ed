"""Flow: the first answer wins; later and concurrent clicks change nothing."""

from __future__ import annotations

import asyncio

from tests.slack_env import question, result, slack_env


async def test_a_second_click_on_a_stale_view_is_told_who_answered() -> None:
    async with slack_env() as env:
        task = env.ask(question())
        message = await env.message()
        await env.slack.click(message, "prod", user="U0ALICE")
        assert (await result(task)).answers[0].selected == ("prod",)
        await env.slack.wait_until(lambda: message.updated)

        # Bob's client still shows the buttons (version 0 of the message).
        await env.slack.click(message, "staging", user="U0BOB", version=0)
        notice = await env.slack.wait_for_ephemeral(user="U0BOB")
        assert "<@U0ALICE>" in notice.args["text"]
        assert "changed nothing" in notice.args["text"]
        assert len(env.slack.calls_to("chat.update")) == 1


async def test_concurrent_clicks_have_exactly_one_winner() -> None:
    async with slack_env() as env:
        task = env.ask(question())
        message = await env.message()
        clicks = await asyncio.gather(
            env.slack.click(message, "prod", user="U0ALICE"),
            env.slack.click(message, "staging", user="U0BOB"),
            env.slack.click(message, "prod", user="U0EVE"),
        )
        assert [c.status for c in clicks] == [200, 200, 200]
        answer = await result(task)
        winner = answer.answers[0].answered_by
        assert winner is not None
        losers = {"U0ALICE", "U0BOB", "U0EVE"} - {winner.id}
        for user in losers:
            notice = await env.slack.wait_for_ephemeral(user=user)
            assert f"<@{winner.id}>" in notice.args["text"]
        await env.provider.drain()
        assert len(env.slack.calls_to("chat.update")) == 1
