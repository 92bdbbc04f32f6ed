"""``SlackProvider``: the seam's provider that asks in Slack and waits for the click.

It wires the ask's lifecycle (``relay.asks``) to the Slack channel that shows it: rendering
(``render``), posting and updating (``messages``), click intake (``clicks``), the Bolt and
aiohttp apps (``app``) and Socket Mode (``socket_mode``)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Collection
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from slack_sdk.web.async_client import AsyncWebClient

from relay.asks.edit_review import EditReview
from relay.asks.expiry import Settling
from relay.asks.lifecycle import AskLifecycle, known
from relay.asks.rules import LONGEST_TIMEOUT, QuestionDefaults, answer_of, capped, check_timeout
from relay.asks.target import UNSET, AskTarget, Route, TargetDefaults, check_reminders, ids
from relay.errors import RelayConfigError, ask_aborted, ask_closed
from relay.events import Events
from relay.questions import AskUserQuestionAnswer, AskUserQuestionRequest, validate_request
from relay.slack.background import Background
from relay.slack.clicks import ClickIntake
from relay.slack.credentials import check_credentials
from relay.slack.failures import SLACK_FAILURES, provider_failed
from relay.slack.identity import InstallationLookup
from relay.slack.installation import Installation
from relay.slack.messages import SlackMessages
from relay.slack.parse import Click
from relay.slack.people import Gatekeeper
from relay.slack.posting import AskPoster
from relay.slack.retries import default_retry_handlers
from relay.store import AskRecord, AskStore, MemoryStore

if TYPE_CHECKING:
    from aiohttp import web
    from slack_bolt.async_app import AsyncApp

    from relay.abort import AbortSignal
    from relay.asks.names import NamePolicy
    from relay.slack.socket_mode import SocketMode

__all__ = [
    "LONGEST_TIMEOUT",
    "SLACK_FAILURES",
    "UNSET",
    "Route",
    "SlackProvider",
    "SlackTarget",
    "provider_failed",
]

SlackTarget = AskTarget
"""The public name of ``AskTarget`` for Slack users: where one ask goes, who may answer it."""


class SlackProvider:
    """The seam's provider for Slack: one Block Kit message per question, answered by clicks.

    ``allowed_users``/``allowed_groups`` are each ask's default allowlist, which a
    ``SlackTarget`` may replace; ``policy_users``/``policy_groups`` are a ceiling no ask can
    lift (``relay serve`` sets both from ``RELAY_ALLOWED_USERS``/``RELAY_ALLOWED_GROUPS``).
    ``max_timeout`` is a ceiling on every ask's timeout (a longer one, or none, becomes it).
    ``remind_after``/``reminders`` and ``escalate_*``: each ask's default reminders and
    escalation (see ``SlackTarget``). ``default_option``, ``approvals_required`` and
    ``veto``: each question's, where it sets none. ``settling``: when a final update is
    retried; ``names``: what a ``target`` may name; ``edit_review``: rules for an edit.
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
        remind_after: float | None = None,
        reminders: int = 1,
        reminder_lease: float = 30.0,
        escalate_after: float | None = None,
        escalate_users: Collection[str] | None = None,
        escalate_groups: Collection[str] | None = None,
        escalate_channel: str | None = None,
        default_option: str | None = None,
        approvals_required: int | None = None,
        veto: Collection[str] | None = None,
        settling: Settling | None = None,
        names: NamePolicy | None = None,
        edit_review: EditReview | None = None,
    ) -> None:
        check_credentials(client, token, signing_secret)
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
        default_retry_handlers(client)
        self.client = client
        self.store: AskStore = store if store is not None else MemoryStore()
        self.events = events if events is not None else Events()
        self._signing_secret = signing_secret
        # The operator's ceiling: whatever an ask allows, nobody else answers (see Gatekeeper).
        self.gatekeeper = Gatekeeper(
            client,
            policy_users=ids(policy_users, "policy_users"),
            policy_groups=ids(policy_groups, "policy_groups"),
        )
        ceiling = check_timeout(max_timeout, "max_timeout")
        self._defaults = TargetDefaults(
            channel=channel,
            route=route,
            timeout=capped(check_timeout(timeout, "timeout"), ceiling),
            max_timeout=ceiling,
            allowed_users=ids(allowed_users, "allowed_users"),
            allowed_groups=ids(allowed_groups, "allowed_groups"),
            prevent_self_approval=prevent_self_approval,
            policy_users=self.gatekeeper.policy_users,
            policy_groups=self.gatekeeper.policy_groups,
            remind_after=check_timeout(remind_after, "remind_after"),
            reminders=check_reminders(reminders),
            escalate_after=check_timeout(escalate_after, "escalate_after"),
            escalate_users=ids(escalate_users, "escalate_users"),
            escalate_groups=ids(escalate_groups, "escalate_groups"),
            escalate_channel=escalate_channel or None,
            names=names,
        )
        self._questions = QuestionDefaults.checked(default_option, approvals_required, veto)
        self._background = Background(client)
        self.lookup = InstallationLookup(client, background=self._background)
        self._messages = SlackMessages(
            client=client, store=self.store, events=self.events, background=self._background
        )
        self._life = AskLifecycle(
            store=self.store,
            events=self.events,
            on_end=self._ended,
            sweep_interval=sweep_interval,
            on_remind=self._messages.remind,
            on_escalate=self._messages.escalate,
            reminder_lease=reminder_lease,
            on_unsettled=self._messages.reshow,
            settling=settling,
        )
        # The asks an ask() call here waits for (the lifecycle's set; closing ends them).
        self._waiting = self._life.waiting
        self._clicks = ClickIntake(
            life=self._life,
            messages=self._messages,
            gatekeeper=self.gatekeeper,
            background=self._background,
            installation=self.installation,
            edit_review=edit_review,
        )
        self._poster = AskPoster(life=self._life, messages=self._messages)
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
        return await self._poster.start(request, resolved, owner=owner, held=held)

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
