"""The ask a click is on, read once for every click path that reads it."""

from __future__ import annotations

import logging

from relay.slack.intake.parse import Click
from relay.slack.rendering import notices
from relay.slack.webapi.messages import SlackMessages
from relay.store import AskRecord
from relay.store.base import AskStore

__all__ = ["clicked_record"]

_log = logging.getLogger("relay.slack")


async def clicked_record(
    store: AskStore, messages: SlackMessages, click: Click, *, doing: str
) -> tuple[bool, AskRecord | None]:
    """Whether the store could be read, and the ask ``click`` is on (``None``: there is
    none). When it could not, the clicker is told privately that nothing was recorded and
    the failure is logged as ``doing`` failing."""
    try:
        return True, await store.get(ask_id=click.ask_id)
    except Exception:
        _log.exception("store unreachable while %s of ask %s", doing, click.ask_id)
        messages.notify(click, notices.cannot_record())
        return False, None
