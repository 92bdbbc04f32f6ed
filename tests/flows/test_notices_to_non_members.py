"""Flow: private notices reach whoever clicked, also people who are not in the channel.

Anyone can read and click a public channel's messages without joining it, but
``chat.postEphemeral`` needs the user to be a member (``user_not_in_channel``,
api.slack.com/methods/chat.postEphemeral). A click's ``response_url`` reaches anyone who
could click (api.slack.com/interactivity/handling), so notices go there first.
"""

from __future__ import annotations

from relay.testing import FakeSlack
from tests.slack_env import CHANNEL, question, result, slack_env


def members_only(slack: FakeSlack) -> None:
    slack.channel_members = {CHANNEL: {"U0ALICE"}}  # U0EVE and U0BOB only pass by


async def test_someone_not_allowed_and_not_in_the_channel_is_told_privately() -> None:
    async with slack_env(allowed_users={"U0ALICE"}) as env:
        members_only(env.slack)
        task = env.ask(question())
        message = await env.message()
        await env.slack.click(message, "prod", user="U0EVE")
        notice = await env.slack.wait_for_ephemeral(user="U0EVE")
        assert "not allowed to answer" in notice.args["text"]
        assert notice.method == "response_url"
        assert notice.args["response_type"] == "ephemeral"
        assert notice.args["replace_original"] is False
        assert not message.updated  # the notice replaced nothing
        assert not task.done()


async def test_a_late_click_by_a_passer_by_hears_who_answered() -> None:
    async with slack_env() as env:
        members_only(env.slack)
        task = env.ask(question())
        message = await env.message()
        await env.slack.click(message, "prod", user="U0ALICE")
        await result(task)
        await env.slack.click(message, "staging", user="U0BOB", version=0)
        notice = await env.slack.wait_for_ephemeral(user="U0BOB")
        assert "<@U0ALICE>" in notice.args["text"]


async def test_when_the_response_url_fails_a_member_still_hears_by_postephemeral() -> None:
    async with slack_env(allowed_users={"U0ALICE"}) as env:
        env.ask(question())
        message = await env.message()
        env.slack.fail("response_url", status=404, error="expired_url")
        await env.slack.click(message, "prod", user="U0EVE")
        notice = await env.slack.wait_for_ephemeral(user="U0EVE")
        assert notice.method == "chat.postEphemeral"
        assert "not allowed to answer" in notice.args["text"]
        assert (notice.args["channel"], "thread_ts" in notice.args) == (message.channel, False)
