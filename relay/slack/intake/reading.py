"""The ask a click is on, read once for every click path that reads it."""

from __future__ import annotations

import logging

from relay.slack.intake.parse import Click
from relay.slack.rendering import notices
from relay.slack.webapi.messages import SlackMessages
from relay.store import AskRecord
from relay.store.base import AskStore

__all__ = ["Unread", "clicked_record"]

_log = logging.getLogger("relay.slack")


class Unread(Exception):
    """The store could not be reached; the clicker has been told."""


async def clicked_record(
    store: AskStore, messages: SlackMessages, click: Click, *, doing: str
) -> AskRecord | None:
    """The ask ``click`` is on (``None``: there is none). When the store cannot be reached
    the clicker is told privately that nothing was recorded, the failure is logged as
    ``doing`` failing, and ``Unread`` raised."""
    try:
        return await store.get(ask_id=click.ask_id)
    except Exception:
        _log.exception("store unreachable while %s of ask %s", doing, click.ask_id)
        messages.notify(click, notices.cannot_record())
        raise Unread from None
