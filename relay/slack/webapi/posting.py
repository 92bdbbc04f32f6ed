"""``AskPoster``: a new ask recorded in the lifecycle and posted to Slack, or failed cleanly.

Rendering refuses what Slack cannot show before anything is recorded. A post Slack refuses
ends the ask ``failed``; a post the store could not record is withdrawn and failed; a
cancelled start lets the post in flight land so that its message is withdrawn too.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import time

from relay.asks.lifecycle import AskLifecycle
from relay.errors import ask_aborted
from relay.seam.questions import AskUserQuestionRequest
from relay.slack.rendering.render import render_question
from relay.slack.webapi.failures import SLACK_FAILURES, provider_failed
from relay.slack.webapi.messages import SlackMessages, Unrecorded
from relay.store import AskError, AskRecord, AskStatus, Target, utcnow

__all__ = ["AskPoster"]


class AskPoster:
    """Starts asks: render, record (``AskLifecycle.create``), post, schedule the deadline."""

    def __init__(self, *, life: AskLifecycle, messages: SlackMessages) -> None:
        self._life = life
        self._messages = messages
        self._posting: set[asyncio.Future[AskRecord | None]] = set()

    async def start(
        self, request: AskUserQuestionRequest, target: Target, *, owner: str | None, held: bool
    ) -> AskRecord:
        """Record and post ``request`` to ``target``; the record as it stands after.

        ``held`` when an ``ask()`` here waits for the outcome (closing ends it).
        """
        ask_id = secrets.token_urlsafe(12)
        deadline = time.time() + target.timeout if target.timeout is not None else None
        count = len(request.questions)
        rendered = [
            render_question(
                q, ask_id=ask_id, index=i, count=count, agent=request.agent, deadline=deadline
            )
            for i, q in enumerate(request.questions)
        ]
        record = AskRecord(
            id=ask_id,
            request=AskUserQuestionRequest(request.questions, agent=request.agent),
            target=target,
            created_at=utcnow(),
            deadline=deadline,
            messages=(None,) * count,
            responses=(None,) * count,
            owner=owner,
        )
        await self._life.create(record, held=held)
        posting = asyncio.ensure_future(self._messages.post_all(record, rendered))
        self._posting.add(posting)
        posting.add_done_callback(self._posting.discard)
        try:
            try:
                await asyncio.shield(posting)
            except asyncio.CancelledError:
                # Let the post in flight land so that its message can be withdrawn too.
                with contextlib.suppress(Exception):
                    await posting
                raise
        except Unrecorded as lost:
            self._life.release(ask_id)
            failure = await self._messages.abandon(record, lost)
            await self._life.abandon(ask_id, failure, detail=str(lost.cause))
            raise failure from lost.cause
        except SLACK_FAILURES as exc:
            self._life.release(ask_id)
            error = provider_failed(exc, doing="to post the question")
            await self._life.end(
                ask_id,
                AskStatus.FAILED,
                AskError.of(error),
                detail=str(exc),
                method="chat.postMessage",
            )
            raise error from exc
        except BaseException:
            self._life.release(ask_id)
            await self._life.end(ask_id, AskStatus.ABORTED, AskError.of(ask_aborted()))
            raise
        current = posting.result()
        if current is not None and not current.pending:
            return current
        self._life.schedule(record)
        await self._life.arm_reminders(record)
        return current or record

    async def finish(self) -> None:
        """Wait for the posts in flight (each withdraws what it posted if the ask ended)."""
        await asyncio.gather(*self._posting, return_exceptions=True)
