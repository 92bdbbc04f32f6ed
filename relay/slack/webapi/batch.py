"""Batches: tool approvals one agent session asks for at once, shown as one Slack message.

``Batcher`` holds a batchable approval for ``window`` seconds: others from the same token,
agent and place arriving meanwhile (each within ``window`` of the one before) join it, and
the lot is posted as one message (``BatchPoster``); a call left alone is posted as ever.
Every call stays its own ask (its own decision, grant, receipt, deadline); their ids name
the batch (``relay.asks.batches``), which is all any replica needs to show the message
again (``BatchShow``, through a ``Coalescer``: one update at a time, the newest wins).

The batch buttons are read in ``relay.slack.intake.batch_clicks``. Nothing here decides a call.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Coroutine, Hashable
from dataclasses import dataclass, field
from typing import Any

from relay.asks.batches import MAX_BATCH, BatchRef, batch_of, new_batch
from relay.asks.lifecycle import AskLifecycle
from relay.errors import UserInteractionError
from relay.seam.questions import AskUserQuestionRequest
from relay.slack.rendering.batch_view import Mode, render_batch
from relay.slack.webapi.coalesce import Coalescer
from relay.slack.webapi.failures import SLACK_FAILURES, provider_failed
from relay.slack.webapi.messages import TALLY_GAP, SlackMessages, Unrecorded
from relay.store import AskError, AskRecord, AskStatus, MessageRef, StoreUnavailable, Target
from relay.store.record import utcnow

__all__ = ["BatchPoster", "BatchShow", "Batcher", "pending"]

_log = logging.getLogger("relay.slack")

_LONGEST_HOLD = 4  # a batch is posted at the latest this many windows after its first call

PostOne = Callable[[AskUserQuestionRequest, Target, str | None], Awaitable[AskRecord]]
PostMany = Callable[
    [list[tuple[AskUserQuestionRequest, Target]], str | None], Awaitable[list[AskRecord]]
]


def pending(record: AskRecord | None) -> bool:
    """Whether ``record`` is a call still waiting with no vote yet (a batch button covers it)."""
    return record is not None and record.pending and not any(record.responses)


def _reminding(record: AskRecord) -> Hashable:
    """When a call's reminders come and whom they name: calls alike share one."""
    target = record.target
    return target.remind_after, target.reminders, target.allowed_users, target.allowed_groups


def _escalating(record: AskRecord) -> Hashable:
    """When and to whom a call escalates: calls alike share one escalation post."""
    target = record.target
    return (
        target.escalate_after,
        target.escalate_users,
        target.escalate_groups,
        target.escalate_channel,
    )


@dataclass(eq=False)
class _Waiting:
    request: AskUserQuestionRequest
    target: Target
    future: asyncio.Future[AskRecord]


@dataclass(eq=False)
class _Group:
    owner: str | None
    first: float
    last: float
    members: list[_Waiting] = field(default_factory=list)
    full: asyncio.Event = field(default_factory=asyncio.Event)
    posting: bool = False


def _quiet(future: asyncio.Future[AskRecord]) -> None:
    # A waiter that left: its exception is nobody's to read (and must not be logged as lost).
    if not future.cancelled():
        future.exception()


class Batcher:
    """Collects batchable approvals per session for ``window`` seconds, then posts them:
    alone (``one``) or together (``many``)."""

    def __init__(
        self,
        window: float,
        *,
        one: PostOne,
        many: PostMany,
        abort: Callable[[str], Coroutine[Any, Any, object]],
    ) -> None:
        self._window = window
        self._one = one
        self._many = many
        self._abort = abort
        self._open: dict[Hashable, _Group] = {}
        self._tasks: set[asyncio.Task[object]] = set()

    async def start(
        self, key: Hashable, request: AskUserQuestionRequest, target: Target, owner: str | None
    ) -> AskRecord:
        """The posted record of ``request``, posted with whatever else of ``key`` arrives
        within the window. A caller cancelled before the post leaves the batch; one
        cancelled after has its ask withdrawn, as a cancelled ``start`` always has."""
        loop = asyncio.get_running_loop()
        now = loop.time()
        group = self._open.get(key)
        if group is None:
            group = self._open[key] = _Group(owner=owner, first=now, last=now)
            task = loop.create_task(self._post_later(key, group))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
        waiting = _Waiting(request, target, loop.create_future())
        waiting.future.add_done_callback(_quiet)
        group.members.append(waiting)
        group.last = now
        if len(group.members) >= MAX_BATCH:
            self._open.pop(key, None)  # the next call starts another batch
            group.full.set()
        try:
            return await asyncio.shield(waiting.future)
        except asyncio.CancelledError:
            if not group.posting:
                group.members.remove(waiting)
            else:
                # Posted (or being posted) for nobody: withdrawn once it is.
                waiting.future.add_done_callback(self._withdraw)
            raise

    def _withdraw(self, future: asyncio.Future[AskRecord]) -> None:
        if future.cancelled() or future.exception() is not None:
            return
        task: asyncio.Task[object] = asyncio.ensure_future(self._abort(future.result().id))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _post_later(self, key: Hashable, group: _Group) -> None:
        loop = asyncio.get_running_loop()
        while not group.full.is_set():
            due = min(group.last + self._window, group.first + _LONGEST_HOLD * self._window)
            delay = due - loop.time()
            if delay <= 0:
                break
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(group.full.wait(), delay)
        if self._open.get(key) is group:
            del self._open[key]
        group.posting = True
        members = list(group.members)
        if not members:
            return
        try:
            if len(members) == 1:
                records = [await self._one(members[0].request, members[0].target, group.owner)]
            else:
                records = await self._many([(m.request, m.target) for m in members], group.owner)
        except Exception as exc:
            for member in members:
                if not member.future.done():
                    member.future.set_exception(exc)
            return
        except BaseException:
            for member in members:
                member.future.cancel()
            raise
        for member, record in zip(members, records, strict=True):
            if not member.future.done():
                member.future.set_result(record)

    async def finish(self) -> None:
        """Post what is being collected now (a closing provider refuses it: each caller is
        told) and wait for the posts."""
        for group in list(self._open.values()):
            group.full.set()
        await asyncio.gather(*self._tasks, return_exceptions=True)


class BatchShow:
    """Shows a batch's message as its calls stand, one update at a time per batch (the
    newest replacing any waiting), and remembers what each message is showing."""

    def __init__(self, *, life: AskLifecycle, messages: SlackMessages) -> None:
        self._life = life
        self._messages = messages
        self._updates = Coalescer(TALLY_GAP)
        # Which calls each pending batch shows (list or review, page): this process's
        # view; a replica that never saw a click shows the list's first page.
        self._views: dict[str, tuple[Mode, int]] = {}

    def view(self, ref: BatchRef) -> tuple[Mode, int]:
        """What the batch's message shows: list or review, and the page."""
        return self._views.get(ref.batch, ("list", 0))

    def set_view(self, ref: BatchRef, mode: Mode, page: int) -> None:
        """Show ``mode`` and ``page`` from the next update on."""
        self._views[ref.batch] = (mode, page)

    async def records(self, ref: BatchRef) -> list[AskRecord | None]:
        """Every call of the batch as the store holds it (``None``: no longer held)."""
        store = self._life.store
        return list(await asyncio.gather(*(store.get(ask_id=m) for m in ref.members)))

    async def refresh(self, ref: BatchRef) -> bool:
        """Show the batch as it stands now (or soon after, coalesced); ``True``."""
        await self._updates.run(ref.batch, lambda: self._show(ref))
        return True

    async def _show(self, ref: BatchRef) -> bool:
        try:
            records = await self.records(ref)
        except StoreUnavailable as exc:
            _log.warning("could not read batch %s to show it: %s", ref.batch, exc)
            return False  # the lifecycle's sweep shows the ended calls once it is back
        message = next((r.messages[0] for r in records if r is not None and r.messages[0]), None)
        if message is None:
            return True  # nothing was posted
        mode, page = self.view(ref)
        shown = render_batch(records, ref, mode=mode, page=page, now=time.time())
        if not await self._messages.replace_quietly(ref.first, message, shown):
            return False
        done = True
        for record in records:
            if record is None:
                continue
            if record.pending and not any(record.responses):
                done = False
                continue
            with contextlib.suppress(StoreUnavailable):  # shown again by the sweep: harmless
                await self._life.store.settled(ask_id=record.id, index=0)
        if done:
            self._views.pop(ref.batch, None)
        return done

    async def remind(
        self, record: AskRecord, sent: int, remind: Callable[[AskRecord, int], Awaitable[None]]
    ) -> None:
        """``remind`` for ``record``, unless an earlier call of its batch, reminding the same
        way, still waits: its reminder speaks for the whole message."""
        if not await self._spoken_for(record, _reminding):
            await remind(record, sent)

    async def escalate(
        self, record: AskRecord, escalate: Callable[[AskRecord], Awaitable[None]]
    ) -> None:
        """``escalate`` ``record``, unless an earlier call of its batch, escalating to the same
        people, still waits: its escalation speaks for the whole message, which is shown
        again with every call escalated by now."""
        ref = batch_of(record.id)
        if ref is not None and await self._spoken_for(record, _escalating):
            await self.refresh(ref)
            return
        await escalate(record)

    async def _spoken_for(self, record: AskRecord, how: Callable[[AskRecord], Hashable]) -> bool:
        ref = batch_of(record.id)
        if ref is None or ref.call == 1:
            return False
        earlier = (await self.records(ref))[: ref.call - 1]
        return any(r is not None and pending(r) and how(r) == how(record) for r in earlier)


class BatchPoster:
    """Records a batch's calls (each its own ask) and posts the one message showing them."""

    def __init__(self, *, life: AskLifecycle, messages: SlackMessages, show: BatchShow) -> None:
        self._life = life
        self._messages = messages
        self._show = show

    async def start(
        self, members: list[tuple[AskUserQuestionRequest, Target]], owner: str | None
    ) -> list[AskRecord]:
        """Record and post ``members``; their records as they stand after. Fails them all
        (``PROVIDER_FAILED``) when Slack or the store refuses, as a lone ask would fail."""
        ids = new_batch(len(members))
        ref = batch_of(ids[0])
        assert ref is not None  # (new_batch's ids are a batch's)
        records = []
        for ask_id, (request, target) in zip(ids, members, strict=True):
            deadline = time.time() + target.timeout if target.timeout is not None else None
            records.append(
                AskRecord(
                    id=ask_id,
                    request=AskUserQuestionRequest(request.questions, agent=request.agent),
                    target=target,
                    created_at=utcnow(),
                    deadline=deadline,
                    messages=(None,),
                    responses=(None,),
                    owner=owner,
                )
            )
        created: list[AskRecord] = []
        try:
            for record in records:
                await self._life.create(record, held=False)
                created.append(record)
        except UserInteractionError as exc:
            await self._fail(created, exc, detail=str(exc), method="store")
            raise
        rendered = render_batch(records, ref)
        lead = records[0].target
        try:
            channel = await self._messages.open_channel(lead.channel)
            response = await self._messages.post(
                channel,
                thread_ts=lead.thread_ts,
                text=rendered.text,
                blocks=rendered.blocks,
                unfurl_links=False,
                unfurl_media=False,
            )
        except SLACK_FAILURES as exc:
            error = provider_failed(exc, doing="to post the questions")
            await self._fail(records, error, detail=str(exc), method="chat.postMessage")
            raise error from exc
        message = MessageRef(str(response.get("channel") or channel), str(response["ts"]))
        current: list[AskRecord | None] = []
        try:
            for record in records:
                current.append(
                    await self._life.store.set_message(ask_id=record.id, index=0, message=message)
                )
        except StoreUnavailable as exc:
            failure = await self._messages.abandon(records[0], Unrecorded([(0, message)], exc))
            for record in records:
                await self._life.abandon(record.id, failure, detail=str(exc))
            raise failure from exc
        ended = False
        for record, now in zip(records, current, strict=True):
            self._life.events.emit("posted", record.id, channel=message.channel, messages=1)
            if now is not None and not now.pending:
                ended = True  # ended while posting: its ending could not show it
                continue
            self._life.schedule(record)
            await self._life.arm_reminders(record)
        if ended:
            await self._show.refresh(ref)
        return [now or record for record, now in zip(records, current, strict=True)]

    async def _fail(
        self, records: list[AskRecord], error: UserInteractionError, *, detail: str, method: str
    ) -> None:
        for record in records:
            with contextlib.suppress(StoreUnavailable):
                await self._life.end(
                    record.id, AskStatus.FAILED, AskError.of(error), detail=detail, method=method
                )
