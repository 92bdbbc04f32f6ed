"""Flow: asking in a DM, in a thread, and in a channel chosen per ask."""

from __future__ import annotations

from relay import AskUserQuestionRequest
from relay.slack import SlackTarget
from tests.slack_env import question, result, slack_env


async def test_a_user_id_target_opens_a_dm_and_asks_there() -> None:
    async with slack_env(channel="U0ALICE") as env:
        task = env.ask(question())
        message = await env.message()
        opened = await env.slack.wait_for_call("conversations.open")
        assert opened.args["users"] == "U0ALICE"
        assert message.channel == opened.response["channel"]["id"]
        assert message.channel.startswith("D")
        await env.slack.click(message, "staging", user="U0ALICE")
        assert (await result(task)).answers[0].selected == ("staging",)
        # The DM channel is remembered, not reopened for every ask.
        env.ask(question("again"))
        await env.message(2)
        assert len(env.slack.calls_to("conversations.open")) == 1


async def test_a_thread_target_posts_in_the_thread() -> None:
    def route(_: AskUserQuestionRequest) -> SlackTarget:
        return SlackTarget(channel="C0DEPLOYS", thread_ts="1700000000.000100")

    async with slack_env(route=route) as env:
        task = env.ask(question())
        message = await env.message()
        assert (message.channel, message.thread_ts) == ("C0DEPLOYS", "1700000000.000100")
        await env.slack.click(message, "prod", user="U0BOB")
        await result(task)


async def test_an_async_route_picks_the_channel_per_request() -> None:
    async def route(request: AskUserQuestionRequest) -> SlackTarget:
        plan = any(q.intent is not None for q in request.questions)
        return SlackTarget(channel="C0PLANS" if plan else "C0GATES")

    async with slack_env(route=route) as env:
        env.ask(question())
        assert (await env.message()).channel == "C0GATES"
