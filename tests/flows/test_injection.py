"""Flow: text from the agent (or from whatever prompt-injected it) pings nobody and
disguises no link: not in the message, its notification text, its update, its thread
replies, nor in a private notice.

FakeSlack records every mention and link a message would set off in Slack (``slack.mentions``,
``slack.links``): ``<!channel>``, ``<!here>``, ``<!everyone>``, ``<!subteam^…>``, ``<@U…>`` and
``<url|label>`` are live in mrkdwn, in the top-level ``text`` and in markdown blocks.
"""

from __future__ import annotations

from relay import AgentRef, AskUserQuestionItem, AskUserQuestionOption
from tests.slack_env import result, slack_env

TOKENS = (
    "<!channel> <!here> <!everyone> <!subteam^S0OPS|@ops> <@U0VICTIM> "
    "<https://evil.example/login|Approve here>"
)
DETAIL = (
    f"# Plan\n\n{TOKENS}\n\nAlso @here, and [Approve here](https://evil.example/x).\n\n"
    + "".join(f"{i}. a step of the plan that makes it long\n" for i in range(400))
    + f"\nthe end: {TOKENS}\n"
)


def injected() -> AskUserQuestionItem:
    return AskUserQuestionItem(
        id="ship",
        question=f"Ship it? {TOKENS}",
        header=f"Release {TOKENS}"[:140],
        detail=DETAIL,
        options=(
            AskUserQuestionOption("Yes <!here>", f"ships {TOKENS}"),
            AskUserQuestionOption("No"),
        ),
    )


async def test_nothing_an_agent_writes_pings_anyone_or_hides_a_link() -> None:
    async with slack_env() as env:
        task = env.ask(injected(), agent=AgentRef("bot", f"Deploy bot {TOKENS}"))
        message = await env.message()
        assert (await env.message(2)).thread_ts == message.ts  # the detail's thread reply
        await env.slack.click(message, "No", user="U0ALICE")
        await result(task)
        await env.slack.wait_until(lambda: message.updated)
        # A late click: the private notice says who answered.
        await env.slack.click(message, "No", user="U0BOB", version=0)
        await env.slack.wait_for_ephemeral(user="U0BOB")

        pinged = [(m.kind, m.target, m.method) for m in env.slack.mentions]
        # Only the relay's own "Answered by @alice" and "@alice already answered".
        assert {(kind, target) for kind, target, _ in pinged} == {("user", "U0ALICE")}
        links = env.slack.links
        assert [link.url for link in links if link.disguised] == ["https://evil.example/x"] * 2
        for text in (message.text, *message.text_versions):
            assert "&lt;!channel&gt;" in text  # the notification text shows it, inert
        markdown = "".join(
            b["text"] for m in env.slack.messages for b in m.blocks if b["type"] == "markdown"
        )
        assert markdown.count("[Approve here](https://evil.example/x) (evil.example)") == 1
        methods = {c.method for c in env.slack.calls if c.ok}
        assert {"chat.postMessage", "chat.update", "response_url"} <= methods


async def test_a_question_of_2995_characters_with_ampersands_is_asked_whole() -> None:
    text = "Tom & Jerry & co " * 5 + "x" * (2_995 - 85)
    assert len(text) == 2_995
    async with slack_env() as env:
        task = env.ask(AskUserQuestionItem(id="q", question=text))
        message = await env.message()
        shown = "".join(
            b["text"]["text"] for b in message.blocks if b["type"] == "section"
        ).replace("&amp;", "&")
        assert text in shown
        await env.slack.type(message, "fine", user="U0ALICE")
        await env.slack.press_enter(message, user="U0ALICE")
        assert (await result(task)).answers[0].custom == "fine"
