"""``SlackProvider``: the seam's provider that asks in Slack and waits for the click.

It wires the ask's lifecycle (``relay.asks``) to the Slack channel that shows it: rendering
(``render``), posting and updating (``messages``), click intake (``clicks``), the Bolt and
aiohttp apps (``app``) and Socket Mode (``socket_mode``)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import timedelta
from typing import TYPE_CHECKING, Unpack

from relay.asks.events import Events
from relay.asks.lifecycle import AskLifecycle
from relay.asks.target import UNSET, AskTarget, Route, ids
from relay.asks.terms import LONGEST_TIMEOUT, answer_of, known
from relay.errors import RelayConfigError, UserInteractionError, ask_aborted, ask_closed
from relay.seam.questions import AskUserQuestionAnswer, AskUserQuestionRequest, validate_request
from relay.slack.intake.clicks import ClickIntake
from relay.slack.intake.installation import Installation
from relay.slack.intake.parse import Click
from relay.slack.intake.people import Gatekeeper
from relay.slack.rendering.batch_view import batchable
from relay.slack.rendering.render import render_question
from relay.slack.settings import SlackOptions, SlackSettings, lifecycle_of, settings_of
from relay.slack.webapi.background import Background
from relay.slack.webapi.batch import Batcher, BatchPoster, BatchShow
from relay.slack.webapi.failures import SLACK_FAILURES, provider_failed
from relay.slack.webapi.identity import InstallationLookup
from relay.slack.webapi.messages import SlackMessages
from relay.slack.webapi.posting import AskPoster
from relay.store import AskRecord, AskStore

if TYPE_CHECKING:
    from aiohttp import web
    from slack_bolt.async_app import AsyncApp

    from relay.seam.abort import AbortSignal
    from relay.slack.socket_mode.connection import SocketMode

__all__ = [
    "LONGEST_TIMEOUT",
    "SLACK_FAILURES",
    "UNSET",
    "Route",
    "SlackProvider",
    "SlackSettings",
    "SlackTarget",
    "provider_failed",
]

SlackTarget = AskTarget
"""The public name of ``AskTarget`` for Slack users: where one ask goes, who may answer it."""


class SlackProvider:
    """The seam's provider for Slack: one Block Kit message per question, answered by clicks.

    ``settings`` (``SlackSettings``) say how to reach Slack and what every ask inherits; its
    fields are accepted as keywords too (the older form). ``lifecycle`` is the ask's
    lifecycle the composition root built (``relay serve``); without one, the provider builds
    its own, from ``store``, ``events``, ``sweep_interval``, ``reminder_lease``, ``settling``.
    """

    def __init__(
        self,
        settings: SlackSettings | None = None,
        /,
        *,
        lifecycle: AskLifecycle | None = None,
        **options: Unpack[SlackOptions],
    ) -> None:
        settings, life_options = settings_of(settings, options)
        settings.checked()
        self.client = client = settings.web_client()
        self._signing_secret = settings.signing_secret
        # The operator's ceiling: whatever an ask allows, nobody else answers (see Gatekeeper).
        self.gatekeeper = Gatekeeper(
            client,
            policy_users=ids(settings.policy_users, "policy_users"),
            policy_groups=ids(settings.policy_groups, "policy_groups"),
        )
        self._defaults = settings.target_defaults(
            self.gatekeeper.policy_users, self.gatekeeper.policy_groups
        )
        self._questions = settings.question_defaults()
        self._life = lifecycle_of(lifecycle, life_options)
        self.store: AskStore = self._life.store
        self.events: Events = self._life.events
        self._background = Background(client)
        self.lookup = InstallationLookup(client, background=self._background)
        self._messages = SlackMessages(
            client=client, store=self.store, events=self.events, background=self._background
        )
        # The asks an ask() call here waits for (the lifecycle's set; closing ends them).
        self._waiting = self._life.waiting
        # Approvals of one session arriving together share one message (relay.slack.webapi.batch).
        self._batch_show = BatchShow(life=self._life, messages=self._messages)
        self._messages.batch_refresh = self._batch_show.refresh
        self._life.attach(
            on_end=self._ended,
            on_remind=self._remind,
            on_escalate=self._escalate,
            on_unsettled=self._messages.reshow,
        )
        self._clicks = ClickIntake(
            life=self._life,
            messages=self._messages,
            gatekeeper=self.gatekeeper,
            background=self._background,
            installation=self.installation,
            edit_review=settings.edit_review,
            batches=self._batch_show,
            plans=settings.plans,
        )
        self._poster = AskPoster(life=self._life, messages=self._messages)
        self._batcher: Batcher | None = None
        if settings.batch_window > 0:
            batches = BatchPoster(life=self._life, messages=self._messages, show=self._batch_show)
            self._batcher = Batcher(
                settings.batch_window,
                one=lambda request, target, owner: self._poster.start(
                    request, target, owner=owner, held=False
                ),
                many=batches.start,
                abort=self.abort,
            )
        self._finished = False
        self._app: AsyncApp | None = None
        self._socket: SocketMode | None = None

    # ---- the seam -------------------------------------------------------------------------

    async def ask(self, request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
        """Post the questions, wait for their answers, and return them (or raise why not)."""
        signal = request.signal
        if signal is not None and signal.aborted:
            raise ask_aborted()
        # Only the id is kept while waiting: on a shared store the record _start returns is
        # a copy read back from the store, which nothing needs once the wait ends it.
        ask_id = (await self._start(request, target=None, owner=None, held=True)).id
        remove = self._abort_on(signal, ask_id) if signal is not None else None
        try:
            # Not wait(): stop_asking ends this ask itself rather than release its waiter.
            final = await self._life.outcome(ask_id)
        except asyncio.CancelledError:
            self._life.release(ask_id)
            await self.abort(ask_id)
            raise
        finally:
            self._life.release(ask_id)
            if remove is not None:
                remove()
        return answer_of(known(ask_id, final))

    def _abort_on(self, signal: AbortSignal, ask_id: str) -> Callable[[], None]:
        # Its own frame: a lambda in ask() would give every waiting ask() two cells more
        # for the collector to walk, signal or not.
        return signal.add_listener(lambda: self._background.spawn(self.abort(ask_id)))

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
        if self._life.closed:
            raise ask_closed()
        request = self._questions.apply(request)
        validate_request(request)  # also when called without the service in front
        self._background.lend_session()
        resolved = await self._defaults.resolve(request, target)
        # Who may answer, looked up while posting: the first clicks need not wait on Slack.
        if groups := self.gatekeeper.unknown_groups(resolved):
            self._background.spawn(self.gatekeeper.warm(groups))
        if self._batcher is not None and not held and _batchable(request):
            agent = request.agent.id if request.agent is not None else None
            key = (owner, agent, resolved.channel, resolved.thread_ts)
            return await self._batcher.start(key, request, resolved, owner)
        return await self._poster.start(request, resolved, owner=owner, held=held)

    async def _escalate(self, record: AskRecord) -> None:
        """Escalate ``record``: one post per batch message, by its first call still waiting."""
        await self._batch_show.escalate(record, self._messages.escalate)

    async def _remind(self, record: AskRecord, sent: int) -> None:
        """A reminder for ``record``: one per batch message, by its first call still waiting."""
        await self._batch_show.remind(record, sent, self._messages.remind)

    async def wait(self, ask_id: str, *, within: float | None = None) -> AskRecord:
        """Wait until the ask is final (or ``within`` seconds pass); the record as it stands.

        Once the provider stops (``stop_asking``), waits end at once, with the record as it
        stands: a stopping replica answers its long-polls instead of holding them.
        """
        return await self._life.wait(ask_id, within=within)

    async def abort(self, ask_id: str) -> AskRecord | None:
        """Abort a pending ask (``ASK_ABORTED``) and withdraw its messages; the final record."""
        return await self._life.abort(ask_id)

    async def expire(self, ask_id: str) -> AskRecord | None:
        """Time out a pending ask whose deadline has passed; the final record."""
        return await self._life.expire(ask_id)

    def _ended(self, record: AskRecord) -> None:
        """The lifecycle ended ``record`` without an answer: withdraw its messages."""
        self._background.lend_session()
        self._background.spawn(self._messages.withdraw(record))

    # ---- the installation -----------------------------------------------------------------

    def prefetch_identity(self) -> None:
        """Look up ``identity`` now, in the background, so that the first click does not wait
        for ``auth.test`` (a click must be acknowledged within 3 s). A failure is retried by
        the first click that needs it."""
        self.lookup.prefetch()

    async def identity(self) -> tuple[str | None, str | None]:
        """The bot's workspace (team) id and app id, from ``auth.test`` once per process."""
        installation = await self.installation()
        return installation.team_id, installation.app_id

    async def installation(self) -> Installation:
        """The installation the bot token belongs to (workspace, app, Grid organisation),
        from ``auth.test`` once per process."""
        return await self.lookup.get()

    # ---- clicks and the Slack transport -----------------------------------------------------

    async def handle_click(self, click: Click) -> dict[str, str] | None:
        """Apply one click: answer its question, or tell the clicker privately why not (a
        submitted edit form: the errors to show under its fields, if any)."""
        return await self._clicks.handle(click)

    @property
    def repair_after(self) -> timedelta:
        """A click on a question that ended longer ago shows its outcome again (10 s)."""
        return self._clicks.repair_after

    @repair_after.setter
    def repair_after(self, value: timedelta) -> None:
        self._clicks.repair_after = value

    @property
    def bolt_app(self) -> AsyncApp:
        """The Bolt ``AsyncApp`` the provider listens on; add your own listeners to it."""
        if self._app is None:
            from relay.slack.intake.app import build_bolt_app

            self._app = build_bolt_app(self, signing_secret=self._signing_secret)
        return self._app

    def web_app(self, *, path: str = "/slack/events") -> web.Application:
        """An aiohttp application serving Slack's interactivity requests at ``path``."""
        from relay.slack.intake.app import build_web_app

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
        from relay.slack.socket_mode.connection import FIRST_REFUSED_RETRY, SocketMode

        if not app_token or not app_token.startswith("xapp-"):
            raise RelayConfigError(
                "Socket Mode needs an app-level token starting with xapp- (scope"
                " connections:write), from your app's Basic Information page",
                setting="app_token",
            )
        if self._socket is None:
            self._background.lend_session()
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

    # ---- starting and stopping ---------------------------------------------------------------

    async def drain(self) -> None:
        """Wait until every message update and private notice in flight has been sent."""
        await self._background.drain()

    def start_expiry(self) -> None:
        """Start timing out due asks now, also those other replicas created (needs a loop)."""
        self._life.start_expiry()

    @property
    def stopping(self) -> bool:
        """Whether ``stop_asking`` (or ``aclose``) was called: no new asks, no waits."""
        return self._life.closed

    async def stop_asking(self) -> None:
        """Refuse new asks, end those that cannot outlive this process, release every wait.

        Ended (``ASK_ABORTED``, reason ``closed``) and withdrawn: the asks an ``ask()`` call
        here waits for and, with a store that is not durable, every pending ask. Asks made
        through the hosted API on a durable store stay pending for the other replicas; their
        ``wait()`` calls return at once with the record as it stands. Idempotent.
        """
        await self._life.stop()

    async def aclose(self) -> None:
        """``stop_asking``, then finish the posts and Slack updates in flight and disconnect."""
        await self.stop_asking()
        if self._finished:
            return
        self._finished = True
        # Posts in flight finish (and withdraw what they posted) before the close completes.
        if self._batcher is not None:
            await self._batcher.finish()
        await self._poster.finish()
        await self.lookup.close()
        await self.drain()
        if self._socket is not None:
            await self._socket.close()
            self._socket = None
        await self._background.return_session()

    async def __aenter__(self) -> SlackProvider:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


def _batchable(request: AskUserQuestionRequest) -> bool:
    """Whether ``request`` may wait to join a batch: one tool approval that one person
    decides and whose input fits a batch's message (else it is posted alone, as ever, and
    refused there if Slack cannot show it)."""
    if len(request.questions) != 1 or not batchable(request.questions[0]):
        return False
    try:
        render_question(request.questions[0], ask_id="x", index=0, agent=request.agent)
    except UserInteractionError:
        return False
    return True
