"""A click is acknowledged before anything Slack can delay: a group-restricted ask whose
membership is not known yet is checked after the ack (relay issue 39).

FakeSlack answers a click 504 when the app's ack takes longer than Slack's 3 seconds (the
clicker sees an error in Slack then); each test holds ``usergroups.users.list`` longer, from
before the ask (the relay looks its groups up while posting it: that lookup is held too)."""

from __future__ import annotations

import asyncio

from relay import AskUserQuestionAnswer
from relay.slack import SlackTarget
from tests.slack_env import question, slack_env


async def result(task: asyncio.Task[AskUserQuestionAnswer]) -> AskUserQuestionAnswer:
    return await asyncio.wait_for(task, 20.0)  # (Slack holds the check up to 5 s here)


async def test_a_member_s_click_is_acked_while_slack_is_slow_and_then_recorded() -> None:
    async with slack_env(allowed_users=set(), allowed_groups={"S0DEPLOYERS"}) as env:
        env.slack.usergroups = {"S0DEPLOYERS": ["U0BOB"]}
        env.slack.fail("usergroups.users.list", delay=4.0)  # past Slack's 3 s
        task = env.ask(question())
        message = await env.message()
        clicked = await env.slack.click(message, "prod", user="U0BOB")
        assert clicked.status == 200, clicked  # 504 before: the ack waited for Slack
        assert (await result(task)).answers[0].answered_by.id == "U0BOB"  # type: ignore[union-attr]


async def test_a_click_is_acked_while_slack_rate_limits_and_a_refusal_is_a_notice() -> None:
    async with slack_env(allowed_users=set(), allowed_groups={"S0DEPLOYERS"}) as env:
        env.slack.usergroups = {"S0DEPLOYERS": ["U0BOB"]}
        env.slack.fail("usergroups.users.list", status=429, retry_after=5)
        task = env.ask(question())
        message = await env.message()
        clicked = await env.slack.click(message, "prod", user="U0EVE")
        assert clicked.status == 200, clicked
        notice = await env.slack.wait_for_ephemeral(user="U0EVE", timeout=15)
        assert "not allowed to answer" in notice.args["text"]
        assert not task.done()
        await env.slack.click(message, "prod", user="U0BOB")  # known now: answered at once
        assert (await result(task)).answers[0].answered_by.id == "U0BOB"  # type: ignore[union-attr]


async def test_the_operators_policy_groups_do_not_hold_the_ack_either() -> None:
    async with slack_env(
        route=lambda _: SlackTarget(channel="C0OPS", allowed_users=None),
        policy_groups={"S0ONCALL"},
    ) as env:
        env.slack.usergroups = {"S0ONCALL": ["U0BOB"]}
        env.slack.fail("usergroups.users.list", delay=4.0)
        task = env.ask(question())
        message = await env.message()
        clicked = await env.slack.click(message, "prod", user="U0BOB")
        assert clicked.status == 200, clicked
        assert (await result(task)).answers[0].answered_by.id == "U0BOB"  # type: ignore[union-attr]
