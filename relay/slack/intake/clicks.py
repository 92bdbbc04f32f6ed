"""``ClickIntake``: a click in Slack, turned into an answer the lifecycle claims.

The intake checks what only Slack knows (which installation and message the click came
from, who clicked and whether they may answer), reads the click as an answer (``decide``,
pure), and hands it to ``AskLifecycle.answer``; then it shows what happened: the answered
message, or a private notice saying why nothing was recorded.

When the store holds the ask's unchanging part in this process (``ClickClaims.known``), the
click is one store step instead (``_claim_at_once``): the store checks the message, the
status and the question in the claim itself (on Redis, one script). Anything that would end
in a notice before the claim takes the full path, so every refusal reads as before.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from datetime import timedelta

from relay.asks.edit_review import EditReview
from relay.asks.lifecycle import AskLifecycle
from relay.asks.plan_door import PlanDoor
from relay.asks.terms import REPAIR_AFTER, needs_repair, widened
from relay.errors import UserInteractionError
from relay.seam.questions import AskUserQuestionAnswerItem
from relay.slack.editing.flow import EditIntake
from relay.slack.editing.plan_flow import PlanScopeIntake
from relay.slack.intake.batch_clicks import BatchClicks
from relay.slack.intake.installation import Installation
from relay.slack.intake.parse import Click, ClickKind, Notice, decide
from relay.slack.intake.people import Gatekeeper
from relay.slack.intake.plan_stop import PlanStops
from relay.slack.intake.voting import VoteIntake
from relay.slack.rendering import notices
from relay.slack.rendering.final import answered_of, final_of
from relay.slack.webapi.background import Background
from relay.slack.webapi.batch import BatchShow
from relay.slack.webapi.failures import SLACK_FAILURES
from relay.slack.webapi.messages import SlackMessages
from relay.store import AskRecord, MessageRef, StoreUnavailable, utcnow

__all__ = ["ClickIntake"]

_log = logging.getLogger("relay.slack")


class ClickIntake:
    """Applies clicks: answers their question, or tells the clicker privately why not.

    ``repair_after``: a click on a question that ended longer ago shows its outcome again.
    """

    def __init__(
        self,
        *,
        life: AskLifecycle,
        messages: SlackMessages,
        gatekeeper: Gatekeeper,
        background: Background,
        installation: Callable[[], Awaitable[Installation]],
        edit_review: EditReview | None = None,
        batches: BatchShow | None = None,
        plans: PlanDoor | None = None,
    ) -> None:
        self._life = life
        self._messages = messages
        self._gatekeeper = gatekeeper
        self._background = background
        self._installation = installation
        self.repair_after: timedelta = REPAIR_AFTER
        self._edits = EditIntake(
            life=life,
            messages=messages,
            background=background,
            judge=self.judge,
            review=edit_review,
            gatekeeper=gatekeeper,
        )
        self._plan_stops = PlanStops(
            life=life, messages=messages, background=background, judge=self.judge, plans=plans
        )
        self._plan_scopes = PlanScopeIntake(
            life=life,
            messages=messages,
            background=background,
            judge=self.judge,
            gatekeeper=gatekeeper,
            plans=plans,
        )
        self._votes = VoteIntake(life=life, messages=messages, background=background)
        self._batches = (
            BatchClicks(
                life=life,
                messages=messages,
                show=batches,
                gatekeeper=gatekeeper,
                answer=lambda click: self._handle(click, acked=False),
                foreign=self._foreign,
            )
            if batches is not None
            else None
        )

    async def handle(self, click: Click) -> dict[str, str] | None:
        """Apply one click; one whose check would wait on Slack is applied after the ack.
        "Edit…" opens its form at once (Slack's trigger lasts 3 s); a submitted form
        returns the errors to show under its fields, if any."""
        if click.kind is ClickKind.EDIT:
            await self._edits.open(click)
            return None
        if click.kind is ClickKind.SAVE:
            return await self._edits.submit(click)
        if click.kind is ClickKind.PLAN_EDIT:
            self._plan_scopes.open(click)
            return None
        if click.kind is ClickKind.PLAN_SAVE:
            return await self._plan_scopes.submit(click)
        if click.kind is ClickKind.PLAN_STOP:
            self._plan_stops.handle(click)
            return None
        if click.kind is ClickKind.BATCH:
            # Allow all / Deny all: one click of this person's per call (see BatchClicks).
            if self._batches is not None:
                await self._batches.handle(click)
            return None
        await self._handle(click, acked=False)
        return None

    def _after_ack(self, click: Click) -> None:
        """Apply ``click`` in the background: deciding it waits on Slack (a user group's
        members), and Slack's 3 s for the ack must not. A refusal is a notice, as ever."""
        self._background.spawn(self._handle(click, acked=True))

    async def _handle(self, click: Click, *, acked: bool) -> None:
        if click.kind is ClickKind.TOGGLE:
            return
        self._background.lend_session()
        notify = self._messages.notify
        try:
            foreign = await self._foreign(click)
        except SLACK_FAILURES:
            _log.exception("auth.test failed; cannot check which workspace a click came from")
            notify(click, notices.cannot_record())
            return
        if foreign is not None:
            if foreign != "foreign_app":  # another app's click is no message of ours
                notify(click, notices.foreign_installation(), fallback=False)
            return
        events = self._life.events
        claims = self._life.claims
        known = claims.known(ask_id=click.ask_id) if claims is not None else None
        refusal: str | None = None
        checked = False  # whether ``refusal`` says who may answer already
        quick = (
            known is not None
            and click.index < len(known.request.questions)
            and known.request.questions[click.index].quorum <= 1  # (votes: the full path)
        )
        if quick and known is not None:
            allowed = widened(known, now=time.time())
            if not acked and self._gatekeeper.needs_slack(allowed, click.user_id):
                self._after_ack(click)
                return
            refusal, checked = await self._gatekeeper.refusal(allowed, click.user_id), True
            if refusal is None and await self._claim_at_once(known, click):
                return
        try:
            record = await self._life.store.get(ask_id=click.ask_id)
        except Exception:
            _log.exception("store unreachable while handling a click on ask %s", click.ask_id)
            notify(click, notices.cannot_record())
            return
        if record is None or click.index >= len(record.request.questions):
            notify(click, notices.no_longer_pending(None))
            return
        expected = record.messages[click.index] if click.index < len(record.messages) else None
        if self._mismatched(record, click):
            return
        existing = record.responses[click.index] if click.index < len(record.responses) else None
        if not record.pending or existing is not None:
            notify(click, notices.closed(record, existing))
            self._repair_if_stale(record, click.index, existing)
            return
        if not checked:  # (who may answer changes only by the clock: one look per click)
            allowed = widened(record, now=time.time())
            if not acked and self._gatekeeper.needs_slack(allowed, click.user_id):
                self._after_ack(click)
                return
            refusal = await self._gatekeeper.refusal(allowed, click.user_id)
        if refusal is not None:
            events.emit("refused", record.id, user=click.user_id, why="not_allowed")
            notify(click, refusal)
            return
        await self._answer(record, click, expected)

    async def judge(self, record: AskRecord, click: Click) -> str | None:
        """Why ``click``'s user may not act on ``record``'s question (a private notice), or
        ``None``: the same checks, in the same order and with the same events, as a click
        on its buttons gets. For the edit form, which cannot wait for Slack's ack."""
        try:
            foreign = await self._foreign(click)
        except SLACK_FAILURES:
            _log.exception("auth.test failed; cannot check which workspace an edit came from")
            return notices.cannot_record()
        if foreign is not None:
            return notices.foreign_installation()
        if self._mismatched(record, click):
            return notices.not_allowed()
        refusal = await self._gatekeeper.refusal(widened(record, now=time.time()), click.user_id)
        if refusal is not None:
            self._life.events.emit("refused", record.id, user=click.user_id, why="not_allowed")
        return refusal

    async def _foreign(self, click: Click) -> str | None:
        """Why ``click`` is another installation's (an event's ``why``, emitted), or
        ``None``. Raises ``SLACK_FAILURES`` when Slack cannot say which installation this is."""
        foreign = (await self._installation()).refusal(click)
        if foreign is not None:
            # Signed with our secret but from another installation: never ours to answer.
            self._life.events.emit("refused", click.ask_id, user=click.user_id, why=foreign)
        return foreign

    def _mismatched(self, record: AskRecord, click: Click) -> bool:
        """Whether ``click`` came from another message than its question's (emitted)."""
        expected = record.messages[click.index] if click.index < len(record.messages) else None
        if expected is None or (click.channel_id, click.message_ts) == (
            expected.channel,
            expected.ts,
        ):
            return False
        self._life.events.emit("refused", record.id, user=click.user_id, why="message_mismatch")
        return True

    async def _claim_at_once(self, record: AskRecord, click: Click) -> bool:
        """Answer a click by someone who may, on an ask whose unchanging part this process
        holds (``ClickClaims.known``): what the click answers is decided here, and the rest
        (the click's message is the question's, the ask still pending, the question still
        open) is checked by the store in the claim itself: one round trip on Redis.

        ``False``, having done nothing, when the click needs the full path (``handle``): a
        notice, or an answer the question does not allow, is only shown after the checks
        on the record as it stands, as before.
        """
        notify = self._messages.notify
        decision = decide(record.request.questions[click.index], click, at=utcnow())
        if not isinstance(decision, AskUserQuestionAnswerItem):
            return False
        try:
            result = await self._life.claim_click(
                record,
                click.index,
                decision,
                by=click.user_id,
                message=(click.channel_id, click.message_ts),
            )
        except UserInteractionError:
            return False  # (checked before anything was claimed)
        except Exception:
            _log.exception("store failed while recording an answer to ask %s", record.id)
            notify(click, notices.cannot_record())
            return True
        current = result.record
        if result.outcome == "message_mismatch":
            self._life.events.emit("refused", record.id, user=click.user_id, why="message_mismatch")
        elif result.outcome in ("accepted", "completed"):
            # The store checked the click's message is the question's (or none is recorded).
            message = MessageRef(click.channel_id or "", click.message_ts or "")
            self._background.spawn(self._show_answer(record, click.index, decision, message))
        elif current is None:
            notify(click, notices.no_longer_pending(None))
        else:
            index = click.index
            existing = current.responses[index] if index < len(current.responses) else None
            notify(click, notices.closed(current, existing))
            self._repair_if_stale(current, click.index, existing)
        return True

    async def _answer(self, record: AskRecord, click: Click, expected: MessageRef | None) -> None:
        notify = self._messages.notify
        question = record.request.questions[click.index]
        count = len(record.request.questions)
        decision = decide(question, click, at=utcnow())
        if decision is None:
            return
        if isinstance(decision, Notice):
            notify(click, notices.notice_text(decision, question, batch=count > 1))
            return
        if question.quorum > 1:
            await self._votes.cast(record, click, expected, decision)
            return
        try:
            result = await self._life.answer(record, click.index, decision, by=click.user_id)
        except UserInteractionError as exc:
            notify(click, notices.not_recorded(str(exc)))
            return
        except Exception:
            _log.exception("store failed while recording an answer to ask %s", record.id)
            notify(click, notices.cannot_record())
            return
        if result.outcome in ("accepted", "completed"):
            message = expected or MessageRef(click.channel_id or "", click.message_ts or "")
            # Rendered in the background too: the waiting agent and Slack's ack come first.
            self._background.spawn(self._show_answer(record, click.index, decision, message))
        elif result.outcome == "already_answered" and result.record is not None:
            winner = result.record.responses[click.index]
            if winner is not None:
                notify(click, notices.already_answered(winner))
        else:
            notify(click, notices.no_longer_pending(result.record))

    async def _show_answer(
        self,
        record: AskRecord,
        index: int,
        item: AskUserQuestionAnswerItem,
        message: MessageRef,
    ) -> None:
        final = answered_of(record, index, item)
        await self._messages.update(record.id, message, final, index=index)

    def _repair_if_stale(
        self, record: AskRecord, index: int, answer: AskUserQuestionAnswerItem | None
    ) -> None:
        """Show question ``index``'s outcome again if it ended a while ago and the store says
        its final update never landed (someone just clicked the inputs it still offers)."""
        if not needs_repair(record, index, answer, now=utcnow(), after=self.repair_after):
            return  # just ended: the winner's own update may still be on its way
        self._background.spawn(self._repair(record, index))

    async def _repair(self, record: AskRecord, index: int) -> None:
        try:
            stale = await self._life.store.unsettled(ask_id=record.id)
        except StoreUnavailable:
            return  # the sweep retries it once the store is back
        message = record.messages[index]
        if index not in stale or message is None:
            return  # its update landed: the click came from an old copy of the message
        question = record.request.questions[index]
        self._life.events.emit("repaired", record.id, question=question.id)
        await self._messages.update(record.id, message, final_of(record, index), index=index)
