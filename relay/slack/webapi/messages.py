"""``SlackMessages``: posting an ask's messages, updating them, and private notices.

Posts go one at a time per channel (Slack takes about one a second per channel); updates
and notices run in the background (``Background``), after the outcome is recorded. A final
update that lands is reported to the store (``settled``); one that does not is retried by the
lifecycle's sweep (``reshow``).
"""

from __future__ import annotations

import asyncio
import logging
import time
import weakref
from collections.abc import Sequence, Set
from typing import Any

from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from relay.asks.events import Events
from relay.errors import ErrorCode, RelayException, UserInteractionError
from relay.seam.questions import Vote
from relay.slack.intake.parse import Click
from relay.slack.intake.private import tell_privately
from relay.slack.rendering import kit
from relay.slack.rendering.final import ended as _ended
from relay.slack.rendering.final import final_of
from relay.slack.rendering.reminders import escalation_note, escalation_text, reminder_text
from relay.slack.rendering.render import (
    RenderedQuestion,
    render_detail_reply,
    render_outcome,
    render_question,
)
from relay.slack.webapi.background import Background
from relay.slack.webapi.calls import LeanCalls
from relay.slack.webapi.coalesce import Coalescer
from relay.slack.webapi.failures import SLACK_FAILURES
from relay.store import AskRecord, AskStore, MessageRef, StoreUnavailable

__all__ = ["SlackMessages", "Unrecorded"]

_log = logging.getLogger("relay.slack")

TALLY_GAP = 1.0
"""Seconds between two live updates of one message (Slack's Tier 3: ~50 a minute)."""

# Slack's refusals of a post that no retry fixes (the channel is wrong, gone or closed).
_NO_RETRY = frozenset(
    {"channel_not_found", "not_in_channel", "is_archived", "user_not_found", "cannot_dm_bot"}
)


class Unrecorded(RelayException):
    """Messages were posted but the store could not record where: ``posted`` says which."""

    def __init__(self, posted: list[tuple[int, MessageRef]], cause: StoreUnavailable) -> None:
        super().__init__(str(cause))
        self.posted = posted
        self.cause = cause


class SlackMessages:
    """Every Web API call that shows an ask: post, update, withdraw, notify."""

    def __init__(
        self, *, client: AsyncWebClient, store: AskStore, events: Events, background: Background
    ) -> None:
        self._client = client
        # chat.update and chat.postEphemeral, the calls a click makes
        # (see relay.slack.webapi.calls).
        self.lean = LeanCalls(client)
        self._store = store
        self._events = events
        self._background = background
        self._dm_channels: dict[str, str] = {}
        # Final updates on their way (ask id, question): the sweep leaves them to land.
        self._in_flight: set[tuple[str, int]] = set()
        # Live tallies and notes, per message: at most one update a TALLY_GAP (see show_live).
        self._tallies = Coalescer(TALLY_GAP)
        # One post at a time per channel (see post); unused locks are dropped.
        self._post_locks: weakref.WeakValueDictionary[str, asyncio.Lock] = (
            weakref.WeakValueDictionary()
        )

    async def open_channel(self, channel: str) -> str:
        """The channel to post in: a user id (U…/W…) becomes the id of the DM with them."""
        if not channel.startswith(("U", "W")):
            return channel
        if channel not in self._dm_channels:
            response = await self._client.conversations_open(users=channel)
            self._dm_channels[channel] = str(response["channel"]["id"])
        return self._dm_channels[channel]

    async def post_all(
        self, record: AskRecord, rendered: list[RenderedQuestion]
    ) -> AskRecord | None:
        """Post every question; the record after, with late messages withdrawn if it ended.

        Raises ``Unrecorded`` when a message went out but the store could not record it.
        """
        channel = await self.open_channel(record.target.channel)
        posted: list[tuple[int, MessageRef]] = []
        current: AskRecord | None = record
        for index, message in enumerate(rendered):
            response = await self.post(
                channel,
                thread_ts=record.target.thread_ts,
                text=message.text,
                blocks=message.blocks,
                unfurl_links=False,
                unfurl_media=False,
            )
            ts = str(response["ts"])
            channel = str(response.get("channel") or channel)
            posted.append((index, MessageRef(channel, ts)))
            try:
                # The ask as it stood once this message was recorded: if it ended before,
                # its ending could not withdraw this message (see below).
                current = await self._store.set_message(
                    ask_id=record.id, index=index, message=posted[-1][1]
                )
            except StoreUnavailable as exc:
                # Live in Slack, unknown to the store: nobody could ever learn its answer.
                raise Unrecorded(posted, exc) from exc
            parts = len(message.detail_overflow)
            for part, piece in enumerate(message.detail_overflow, start=1):
                reply = render_detail_reply(piece, part=part, parts=parts)
                await self.post(channel, thread_ts=record.target.thread_ts or ts, **reply)
        self._events.emit("posted", record.id, channel=channel, messages=len(rendered))
        if current is not None and not current.pending:
            # It ended (closed, aborted) while a post was in flight: withdraw what landed late.
            await self.withdraw(current)
        return current

    async def post(self, channel: str, **fields: Any) -> dict[str, Any]:
        """``chat.postMessage``, one at a time per channel; the response data.

        Slack takes about one message per second per channel and answers the rest 429; posts
        sent together would be refused together, retried together and, with many, run out of
        retries. Queued, each waits its turn and needs at most a retry or two.

        Sent by ``LeanCalls`` as ``chat.update`` is: slack-sdk's request (``None`` fields
        left out), retried and raised as slack-sdk does, for less CPU (BENCHMARKS.md, 12th).
        """
        lock = self._post_locks.get(channel)
        if lock is None:
            lock = self._post_locks[channel] = asyncio.Lock()
        body: dict[str, Any] = {"channel": channel}
        body.update((name, value) for name, value in fields.items() if value is not None)
        async with lock:
            return await self.lean.call("chat.postMessage", body)

    async def withdraw(self, record: AskRecord) -> None:
        """Replace the inputs of every question nobody answered with how the ask ended (or
        with the default it took)."""
        owed: list[tuple[int, MessageRef]] = []
        for index, message in enumerate(record.messages):
            response = record.responses[index] if index < len(record.responses) else None
            if message is None or (response is not None and not response.defaulted):
                continue  # a person's answer: its message was updated when they answered
            owed.append((index, message))
        # All on their way from now, one after another: the sweep waits for each.
        self._in_flight.update((record.id, index) for index, _ in owed)
        try:
            for index, message in owed:
                await self.update(record.id, message, final_of(record, index), index=index)
        finally:
            self._in_flight.difference_update((record.id, index) for index, _ in owed)

    async def reshow(self, record: AskRecord, stale: Set[int]) -> None:
        """Retry the final update of the ended ask's messages in ``stale`` (claimed by the
        lifecycle's sweep: each landed one is ``settled``, the others wait for the next)."""
        for index in sorted(stale):
            message = record.messages[index] if index < len(record.messages) else None
            if message is None or (record.id, index) in self._in_flight:
                continue  # (still retrying here: if it fails, the next sweep has it)
            if await self.update(record.id, message, final_of(record, index), index=index):
                question = record.request.questions[index].id
                self._events.emit("swept", record.id, question=question)

    async def update(
        self,
        ask_id: str,
        message: MessageRef,
        final: RenderedQuestion,
        *,
        index: int | None = None,
    ) -> bool:
        """Show ``final`` in ``message``; a failure is an event, never an error. With
        ``index``, ``final`` is question ``index``'s end: once shown, the store is told
        (``settled``), else the sweep retries it. Whether it landed."""
        key = None if index is None else (ask_id, index)
        if key is not None:
            self._in_flight.add(key)
        try:
            await self._replace(message, final)
        except SLACK_FAILURES as exc:
            # The outcome is already recorded and returned; the sweep retries the message.
            error = str(exc) or type(exc).__name__
            self._events.emit("slack_error", ask_id, method="chat.update", error=error)
            return False
        finally:
            if key is not None:
                self._in_flight.discard(key)
        if index is not None:
            try:
                await self._store.settled(ask_id=ask_id, index=index)
            except StoreUnavailable as exc:
                # Shown but not recorded: the sweep shows it once more, which is harmless.
                _log.warning("could not record the update of ask %s as landed: %s", ask_id, exc)
        return True

    async def _replace(self, message: MessageRef, final: RenderedQuestion) -> None:
        async with self._background.slots:
            await self.lean.call(
                "chat.update",
                {
                    "channel": message.channel,
                    "ts": message.ts,
                    "text": final.text,
                    "blocks": final.blocks,
                },
            )

    async def abandon(self, record: AskRecord, lost: Unrecorded) -> UserInteractionError:
        """Withdraw what was posted of an ask the store failed to record; the error saying
        so: the agent must know whether anything still shows in Slack before it asks again."""
        count = len(record.request.questions)
        stuck: list[MessageRef] = []
        for index, message in lost.posted:
            final = render_outcome(
                record.request.questions[index],
                outcome="failed",
                agent=record.request.agent,
                index=index,
                count=count,
            )
            try:
                await self._replace(message, final)
            except SLACK_FAILURES:
                stuck.append(message)
        error = f"the relay's store failed while posting the question ({lost.cause})"
        if stuck:
            where = ", ".join(f"{m.channel} {m.ts}" for m in stuck)
            text = (
                f"{error}; {len(stuck)} of the {len(lost.posted)} messages already posted could"
                f" not be withdrawn and still show in Slack ({where}), but answers to them are"
                " lost: ask again once the store is back"
            )
        else:
            text = (
                f"{error}; the {len(lost.posted)} message(s) already posted were withdrawn, so"
                " nothing is pending: ask again once the store is back"
            )
        return UserInteractionError(ErrorCode.PROVIDER_FAILED, text)

    async def remind(self, record: AskRecord, sent: int) -> None:
        """Post reminder number ``sent`` + 1 in the thread of the ask's first message."""
        message = next((m for m in record.messages if m is not None), None)
        if message is None:
            return  # nothing was posted that a reminder could follow
        text = reminder_text(record, sent=sent, now=time.time())
        await self.post(
            message.channel,
            thread_ts=record.target.thread_ts or message.ts,
            text=text,
            blocks=[kit.section(text)],
        )

    async def escalate(self, record: AskRecord) -> None:
        """Escalate the ask: mention who it now reaches, in ``escalate_channel`` with a
        link back to the question (else in its thread), and say so on its messages."""
        message = next((m for m in record.messages if m is not None), None)
        if message is None:
            return  # nothing was posted that could be escalated
        now = time.time()
        target = record.target
        if target.escalate_channel:
            link = await self._permalink(message)
            text = escalation_text(record, now=now, link=link)
            try:
                await self.post(
                    await self.open_channel(target.escalate_channel),
                    text=text,
                    blocks=[kit.section(text)],
                    unfurl_links=False,
                )
            except SlackApiError as exc:
                error = str(exc.response.get("error") or "")
                if error not in _NO_RETRY:
                    raise  # retried once the claim lapses
                # No retry fixes it: the operator is told, and the escalation goes on
                # (the people it adds may answer; the message says so).
                self._events.emit(
                    "slack_error",
                    record.id,
                    method="chat.postMessage",
                    error=f"{error}: escalate_channel {target.escalate_channel}",
                )
        else:
            text = escalation_text(record, now=now, link=None)
            await self.post(
                message.channel,
                thread_ts=target.thread_ts or message.ts,
                text=text,
                blocks=[kit.section(text)],
            )
        await self._note_escalation(record, now)

    async def _permalink(self, message: MessageRef) -> str | None:
        """The message's permalink (``chat.getPermalink``, no scope needed), if Slack gives it."""
        try:
            response = await self._client.chat_getPermalink(
                channel=message.channel, message_ts=message.ts
            )
        except SLACK_FAILURES:
            return None
        link = response.get("permalink")
        return link if isinstance(link, str) and link.startswith("https://") else None

    async def _note_escalation(self, record: AskRecord, now: float) -> None:
        """Re-show every unanswered question of the ask with the note that it was escalated."""
        for index, message in enumerate(record.messages):
            answered = index < len(record.responses) and record.responses[index] is not None
            if message is not None and not answered:
                await self.show_live(record, index, message)

    async def show_live(
        self,
        record: AskRecord,
        index: int,
        message: MessageRef,
        votes: Sequence[Vote] | None = None,
        revision: str | None = None,
    ) -> None:
        """Show question ``index`` still open: its tally (``votes`` and the edit voted on,
        ``revision``, or the store's) and whether it was escalated. Coalesced per message
        (``TALLY_GAP``): a request while one is shown waits, the newest replacing the
        others, and reads the votes afresh."""
        key = (record.id, index)
        cast = None if self._tallies.busy(key) else votes
        await self._tallies.run(
            key, lambda: self._show_live_once(record, index, message, cast, revision)
        )

    async def _show_live_once(
        self,
        record: AskRecord,
        index: int,
        message: MessageRef,
        votes: Sequence[Vote] | None,
        revision: str | None,
    ) -> bool:
        """One live update; whether the question has ended (its final update then shown).
        The ask is read after: an update that landed after the question's final one would
        bring its buttons back, so the final one is shown again, never overtaken."""
        if votes is None:  # (a later request: the question may have ended meanwhile)
            if _ended(await self._store.get(ask_id=record.id), index):
                return True  # its final update is the ending's own
            cast = await self._store.votes(ask_id=record.id)
            votes = cast[index] if index < len(cast) else ()
            revisions = await self._store.revisions(ask_id=record.id)
            revision = revisions[index] if index < len(revisions) else None
        live = render_question(
            record.request.questions[index],
            ask_id=record.id,
            index=index,
            count=len(record.request.questions),
            agent=record.request.agent,
            deadline=record.deadline,
            votes=tuple(votes),
            note=escalation_note(record, now=time.time()),
            revision=revision,
        )
        await self.update(record.id, message, live)
        current = await self._store.get(ask_id=record.id)
        if current is not None and _ended(current, index):
            await self.update(record.id, message, final_of(current, index), index=index)
        return current is None or _ended(current, index)

    def notify(self, click: Click, text: str, *, fallback: bool = True) -> None:
        """Tell the clicker ``text`` privately, in the background."""
        if click.response_url or click.channel_id:
            self._background.spawn(self._ephemeral(click, text, fallback=fallback))

    async def _ephemeral(self, click: Click, text: str, *, fallback: bool) -> None:
        # The click's response_url first (it reaches non-members), then chat.postEphemeral.
        async with self._background.slots:
            await tell_privately(self.lean, click, text, fallback=fallback)
