"""Flow: a question whose detail continues in its thread is a thread parent, and notices
and updates still land where the person is looking.

Once a message has replies, Slack gives it a ``thread_ts`` of its own ``ts`` (with
``reply_count``…), and a click on it carries ``container.thread_ts``. A notice sent with
that ``thread_ts`` would go into the thread ("provide another message's ts value to post this
message in a thread", api.slack.com/methods/chat.postEphemeral), out of sight of someone
clicking in the channel. FakeSlack marks parents as Slack does.
"""

from __future__ import annotations

from relay import AskUserQuestionItem, AskUserQuestionOption, AskUserQuestionRequest
from relay.slack import SlackTarget
from tests.slack_env import CHANNEL, question, result, slack_env

LONG = "".join(f"{i}. a step of the plan, with some words to make it long\n" for i in range(400))


def long_question() -> AskUserQuestionItem:
    options = (AskUserQuestionOption("staging"), AskUserQuestionOption("prod"))
    return AskUserQuestionItem(id="env", question="Deploy where?", options=options, detail=LONG)


async def test_a_notice_for_a_click_on_a_thread_parent_stays_in_the_channel() -> None:
    async with slack_env(allowed_users={"U0ALICE"}) as env:
        task = env.ask(long_question())
        message = await env.message()
        await env.message(2)  # the detail's first thread reply
        assert message.is_thread_parent
        assert message.thread_ts == message.ts

        await env.slack.click(message, "prod", user="U0EVE")
        notice = await env.slack.wait_for_ephemeral(user="U0EVE")
        assert "not allowed" in notice.args["text"]
        assert "thread_ts" not in notice.args

        env.slack.fail("response_url", status=404, error="expired_url")
        await env.slack.click(message, "prod", user="U0EVE")
        fallback = await env.slack.wait_for_ephemeral(user="U0EVE", count=2)
        assert fallback.method == "chat.postEphemeral"
        assert "thread_ts" not in fallback.args  # not into the thread

        await env.slack.click(message, "staging", user="U0ALICE")
        assert (await result(task)).answers[0].selected == ("staging",)
        await env.slack.wait_until(lambda: message.updated)
        assert message.is_thread_parent  # the update keeps the thread
        assert "Answered by <@U0ALICE>" in str(message.blocks)


async def test_a_question_asked_inside_a_thread_gets_its_notices_in_that_thread() -> None:
    async with slack_env(allowed_users={"U0ALICE"}) as env:
        top = await env.provider.client.chat_postMessage(channel=CHANNEL, text="Release 1.2")
        target = SlackTarget(channel=CHANNEL, thread_ts=str(top["ts"]))
        record = await env.provider.start(AskUserQuestionRequest([question()]), target=target)
        message = await env.slack.wait_for_message(where=lambda m: m.ts == record.messages[0].ts)  # type: ignore[union-attr]
        assert message.thread_ts == top["ts"]

        env.slack.fail("response_url", status=404, error="expired_url")
        await env.slack.click(message, "prod", user="U0EVE")
        notice = await env.slack.wait_for_ephemeral(user="U0EVE")
        assert notice.args["thread_ts"] == top["ts"]  # where the question is
