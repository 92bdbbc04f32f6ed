"""``FakeSlack``: a local Slack Web API, Socket Mode endpoint and workspace of simulated
humans, for testing a Slack app (or an agent using relay) without a real workspace.

Point ``AsyncWebClient(base_url=slack.base_url)`` at it, set ``slack.interactivity_url`` to
the app's request URL (or connect a Socket Mode client), let humans ``click`` on the
messages the app posted, and await what the app did with ``wait_for_call`` and friends.
"""

from __future__ import annotations

import asyncio
import json
import time
import urllib.parse
from collections.abc import Awaitable, Callable, Collection
from types import TracebackType
from typing import Any

import aiohttp
from aiohttp import web
from slack_sdk.signature import SignatureVerifier

from .auth import (
    DEFAULT_APP_TOKEN,
    DEFAULT_BOT_TOKEN,
    DecodedRequest,
    TokenCheck,
    decode_api_request,
)
from .faults import ApiReply, Fault, FaultPlan, RateLimiter
from .human import Humans
from .install import Install
from .mentions import links_in, mentions_in
from .modal_humans import ModalHumans
from .modals import Clock
from .ratelimits import TierLimiter
from .records import ClickResult, RecordedCall
from .socket_mode import MAX_CONNECTIONS, SOCKET_MODE_PATH, SocketModeServer
from .view import WorkspaceView
from .waits import CallLog
from .workspace import Workspace

__all__ = ["DEFAULT_APP_TOKEN", "DEFAULT_BOT_TOKEN", "LENIENCIES", "FakeSlack"]

LENIENCIES = frozenset({"any_token", "any_channel"})
"""The rules ``FakeSlack(lenient=...)`` can relax (each a way Slack is stricter)."""

_APP_TOKEN_METHODS = frozenset({"apps.connections.open"})
_MESSAGE_METHODS = frozenset(
    {"chat.postMessage", "chat.update", "chat.postEphemeral", "response_url"}
)


class FakeSlack(WorkspaceView, CallLog, Humans, ModalHumans):
    """A fake Slack workspace served over real HTTP on ``127.0.0.1`` (a free port).

    Answers the Web API like Slack (validation and errors included), records every call,
    fails on demand (``fail``, ``rate_limit``) and delivers simulated humans' actions to the
    app as signed ``block_actions`` requests or Socket Mode envelopes.

    As strict as Slack, by default: Block Kit checked against Slack's rules (unknown fields
    refused, ``initial_option`` among the options, one ``focus_on_load``), only the tokens it
    issued (``bot_token``/``app_token``, ``DEFAULT_BOT_TOKEN``/``DEFAULT_APP_TOKEN`` when not
    given, and any ``issue_token`` adds; others answer ``invalid_auth``), only the
    workspace's own channels (``channels``, ``add_channel``; others answer
    ``channel_not_found``) and, once declared (``add_user``), people, Slack's rate limit
    tiers per method per workspace and ``chat.postMessage``'s per channel
    (``rate_limits=False`` turns them off for throughput tests), and a JSON body without a
    charset warned ``missing_charset``. ``lenient`` relaxes named rules for tests that want
    it: ``"any_token"`` takes any well-formed ``xoxb-``/``xoxp-``/``xapp-`` token,
    ``"any_channel"`` any channel id until one is declared (``LENIENCIES``).

    ``enterprise_id`` puts the workspace in an Enterprise Grid organisation;
    ``enterprise_install`` makes the app's install org-wide (``auth.test`` and payloads
    change as in Slack). ``max_socket_connections`` is Slack's Socket Mode cap (10).

    Modals: ``views.open``/``views.update``/``views.push`` take the ``trigger_id`` of an
    interaction the fake delivered (single use, 3 seconds), humans fill and submit them
    (``wait_for_modal``, ``FakeModal.fill``, ``submit_view``, ``close_view``). ``clock``
    (seconds, ``time.monotonic`` by default) times the triggers: pass a
    ``relay.testing.ManualClock`` to expire them without sleeping.
    """

    def __init__(
        self,
        *,
        signing_secret: str = "test-secret",  # noqa: S107 - a fake's well-known secret
        team_id: str = "T0FAKE",
        api_app_id: str = "A0FAKE",
        bot_user_id: str = "U0BOT",
        bot_id: str = "B0BOT",
        team_domain: str = "fake",
        verification_token: str = "fake-verification-token",  # noqa: S107
        ack_timeout: float = 3.0,
        max_socket_connections: int = MAX_CONNECTIONS,
        enterprise_id: str | None = None,
        enterprise_install: bool = False,
        bot_token: str | None = None,
        app_token: str | None = None,
        rate_limits: bool = True,
        channels: dict[str, str] | None = None,
        clock: Clock | None = None,
        lenient: Collection[str] = (),
    ) -> None:
        unknown = sorted(set(lenient) - LENIENCIES)
        if unknown:
            raise ValueError(
                f"unknown leniency {unknown[0]!r}: FakeSlack relaxes only {sorted(LENIENCIES)}"
            )
        super().__init__()
        self.signing_secret = signing_secret
        self.interactivity_url: str | None = None
        """Where humans' actions are POSTed; ``None`` delivers them over Socket Mode."""
        self.ack_timeout = ack_timeout
        """Seconds the app has to answer an action (Slack's deadline is 3)."""
        self._workspace = Workspace(
            install=Install(
                team_id=team_id,
                team_domain=team_domain,
                api_app_id=api_app_id,
                bot_user_id=bot_user_id,
                bot_id=bot_id,
                enterprise_id=enterprise_id,
                enterprise_install=enterprise_install,
            ),
            clock=clock or time.monotonic,
        )
        self._workspace.channels.update(channels or {})
        self._workspace.any_channel = "any_channel" in lenient
        self.bot_token = bot_token or DEFAULT_BOT_TOKEN
        """The bot token this workspace issued to the app (``xoxb-``): give it to the relay."""
        self.app_token = app_token or DEFAULT_APP_TOKEN
        """The app-level token it issued (``xapp-``), for Socket Mode."""
        self._tokens = TokenCheck(
            issued={self.bot_token, self.app_token}, any_token="any_token" in lenient
        )
        self._tiers = TierLimiter() if rate_limits else None
        self._faults = FaultPlan()
        self.arrived: list[RecordedCall] = []
        """Every Web API call as it arrives, before it is answered (``response`` empty)."""
        self._limiter = RateLimiter()
        self._sockets = SocketModeServer(
            api_app_id=api_app_id,
            changed=self._changes.notify,
            max_connections=max_socket_connections,
        )
        Humans.__init__(
            self,
            workspace=self._workspace,
            deliver=self.post_interaction,
            response_url_base=lambda: f"{self.url}response/",
            verification_token=verification_token,
        )
        self._runner: web.AppRunner | None = None
        self._http: aiohttp.ClientSession | None = None
        self._url: str | None = None

    # -- lifecycle ------------------------------------------------------------------------

    async def start(self) -> None:
        """Start serving on a free port of 127.0.0.1."""
        if self._runner is not None:
            raise RuntimeError("FakeSlack is already started")
        app = web.Application(middlewares=[_no_browser_pages])
        app.router.add_route("*", "/api/{method}", self._serve_api)
        app.router.add_post("/response/{key}", self._serve_response_url)
        app.router.add_get(SOCKET_MODE_PATH, self._sockets.handle)
        runner = web.AppRunner(app, access_log=None, shutdown_timeout=1.0)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        host, port = runner.addresses[0][:2]
        self._runner = runner
        self._url = f"http://{host}:{port}/"
        self._http = aiohttp.ClientSession()

    async def close(self) -> None:
        """Drop Socket Mode connections and stop serving."""
        await self._sockets.close()
        if self._http is not None:
            await self._http.close()
            self._http = None
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def __aenter__(self) -> FakeSlack:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.close()

    @property
    def url(self) -> str:
        """The server's root URL, ``http://127.0.0.1:PORT/``."""
        if self._url is None:
            raise RuntimeError("FakeSlack is not started: await slack.start() first")
        return self._url

    @property
    def base_url(self) -> str:
        """The Web API base URL for ``AsyncWebClient(base_url=...)``."""
        return f"{self.url}api/"

    def fail(
        self,
        method: str,
        *,
        error: str | None = None,
        status: int | None = None,
        retry_after: int | None = None,
        delay: float | None = None,
        times: int = 1,
    ) -> None:
        """Make the next ``times`` calls of ``method`` answer ``{"ok": false, "error": error}``
        or HTTP ``status`` (429 with ``Retry-After: retry_after``), after sleeping ``delay``
        seconds; ``delay`` alone makes them slow successes. ``"response_url"`` works too."""
        fault = Fault(error=error, status=status, retry_after=retry_after, delay=delay)
        self._faults.add(method, fault, times=times)

    def recover(self, method: str) -> None:
        """Drop the failures still planned for ``method``: an outage (``fail`` with a large
        ``times``) ends, and its next calls answer normally."""
        self._faults.clear(method)

    async def wait_for_arrival(
        self, method: str, *, count: int = 1, timeout: float = 5.0
    ) -> RecordedCall:
        """The ``count``-th call of ``method`` as soon as it arrives, answered or not (a call
        held by ``fail(delay=...)`` shows here at once)."""

        def found() -> RecordedCall | None:
            matches = [c for c in self.arrived if c.method == method]
            return matches[count - 1] if len(matches) >= count else None

        return await self._changes.wait_for(
            found, timeout=timeout, describe=self._missing(f"arrival of {method} #{count}")
        )

    def issue_token(self, token: str) -> None:
        """Make the workspace know ``token`` too (another install's bot token, a user
        token): Slack takes only tokens it issued."""
        self._tokens.issued.add(token)
        self._tokens.revoked.discard(token)

    def revoke_token(self, token: str) -> None:
        """Make ``token`` answer ``invalid_auth`` from now on, as after an uninstall."""
        self._tokens.revoked.add(token)

    def rate_limit(self, method: str, *, per_channel_per_second: float, burst: int = 1) -> None:
        """Answer calls of ``method`` above this rate to one channel with 429 and the wait in
        ``Retry-After``, like Slack's 1 message per second per channel."""
        self._limiter.limit(method, per_second=per_channel_per_second, burst=burst)

    # -- Web API --------------------------------------------------------------------------

    async def _serve_api(self, request: web.Request) -> web.StreamResponse:
        method = request.match_info["method"]
        decoded = await decode_api_request(request, method)
        args, token = decoded.args, decoded.token
        arrived = RecordedCall(
            method=method, args=args, at=time.time(), status=0, response={}, token=token
        )
        self.arrived.append(arrived)
        await self._changes.notify()
        reply = await self._answer(method, decoded)
        if decoded.warnings:
            reply = reply.warned(decoded.warnings)
        await self._record(
            RecordedCall(
                method=method,
                args=args,
                at=time.time(),
                status=reply.status,
                response=reply.body,
                token=token,
            )
        )
        return web.json_response(reply.body, status=reply.status, headers=reply.headers)

    async def _answer(self, method: str, decoded: DecodedRequest) -> ApiReply:
        args, token = decoded.args, decoded.token
        if method not in self._workspace.methods | _APP_TOKEN_METHODS:
            return ApiReply.error("unknown_method")
        refused = self._tokens.error(token)
        if refused is not None or token is None:
            return ApiReply.error(refused or "not_authed")
        if token.startswith("xapp-") != (method in _APP_TOKEN_METHODS) and method != "auth.test":
            return ApiReply.error("not_allowed_token_type")
        forced = await self._apply_fault(method)
        if forced is not None:
            return forced
        channel = str(args.get("channel", ""))
        limited = self._limiter.check(method, channel)
        if limited is None and self._tiers is not None:
            limited = self._tiers.check(method, channel)
        if limited is not None:
            return limited
        if method == "apps.connections.open":
            ws_root = "ws" + self.url.removeprefix("http").rstrip("/")
            return ApiReply(body={"ok": True, "url": self._sockets.issue_url(ws_root)})
        return self._workspace.call(method, args)

    async def _apply_fault(self, method: str) -> ApiReply | None:
        fault = self._faults.take(method)
        if fault is None:
            return None
        if fault.delay:
            await asyncio.sleep(fault.delay)
        return fault.reply()

    async def _serve_response_url(self, request: web.Request) -> web.StreamResponse:
        key = request.match_info["key"]
        body = (await decode_api_request(request, "response_url")).args
        target = self._workspace.response_targets.get(key)
        args = {**body, "user": target.user if target else None, "text": body.get("text", "")}
        if target is not None:
            message = target.message
            args["channel"] = message.channel
            if message.thread_ts and message.thread_ts != message.ts:
                args["thread_ts"] = message.thread_ts  # shown where the clicked reply is
        reply = await self._apply_fault("response_url")
        ephemeral = False
        if reply is None:
            reply, ephemeral = self._workspace.respond(key, body)
        call = RecordedCall(
            method="response_url",
            args=args,
            at=time.time(),
            status=reply.status,
            response=reply.body,
        )
        await self._record(call, ephemeral=ephemeral)
        return web.json_response(reply.body, status=reply.status, headers=reply.headers)

    async def _record(self, call: RecordedCall, *, ephemeral: bool = False) -> None:
        self.calls.append(call)
        if call.ok and call.method in _MESSAGE_METHODS:
            self.mentions.extend(mentions_in(call.args, method=call.method))
            self.links.extend(links_in(call.args, method=call.method))
        if ephemeral or (call.method == "chat.postEphemeral" and call.ok):
            call.args.setdefault("text", "")
            self.ephemerals.append(call)
        await self._changes.notify()

    # -- Socket Mode ----------------------------------------------------------------------

    @property
    def socket_connections(self) -> int:
        """How many Socket Mode connections are open."""
        return self._sockets.connections

    @property
    def refused_sockets(self) -> int:
        """How many Socket Mode connections were refused with ``too_many_websockets``
        (past ``max_socket_connections``, 10 by default as in Slack)."""
        return self._sockets.refused

    def disconnect_sockets(self, *, reason: str | None = "refresh_requested") -> asyncio.Task[None]:
        """Drop every Socket Mode connection, as Slack does now and then: a ``disconnect``
        message with ``reason`` first (``None`` sends none, as when the network drops), then
        the close; the client reconnects through ``apps.connections.open``. Await the result
        to wait for the close handshakes (optional)."""
        return self._sockets.disconnect_all(reason=reason)

    async def send_socket_envelope(self, envelope: dict[str, Any]) -> ClickResult:
        """Send a Socket Mode envelope exactly as given (a recorded one, say) to a connected
        client and wait for its ack, like ``post_interaction`` does for the envelopes it
        builds."""
        return await self._sockets.send_envelope(envelope, timeout=self.ack_timeout)

    # -- delivery of humans' actions -------------------------------------------------------

    async def post_interaction(
        self,
        payload: dict[str, Any],
        *,
        timestamp: str | None = None,
        signature: str | None = None,
        body: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> ClickResult:
        """Deliver ``payload`` to the app: a signed form POST to ``interactivity_url``, or a
        Socket Mode envelope when that is unset. Over HTTP, ``timestamp``, ``signature``,
        ``body`` and ``headers`` override what Slack would send (for forgery tests)."""
        if self.interactivity_url is None:
            if any(x is not None for x in (timestamp, signature, body, headers)):
                raise ValueError("timestamp, signature, body and headers only apply over HTTP")
            if not self._sockets.connections:
                raise RuntimeError(
                    "nowhere to deliver the action: set slack.interactivity_url or connect "
                    "a Socket Mode client"
                )
            # A view_submission's ack may carry the answer (response_action), as over HTTP.
            accepts = payload.get("type") == "view_submission"
            return await self._sockets.deliver(
                payload, timeout=self.ack_timeout, accepts_response_payload=accepts
            )
        raw = body if body is not None else urllib.parse.urlencode({"payload": json.dumps(payload)})
        stamp = timestamp if timestamp is not None else str(int(time.time()))
        if signature is None:
            verifier = SignatureVerifier(self.signing_secret)
            signature = verifier.generate_signature(timestamp=stamp, body=raw) or ""
        sent_headers = {
            "Content-Type": "application/x-www-form-urlencoded",
            "User-Agent": "Slackbot 1.0 (+https://api.slack.com/robots)",
            "X-Slack-Request-Timestamp": stamp,
            "X-Slack-Signature": signature,
            **(headers or {}),
        }
        return await self._post(self.interactivity_url, raw, sent_headers)

    async def _post(self, url: str, raw: str, headers: dict[str, str]) -> ClickResult:
        if self._http is None:
            raise RuntimeError("FakeSlack is not started: await slack.start() first")
        timeout = aiohttp.ClientTimeout(total=self.ack_timeout)
        try:
            async with self._http.post(
                url, data=raw.encode(), headers=headers, timeout=timeout
            ) as resp:
                return ClickResult(status=resp.status, body=await resp.text())
        except TimeoutError:
            return ClickResult(
                status=504, body=f"operation_timeout: no answer within {self.ack_timeout:g}s"
            )
        except aiohttp.ClientConnectionError as exc:
            raise ConnectionError(f"could not deliver the action to {url}: {exc}") from exc


Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@web.middleware
async def _no_browser_pages(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Refuse what a web page makes a browser send (a form post, a fetch, a WebSocket): the
    fake serves Slack's clients, never a page, and as the sandbox's stand-in it runs on the
    user's machine, where any site open in the browser could otherwise post as the bot."""
    site = request.headers.get("Sec-Fetch-Site")
    if "Origin" in request.headers or (site is not None and site not in ("none", "same-origin")):
        return web.json_response({"ok": False, "error": "cross_origin_refused"}, status=403)
    return await handler(request)
