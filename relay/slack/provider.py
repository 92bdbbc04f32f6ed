"""``SlackProvider``: the seam's provider that asks in Slack and waits for the click.

The life of an ask: render every question (refusing what Slack cannot show), record the ask
in the store, post one message per question, then wait for the store to report an outcome:
all questions answered, timed out, aborted, or the provider closed. The store's atomic claims
decide which outcome wins; whoever wins updates the Slack messages, off the agent's path.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import math
import secrets
import time
import weakref
from collections.abc import Awaitable, Callable, Collection, Coroutine
from dataclasses import dataclass
from datetime import timedelta
from enum import Enum
from typing import TYPE_CHECKING, Any

import aiohttp
from slack_sdk.errors import SlackApiError, SlackClientError
from slack_sdk.http_retry.builtin_async_handlers import (
    AsyncConnectionErrorRetryHandler,
    AsyncRateLimitErrorRetryHandler,
    AsyncServerErrorRetryHandler,
)
from slack_sdk.http_retry.request import HttpRequest
from slack_sdk.http_retry.response import HttpResponse
from slack_sdk.http_retry.state import RetryState
from slack_sdk.web.async_client import AsyncWebClient
from slack_sdk.web.async_slack_response import AsyncSlackResponse

from relay.errors import (
    ErrorCode,
    RelayConfigError,
    UserInteractionError,
    ask_aborted,
    ask_closed,
    ask_timed_out,
    bad_request,
)
from relay.events import Events
from relay.expiry import Expiry
from relay.questions import (
    AskUserQuestionAnswer,
    AskUserQuestionAnswerItem,
    AskUserQuestionRequest,
    validate_answer_item,
    validate_request,
)
from relay.slack import notices
from relay.slack.installation import Installation
from relay.slack.parse import Click, ClickKind, Notice, decide
from relay.slack.people import Gatekeeper, ids
from relay.slack.private import tell_privately
from relay.slack.render import (
    RenderedQuestion,
    render_detail_reply,
    render_outcome,
    render_question,
)
from relay.slack.webapi import LeanCalls
from relay.store import (
    AskError,
    AskRecord,
    AskStatus,
    AskStore,
    MemoryStore,
    MessageRef,
    StoreUnavailable,
    Target,
    utcnow,
)
from relay.waits import Released, Waits

if TYPE_CHECKING:
    from aiohttp import web
    from slack_bolt.async_app import AsyncApp

    from relay.slack.socket_mode import SocketMode

__all__ = ["SlackProvider", "SlackTarget"]

_log = logging.getLogger("relay.slack")


class _Unset(Enum):
    UNSET = "UNSET"


UNSET = _Unset.UNSET

# Background Web API calls (updates, notices) in flight at once; Slack's limits are far lower.
_BACKGROUND_CALLS = 100

# A click on a question that ended longer ago than this came from a message whose final
# update never landed (Slack refused it, or the replica died first): send it again.
_REPAIR_AFTER = timedelta(seconds=10)

# What to tell the operator for Slack errors that no retry will fix.
_SLACK_ADVICE: dict[str, str] = {
    "channel_not_found": "check the channel id, and that the bot can see the channel",
    "not_in_channel": "invite the bot to the channel (/invite @your-bot) and ask again",
    "is_archived": "the channel is archived: unarchive it or pick another channel",
    "invalid_auth": "the bot token is wrong or revoked: check SLACK_BOT_TOKEN",
    "not_authed": "no bot token was sent: set SLACK_BOT_TOKEN",
    "token_revoked": "the bot token was revoked: reinstall the app and use the new token",
    "account_inactive": "the bot token belongs to a deleted user or app: reinstall the app",
    "missing_scope": "the app lacks a scope: add it in the app manifest and reinstall",
    "invalid_blocks": "Slack refused the message layout: report this as a relay bug",
    "msg_too_long": "the message is too long for Slack: shorten the question",
    "msg_blocks_too_long": "Slack found the message too long in total: report this as a relay bug",
    "user_not_found": "check the user id of the DM target",
    "ratelimited": "Slack kept rate-limiting the relay: ask less often or spread channels",
}


@dataclass(frozen=True, slots=True)
class SlackTarget:
    """Where one ask goes; unset fields inherit the provider's defaults."""

    channel: str
    thread_ts: str | None = None
    allowed_users: Collection[str] | _Unset | None = UNSET
    timeout: float | _Unset | None = UNSET
    allowed_groups: Collection[str] | _Unset | None = UNSET
    requester: str | None = None
    prevent_self_approval: bool | _Unset = UNSET


Route = Callable[[AskUserQuestionRequest], "SlackTarget | Awaitable[SlackTarget]"]


# The longest timeout anything may set (a year): a deadline beyond it is no deadline a person
# can act on, and past ~1e11 s it cannot even be shown as a date.
LONGEST_TIMEOUT = 366 * 24 * 3600.0


def _check_timeout(value: float | None, name: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise RelayConfigError(f"{name} must be a number of seconds or None", setting=name)
    if not math.isfinite(value) or value <= 0:
        raise RelayConfigError(
            f"{name} must be a positive number of seconds (or None to wait forever)",
            setting=name,
        )
    if value > LONGEST_TIMEOUT:
        raise RelayConfigError(
            f"{name} must be at most {LONGEST_TIMEOUT:g} s (a year); None waits forever",
            setting=name,
        )
    return float(value)


class _RateLimitRetry(AsyncRateLimitErrorRetryHandler):
    """Retries 429s like slack-sdk's handler, except that a post waits exactly ``Retry-After``.

    slack-sdk adds up to a second of jitter to spread concurrent retries apart; posts are
    already queued one at a time per channel (``_post_message``), where the jitter would only
    stretch a burst of asks to one channel to ~1.5 s per message instead of Slack's 1.
    """

    async def prepare_for_next_attempt_async(
        self,
        *,
        state: RetryState,
        request: HttpRequest,
        response: HttpResponse | None = None,
        error: Exception | None = None,
    ) -> None:
        """Sleep ``Retry-After`` for a post, else as slack-sdk does; then retry."""
        if response is None or not request.url.endswith("/chat.postMessage"):
            await super().prepare_for_next_attempt_async(
                state=state, request=request, response=response, error=error
            )
            return
        values = [v for k, v in response.headers.items() if k.lower() == "retry-after"]
        wait = values[0][0] if values and values[0] else "1"
        state.next_attempt_requested = True
        await asyncio.sleep(float(wait) if wait.isdigit() else 1.0)
        state.increment_current_attempt()


def _default_retry_handlers(client: AsyncWebClient) -> None:
    """Make sure 429s, connection errors and 5xx are retried, keeping the user's own handlers."""
    kinds = {type(h) for h in client.retry_handlers}
    if AsyncConnectionErrorRetryHandler not in kinds:
        client.retry_handlers.append(AsyncConnectionErrorRetryHandler(max_retry_count=2))
    if not any(isinstance(h, AsyncRateLimitErrorRetryHandler) for h in client.retry_handlers):
        client.retry_handlers.append(_RateLimitRetry(max_retry_count=5))
    if AsyncServerErrorRetryHandler not in kinds:
        client.retry_handlers.append(AsyncServerErrorRetryHandler(max_retry_count=2))


# What a Web API call raises: Slack's refusals, and the network's failures (timeouts, refused
# or dropped connections), which slack-sdk passes on as they are once its retries give up.
SLACK_FAILURES = (SlackApiError, SlackClientError, aiohttp.ClientError, TimeoutError)


class _Unrecorded(Exception):
    """Messages were posted but the store could not record where: ``posted`` says which."""

    def __init__(self, posted: list[tuple[int, MessageRef]], cause: StoreUnavailable) -> None:
        super().__init__(str(cause))
        self.posted = posted
        self.cause = cause


def _outcome_of(record: AskRecord) -> str:
    """How a finished ask's unanswered questions are shown: its status, or ``closed``."""
    return "closed" if record.error and record.error.reason == "closed" else record.status.value


def provider_failed(exc: Exception, *, doing: str) -> UserInteractionError:
    """A ``PROVIDER_FAILED`` error naming the Slack error and what to do about it."""
    if isinstance(exc, SlackApiError):
        error = str(exc.response.get("error") or f"HTTP {exc.response.status_code}")
        advice = _SLACK_ADVICE.get(error, "see Slack's documentation for this error")
        message = f"Slack refused {doing}: {error} ({advice})"
    else:
        message = f"could not reach Slack {doing}: {exc or type(exc).__name__}"
    return UserInteractionError(ErrorCode.PROVIDER_FAILED, message)


class SlackProvider:
    """The seam's provider for Slack: one Block Kit message per question, answered by clicks.

    ``allowed_users``/``allowed_groups`` are each ask's default allowlist, which a
    ``SlackTarget`` may replace; ``policy_users``/``policy_groups`` are a ceiling no ask can
    lift (``relay serve`` sets both from ``RELAY_ALLOWED_USERS``/``RELAY_ALLOWED_GROUPS``).
    ``max_timeout`` is a ceiling on every ask's timeout (a longer one, or none, becomes it).
    """

    def __init__(
        self,
        *,
        client: AsyncWebClient | None = None,
        token: str | None = None,
        signing_secret: str | None = None,
        channel: str | None = None,
        timeout: float | None = 900.0,
        allowed_users: Collection[str] | None = None,
        allowed_groups: Collection[str] | None = None,
        prevent_self_approval: bool = False,
        policy_users: Collection[str] | None = None,
        policy_groups: Collection[str] | None = None,
        route: Route | None = None,
        store: AskStore | None = None,
        base_url: str | None = None,
        events: Events | None = None,
        sweep_interval: float | None = None,
        max_timeout: float | None = None,
    ) -> None:
        if (client is None) == (token is None):
            raise RelayConfigError(
                "pass exactly one of client= (an AsyncWebClient) or token= (the xoxb- bot token)",
                setting="token",
            )
        if token is not None and not token.strip():
            raise RelayConfigError("token is empty: pass the xoxb- bot token", setting="token")
        if signing_secret is not None and not signing_secret.strip():
            raise RelayConfigError(
                "signing_secret is empty: copy it from your app's Basic Information page"
                " (or pass None to use Socket Mode only)",
                setting="signing_secret",
            )
        if channel is None and route is None:
            raise RelayConfigError(
                "pass channel= (a channel id, or a user id for a DM) or a route= function",
                setting="channel",
            )
        if client is None:
            kwargs: dict[str, Any] = {"token": token}
            if base_url is not None:
                kwargs["base_url"] = base_url
            client = AsyncWebClient(**kwargs)
        _default_retry_handlers(client)
        self.client = client
        # chat.update and chat.postEphemeral, the calls a click makes (see relay.slack.webapi).
        self._lean = LeanCalls(client)
        self.store: AskStore = store if store is not None else MemoryStore()
        self.events = events if events is not None else Events()
        self._signing_secret = signing_secret
        self._channel = channel
        self._max_timeout = _check_timeout(max_timeout, "max_timeout")
        self._timeout = self._capped(_check_timeout(timeout, "timeout"))
        self._allowed = ids(allowed_users, "allowed_users")
        self._groups = ids(allowed_groups, "allowed_groups")
        self._self_approval_prevented = prevent_self_approval
        # The operator's ceiling: whatever an ask allows, nobody else answers (see Gatekeeper).
        self.gatekeeper = Gatekeeper(
            client,
            policy_users=ids(policy_users, "policy_users"),
            policy_groups=ids(policy_groups, "policy_groups"),
        )
        self._identity: Installation | None = None
        self._identity_lock = asyncio.Lock()
        self._route = route
        self.repair_after = _REPAIR_AFTER
        self._dm_channels: dict[str, str] = {}
        # One post at a time per channel (see _post_message); unused locks are dropped.
        self._post_locks: weakref.WeakValueDictionary[str, asyncio.Lock] = (
            weakref.WeakValueDictionary()
        )
        # Asks that an ask() call in this process is waiting for: closing rejects them. Asks
        # made with start() alone (the API's) are not here: on a durable store they outlive
        # this process, and nothing would ever remove them.
        self._waiting: set[str] = set()
        # Every wait() in progress: stopping answers them at once (see stop_asking).
        self._waits = Waits()
        self._expiry = Expiry(store=self.store, expire=self.expire, sweep_interval=sweep_interval)
        self._tasks: set[asyncio.Task[Any]] = set()
        # Closing with 10,000 asks pending withdrew them all at once, a connection each, and
        # ran the process out of file descriptors. Waiting here does not count against a
        # call's timeout (a connection pool's wait would, failing queued calls unsent).
        self._background_slots = asyncio.Semaphore(_BACKGROUND_CALLS)
        self._posting: set[asyncio.Future[AskRecord | None]] = set()
        self._closed = False
        self._finished = False
        self._app: AsyncApp | None = None
        self._socket: SocketMode | None = None
        # The HTTP session lent to a client that has none (see _lend_session).
        self._session: aiohttp.ClientSession | None = None
        self._session_returned = False

    # ---- the seam -------------------------------------------------------------------------

    async def ask(self, request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
        """Post the questions, wait for their answers, and return them (or raise why not)."""
        signal = request.signal
        if signal is not None and signal.aborted:
            raise ask_aborted()
        # Only the id is kept while waiting: on a shared store the record _start returns is
        # a copy read back from the store, which nothing needs once the wait ends it.
        ask_id = (await self._start(request, target=None, owner=None, held=True)).id
        remove = (
            signal.add_listener(lambda: self._spawn(self.abort(ask_id)))
            if signal is not None
            else None
        )
        try:
            # Not wait(): stop_asking ends this ask itself rather than release its waiter.
            final = self._known(ask_id, await self.store.wait(ask_id=ask_id, within=None))
        except asyncio.CancelledError:
            await self.abort(ask_id)
            raise
        finally:
            if remove is not None:
                remove()
            self._waiting.discard(ask_id)
        if final.status is AskStatus.ANSWERED:
            return final.answer()
        if final.pending:
            raise ask_closed()  # the store closed (the relay is stopping) before the ask ended
        if final.error is None:
            raise UserInteractionError(
                ErrorCode.PROVIDER_FAILED,
                f"ask {final.id} ended as {final.status} without a reason",
            )
        raise final.error.to_exception()

    async def start(
        self,
        request: AskUserQuestionRequest,
        *,
        target: SlackTarget | None = None,
        owner: str | None = None,
    ) -> AskRecord:
        """Record the ask and post its messages; returns the pending record without waiting.

        Raises ``BAD_REQUEST`` for what Slack cannot show and ``PROVIDER_FAILED`` when Slack
        refuses the post (nothing is left pending then). ``target`` overrides the routing.
        """
        return await self._start(request, target=target, owner=owner, held=False)

    async def _start(
        self,
        request: AskUserQuestionRequest,
        *,
        target: SlackTarget | None,
        owner: str | None,
        held: bool,
    ) -> AskRecord:
        """``start``; ``held`` when an ``ask()`` here waits for the outcome (closing ends it)."""
        if self._closed:
            raise ask_closed()
        validate_request(request)  # also when called without the service in front
        self._lend_session()
        resolved = await self._resolve(request, target)
        ask_id = secrets.token_urlsafe(12)
        deadline = time.time() + resolved.timeout if resolved.timeout is not None else None
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
            target=resolved,
            created_at=utcnow(),
            deadline=deadline,
            messages=(None,) * count,
            responses=(None,) * count,
            owner=owner,
        )
        try:
            await self.store.create(record=record)
        except StoreUnavailable as exc:
            raise UserInteractionError(
                ErrorCode.PROVIDER_FAILED,
                f"the relay cannot record new asks right now ({exc}); nothing was posted, try"
                " again shortly",
            ) from exc
        if held:
            self._waiting.add(ask_id)
        self.events.emit(
            "created",
            ask_id,
            channel=resolved.channel,
            questions=count,
            agent=request.agent.id if request.agent else None,
        )
        posting = asyncio.ensure_future(self._post_all(record, rendered))
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
        except _Unrecorded as lost:
            self._waiting.discard(ask_id)
            raise await self._abandon(record, lost) from lost.cause
        except SLACK_FAILURES as exc:
            self._waiting.discard(ask_id)
            error = provider_failed(exc, doing="to post the question")
            await self._end(
                ask_id,
                AskStatus.FAILED,
                AskError.of(error),
                detail=str(exc),
                method="chat.postMessage",
            )
            raise error from exc
        except BaseException:
            self._waiting.discard(ask_id)
            await self._end(ask_id, AskStatus.ABORTED, AskError.of(ask_aborted()))
            raise
        current = posting.result()
        if current is not None and not current.pending:
            return current
        if deadline is not None:
            self._expiry.add(deadline)
        return current or record

    async def wait(self, ask_id: str, *, within: float | None = None) -> AskRecord:
        """Wait until the ask is final (or ``within`` seconds pass); the record as it stands.

        Once the provider stops (``stop_asking``), waits end at once, with the record as it
        stands: a stopping replica answers its long-polls instead of holding them.
        """
        try:
            record = await self._waits.run(self.store.wait(ask_id=ask_id, within=within))
        except Released:
            record = await self.store.get(ask_id=ask_id)
        return self._known(ask_id, record)

    @staticmethod
    def _known(ask_id: str, record: AskRecord | None) -> AskRecord:
        if record is None:
            raise UserInteractionError(
                ErrorCode.PROVIDER_FAILED,
                f"ask {ask_id} is not in the store (it expired or was lost); ask again",
            )
        return record

    async def abort(self, ask_id: str) -> AskRecord | None:
        """Abort a pending ask (``ASK_ABORTED``) and withdraw its messages; the final record."""
        return await self._end(ask_id, AskStatus.ABORTED, AskError.of(ask_aborted()))

    async def expire(self, ask_id: str) -> AskRecord | None:
        """Time out a pending ask whose deadline has passed; the final record."""
        record = await self.store.get(ask_id=ask_id)
        if record is None or not record.pending:
            return record
        error = ask_timed_out(record.target.timeout or 0.0)
        return await self._end(ask_id, AskStatus.TIMED_OUT, AskError.of(error))

    async def _resolve(self, request: AskUserQuestionRequest, target: SlackTarget | None) -> Target:
        if target is None:
            target = SlackTarget(channel=self._channel or "")
            if self._route is not None:
                routed = self._route(request)
                target = await routed if inspect.isawaitable(routed) else routed
                if not isinstance(target, SlackTarget):
                    raise RelayConfigError("route must return a SlackTarget", setting="route")
        channel = target.channel or self._channel
        if not channel:
            raise bad_request(
                "there is no channel to ask in: name one (slack.channel in the API) or set"
                " a default channel (channel= / RELAY_CHANNEL)"
            )
        given = self._allowed if target.allowed_users is UNSET else target.allowed_users
        users = ids(given, "allowed_users")
        groups = self._groups if target.allowed_groups is UNSET else target.allowed_groups
        prevent = target.prevent_self_approval
        timeout = self._timeout if target.timeout is UNSET else target.timeout
        self._check_policy(users)
        return Target(
            channel=channel,
            thread_ts=target.thread_ts,
            allowed_users=users,
            timeout=self._capped(_check_timeout(timeout, "timeout")),
            allowed_groups=ids(groups, "allowed_groups"),
            requester=target.requester,
            prevent_self_approval=self._self_approval_prevented if prevent is UNSET else prevent,
        )

    def _capped(self, timeout: float | None) -> float | None:
        """``timeout`` within ``max_timeout`` (no timeout at all becomes the ceiling)."""
        if self._max_timeout is None:
            return timeout
        return self._max_timeout if timeout is None else min(timeout, self._max_timeout)

    def _check_policy(self, users: frozenset[str] | None) -> None:
        """Refuse an ask naming answerers the operator's policy would never let in."""
        policy = self.gatekeeper
        if policy.policy_groups is not None or policy.policy_users is None or users is None:
            return  # group members are only known at click time: checked then
        outside = sorted(users - policy.policy_users)
        if outside:
            raise bad_request(
                f"allowed_users names {', '.join(outside)}, who may not answer on this relay"
                " (the operator's allowlist, RELAY_ALLOWED_USERS): leave them out"
            )

    def prefetch_identity(self) -> None:
        """Look up ``identity`` now, in the background, so that the first click does not wait
        for ``auth.test`` (a click must be acknowledged within 3 s). A failure is retried by
        the first click that needs it."""
        self._lend_session()
        self._spawn(self._prefetch_identity())

    async def _prefetch_identity(self) -> None:
        try:
            await self.identity()
        except SLACK_FAILURES as exc:
            _log.warning("auth.test failed at start (retried on the first click): %s", exc)

    async def identity(self) -> tuple[str | None, str | None]:
        """The bot's workspace (team) id and app id, from ``auth.test`` once per process."""
        installation = await self.installation()
        return installation.team_id, installation.app_id

    async def installation(self) -> Installation:
        """The installation the bot token belongs to (workspace, app, Grid organisation),
        from ``auth.test`` once per process."""
        if self._identity is None:
            async with self._identity_lock:
                if self._identity is None:
                    response = await self.client.auth_test()
                    self._identity = Installation.from_auth_test(response.data)  # type: ignore[arg-type]
        return self._identity

    async def _open_channel(self, channel: str) -> str:
        """The channel to post in: a user id (U…/W…) becomes the id of the DM with them."""
        if not channel.startswith(("U", "W")):
            return channel
        if channel not in self._dm_channels:
            response = await self.client.conversations_open(users=channel)
            self._dm_channels[channel] = str(response["channel"]["id"])
        return self._dm_channels[channel]

    async def _post_all(
        self, record: AskRecord, rendered: list[RenderedQuestion]
    ) -> AskRecord | None:
        """Post every question; the record after, with late messages withdrawn if it ended."""
        channel = await self._open_channel(record.target.channel)
        posted: list[tuple[int, MessageRef]] = []
        for index, message in enumerate(rendered):
            response = await self._post_message(
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
                await self.store.set_message(ask_id=record.id, index=index, message=posted[-1][1])
            except StoreUnavailable as exc:
                # Live in Slack, unknown to the store: nobody could ever learn its answer.
                raise _Unrecorded(posted, exc) from exc
            parts = len(message.detail_overflow)
            for part, piece in enumerate(message.detail_overflow, start=1):
                reply = render_detail_reply(piece, part=part, parts=parts)
                await self._post_message(channel, thread_ts=record.target.thread_ts or ts, **reply)
        self.events.emit("posted", record.id, channel=channel, messages=len(rendered))
        try:
            current = await self.store.get(ask_id=record.id)
        except StoreUnavailable:
            return None  # every message is recorded: the ask stands, pending

        if current is not None and not current.pending:
            # It ended (closed, aborted) while a post was in flight: withdraw what landed late.
            await self._withdraw(current)
        return current

    async def _abandon(self, record: AskRecord, lost: _Unrecorded) -> UserInteractionError:
        """Withdraw what was posted of an ask the store failed to record, and say so: the
        agent must know whether anything still shows in Slack before it asks again."""
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
                async with self._background_slots:
                    await self._lean.call(
                        "chat.update",
                        {
                            "channel": message.channel,
                            "ts": message.ts,
                            "text": final.text,
                            "blocks": final.blocks,
                        },
                    )
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
        failure = UserInteractionError(ErrorCode.PROVIDER_FAILED, text)
        with contextlib.suppress(StoreUnavailable):
            await self.store.finish(
                ask_id=record.id, status=AskStatus.FAILED, error=AskError.of(failure), at=utcnow()
            )
        self.events.emit("failed", record.id, detail=str(lost.cause), method="store")
        return failure

    async def _post_message(self, channel: str, **fields: Any) -> AsyncSlackResponse:
        """``chat.postMessage``, one at a time per channel.

        Slack takes about one message per second per channel and answers the rest 429; posts
        sent together would be refused together, retried together and, with many, run out of
        retries. Queued, each waits its turn and needs at most a retry or two.
        """
        lock = self._post_locks.get(channel)
        if lock is None:
            lock = self._post_locks[channel] = asyncio.Lock()
        async with lock:
            return await self.client.chat_postMessage(channel=channel, **fields)

    async def _end(
        self,
        ask_id: str,
        status: AskStatus,
        error: AskError,
        *,
        detail: str | None = None,
        method: str | None = None,
    ) -> AskRecord | None:
        """Claim a final outcome other than an answer; the winner withdraws the messages."""
        self._lend_session()
        won, record = await self.store.finish(
            ask_id=ask_id, status=status, error=error, at=utcnow()
        )
        if won and record is not None:
            name = "closed" if error.reason == "closed" else status.value
            self.events.emit(name, ask_id, detail=detail, method=method)  # type: ignore[arg-type]
            self._spawn(self._withdraw(record))
        return record

    async def _withdraw(self, record: AskRecord) -> None:
        """Replace every unanswered question's inputs with how the ask ended."""
        outcome = _outcome_of(record)
        count = len(record.request.questions)
        for index, (question, message) in enumerate(
            zip(record.request.questions, record.messages, strict=False)
        ):
            if message is None or (index < len(record.responses) and record.responses[index]):
                continue
            final = render_outcome(
                question,
                outcome=outcome,  # type: ignore[arg-type]
                agent=record.request.agent,
                index=index,
                count=count,
            )
            await self._update(record.id, message, final)

    async def _update(self, ask_id: str, message: MessageRef, final: RenderedQuestion) -> None:
        try:
            async with self._background_slots:
                await self._lean.call(
                    "chat.update",
                    {
                        "channel": message.channel,
                        "ts": message.ts,
                        "text": final.text,
                        "blocks": final.blocks,
                    },
                )
        except SLACK_FAILURES as exc:
            # The outcome is already recorded and returned; a stale message is only cosmetic.
            error = str(exc) or type(exc).__name__
            self.events.emit("slack_error", ask_id, method="chat.update", error=error)

    # ---- clicks ---------------------------------------------------------------------------

    async def handle_click(self, click: Click) -> None:
        """Apply one click: answer its question, or tell the clicker privately why not."""
        if click.kind is ClickKind.TOGGLE:
            return
        self._lend_session()
        try:
            installation = await self.installation()
        except SLACK_FAILURES:
            _log.exception("auth.test failed; cannot check which workspace a click came from")
            self._notify(click, notices.cannot_record())
            return
        foreign = installation.refusal(click)
        if foreign is not None:
            # Signed with our secret but from another installation: never ours to answer.
            self.events.emit("refused", click.ask_id, user=click.user_id, why=foreign)
            if foreign != "foreign_app":  # another app's click is no message of ours
                self._notify(click, notices.foreign_installation(), fallback=False)
            return
        try:
            record = await self.store.get(ask_id=click.ask_id)
        except Exception:
            _log.exception("store unreachable while handling a click on ask %s", click.ask_id)
            self._notify(click, notices.cannot_record())
            return
        if record is None or click.index >= len(record.request.questions):
            self._notify(click, notices.no_longer_pending(None))
            return
        expected = record.messages[click.index] if click.index < len(record.messages) else None
        if expected is not None and (click.channel_id, click.message_ts) != (
            expected.channel,
            expected.ts,
        ):
            self.events.emit("refused", record.id, user=click.user_id, why="message_mismatch")
            return
        existing = record.responses[click.index] if click.index < len(record.responses) else None
        if not record.pending or existing is not None:
            if existing is not None:
                self._notify(click, notices.already_answered(existing))
            else:
                self._notify(click, notices.no_longer_pending(record))
            self._repair_if_stale(record, click.index, existing)
            return
        refusal = await self.gatekeeper.refusal(record.target, click.user_id)
        if refusal is not None:
            self.events.emit("refused", record.id, user=click.user_id, why="not_allowed")
            self._notify(click, refusal)
            return
        question = record.request.questions[click.index]
        count = len(record.request.questions)
        decision = decide(question, click, at=utcnow())
        if decision is None:
            return
        if isinstance(decision, Notice):
            self._notify(click, notices.notice_text(decision, question, batch=count > 1))
            return
        try:
            validate_answer_item(question, decision, index=click.index)
            result = await self.store.answer(ask_id=record.id, index=click.index, item=decision)
        except UserInteractionError as exc:
            self._notify(click, notices.not_recorded(str(exc)))
            return
        except Exception:
            _log.exception("store failed while recording an answer to ask %s", record.id)
            self._notify(click, notices.cannot_record())
            return
        if result.outcome in ("accepted", "completed"):
            self.events.emit(
                "answered" if result.outcome == "completed" else "question_answered",
                record.id,
                question=question.id,
                by=click.user_id,
                waited=(decision.answered_at - record.created_at).total_seconds()
                if decision.answered_at
                else None,
            )
            message = expected or MessageRef(click.channel_id or "", click.message_ts or "")
            final = render_outcome(
                question,
                outcome="answered",
                item=decision,
                agent=record.request.agent,
                index=click.index,
                count=count,
            )
            self._spawn(self._update(record.id, message, final))
        elif result.outcome == "already_answered" and result.record is not None:
            winner = result.record.responses[click.index]
            if winner is not None:
                self._notify(click, notices.already_answered(winner))
        else:
            self._notify(click, notices.no_longer_pending(result.record))

    def _repair_if_stale(
        self, record: AskRecord, index: int, answer: AskUserQuestionAnswerItem | None
    ) -> None:
        """Show question ``index``'s outcome again if it ended a while ago: its message still
        offers inputs (someone just clicked one), so the update that ended it never landed."""
        ended = answer.answered_at if answer is not None else record.finished_at
        message = record.messages[index] if index < len(record.messages) else None
        if ended is None or message is None or utcnow() - ended < self.repair_after:
            return  # just ended: the winner's own update may still be on its way
        question = record.request.questions[index]
        outcome = "answered" if answer is not None else _outcome_of(record)
        final = render_outcome(
            question,
            outcome=outcome,  # type: ignore[arg-type]
            item=answer,
            agent=record.request.agent,
            index=index,
            count=len(record.request.questions),
        )
        self.events.emit("repaired", record.id, question=question.id)
        self._spawn(self._update(record.id, message, final))

    def _notify(self, click: Click, text: str, *, fallback: bool = True) -> None:
        if click.response_url or click.channel_id:
            self._spawn(self._ephemeral(click, text, fallback=fallback))

    async def _ephemeral(self, click: Click, text: str, *, fallback: bool) -> None:
        # The click's response_url first (it reaches non-members), then chat.postEphemeral.
        async with self._background_slots:
            await tell_privately(self._lean, click, text, fallback=fallback)

    # ---- Slack transport --------------------------------------------------------------------

    @property
    def bolt_app(self) -> AsyncApp:
        """The Bolt ``AsyncApp`` the provider listens on; add your own listeners to it."""
        if self._app is None:
            from relay.slack.app import build_bolt_app

            self._app = build_bolt_app(self, signing_secret=self._signing_secret)
        return self._app

    def web_app(self, *, path: str = "/slack/events") -> web.Application:
        """An aiohttp application serving Slack's interactivity requests at ``path``."""
        from relay.slack.app import build_web_app

        if self._signing_secret is None:
            raise RelayConfigError(
                "HTTP mode needs signing_secret= (from your app's Basic Information page);"
                " without it, use connect_socket_mode()",
                setting="signing_secret",
            )
        return build_web_app(self.bolt_app, path=path)

    async def connect_socket_mode(
        self, app_token: str, *, wait: bool = True, retry_refused_after: float | None = None
    ) -> None:
        """Receive interactions over Socket Mode (no public URL); needs an ``xapp-`` token.

        Connects in the background and reconnects whenever the connection drops, retrying
        an unreachable Slack with backoff (one log line per attempt). With ``wait`` (the
        default) returns once connected; raises ``RelayConfigError`` if Slack refuses the
        token (``invalid_auth``, ``token_revoked``…). ``socket_mode`` tells how it stands.
        Slack holds about 10 connections per app; past that it refuses one, which then
        retries after ``retry_refused_after`` seconds (default 10), doubling up to 5 min.
        """
        from relay.slack.socket_mode import FIRST_REFUSED_RETRY, SocketMode

        if not app_token or not app_token.startswith("xapp-"):
            raise RelayConfigError(
                "Socket Mode needs an app-level token starting with xapp- (scope"
                " connections:write), from your app's Basic Information page",
                setting="app_token",
            )
        if self._socket is None:
            self._lend_session()
            self._socket = SocketMode(
                self.bolt_app,
                app_token=app_token,
                client=self.client,
                first_refused_retry=FIRST_REFUSED_RETRY
                if retry_refused_after is None
                else retry_refused_after,
            )
            self._socket.start()
        if wait:
            await self._socket.connected()

    @property
    def socket_mode(self) -> SocketMode | None:
        """The Socket Mode connection, once ``connect_socket_mode`` was called."""
        return self._socket

    # ---- lifecycle ---------------------------------------------------------------------------

    def _spawn(self, coro: Coroutine[Any, Any, Any]) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._task_done)

    def _task_done(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            _log.error("background task failed", exc_info=task.exception())

    async def drain(self) -> None:
        """Wait until every message update and private notice in flight has been sent."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    def _lend_session(self) -> None:
        """Lend the client one HTTP session for the provider's life, if it has none.

        Without a ``session``, ``AsyncWebClient`` opens a new aiohttp session, and so a new
        connection, for every call; ``aclose`` takes the lent session back and closes it.
        Calls keep the client's timeout and no cap on connections: the background updates
        and notices, which can come in thousands at once, queue for ``_background_slots``
        instead, before their timeout starts.
        """
        if self._session is None and not self._session_returned and self.client.session is None:
            self._session = aiohttp.ClientSession(
                timeout=aiohttp.ClientTimeout(total=self.client.timeout),
                connector=aiohttp.TCPConnector(limit=0),
            )
            self.client.session = self._session

    async def _return_session(self) -> None:
        self._session_returned = True
        if self._session is not None:
            if self.client.session is self._session:
                self.client.session = None
            await self._session.close()
            self._session = None

    def start_expiry(self) -> None:
        """Start timing out due asks now, also those other replicas created (needs a loop)."""
        self._expiry.start()

    @property
    def stopping(self) -> bool:
        """Whether ``stop_asking`` (or ``aclose``) was called: no new asks, no waits."""
        return self._closed

    async def stop_asking(self) -> None:
        """Refuse new asks, end those that cannot outlive this process, release every wait.

        Ended (``ASK_ABORTED``, reason ``closed``) and withdrawn: the asks an ``ask()`` call
        here waits for and, with a store that is not durable, every pending ask. Asks made
        through the hosted API on a durable store stay pending for the other replicas; their
        ``wait()`` calls return at once with the record as it stands. Idempotent.
        """
        if self._closed:
            return
        self._closed = True
        await self._expiry.aclose()
        try:
            closing = set(self._waiting)
            if not self.store.durable:
                closing.update(await self.store.due(now=math.inf, limit=1_000_000))
            for ask_id in closing:
                try:
                    await self._end(ask_id, AskStatus.ABORTED, AskError.of(ask_closed()))
                except Exception as exc:  # the store is down: the others still get closed
                    _log.warning("could not close ask %s while stopping: %s", ask_id, exc)
        finally:
            self._waits.release()

    async def aclose(self) -> None:
        """``stop_asking``, then finish the posts and Slack updates in flight and disconnect."""
        await self.stop_asking()
        if self._finished:
            return
        self._finished = True
        # Posts in flight finish (and withdraw what they posted) before the close completes.
        await asyncio.gather(*self._posting, return_exceptions=True)
        await self.drain()
        if self._socket is not None:
            await self._socket.close()
            self._socket = None
        await self._return_session()

    async def __aenter__(self) -> SlackProvider:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
