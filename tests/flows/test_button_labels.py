"""Flow: options whose labels are alike for their first 30 characters can be told apart.

Slack shows about 30 characters of a button's text (up to 75 are sent); FakeSlack shows a
human what Slack shows (``buttons_seen``, and ``click`` finds buttons by that text), so two
labels differing after character 30 look the same there, as in Slack.
"""

from __future__ import annotations

from tests.slack_env import question, result, slack_env

STAGING = "Deploy the payments service to staging first"
PRODUCTION = "Deploy the payments service to production now"


async def test_long_labels_are_numbered_and_listed_so_each_button_is_recognisable() -> None:
    async with slack_env() as env:
        task = env.ask(question("env", "Which deploy?", STAGING, PRODUCTION, "Wait"))
        message = await env.message()
        seen = env.slack.buttons_seen(message)
        assert len(set(seen)) == 3  # a human can tell every button apart
        assert seen[1].startswith("2. ")
        listing = str(message.blocks)
        assert f"1. *{STAGING}*" in listing
        assert f"2. *{PRODUCTION}*" in listing
        assert "3. *Wait*" in listing

        await env.slack.click(message, "2. " + PRODUCTION, user="U0ALICE")
        answer = await result(task)
        assert answer.answers[0].selected == (PRODUCTION,)  # the whole label, exactly


async def test_short_labels_stay_as_they_are() -> None:
    async with slack_env() as env:
        task = env.ask(question("env", "Where?", "staging", "production"))
        message = await env.message()
        assert env.slack.buttons_seen(message) == ["staging", "production"]
        await env.slack.click(message, "production", user="U0ALICE")
        assert (await result(task)).answers[0].selected == ("production",)
