"""Flow: a question decided by 25 votes cast at once updates its message a few times, not
once or more per vote (relay issue 39: ~70 ``chat.update`` calls in under a second, where
Slack's Tier 3 answers 429 long before), and ends showing its outcome, never a tally."""

from __future__ import annotations

import asyncio

from tests.slack_env import question, slack_env

VOTERS = [f"U0VOTER{i:02d}" for i in range(25)]


async def test_twenty_five_votes_at_once_make_a_few_updates_and_end_on_the_outcome() -> None:
    async with slack_env() as env:
        for user in VOTERS:
            env.slack.add_user(user, name=user.lower())
        task = env.ask(question("go", "Ship 1.4?", "Approve", "Reject", approvals_required=25))
        message = await env.message()
        clicks = await asyncio.gather(
            *(env.slack.click(message, "Approve", user=user) for user in VOTERS)
        )
        assert all(c.ok for c in clicks)
        item = (await asyncio.wait_for(task, 10)).answers[0]
        assert item.selected == ("Approve",)
        assert len(item.votes) == 25
        await env.provider.drain()

        updates = env.slack.calls_to("chat.update")
        # One live update a second at most, plus the final one (and its guard): a handful
        # however the clicks interleave; one or more a vote before.
        assert len(updates) <= 8, len(updates)
        # The outcome is shown last and no tally ever came back over it.
        live = ["actions" in str([b["type"] for b in blocks]) for blocks in message.versions]
        assert live[0]
        assert not live[-1]
        first_final = live.index(False)
        assert not any(live[first_final:]), live
        assert "Votes: " in str(message.blocks)
        assert "<@U0VOTER24>" in str(message.blocks)
