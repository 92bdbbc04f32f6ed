"""Flow: a free-text answer sent with Enter; typed text is never silently dropped."""

from __future__ import annotations

from relay import AskUserQuestionItem
from tests.slack_env import question, result, slack_env


async def test_enter_sends_the_text_as_custom_with_nothing_selected() -> None:
    async with slack_env() as env:
        task = env.ask(question())
        message = await env.message()
        await env.slack.type(message, "canary in eu-west first", user="U0ALICE")
        await env.slack.press_enter(message, user="U0ALICE")
        assert (await result(task)).to_dict() == {
            "answers": [{"id": "env", "selected": [], "custom": "canary in eu-west first"}]
        }


async def test_a_question_without_options_is_answered_in_words() -> None:
    async with slack_env() as env:
        task = env.ask(AskUserQuestionItem(id="name", question="Name the release?"))
        message = await env.message()
        await env.slack.type(message, "Aurora ✨", user="U0BOB")
        await env.slack.press_enter(message, user="U0BOB")
        assert (await result(task)).answers[0].custom == "Aurora ✨"


async def test_blank_enter_answers_nothing_and_explains() -> None:
    async with slack_env() as env:
        task = env.ask(question())
        message = await env.message()
        await env.slack.type(message, "   ", user="U0ALICE")
        await env.slack.press_enter(message, user="U0ALICE")
        notice = await env.slack.wait_for_ephemeral(user="U0ALICE")
        assert "The answer field is empty" in notice.args["text"]
        assert not task.done()


async def test_clicking_an_option_with_text_typed_asks_to_send_or_clear_it() -> None:
    async with slack_env() as env:
        task = env.ask(question())
        message = await env.message()
        await env.slack.type(message, "actually, neither", user="U0ALICE")
        await env.slack.click(message, "prod", user="U0ALICE")
        notice = await env.slack.wait_for_ephemeral(user="U0ALICE")
        assert "Press *Enter*" in notice.args["text"]
        assert "clear the field" in notice.args["text"]
        assert not task.done()
        # Clearing the field makes the click an ordinary choice.
        await env.slack.type(message, "", user="U0ALICE")
        await env.slack.click(message, "prod", user="U0ALICE")
        assert (await result(task)).answers[0].selected == ("prod",)


async def test_text_json_only_the_stdlib_reads_is_still_an_answer_and_shown() -> None:
    # The click's payload is read by orjson and the update's body written by it, each with
    # json for what orjson refuses: a lone surrogate (Slack's JSON may escape one) must
    # reach the agent and the message as it does with json alone, never lose the click.
    async with slack_env() as env:
        task = env.ask(question())
        message = await env.message()
        await env.slack.type(message, "half an emoji \ud83d", user="U0ALICE")
        await env.slack.press_enter(message, user="U0ALICE")
        assert (await result(task)).answers[0].custom == "half an emoji \ud83d"
        update = await env.slack.wait_for_call("chat.update")
        texts = [b["text"]["text"] for b in update.args["blocks"] if b["type"] == "section"]
        assert any("half an emoji \ud83d" in text for text in texts)
