"""Flow: a click for an ask this relay does not know changes nothing."""

from __future__ import annotations

import json

from tests.slack_env import first_button, question, slack_env


async def test_a_click_naming_an_unknown_ask_is_told_it_is_no_longer_pending() -> None:
    async with slack_env() as env:
        task = env.ask(question())
        message = await env.message()
        action = {**first_button(message), "block_id": "relay:GoneAskId000:0:act"}
        payload = env.slack.build_block_actions(message, action, user="U0ALICE")
        reply = await env.slack.post_interaction(payload)
        assert reply.status == 200
        notice = await env.slack.wait_for_ephemeral(user="U0ALICE")
        assert "no longer pending" in notice.args["text"]
        assert not task.done()
        assert json.dumps(message.blocks) == json.dumps(message.versions[0])


async def test_a_click_after_a_restart_is_told_it_is_no_longer_pending() -> None:
    async with slack_env() as first:
        first.ask(question())
        old = await first.message()
    # A new relay process, with an empty memory store, receives a click on the old message.
    async with slack_env() as env:
        payload = env.slack.build_block_actions(old, first_button(old), user="U0ALICE")
        reply = await env.slack.post_interaction(payload)
        assert reply.status == 200
        notice = await env.slack.wait_for_ephemeral(user="U0ALICE")
        assert "no longer pending" in notice.args["text"]
