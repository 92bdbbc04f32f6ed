"""A faithful fake of Slack for tests: the Web API, Socket Mode and simulated humans.

``FakeSlack`` serves the Web API methods a relay app uses over real HTTP, validates Block Kit
like Slack, records every call, injects failures and rate limits, and lets simulated humans
click, select, tick and type on the bot's messages, delivering signed ``block_actions``
payloads over HTTP or Socket Mode::

    async with FakeSlack(signing_secret="test-secret", channels={"C123": "approvals"}) as slack:
        client = AsyncWebClient(token=slack.bot_token, base_url=slack.base_url)
        ...
        message = await slack.wait_for_message(channel="C123")
        result = await slack.click(message, "Approve", user="U123")

Installing relay also registers a pytest plugin (``relay.testing.pytest_plugin``) with the
fixtures ``fake_slack``, ``slack_provider`` and ``relay_service``.
"""

from .blocks import BlocksRejected, check_blocks
from .elements import button_text_shown
from .fake_slack import DEFAULT_APP_TOKEN, DEFAULT_BOT_TOKEN, LENIENCIES, FakeSlack
from .mentions import Link, Mention
from .modals import FakeModal, FakeView, ManualClock
from .records import ClickResult, FakeMessage, RecordedCall, ViewResult

__all__ = [
    "DEFAULT_APP_TOKEN",
    "DEFAULT_BOT_TOKEN",
    "LENIENCIES",
    "BlocksRejected",
    "ClickResult",
    "FakeMessage",
    "FakeModal",
    "FakeSlack",
    "FakeView",
    "Link",
    "ManualClock",
    "Mention",
    "RecordedCall",
    "ViewResult",
    "button_text_shown",
    "check_blocks",
]
