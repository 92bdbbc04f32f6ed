"""The batch buttons (``relay.slack.webapi.batch``): a page or view to show, or *Allow all shown*
and *Deny all shown* as one click per covered, pending call on the page, by the same person, on
that call's own *Allow once* or *Deny*: each then takes the path every click takes (who may
answer, the claim, the Decider's reading of the answer). Nothing here decides a call.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import replace

from relay.asks.batches import BatchRef, batch_of
from relay.asks.lifecycle import AskLifecycle
from relay.asks.terms import widened
from relay.slack.intake.parse import Click, ClickKind
from relay.slack.intake.people import Gatekeeper
from relay.slack.rendering import notices
from relay.slack.rendering.batch_view import covered, pages
from relay.slack.webapi.batch import BatchShow, pending
from relay.slack.webapi.failures import SLACK_FAILURES
from relay.slack.webapi.messages import SlackMessages
from relay.store import AskRecord

__all__ = ["BatchClicks"]

_log = logging.getLogger("relay.slack")

_DENY = "Deny"  # relay.gate.approval's deny label (the gate sits above this module)


class BatchClicks:
    """The batch buttons: a page or view to show, or one click per covered call."""

    def __init__(
        self,
        *,
        life: AskLifecycle,
        messages: SlackMessages,
        show: BatchShow,
        gatekeeper: Gatekeeper,
        answer: Callable[[Click], Awaitable[None]],
        foreign: Callable[[Click], Awaitable[str | None]],
    ) -> None:
        self._life = life
        self._messages = messages
        self._show = show
        self._gatekeeper = gatekeeper
        self._answer = answer
        self._foreign = foreign

    async def handle(self, click: Click) -> None:
        """Apply a click on a batch button (``click.batch_action``, page ``click.option``)."""
        ref = batch_of(click.ask_id)
        if ref is None or click.batch_action is None or click.option is None:
            return
        notify = self._messages.notify
        try:
            if await self._foreign(click) is not None:
                return
            records = await self._show.records(ref)
        except SLACK_FAILURES:
            _log.exception("auth.test failed; cannot check which workspace a click came from")
            notify(click, notices.cannot_record())
            return
        except Exception:
            _log.exception("store unreachable while handling a click on batch %s", ref.batch)
            notify(click, notices.cannot_record())
            return
        message = next((r.messages[0] for r in records if r is not None and r.messages[0]), None)
        if message is None or (click.channel_id, click.message_ts) != (
            message.channel,
            message.ts,
        ):
            self._life.events.emit(
                "refused", click.ask_id, user=click.user_id, why="message_mismatch"
            )
            return
        shown = pages(records)
        if click.option >= len(shown):
            notify(click, notices.no_longer_pending(None))
            return
        page = shown[click.option]
        action = click.batch_action
        if action in ("review", "list", "prev", "next"):
            await self._change_view(ref, records, click, action)
            return
        included = covered(records)
        calls = [r for p in page if p in included and (r := records[p]) is not None and pending(r)]
        if not calls:
            notify(
                click,
                "Nothing on this page is left for the batch buttons: each call there is decided,"
                " or needs other approvers (use its own buttons).",
            )
            return
        for record in calls:
            question = record.request.questions[0]
            label = question.intent.approve if action == "allow" and question.intent else _DENY
            if label not in question.labels:
                continue
            # The same person's click on this call's own button, checked as such.
            await self._answer(
                replace(
                    click,
                    ask_id=record.id,
                    index=0,
                    kind=ClickKind.OPTION,
                    option=question.labels.index(label),
                    text=None,
                    ticked=(),
                    batch_action=None,
                )
            )

    async def _change_view(
        self, ref: BatchRef, records: list[AskRecord | None], click: Click, action: str
    ) -> None:
        """Show another page or view, for someone who may answer some call still waiting."""
        refusal: str | None = notices.no_longer_pending(None)
        now = time.time()
        for record in records:
            if record is None or not pending(record):
                continue
            refusal = await self._gatekeeper.refusal(widened(record, now=now), click.user_id)
            if refusal is None:
                break
        if refusal is not None:
            self._messages.notify(click, refusal)
            return
        mode, _ = self._show.view(ref)
        if action in ("review", "list"):
            mode = "review" if action == "review" else "list"
        self._show.set_view(ref, mode, click.option or 0)
        await self._show.refresh(ref)
