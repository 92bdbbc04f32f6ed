"""The hosted relay: one aiohttp server for Slack's interactivity and the ``/v1`` API."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web
from aiohttp.typedefs import Middleware

from relay.config.mcp import McpSettings
from relay.errors import ErrorCode
from relay.gate.decider import PLAN_TTL, Decider
from relay.gate.local import PostingChannel
from relay.gate.policy import Policy
from relay.gate.rules import Rules
from relay.gate.rulings import Rulings
from relay.grants import GrantStore, MemoryGrants
from relay.receipts import ReceiptWriter
from relay.receipts.checkpoint import Checkpointer
from relay.server.api import OPERATOR, OWNER, AskApi
from relay.server.approval_use import ApprovalUseApi
from relay.server.approvals import ApprovalApi
from relay.server.auth import Authenticator
from relay.server.bodies import ClientGone
from relay.server.channel import ServedChannel
from relay.server.connections import Connections, default_connection_limit
from relay.server.errors import ApiError, error_response
from relay.server.limits import Limiter, RateLimited, TokenLimits, retry_after_header
from relay.server.mcp_mount import SessionLimits, mount_mcp
from relay.server.mcp_origins import OriginPolicy
from relay.server.metrics import CONTENT_TYPE, Metrics
from relay.server.openapi import openapi_document
from relay.server.plans import PlanApi
from relay.server.receipts import ReceiptApi, operator_may
from relay.server.report import ReportPage
from relay.store.base import StoreUnavailable
from relay.store.uses import ApprovalUses
from relay.webhooks.sender import Webhooks

__all__ = ["CONNECTIONS", "build_app"]

_log = logging.getLogger("relay.server")
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
# A channel's payloads (Slack's interactivity echoes the whole message back) may be larger than
# the API's body cap; this bounds them without refusing a legitimate click.
_CHANNEL_MAX_BODY = 2 * 1024 * 1024


class _Readiness:
    """Checks the channel (Slack's ``auth.test``) and the store for ``/readyz``, one at a time.

    Probes come unauthenticated and often; while Slack fails, each one calling Slack would
    turn a probe flood into an ``auth.test`` flood. So one check runs at a time (probes that
    arrive meanwhile share its result), a pass is kept ``ttl`` seconds and a failure
    ``failure_ttl`` seconds.
    """

    def __init__(
        self, channel: ServedChannel, *, ttl: float = 30.0, failure_ttl: float = 5.0
    ) -> None:
        self._channel = channel
        self._ttl = ttl
        self._failure_ttl = failure_ttl
        self._last: tuple[float, str | None] = (-float("inf"), None)
        self._checking: asyncio.Future[dict[str, str]] | None = None
        self._logged: dict[str, str] = {}

    async def check(self) -> dict[str, str]:
        """The problems found (none: ready); concurrent callers share one check."""
        if self._checking is None:
            self._checking = asyncio.ensure_future(self._check())
            self._checking.add_done_callback(self._checked)
        return dict(await asyncio.shield(self._checking))

    def _checked(self, future: asyncio.Future[dict[str, str]]) -> None:
        self._checking = None
        if not future.cancelled():
            future.exception()  # retrieved: a failed check is reported to its callers

    async def _check(self) -> dict[str, str]:
        # The body is public (probes are unauthenticated): it names what is wrong, never
        # where (no Redis or Slack address, no exception text); the details go to the log.
        problems: dict[str, str] = {}
        details: dict[str, str] = {}
        checked_at, failure = self._last
        ttl = self._ttl if failure is None else self._failure_ttl
        if time.monotonic() - checked_at > ttl:
            failed = await self._channel.check()
            failure = failed.problem if failed is not None else None
            if failed is not None:
                details[self._channel.name] = failed.detail
            self._last = (time.monotonic(), failure)
        if failure is not None:
            problems[self._channel.name] = failure
        problems.update(self._channel.problems())
        try:
            async with asyncio.timeout(2.0):
                await self._channel.store.ping()
        except Exception as exc:
            problems["store"] = "unreachable"
            details["store"] = f"{exc or type(exc).__name__}"
        self._log_changes(details, problems)
        return problems

    def _log_changes(self, details: dict[str, str], problems: dict[str, str]) -> None:
        # Once per new failure, not once per probe: probes come every few seconds.
        for part, detail in details.items():
            if self._logged.get(part) != detail:
                _log.warning("not ready: %s: %s", part, detail)
            self._logged[part] = detail
        for part in [p for p in self._logged if p not in problems]:
            del self._logged[part]


CONNECTIONS = web.AppKey("relay_connections", Connections)


def build_app(
    *,
    channel: ServedChannel,
    api_tokens: tuple[str, ...],
    operator_tokens: tuple[str, ...] = (),
    max_wait: float = 60.0,
    max_body: int = 256 * 1024,
    serve_channel_routes: bool = True,
    limits: TokenLimits | None = None,
    read_timeout: float = 10.0,
    max_connections: int | None = None,
    grants: GrantStore | None = None,
    mcp_progress_interval: float = 10.0,
    idempotency_window: float = 24 * 3600.0,
    webhooks: Webhooks | None = None,
    min_approvals: int | None = None,
    receipts: ReceiptWriter | None = None,
    checkpoints: Checkpointer | None = None,
    mcp: McpSettings | None = None,
    policy: Policy | None = None,
    rulings: Rulings | None = None,
    plan_ttl: float = PLAN_TTL,
    decider: Decider | None = None,
) -> web.Application:
    """The server's application: the channel's routes (``/slack/events``; left out when not
    ``serve_channel_routes``), ``/v1/…``, ``/mcp``, health, metrics, OpenAPI. ``channel``
    shows the asks; ``grants`` holds the approvals' grants (in memory when not given).
    ``min_approvals`` (``RELAY_APPROVALS_REQUIRED``) is the fewest people any tool approval
    needs (``/v1/approvals`` and ``/mcp``): a body may ask for more, never fewer.
    ``receipts`` signs and chains ended asks' receipts (their routes answer 404 without it);
    ``checkpoints`` signs checkpoints of the chain (``/receipts/checkpoint``).
    ``mcp`` bounds ``/mcp``'s sessions and lists the origins and hosts it answers.
    ``operator_tokens`` (``RELAY_OPERATOR_TOKENS``) read every token's receipts, and only them.
    ``policy`` (``RELAY_RULES_FILE``) is the operator's rules for tool approvals, or
    ``rulings`` when the channel's Edit form holds edits to them (``operator_rulings``).
    ``plan_ttl`` (``RELAY_PLAN_TTL``) is how long an approved plan holds (``/v1/plans``).
    ``decider``: the Decider ``channel`` was built with (its rules hold); else one is made.

    Serve it with ``GuardedSite(runner, host, port, connections=app[CONNECTIONS])`` so that
    slow and vanishing clients are bounded (``relay serve`` does).
    """
    auth = Authenticator(api_tokens, operator_tokens)
    limiter, connections, metrics = _traffic(
        channel, limits or TokenLimits(), max_connections, read_timeout, webhooks
    )
    api = AskApi(
        channel=channel,
        max_wait=max_wait,
        max_body=max_body,
        read_timeout=read_timeout,
        limiter=limiter,
        connections=connections,
        idempotency_window=idempotency_window,
        webhooks=webhooks,
    )
    rulings = rulings if rulings is not None else operator_rulings(policy, min_approvals)
    decider = _decider(decider, channel, rulings, grants, plan_ttl, receipts)
    app = web.Application(
        client_max_size=max(max_body, _CHANNEL_MAX_BODY),
        middlewares=[_errors(auth, limiter, metrics, connections)],
    )
    app[CONNECTIONS] = connections
    app.add_routes(_probes(_Readiness(channel), metrics))
    app.add_routes(_api_routes(api, decider, decider.grants, receipts, checkpoints))
    # The approvals report (/report): an operator's page, made from the verified chain.
    app.add_routes(ReportPage(auth=auth, store=channel.store, writer=receipts).routes())
    mount_mcp(
        app,
        provider=channel,
        decider=decider,
        auth=auth,
        progress_interval=mcp_progress_interval,
        receipts=receipts is not None,
        **_mcp_bounds(mcp or McpSettings()),
        limiter=limiter,
        read_timeout=read_timeout,
    )
    if serve_channel_routes:
        app.add_routes(channel.routes(read_timeout=read_timeout))
    return app


def _traffic(
    channel: ServedChannel,
    limits: TokenLimits,
    max_connections: int | None,
    read_timeout: float,
    webhooks: Webhooks | None,
) -> tuple[Limiter, Connections, Metrics]:
    """What bounds the traffic (each token's limits, the open connections) and what counts
    it: the metrics, observing the channel's events and the webhooks' results."""
    limiter = Limiter(limits)
    connections = Connections(
        limit=max_connections or default_connection_limit(), read_timeout=read_timeout
    )
    metrics = Metrics(store=channel.store, limiter=limiter, connections=connections)
    channel.events.subscribe(metrics.observe)
    if webhooks is not None:
        webhooks.on_result = metrics.webhook_result
    return limiter, connections, metrics


def _decider(
    given: Decider | None,
    channel: ServedChannel,
    rulings: Rulings,
    grants: GrantStore | None,
    plan_ttl: float,
    receipts: ReceiptWriter | None,
) -> Decider:
    """The one Decider behind /v1/approvals, /v1/plans and /mcp (the Edit form holds edits to
    the same rulings: relay serve gives the channel ``rulings.edit_terms``); with receipts,
    each call it decides at once, without a person, gets one too. ``given``: the Decider the
    channel was built with, which asks people through it from now on."""
    if given is not None:
        given.post_through(PostingChannel(channel))
        return given
    return Decider(
        rulings=rulings,
        grants=grants if grants is not None else MemoryGrants(),
        channel=PostingChannel(channel),
        plan_ttl=plan_ttl,
        witness=receipts,
    )


def _api_routes(
    api: AskApi,
    decider: Decider,
    grants: GrantStore,
    receipts: ReceiptWriter | None,
    checkpoints: Checkpointer | None,
) -> list[web.RouteDef]:
    """``/v1``: asks, approvals, their use (when the store records uses), receipts."""
    approvals = ApprovalApi(asks=api, decider=decider)
    receipt_api = ReceiptApi(
        asks=api, approvals=approvals, writer=receipts, checkpoints=checkpoints
    )
    store = api.channel.store
    uses = (
        ApprovalUseApi(asks=api, approvals=approvals, grants=grants, uses=store).routes()
        if isinstance(store, ApprovalUses)
        else []  # a store that records no uses: no /consume, so no ticket runs a call
    )
    plans = PlanApi(asks=api, decider=decider)
    return [*api.routes(), *approvals.routes(), *plans.routes(), *uses, *receipt_api.routes()]


def _probes(readiness: _Readiness, metrics: Metrics) -> list[web.RouteDef]:
    """Health, readiness, metrics and the OpenAPI document (no token needed)."""

    async def healthz(_: web.Request) -> web.Response:
        return web.json_response({"ok": True})

    async def readyz(_: web.Request) -> web.Response:
        problems = await readiness.check()
        body: dict[str, Any] = {"ok": not problems, **problems}
        return web.json_response(body, status=503 if problems else 200)

    async def metrics_route(_: web.Request) -> web.Response:
        return web.Response(body=await metrics.render(), headers={"Content-Type": CONTENT_TYPE})

    async def openapi(_: web.Request) -> web.Response:
        return web.json_response(openapi_document())

    return [
        web.get("/healthz", healthz),
        web.get("/readyz", readyz),
        web.get("/metrics", metrics_route),
        web.get("/openapi.json", openapi),
    ]


def _errors(
    auth: Authenticator, limiter: Limiter, metrics: Metrics, connections: Connections
) -> Middleware:
    """The middleware: counts the connection's requests, checks ``/v1``'s token and rate,
    and turns every failure into the API's error body."""

    @web.middleware
    async def errors(request: web.Request, handler: Handler) -> web.StreamResponse:
        connections.request_started(request)
        try:
            return await _answer(request, handler)
        finally:
            connections.request_finished(request)

    async def _answer(request: web.Request, handler: Handler) -> web.StreamResponse:
        try:
            if request.path.startswith("/v1/"):
                if (refused := _authorise(request, auth)) is not None:
                    return refused
                limiter.hit(request[OWNER])
            return await handler(request)
        except ApiError as exc:
            return error_response(exc.code, exc.message, status=exc.status)
        except RateLimited as exc:
            metrics.refused.labels(limit=exc.limit).inc()
            return error_response(
                ErrorCode.RATE_LIMITED,
                exc.message,
                headers={"Retry-After": retry_after_header(exc.retry_after)},
            )
        except web.HTTPRequestEntityTooLarge:
            return error_response(ErrorCode.TOO_LARGE, "the request body is too large")
        except web.HTTPNotFound:
            return error_response(ErrorCode.NOT_FOUND, f"there is no route {request.path}")
        except web.HTTPMethodNotAllowed as exc:
            return error_response(
                ErrorCode.METHOD_NOT_ALLOWED,
                f"{request.method} is not allowed on {request.path}; use"
                f" {', '.join(sorted(exc.allowed_methods))}",
                headers={"Allow": ", ".join(sorted(exc.allowed_methods))},
            )
        except ClientGone:
            return _gone(request)
        except (StoreUnavailable, ConnectionError, OSError, TimeoutError) as exc:
            if _hung_up(request):
                return _gone(request)
            _log.warning("store or network failure on %s %s: %s", request.method, request.path, exc)
            return error_response(
                ErrorCode.UNAVAILABLE, "the relay's store is unreachable right now; retry shortly"
            )
        except web.HTTPException:
            raise
        except Exception:
            if _hung_up(request):
                # aiohttp's body readers raise RuntimeError("Connection closed.") once the
                # connection is gone (the client left, or was closed to make room).
                return _gone(request)
            _log.exception("unexpected error on %s %s", request.method, request.path)
            return error_response(ErrorCode.INTERNAL, "the relay failed unexpectedly; see its logs")

    return errors


def _authorise(request: web.Request, auth: Authenticator) -> web.Response | None:
    """Note the ``/v1`` request's owner (an agent's token, or an operator's reading
    receipts); the refusal when there is none."""
    header = request.headers.get("Authorization")
    owner = auth.owner(header)
    if owner is None and (operator := auth.operator(header)) is not None:
        if not operator_may(request):
            return error_response(
                ErrorCode.UNAUTHORIZED,
                "an operator token (RELAY_OPERATOR_TOKENS) reads receipts only"
                " (GET /v1/receipts, GET /v1/asks/{id}/receipt); send an agent's"
                " API token for anything else",
            )
        request[OPERATOR] = True
        owner = operator
    if owner is None:
        return error_response(
            ErrorCode.UNAUTHORIZED,
            "send a valid relay API token as 'Authorization: Bearer <token>'",
            headers={"WWW-Authenticate": 'Bearer realm="relay"'},
        )
    request[OWNER] = owner
    return None


def _mcp_bounds(settings: McpSettings) -> dict[str, Any]:
    return {
        "session_limits": SessionLimits(
            per_token=settings.sessions_per_token,
            total=settings.max_sessions,
            idle=settings.session_idle,
        ),
        "origins": OriginPolicy(origins=settings.allowed_origins, hosts=settings.allowed_hosts),
    }


def operator_rulings(policy: Policy | None, min_approvals: int | None) -> Rulings:
    """The relay's rulings: the operator's rules for a token's fingerprint (its token
    section's, else the global ones; none without ``RELAY_RULES_FILE``) and at least
    ``min_approvals`` people for any tool approval."""

    def rules_for(owner: str) -> Rules | None:
        return policy.for_owner(owner) if policy is not None else None

    return Rulings(rules=rules_for, min_approvals=min_approvals)


def _hung_up(request: web.Request) -> bool:
    transport = request.transport
    return transport is None or transport.is_closing()


def _gone(request: web.Request) -> web.Response:
    # Nobody is left to read an answer: not a failure of the relay, so no warning.
    _log.debug("client hung up during %s %s", request.method, request.path)
    return web.Response(status=400)
