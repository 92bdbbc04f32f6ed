"""Flow: six or more options become a menu; picking one answers."""

from __future__ import annotations

from tests.slack_env import elements, question, result, slack_env

LABELS = tuple(f"region-{i}" for i in range(7))


async def test_picking_from_the_menu_answers_with_that_label() -> None:
    async with slack_env() as env:
        task = env.ask(question("region", "Which region?", *LABELS))
        message = await env.message()
        assert [e["type"] for e in elements(message)] == ["static_select"]
        await env.slack.select(message, "region-5", user="U0BOB")
        answer = await result(task)
        assert answer.to_dict() == {"answers": [{"id": "region", "selected": ["region-5"]}]}


async def test_a_hundred_options_still_fit_in_the_menu() -> None:
    labels = tuple(f"option number {i}" for i in range(100))
    async with slack_env() as env:
        task = env.ask(question("big", "Pick one", *labels))
        message = await env.message()
        await env.slack.select(message, "option number 99", user="U0BOB")
        assert (await result(task)).answers[0].selected == ("option number 99",)
