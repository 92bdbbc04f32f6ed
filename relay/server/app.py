"""The hosted relay: one aiohttp server for Slack's interactivity and the ``/v1`` API."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp
from aiohttp import web
from slack_sdk.errors import SlackApiError, SlackClientError

from relay.server.api import OWNER, AskApi
from relay.server.auth import Authenticator
from relay.server.errors import ApiError, error_response
from relay.server.metrics import CONTENT_TYPE, Metrics
from relay.server.openapi import openapi_document
from relay.slack.app import slack_handler
from relay.slack.provider import SlackProvider
from relay.store.base import StoreUnavailable

__all__ = ["build_app"]

_log = logging.getLogger("relay.server")
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
# Slack's interactivity payloads echo the whole message back, so they may be larger than
# the API's body cap; this bounds them without refusing a legitimate click.
_SLACK_MAX_BODY = 2 * 1024 * 1024


class _Readiness:
    """Caches a passing Slack ``auth.test`` briefly, so probes do not hammer Slack."""

    def __init__(self, provider: SlackProvider, *, ttl: float = 30.0) -> None:
        self._provider = provider
        self._ttl = ttl
        self._passed_at = -float("inf")

    async def check(self) -> dict[str, str]:
        problems: dict[str, str] = {}
        if time.monotonic() - self._passed_at > self._ttl:
            try:
                await self._provider.client.auth_test()
                self._passed_at = time.monotonic()
            except (SlackApiError, SlackClientError, aiohttp.ClientError, OSError) as exc:
                problems["slack"] = f"auth.test failed: {exc or type(exc).__name__}"
        socket = self._provider.socket_mode
        if socket is not None and (problem := socket.problem()) is not None:
            problems["socket_mode"] = problem
        try:
            async with asyncio.timeout(2.0):
                await self._provider.store.ping()
        except Exception as exc:
            problems["store"] = f"unreachable: {exc}"
        return problems


def build_app(
    *,
    provider: SlackProvider,
    api_tokens: tuple[str, ...],
    max_wait: float = 60.0,
    max_body: int = 256 * 1024,
    serve_slack_events: bool = True,
) -> web.Application:
    """The server's application: ``/slack/events``, ``/v1/…``, health, metrics, OpenAPI."""
    auth = Authenticator(api_tokens)
    metrics = Metrics(store=provider.store)
    provider.events.subscribe(metrics.observe)
    readiness = _Readiness(provider)
    api = AskApi(provider=provider, max_wait=max_wait, max_body=max_body)

    @web.middleware
    async def errors(request: web.Request, handler: Handler) -> web.StreamResponse:
        if request.path.startswith("/v1/"):
            owner = auth.owner(request.headers.get("Authorization"))
            if owner is None:
                return error_response(
                    "UNAUTHORIZED",
                    "send a valid relay API token as 'Authorization: Bearer <token>'",
                    headers={"WWW-Authenticate": 'Bearer realm="relay"'},
                )
            request[OWNER] = owner
        try:
            return await handler(request)
        except ApiError as exc:
            return error_response(exc.code, exc.message, status=exc.status)
        except web.HTTPRequestEntityTooLarge:
            return error_response("TOO_LARGE", "the request body is too large")
        except web.HTTPNotFound:
            return error_response("NOT_FOUND", f"there is no route {request.path}")
        except web.HTTPMethodNotAllowed as exc:
            return error_response(
                "METHOD_NOT_ALLOWED",
                f"{request.method} is not allowed on {request.path}; use"
                f" {', '.join(sorted(exc.allowed_methods))}",
                headers={"Allow": ", ".join(sorted(exc.allowed_methods))},
            )
        except (StoreUnavailable, ConnectionError, OSError, TimeoutError) as exc:
            _log.warning("store or network failure on %s %s: %s", request.method, request.path, exc)
            return error_response(
                "UNAVAILABLE", "the relay's store is unreachable right now; retry shortly"
            )
        except web.HTTPException:
            raise
        except Exception:
            _log.exception("unexpected error on %s %s", request.method, request.path)
            return error_response("INTERNAL", "the relay failed unexpectedly; see its logs")

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

    app = web.Application(client_max_size=max(max_body, _SLACK_MAX_BODY), middlewares=[errors])
    app.add_routes(
        [
            web.get("/healthz", healthz),
            web.get("/readyz", readyz),
            web.get("/metrics", metrics_route),
            web.get("/openapi.json", openapi),
            *api.routes(),
        ]
    )
    if serve_slack_events:
        app.router.add_post("/slack/events", slack_handler(provider.bolt_app))
    return app
