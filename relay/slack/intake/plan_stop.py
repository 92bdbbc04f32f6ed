"""``PlanStops``: an approved plan's *Stop the plan*, clicked on its review message.

Only translation: the click is judged as any click on the plan's review is
(``ClickIntake.judge``: the installation, the message, who may answer), then it becomes the
Decider's ``stop_from_review``; the message then says who stopped the plan. A plan already
ended or expired is left as it is, and the clicker is told so privately.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

from relay.asks.lifecycle import AskLifecycle
from relay.asks.plan_door import PlanDoor, PlanStop
from relay.seam.questions import Responder
from relay.slack.intake.parse import Click
from relay.slack.intake.reading import clicked_record
from relay.slack.rendering import notices
from relay.slack.rendering.final import plan_stopped
from relay.slack.rendering.text import escape
from relay.slack.webapi.background import Background
from relay.slack.webapi.messages import SlackMessages
from relay.store import AskRecord, MessageRef

__all__ = ["PlanStops"]

_log = logging.getLogger("relay.slack")


class PlanStops:
    """Applies *Stop the plan* clicks through the Decider's ``PlanDoor``."""

    def __init__(
        self,
        *,
        life: AskLifecycle,
        messages: SlackMessages,
        background: Background,
        judge: Callable[[AskRecord, Click], Awaitable[str | None]],
        plans: PlanDoor | None,
    ) -> None:
        self._life = life
        self._messages = messages
        self._background = background
        self._judge = judge  # ClickIntake.judge: the checks any click on the review gets
        self._plans = plans

    def handle(self, click: Click) -> None:
        """Start applying ``click``; returns at once (its checks may wait on Slack)."""
        self._background.spawn(self._stop(click))

    async def _stop(self, click: Click) -> None:
        notify = self._messages.notify
        read, record = await clicked_record(
            self._life.store, self._messages, click, doing="stopping the plan"
        )
        if not read:
            return
        if record is None or self._plans is None or click.index >= len(record.responses):
            notify(click, _no_plan())
            return
        refusal = await self._judge(record, click)
        if refusal is not None:
            notify(click, refusal)
            return
        by = Responder(id=click.user_id, name=click.user_name, team=click.team_id)
        try:
            stop = await self._plans.stop_from_review(record, by=by)
        except Exception:
            _log.exception("the plan of ask %s could not be stopped", record.id)
            notify(click, notices.cannot_record())
            return
        if stop.outcome != "stopped":
            notify(click, _ended(stop))
            return
        known = record.messages[click.index] if click.index < len(record.messages) else None
        message = known or MessageRef(click.channel_id or "", click.message_ts or "")
        await self._messages.update(record.id, message, plan_stopped(record, click.index, by.id))


def _no_plan() -> str:
    return "relay holds no plan from this review, so there is nothing to stop; nothing changed."


def _ended(stop: PlanStop) -> str:
    """For a click on a plan that already ended: how, and that nothing changed."""
    if stop.outcome == "none":
        return _no_plan()
    how = {"stopped": "was already stopped", "expired": "has already expired"}.get(
        stop.status, "was not approved"
    )
    by = f" (by {escape(stop.by)})" if stop.by and stop.status == "stopped" else ""
    return (
        f"This plan {how}{by}, so there is nothing to stop; nothing changed. Every call it"
        " covered is asked again."
    )
