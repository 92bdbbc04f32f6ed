"""``AskLifecycle``: what happens to an ask, and when, with the store deciding every race.

An ask is created pending; it ends once, by the first of: every question answered, its
deadline passing, an abort, the relay closing, a failure to post. Each end is an atomic
claim in the store (``answer``, ``finish``), so with many replicas exactly one wins. It knows
no channel: the composition root builds it, and the channel showing the asks (``relay.slack``)
``attach``es its ``on_end``, called once, by the winner, for every end that is not an answer.

A message whose final update did not land (Slack down, the replica killed first) is the
store's "unsettled" until the channel reports it ``settled``; the expiry task sweeps those
that stay so past a grace and hands them back to the channel (``on_unsettled``), for at
most ``Settling.window`` seconds after the ask ended.
"""

from __future__ import annotations

import contextlib
import logging
import math
from collections.abc import Awaitable, Callable, Set

from relay.asks.events import EventName, Events
from relay.asks.expiry import Expiry, Settling
from relay.asks.followups import FollowUpRunner
from relay.asks.inflight import InFlightWaits, Released
from relay.asks.terms import default_answers, ended_event, known, votes_on_version
from relay.errors import (
    ErrorCode,
    RelayConfigError,
    UserInteractionError,
    ask_aborted,
    ask_closed,
    ask_timed_out,
)
from relay.seam.questions import AskUserQuestionAnswerItem, validate_answer_item
from relay.store import (
    AnswerResult,
    AskError,
    AskRecord,
    AskStatus,
    AskStore,
    StoreUnavailable,
    VoteResult,
    utcnow,
)
from relay.store.base import ClickClaim, ClickClaims

__all__ = ["AskLifecycle"]

_log = logging.getLogger("relay.asks")


class AskLifecycle:
    """Creates, answers, waits for and ends asks in ``store``, and times them out.

    ``waiting`` holds the asks an ``ask()`` call in this process waits for: stopping ends
    them. Asks made with ``start()`` alone (the API's) are not in it: on a durable store they
    outlive this process, and nothing would ever remove them.
    """

    def __init__(
        self,
        *,
        store: AskStore,
        events: Events,
        on_end: Callable[[AskRecord], None] | None = None,
        sweep_interval: float | None = None,
        on_remind: Callable[[AskRecord, int], Awaitable[None]] | None = None,
        on_escalate: Callable[[AskRecord], Awaitable[None]] | None = None,
        reminder_lease: float = 30.0,
        on_unsettled: Callable[[AskRecord, Set[int]], Awaitable[None]] | None = None,
        settling: Settling | None = None,
    ) -> None:
        self.store = store
        self.claims: ClickClaims | None = store if isinstance(store, ClickClaims) else None
        """The store, when it checks and claims a click in one step (see ``claim_click``)."""
        self.events = events
        self._sweep_interval = sweep_interval
        self._reminder_lease = reminder_lease
        self._settling = settling if settling is not None else Settling()
        self.waiting: set[str] = set()
        self._waits = InFlightWaits()  # every wait() in progress: stopping answers them at once
        self.closed = False
        self._attached = False
        # Without on_end, the lifecycle waits for its channel to attach (relay serve's way).
        self.attach(
            on_end=on_end or (lambda _: None),  # nothing shown, nothing to withdraw
            on_remind=on_remind,
            on_escalate=on_escalate,
            on_unsettled=on_unsettled,
        )
        self._attached = on_end is not None

    def attach(
        self,
        *,
        on_end: Callable[[AskRecord], None],
        on_remind: Callable[[AskRecord, int], Awaitable[None]] | None = None,
        on_escalate: Callable[[AskRecord], Awaitable[None]] | None = None,
        on_unsettled: Callable[[AskRecord, Set[int]], Awaitable[None]] | None = None,
    ) -> None:
        """Connect the channel that shows these asks (once, before the expiry starts): it
        withdraws what ends unanswered (``on_end``), reminds, escalates and re-shows."""
        if self._attached:
            raise RelayConfigError(
                "this AskLifecycle already serves a channel: build one lifecycle per channel",
                setting="lifecycle",
            )
        self._attached = True
        self._on_end = on_end
        self.follow_ups = FollowUpRunner(
            store=self.store,
            events=self.events,
            wake=lambda at: self._expiry.add(at),
            on_remind=on_remind,
            on_escalate=on_escalate,
            on_unsettled=on_unsettled,
            settling=self._settling,
        )
        self._expiry = Expiry(
            store=self.store,
            expire=self.expire,
            sweep_interval=self._sweep_interval,
            remind=self.follow_ups.remind if on_remind is not None else None,
            reminder_lease=self._reminder_lease,
            resettle=self.follow_ups.resettle if on_unsettled is not None else None,
            settling=self.follow_ups.settling,
        )

    async def create(self, record: AskRecord, *, held: bool) -> None:
        """Record a new pending ask; ``held`` when an ``ask()`` here waits for its outcome.

        ``PROVIDER_FAILED`` if the store cannot be reached (nothing was recorded).
        """
        try:
            await self.store.create(record=record)
        except StoreUnavailable as exc:
            raise UserInteractionError(
                ErrorCode.PROVIDER_FAILED,
                f"the relay cannot record new asks right now ({exc}); nothing was posted, try"
                " again shortly",
            ) from exc
        if held:
            self.waiting.add(record.id)
        agent = record.request.agent
        self.events.emit(
            "created",
            record.id,
            channel=record.target.channel,
            questions=len(record.request.questions),
            agent=agent.id if agent else None,
        )

    def schedule(self, record: AskRecord) -> None:
        """Time the (posted, pending) ask out at its deadline, if it has one."""
        if record.deadline is not None:
            self._expiry.add(record.deadline)

    async def arm_reminders(self, record: AskRecord) -> None:
        """Schedule the (posted, pending) ask's first nudge (a reminder or its escalation),
        if it has any."""
        await self.follow_ups.arm(record)

    def release(self, ask_id: str) -> None:
        """No ``ask()`` here waits for ``ask_id`` any more."""
        self.waiting.discard(ask_id)

    def outcome(self, ask_id: str) -> Awaitable[AskRecord | None]:
        """The wait, however long it takes, for a held ask's outcome (``ask()``'s wait): the
        store's own coroutine, with none of this layer's held per waiting ask for the
        collector to walk. The caller checks the result with ``known`` and ``release``s the
        ask once the wait ends, however it ends.

        Not released by ``stop``: stopping ends a held ask itself.
        """
        return self.store.wait(ask_id=ask_id, within=None)

    async def wait(self, ask_id: str, *, within: float | None = None) -> AskRecord:
        """Wait until the ask is final (or ``within`` seconds pass); the record as it stands.

        Once stopping, waits end at once with the record as it stands.
        """
        try:
            record = await self._waits.run(self.store.wait(ask_id=ask_id, within=within))
        except Released:
            record = await self.store.get(ask_id=ask_id)
        return known(ask_id, record)

    async def answer(
        self, record: AskRecord, index: int, item: AskUserQuestionAnswerItem, *, by: str | None
    ) -> AnswerResult:
        """Check ``item`` against question ``index`` and claim it as the answer.

        Raises ``UserInteractionError`` for an answer the question does not allow, and
        whatever the store raises; ``by`` (who answered) goes into the event only.
        """
        question = record.request.questions[index]
        validate_answer_item(question, item, index=index)
        result = await self.store.answer(ask_id=record.id, index=index, item=item)
        self._claimed(record, question.id, item, result.outcome, result.record, by=by)
        return result

    async def claim_click(
        self,
        record: AskRecord,
        index: int,
        item: AskUserQuestionAnswerItem,
        *,
        by: str | None,
        message: tuple[str | None, str | None],
    ) -> ClickClaim:
        """``answer``, in the one step of a ``ClickClaims`` store (``claims``), refused as
        ``message_mismatch`` if question ``index`` was posted to another ``message``.

        ``record`` need only be right in what never changes (``ClickClaims.known``).
        """
        if self.claims is None:
            raise TypeError("this store does not claim clicks in one step")
        question = record.request.questions[index]
        validate_answer_item(question, item, index=index)
        result = await self.claims.claim_click(
            ask_id=record.id, index=index, item=item, message=message
        )
        self._claimed(record, question.id, item, result.outcome, result.record, by=by)
        return result

    def _claimed(
        self,
        record: AskRecord,
        question: str,
        item: AskUserQuestionAnswerItem,
        outcome: str,
        current: AskRecord | None,
        *,
        by: str | None,
    ) -> None:
        """After an answer's claim: the event, and for the one that completed the ask the
        sweep of its messages (and, when defaults took the other questions, their update)."""
        if outcome == "completed" and current is not None:
            self._expiry.settle_later()
            if current.defaulted:
                # Defaults took the other questions while this one was open: show them too.
                self._on_end(current)
        if outcome in ("accepted", "completed"):
            self._answered(record, question, item, by=by, last=outcome == "completed")

    def _answered(
        self,
        record: AskRecord,
        question: str,
        item: AskUserQuestionAnswerItem,
        *,
        by: str | None,
        last: bool,
    ) -> None:
        """The event of a question answered (``answered`` when it was the ask's last)."""
        waited = (
            (item.answered_at - record.created_at).total_seconds() if item.answered_at else None
        )
        name: EventName = "answered" if last else "question_answered"
        self.events.emit(name, record.id, question=question, by=by, waited=waited)

    async def vote(
        self,
        record: AskRecord,
        index: int,
        item: AskUserQuestionAnswerItem,
        *,
        by: str | None,
        version: int = 1,
        revise: bool = False,
    ) -> VoteResult:
        """Count ``item`` (one label, by one person; or the question's current edit) as a
        vote on question ``index`` at ``version``, which needs ``approvals_required`` votes
        for an option or one for a ``veto`` label. With ``revise``, ``item`` is an edited
        call made the question's next version and its editor's vote (``Votes.revise``).

        Raises ``UserInteractionError`` for a label the question does not offer, and
        whatever the store raises. The store counts each person once a version, atomically.
        """
        question = record.request.questions[index]
        validate_answer_item(question, item, index=index)
        required, veto = question.quorum, frozenset(question.veto or ())
        if revise:
            result = await self.store.revise(
                ask_id=record.id, index=index, item=item, required=required, veto=veto
            )
        else:
            result = await self.store.vote(
                ask_id=record.id,
                index=index,
                item=item,
                required=required,
                veto=veto,
                version=version,
            )
        if result.outcome in ("counted", "decided", "completed"):
            self.events.emit(
                "voted", record.id, question=question.id, by=by, votes=votes_on_version(result)
            )
        if result.outcome in ("decided", "completed"):
            self._answered(record, question.id, item, by=by, last=result.outcome == "completed")
        done = result.record if result.outcome == "completed" else None
        if done is not None:
            self._expiry.settle_later()
        if done is not None and done.defaulted:
            self._on_end(done)
        return result

    async def end(
        self,
        ask_id: str,
        status: AskStatus,
        error: AskError,
        *,
        detail: str | None = None,
        method: str | None = None,
    ) -> AskRecord | None:
        """Claim a final outcome other than an answer; the winner calls ``on_end``."""
        won, record = await self.store.finish(
            ask_id=ask_id, status=status, error=error, at=utcnow()
        )
        if won and record is not None:
            self._expiry.settle_later()
            name = ended_event(status, error)
            self.events.emit(name, ask_id, detail=detail, method=method)  # type: ignore[arg-type]
            self._on_end(record)
        return record

    async def abandon(self, ask_id: str, error: UserInteractionError, *, detail: str) -> None:
        """Fail an ask whose messages the store could not record (the channel withdrew them
        itself: ``on_end`` is not called)."""
        with contextlib.suppress(StoreUnavailable):
            await self.store.finish(
                ask_id=ask_id, status=AskStatus.FAILED, error=AskError.of(error), at=utcnow()
            )
        self.events.emit("failed", ask_id, detail=detail, method="store")

    async def abort(self, ask_id: str) -> AskRecord | None:
        """Abort a pending ask (``ASK_ABORTED``); the final record."""
        return await self.end(ask_id, AskStatus.ABORTED, AskError.of(ask_aborted()))

    async def expire(self, ask_id: str) -> AskRecord | None:
        """Time out a pending ask whose deadline has passed; the final record.

        When every unanswered question names a ``default``, the ask is answered with them
        instead (each a claim of its own, so a person's click that lands first still wins).
        """
        record = await self.store.get(ask_id=ask_id)
        if record is None or not record.pending:
            return record
        defaults = default_answers(record, at=utcnow())
        if defaults is not None:
            return await self._take_defaults(record, defaults)
        error = ask_timed_out(record.target.timeout or 0.0)
        return await self.end(ask_id, AskStatus.TIMED_OUT, AskError.of(error))

    async def _take_defaults(
        self, record: AskRecord, defaults: list[tuple[int, AskUserQuestionAnswerItem]]
    ) -> AskRecord | None:
        current: AskRecord | None = record
        for index, item in defaults:
            result = await self.store.answer(ask_id=record.id, index=index, item=item)
            current = result.record
            if result.outcome == "completed" and current is not None:
                # Only the claim that completed the ask tells the channel (once, on any replica).
                taken = sum(1 for r in current.responses if r is not None and r.defaulted)
                self.events.emit("defaulted", record.id, questions=taken)
                self._expiry.settle_later()
                self._on_end(current)
                return current
            if result.outcome in ("not_pending", "unknown"):
                return current
        return current

    def start_expiry(self) -> None:
        """Start timing out due asks now, also those other replicas created (needs a loop)."""
        self._expiry.start()

    async def stop(self) -> None:
        """Refuse new asks, end those that cannot outlive this process, release every wait.

        Ended (``ASK_ABORTED``, reason ``closed``): the held asks and, with a store that is
        not durable, every pending ask. Idempotent.
        """
        if self.closed:
            return
        self.closed = True
        await self._expiry.aclose()
        try:
            closing = set(self.waiting)
            if not self.store.durable:
                closing.update(await self.store.due(now=math.inf, limit=1_000_000))
            for ask_id in closing:
                try:
                    await self.end(ask_id, AskStatus.ABORTED, AskError.of(ask_closed()))
                except Exception as exc:  # the store is down: the others still get closed
                    _log.warning("could not close ask %s while stopping: %s", ask_id, exc)
        finally:
            self._waits.release()
