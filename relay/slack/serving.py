"""Slack as the channel ``relay serve`` serves: a ``SlackProvider`` with its HTTP route,
Socket Mode, start-up check and readiness probe (the server's ``ServedChannel``).

``slack_channel`` is the composition root's factory: it maps the relay's ``Settings`` to
``SlackSettings`` over the ``AskLifecycle`` the server built.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

import aiohttp
from aiohttp import web
from slack_sdk.errors import SlackApiError, SlackClientError
from slack_sdk.web.async_client import AsyncWebClient

from relay.asks.channel import ChannelCheck
from relay.asks.names import NamePolicy
from relay.asks.target import AskTarget
from relay.errors import RelayConfigError
from relay.slack.intake.app import slack_handler
from relay.slack.provider import SlackProvider
from relay.slack.settings import SlackSettings
from relay.slack.webapi.identity import TOKEN_REFUSALS

if TYPE_CHECKING:
    from relay.asks.edit_review import EditReview
    from relay.asks.events import Events
    from relay.asks.lifecycle import AskLifecycle
    from relay.asks.plan_door import PlanDoor
    from relay.config.settings import Settings
    from relay.seam.questions import AskUserQuestionRequest
    from relay.store import AskRecord, AskStore

__all__ = ["slack_channel"]


class SlackServing:
    """``relay serve``'s channel: asks through ``provider``; answers arrive on
    ``/slack/events`` (``serve_events``) or over Socket Mode (``app_token``)."""

    name = "slack"

    def __init__(
        self, provider: SlackProvider, *, app_token: str | None = None, serve_events: bool = True
    ) -> None:
        self.provider = provider
        self._app_token = app_token
        self._serve_events = serve_events

    # ---- the doors' AskChannel: the provider's own -----------------------------------------

    @property
    def store(self) -> AskStore:
        """The provider's store."""
        return self.provider.store

    @property
    def events(self) -> Events:
        """The provider's events."""
        return self.provider.events

    @property
    def stopping(self) -> bool:
        """Whether the provider stopped asking."""
        return self.provider.stopping

    async def start(
        self,
        request: AskUserQuestionRequest,
        *,
        target: AskTarget | None = None,
        owner: str | None = None,
    ) -> AskRecord:
        """Post the ask (``SlackProvider.start``)."""
        return await self.provider.start(request, target=target, owner=owner)

    async def wait(self, ask_id: str, *, within: float | None = None) -> AskRecord:
        """Wait for the ask (``SlackProvider.wait``)."""
        return await self.provider.wait(ask_id, within=within)

    async def abort(self, ask_id: str) -> AskRecord | None:
        """Abort the ask and withdraw its messages (``SlackProvider.abort``)."""
        return await self.provider.abort(ask_id)

    async def stop_asking(self) -> None:
        """``SlackProvider.stop_asking``."""
        await self.provider.stop_asking()

    async def aclose(self) -> None:
        """``SlackProvider.aclose``: the Slack updates still owed, then disconnect."""
        await self.provider.aclose()

    # ---- what the server needs besides ---------------------------------------------------

    def routes(self, *, read_timeout: float) -> list[web.RouteDef]:
        """``POST /slack/events`` in HTTP mode; none in Socket Mode."""
        if not self._serve_events:
            return []
        handler = slack_handler(self.provider.bolt_app, read_timeout=read_timeout)
        return [web.post("/slack/events", handler)]

    async def open(self, *, within: float) -> None:
        """Time asks out, check the bot token (a refusal stops the start; an unreachable
        Slack is retried in the background), then connect Socket Mode in the background."""
        self.provider.start_expiry()
        self.provider.prefetch_identity()
        refusal = await self.provider.lookup.first_check(within=within)
        if refusal is not None:
            raise refusal
        if self._app_token:
            # In the background: serving, /readyz and signals work while Slack is unreachable.
            await self.provider.connect_socket_mode(self._app_token, wait=False)

    async def refused(self) -> RelayConfigError:
        """The bot token's or the app token's refusal, whichever comes first."""
        waits = [asyncio.ensure_future(self.provider.lookup.refused())]
        if (socket := self.provider.socket_mode) is not None:
            waits.append(asyncio.ensure_future(socket.refused()))
        try:
            done, _ = await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for waiting in waits:
                waiting.cancel()
        return next(iter(done)).result()

    async def check(self) -> ChannelCheck | None:
        """``auth.test`` now; the failure in relay's words (slack-sdk's hold the URL)."""
        try:
            await self.provider.client.auth_test()
        except SlackApiError as exc:
            code = exc.response.get("error") if exc.response is not None else None
            refused = code in TOKEN_REFUSALS
            return ChannelCheck(
                "refused token" if refused else f"auth.test failed ({code or 'error'})",
                f"auth.test answered {code or 'an error'}",
            )
        except (SlackClientError, aiohttp.ClientError, OSError) as exc:
            return ChannelCheck(
                "auth.test failed (Slack unreachable)", f"{exc or type(exc).__name__}"
            )
        return None

    def problems(self) -> dict[str, str]:
        """Socket Mode's problem, when it is not connected."""
        socket = self.provider.socket_mode
        if socket is not None and (problem := socket.problem()) is not None:
            return {"socket_mode": problem.split(" (last attempt", 1)[0]}
        return {}


def slack_settings(
    settings: Settings, edit_review: EditReview | None = None, plans: PlanDoor | None = None
) -> SlackSettings:
    """``relay serve``'s ``SlackSettings`` from its ``Settings``."""
    channels = settings.allowed_channels or frozenset()
    return SlackSettings(
        client=AsyncWebClient(
            token=settings.bot_token, base_url=settings.slack_api_url or AsyncWebClient.BASE_URL
        ),
        signing_secret=settings.signing_secret,
        channel=settings.channel,
        route=None if settings.channel else _no_default_channel,
        timeout=settings.timeout,
        allowed_users=settings.allowed_users,
        allowed_groups=settings.allowed_groups,
        # An API client may narrow who answers its ask, never widen it past the operator's.
        policy_users=settings.allowed_users,
        policy_groups=settings.allowed_groups,
        # And it may name only the channels and groups the operator lists (none: none).
        names=NamePolicy(
            channels=channels | ({settings.channel} if settings.channel else frozenset()),
            groups=settings.allowed_groups or frozenset(),
        ),
        max_timeout=settings.max_timeout,
        edit_review=edit_review,
        plans=plans,
        batch_window=settings.batch_window,
        **settings.team.provider_kwargs(),
    )


def slack_channel(
    settings: Settings,
    lifecycle: AskLifecycle,
    edit_review: EditReview | None = None,
    plans: PlanDoor | None = None,
) -> SlackServing:
    """Slack as ``relay serve``'s channel, over the server's ``lifecycle`` (a
    ``ChannelFactory``)."""
    provider = SlackProvider(slack_settings(settings, edit_review, plans), lifecycle=lifecycle)
    return SlackServing(
        provider, app_token=settings.app_token, serve_events=not settings.socket_mode
    )


def _no_default_channel(_: object) -> AskTarget:
    # No RELAY_CHANNEL: every API request must name its channel (the provider says so).
    return AskTarget(channel="")
