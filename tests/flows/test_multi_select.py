"""Flow: multi-select questions, answered with ticked boxes or a menu, plus Submit."""

from __future__ import annotations

import asyncio

from tests.slack_env import question, result, slack_env


async def test_submit_sends_the_ticked_boxes_with_the_typed_text() -> None:
    async with slack_env() as env:
        task = env.ask(question("pkgs", "Which packages?", "numpy", "pandas", "scipy", multi=True))
        message = await env.message()
        await env.slack.check(message, ["scipy", "numpy"], user="U0ALICE")
        await env.slack.type(message, "and polars, please", user="U0ALICE")
        assert not task.done()  # ticking and typing alone answer nothing
        await env.slack.submit(message, user="U0ALICE")
        answer = await result(task)
        assert answer.to_dict() == {
            "answers": [
                {"id": "pkgs", "selected": ["numpy", "scipy"], "custom": "and polars, please"}
            ]
        }


async def test_enter_on_a_multi_select_sends_the_ticked_options_too() -> None:
    async with slack_env() as env:
        task = env.ask(question("pkgs", "Which?", "a", "b", "c", multi=True))
        message = await env.message()
        await env.slack.check(message, ["b"], user="U0ALICE")
        await env.slack.type(message, "also d", user="U0ALICE")
        await env.slack.press_enter(message, user="U0ALICE")
        assert (await result(task)).to_dict() == {
            "answers": [{"id": "pkgs", "selected": ["b"], "custom": "also d"}]
        }


async def test_eleven_options_use_a_multi_select_menu() -> None:
    labels = tuple(f"svc-{i}" for i in range(11))
    async with slack_env() as env:
        task = env.ask(question("svcs", "Restart which?", *labels, multi=True))
        message = await env.message()
        await env.slack.multi_select(message, ["svc-10", "svc-3"], user="U0BOB")
        await env.slack.submit(message, user="U0BOB")
        assert (await result(task)).answers[0].selected == ("svc-3", "svc-10")


async def test_submit_with_nothing_chosen_answers_nothing_and_says_what_to_do() -> None:
    async with slack_env() as env:
        task = env.ask(question("pkgs", "Which?", "a", "b", multi=True))
        message = await env.message()
        await env.slack.submit(message, user="U0ALICE")
        notice = await env.slack.wait_for_ephemeral(user="U0ALICE")
        assert "tick at least one option or type an answer" in notice.args["text"]
        assert not task.done()
        assert not env.slack.calls_to("chat.update")
        await env.slack.check(message, ["a"], user="U0ALICE")
        await env.slack.submit(message, user="U0ALICE")
        assert (await result(task)).answers[0].selected == ("a",)
        await asyncio.wait_for(env.provider.drain(), 5)
