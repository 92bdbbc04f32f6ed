"""Flow: a message whose final update failed is swept: retried until it lands, for a while.

The ask ends; its message's ``chat.update`` fails (Slack down, rate limited past retries). A
``Settling.grace`` later the relay's sweep (the expiry task) retries it, and keeps retrying it
every ``Settling.lease`` until it lands or ``Settling.window`` has passed since the ask ended.
A message whose update landed is left alone: neither the sweep nor a click updates it again.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta

import pytest

from relay import UserInteractionError
from relay.asks import Settling
from relay.asks.events import AskEvent
from tests.slack_env import Env, ask_id_of, question, result, slack_env

FAST = Settling(grace=0.2, lease=0.2)


@contextmanager
def warned(fragment: str) -> Iterator[asyncio.Future[str]]:
    """A future set to the first WARNING logged that contains ``fragment``."""
    future: asyncio.Future[str] = asyncio.get_running_loop().create_future()

    class Catch(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            text = record.getMessage()
            if record.levelno == logging.WARNING and fragment in text and not future.done():
                future.set_result(text)

    handler = Catch()
    logger = logging.getLogger("relay")
    logger.addHandler(handler)
    try:
        yield future
    finally:
        logger.removeHandler(handler)


def swept(env: Env) -> asyncio.Future[str]:
    """A future set to the ask id of the first ``swept`` event (a message updated by the
    sweep, and recorded as settled)."""
    future: asyncio.Future[str] = asyncio.get_running_loop().create_future()

    def observe(event: AskEvent) -> None:
        if event.name == "swept" and not future.done():
            future.set_result(event.ask_id)

    env.provider.events.subscribe(observe)
    return future


async def test_a_withdrawal_that_failed_is_swept_and_lands() -> None:
    async with slack_env(timeout=0.3, settling=FAST) as env:
        env.slack.fail("chat.update", error="internal_error")  # the withdrawal is lost
        done = swept(env)
        task = env.ask(question())
        message = await env.message()
        with pytest.raises(UserInteractionError):
            await result(task)
        assert await asyncio.wait_for(done, 5) == ask_id_of(message)
        assert "Timed out" in json.dumps(message.blocks)
        assert not [b for b in message.blocks if b["type"] in ("actions", "input")]
        assert await env.provider.store.unsettled(ask_id=ask_id_of(message)) == frozenset()
        assert [c.ok for c in env.slack.calls_to("chat.update")] == [False, True]


async def test_an_answer_whose_update_failed_is_swept_and_shows_who_answered() -> None:
    async with slack_env(settling=FAST) as env:
        events: list[str] = []
        env.provider.events.subscribe(lambda e: events.append(e.name))
        done = swept(env)
        task = env.ask(question())
        message = await env.message()
        env.slack.fail("chat.update", error="internal_error", times=2)  # the first try and one more
        await env.slack.click(message, "prod", user="U0ALICE")
        assert (await result(task)).answers[0].selected == ("prod",)
        await asyncio.wait_for(done, 10)
        assert "Answered by <@U0ALICE>" in json.dumps(message.blocks)
        updates = env.slack.calls_to("chat.update")
        assert [c.ok for c in updates][-1] is True
        assert sum(c.ok for c in updates) == 1
        assert events.count("swept") == 1


async def test_a_message_whose_update_landed_is_never_updated_again() -> None:
    async with slack_env(settling=FAST) as env:
        env.provider.repair_after = timedelta(0)  # a click may repair at once, if it must
        task = env.ask(question())
        landed = await env.message()
        await env.slack.click(landed, "prod", user="U0ALICE")
        await result(task)
        await env.slack.wait_until(lambda: landed.updated)

        # A second ask whose update fails: once it is swept, the sweep has passed the first.
        done = swept(env)
        later = env.ask(question())
        stale = await env.message(count=2)
        env.slack.fail("chat.update", error="internal_error")
        await env.slack.click(stale, "staging", user="U0ALICE")
        await result(later)
        assert await asyncio.wait_for(done, 5) == ask_id_of(stale)
        assert len(landed.versions) == 2

        # A click from an old copy of the landed message gets the private notice, no update.
        await env.slack.click(landed, "staging", user="U0BOB", version=0)
        notice = await env.slack.wait_for_ephemeral(user="U0BOB")
        assert "<@U0ALICE>" in notice.args["text"]
        await env.provider.drain()
        assert len(landed.versions) == 2
        updates = [c for c in env.slack.calls_to("chat.update") if c.args["ts"] == landed.ts]
        assert len(updates) == 1


async def test_the_sweep_gives_up_after_the_window_with_one_warning() -> None:
    async with slack_env(timeout=0.3, settling=Settling(grace=0.2, lease=0.2, window=1.0)) as env:
        env.slack.fail("chat.update", error="internal_error", times=10_000)  # Slack stays down
        with warned("gave up updating") as gave_up:
            task = env.ask(question())
            message = await env.message()
            with pytest.raises(UserInteractionError):
                await result(task)
            ended = time.time()
            text = await asyncio.wait_for(gave_up, 10)
        ask_id = ask_id_of(message)
        assert ask_id in text
        assert time.time() - ended >= 1.0
        tries = len(env.slack.calls_to("chat.update"))
        assert tries >= 3  # the withdrawal, then the sweep's retries
        assert await env.provider.store.unsettled(ask_id=ask_id) == frozenset()

        # Given up: Slack is back, but neither the sweep nor a click updates it any more.
        env.slack.recover("chat.update")
        env.provider.repair_after = timedelta(0)
        await env.slack.click(message, "prod", user="U0ALICE")
        await env.slack.wait_for_ephemeral(user="U0ALICE")
        await env.provider.drain()
        assert len(env.slack.calls_to("chat.update")) == tries
        assert not message.updated
