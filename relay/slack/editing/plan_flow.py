"""``PlanScopeIntake``: a plan review's *Edit…*, its scope form, and the plan approved with
the scope narrowed.

Only translation. Opening the form and submitting it are judged as any click on the review
is (``ClickIntake.judge``); the form's items come from the Decider (``PlanDoor``), and a
submission is a new proposal the Decider decides (``narrowing_refusal``, then again when the
approval is read): an item outside the scope relay derived refuses it, under the form's
field, and nothing is recorded. Accepted, the answer is the reviewer's *Approve* with the
narrowing in ``custom`` (``relay.seam.plan_review.Narrowing``), claimed like any click.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

from relay.asks.lifecycle import AskLifecycle
from relay.asks.plan_door import PlanDoor
from relay.asks.terms import widened
from relay.errors import UserInteractionError
from relay.seam.plan_review import SCOPED_QUESTION, Narrowing, narrowing_custom
from relay.seam.questions import AskUserQuestionAnswerItem, Responder
from relay.slack.editing.opening import open_form
from relay.slack.editing.plan_form import SCOPE_BLOCK, plan_scope_view, read_kept
from relay.slack.intake.parse import Click
from relay.slack.intake.people import Gatekeeper
from relay.slack.intake.reading import clicked_record
from relay.slack.rendering import notices
from relay.slack.rendering.final import answered_of
from relay.slack.webapi.background import Background
from relay.slack.webapi.messages import SlackMessages
from relay.store import AskRecord, MessageRef, utcnow

__all__ = ["PlanScopeIntake"]

_log = logging.getLogger("relay.slack")
_AGAIN = "relay could not record this now; submit again."


def _narrowable(record: AskRecord | None, index: int) -> bool:
    if record is None or index >= len(record.request.questions):
        return False
    question = record.request.questions[index]
    intent = question.intent
    return (
        intent is not None
        and intent.kind == "plan-review"
        and question.question == SCOPED_QUESTION
        and question.quorum <= 1
    )


def _closed(record: AskRecord, index: int) -> tuple[bool, AskUserQuestionAnswerItem | None]:
    """Whether question ``index`` is closed (answered, or the ask over), and its answer."""
    existing = record.responses[index] if index < len(record.responses) else None
    return existing is not None or not record.pending, existing


class PlanScopeIntake:
    """Opens a plan's scope form and applies its submission through the ``PlanDoor``."""

    def __init__(
        self,
        *,
        life: AskLifecycle,
        messages: SlackMessages,
        background: Background,
        judge: Callable[[AskRecord, Click], Awaitable[str | None]],
        gatekeeper: Gatekeeper,
        plans: PlanDoor | None,
    ) -> None:
        self._life = life
        self._messages = messages
        self._background = background
        self._judge = judge  # ClickIntake.judge: the checks any click on the review gets
        self._gatekeeper = gatekeeper
        self._plans = plans

    def open(self, click: Click) -> None:
        """Start opening the form for ``click``; returns at once (Slack's ack comes first)."""
        self._background.spawn(self._open(click))

    async def _open(self, click: Click) -> None:
        notify = self._messages.notify
        read, record = await clicked_record(
            self._life.store, self._messages, click, doing="opening a plan form"
        )
        if not read:
            return
        if record is None or self._plans is None or not _narrowable(record, click.index):
            notify(click, notices.no_longer_pending(record))
            return
        closed, existing = _closed(record, click.index)
        if closed:
            notify(click, notices.closed(record, existing))
            return
        slow = self._gatekeeper.needs_slack(widened(record, now=time.time()), click.user_id)
        await open_form(
            self._messages.lean.client,
            click,
            self._prepare(record, click),
            at_once=slow,
            notify=notify,
            spawn=self._background.spawn,
        )

    async def _prepare(self, record: AskRecord, click: Click) -> dict[str, Any] | str:
        refusal = await self._judge(record, click)
        if refusal is not None:
            return refusal
        assert self._plans is not None
        choices = await self._plans.scope_choices(record)
        if not choices or all(c.asked is not None for c in choices):
            return "This plan's scope has nothing to narrow: approve it or keep planning."
        return plan_scope_view(
            choices,
            ask_id=record.id,
            index=click.index,
            channel=click.channel_id,
            ts=click.message_ts,
        )

    async def submit(self, click: Click) -> dict[str, str] | None:
        """Apply a submitted scope form: ``None`` when the plan was approved with the ticked
        items (the form closes), else the error to show under its field."""
        try:
            record = await self._life.store.get(ask_id=click.ask_id)
        except Exception:
            _log.exception("store unreachable while narrowing the plan of %s", click.ask_id)
            return {SCOPE_BLOCK: _AGAIN}
        if record is None or self._plans is None or not _narrowable(record, click.index):
            return {SCOPE_BLOCK: "This plan review is gone; nothing was changed."}
        closed, existing = _closed(record, click.index)
        if closed:
            return {SCOPE_BLOCK: _decided(existing)}
        refusal = await self._judge(record, click)
        if refusal is not None:
            return {SCOPE_BLOCK: refusal}
        keep = read_kept(click.values or {})
        if keep is None:
            return {SCOPE_BLOCK: "This form was not read; nothing was changed: open it again."}
        try:
            refused = await self._plans.narrowing_refusal(record, keep)
            choices = await self._plans.scope_choices(record) or ()
        except Exception:
            _log.exception("the plan of ask %s could not be narrowed", record.id)
            return {SCOPE_BLOCK: _AGAIN}
        if refused is not None:
            return {SCOPE_BLOCK: f"relay refused this scope: {refused}."}
        dropped = tuple(c.words for c in choices if c.asked is None and c.key not in keep)
        narrowing = Narrowing(keep=keep, by=click.user_id, dropped=dropped)
        by = Responder(id=click.user_id, name=click.user_name, team=click.team_id)
        question = record.request.questions[click.index]
        item = AskUserQuestionAnswerItem(
            id=question.id,
            selected=(),
            custom=narrowing_custom(narrowing),
            answered_by=by,
            answered_at=utcnow(),
        )
        return await self._answer(record, click, item)

    async def _answer(
        self, record: AskRecord, click: Click, item: AskUserQuestionAnswerItem
    ) -> dict[str, str] | None:
        try:
            result = await self._life.answer(record, click.index, item, by=click.user_id)
        except UserInteractionError as exc:
            return {SCOPE_BLOCK: str(exc)}
        except Exception:
            _log.exception("store failed while narrowing the plan of ask %s", record.id)
            return {SCOPE_BLOCK: _AGAIN}
        if result.outcome not in ("accepted", "completed"):
            winner = result.record.responses[click.index] if result.record is not None else None
            return {SCOPE_BLOCK: _decided(winner)}
        known = record.messages[click.index] if click.index < len(record.messages) else None
        message = known or MessageRef(click.channel_id or "", click.message_ts or "")
        final = answered_of(record, click.index, item)
        self._background.spawn(self._messages.update(record.id, message, final, index=click.index))
        return None


def _decided(winner: AskUserQuestionAnswerItem | None) -> str:
    who = winner.answered_by.display_name if winner and winner.answered_by else "someone"
    return f"{who} already answered this plan review; close this form (nothing was changed)."
