"""Flow: only the allowed people may answer; the rest are told privately."""

from __future__ import annotations

from relay import AskUserQuestionRequest
from relay.slack import SlackTarget
from tests.slack_env import question, result, slack_env


async def test_someone_not_allowed_is_told_privately_and_the_ask_stays_pending() -> None:
    async with slack_env(allowed_users={"U0ALICE"}) as env:
        task = env.ask(question())
        message = await env.message()
        await env.slack.click(message, "prod", user="U0EVE")
        notice = await env.slack.wait_for_ephemeral(user="U0EVE")
        assert "not allowed to answer" in notice.args["text"]
        assert notice.args["channel"] == message.channel
        assert not task.done()
        assert not message.updated

        await env.slack.click(message, "staging", user="U0ALICE")
        answer = await result(task)
        assert answer.answers[0].selected == ("staging",)
        assert answer.answers[0].answered_by is not None
        assert answer.answers[0].answered_by.id == "U0ALICE"


async def test_a_route_can_narrow_who_answers_for_one_kind_of_question() -> None:
    def route(request: AskUserQuestionRequest) -> SlackTarget:
        if request.questions[0].id == "deploy":
            return SlackTarget(channel="C0DEPLOYS", allowed_users={"U0BOB"})
        return SlackTarget(channel="C0GENERAL")

    async with slack_env(route=route) as env:
        task = env.ask(question("deploy", "Ship it?", "yes", "no"))
        message = await env.message()
        assert message.channel == "C0DEPLOYS"
        await env.slack.click(message, "yes", user="U0ALICE")
        await env.slack.wait_for_ephemeral(user="U0ALICE")
        await env.slack.click(message, "yes", user="U0BOB")
        assert (await result(task)).answers[0].answered_by.id == "U0BOB"  # type: ignore[union-attr]
