"""Opening the edit form in time: Slack's ``trigger_id`` lasts 3 seconds, checks may not.

A click on "Edit…" is acknowledged before anything here runs. The form, or the refusal,
comes from ``prepared`` (who may edit, the call as it stands, the view built). When that is
ready within ``FORM_WITHIN`` and nothing it waits on is Slack's, the form is opened
directly with the click's trigger; otherwise a small "checking…" view is opened with the
trigger at once and ``views.update``d (by ``view_id``, with its ``hash``) to the form or to
the refusal once known, as Slack recommends for slow work (docs.slack.dev/surfaces/modals:
"open a modal with a loading message, then update it").
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Coroutine
from typing import Any

from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from relay.slack.intake.parse import Click
from relay.slack.rendering import kit, notices
from relay.slack.webapi.failures import SLACK_FAILURES

__all__ = ["CHECK_WITHIN", "FORM_WITHIN", "checking_view", "open_form", "refusal_view", "settled"]

_log = logging.getLogger("relay.slack")

FORM_WITHIN = 0.5
"""Seconds the form may take to prepare before a "checking…" view is opened instead (the
trigger has 3 s in all, and ``views.open`` itself can be slow)."""
CHECK_WITHIN = 10.0
"""Seconds a "checking…" view waits for the checks (a rate-limited lookup is retried up to
5 times) before it says to try again; the lookup goes on, so the next click finds it."""
_LATE = (
    "relay could not check with Slack in time whether you may edit this call: close this"
    " and click *Edit…* again in a moment."
)
_TITLE = "Edit the call"  # (a modal title holds 24 characters)

Notify = Callable[[Click, str], None]
Spawn = Callable[[Coroutine[Any, Any, None]], None]


def checking_view() -> dict[str, Any]:
    """The view opened at once while relay checks who may edit the call."""
    return {
        "type": "modal",
        "title": kit.plain(_TITLE, 24),
        "close": kit.plain("Cancel", 24),
        "blocks": [kit.section("Checking that you may edit this call…")],
    }


def refusal_view(text: str) -> dict[str, Any]:
    """The view a "checking…" view becomes when the clicker may not edit: why not."""
    return {
        "type": "modal",
        "title": kit.plain(_TITLE, 24),
        "close": kit.plain("Close", 24),
        "blocks": [kit.section(text)],
    }


def _error_of(exc: BaseException) -> str:
    if isinstance(exc, SlackApiError):
        error = exc.response.get("error") if exc.response is not None else None
        return str(error)
    return "unreachable"


async def open_form(
    client: AsyncWebClient,
    click: Click,
    prepared: Coroutine[Any, Any, dict[str, Any] | str],
    *,
    at_once: bool,
    notify: Notify,
    spawn: Spawn,
) -> None:
    """Show ``click``'s user the form (a view) or the refusal (a notice text) ``prepared``
    comes to; ``at_once``: it waits on Slack, so open the "checking…" view without waiting."""
    task = asyncio.ensure_future(prepared)
    try:
        await _open(client, click, task, at_once=at_once, notify=notify, spawn=spawn)
    finally:
        if not task.done():  # (only when this was cancelled: never leave it running alone)
            task.cancel()


async def _open(
    client: AsyncWebClient,
    click: Click,
    task: asyncio.Future[dict[str, Any] | str],
    *,
    at_once: bool,
    notify: Notify,
    spawn: Spawn,
) -> None:
    trigger = click.trigger_id or ""
    if not at_once:
        await asyncio.wait({task}, timeout=FORM_WITHIN)
    if task.done():
        outcome = task.result()
        if isinstance(outcome, str):
            notify(click, outcome)
            return
        try:
            await client.views_open(trigger_id=trigger, view=outcome)
        except SLACK_FAILURES as exc:
            _log.warning("views.open failed for ask %s: %s", click.ask_id, _error_of(exc))
            notify(click, notices.edit_not_opened(_error_of(exc)))
        return
    try:
        opened = await client.views_open(trigger_id=trigger, view=checking_view())
    except SLACK_FAILURES as exc:
        _log.warning("views.open failed for ask %s: %s", click.ask_id, _error_of(exc))
        outcome = await _checked(task, spawn)
        said = outcome if isinstance(outcome, str) else notices.edit_not_opened(_error_of(exc))
        notify(click, said)
        return
    outcome = await _checked(task, spawn)
    view = opened.get("view") or {}
    form = refusal_view(outcome) if isinstance(outcome, str) else outcome
    try:
        await client.views_update(view_id=view.get("id"), hash=view.get("hash"), view=form)
    except SLACK_FAILURES as exc:
        # not_found: the user closed the "checking…" view; hash_conflict: it changed since.
        _log.warning("views.update failed for ask %s: %s", click.ask_id, _error_of(exc))
        if isinstance(outcome, str):
            notify(click, outcome)  # a refusal is still said, privately


async def _checked(
    task: asyncio.Future[dict[str, Any] | str], spawn: Spawn
) -> dict[str, Any] | str:
    """What ``task`` comes to within ``CHECK_WITHIN``, else the text saying to try again."""
    try:
        return await asyncio.wait_for(asyncio.shield(task), CHECK_WITHIN)
    except TimeoutError:
        spawn(settled(task))
        return _LATE


async def settled(task: asyncio.Future[Any]) -> None:
    """Wait for a check nobody waits for any more: its lookups fill the cache for the retry
    (a failure is met again then)."""
    with contextlib.suppress(Exception):
        await task
