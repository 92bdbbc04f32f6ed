"""The sandbox's web page and its routes, added to the relay's own application.

- ``GET /``: the page (a Slack-like channel view), ``GET /sandbox/assets/…``: its script and
  style, served with a strict Content-Security-Policy (no inline script, Trusted Types);
- ``GET /sandbox/events?as=U…``: server-sent events for one viewer: a snapshot, then every
  message posted, updated or deleted and every private notice sent to that viewer;
- ``POST /sandbox/act``: a viewer's click, choice or Enter, delivered to ``/slack/events``
  by FakeSlack as Slack's signed request; or the submission (or close) of the modal the
  viewer has open (the feed's ``modal`` event), delivered as ``view_submission``;
- ``POST /sandbox/sample``: send a sample through the relay's own ``/v1`` API (a question to
  ``/v1/asks``, a plan to ``/v1/plans``, a tool call to ``/v1/approvals``) and return what the
  relay answered;
- ``GET /sandbox/answers``: what the latest asks' agents got back (``GET /v1/asks/{id}``; a
  plan's review as its agent reads it, ``GET /v1/plans/{id}``, which is also the read that
  makes an approved plan live);
- ``GET /sandbox/report``: the approvals report (``GET /report``'s page) on a sample log of
  receipts signed by the real writer and verified like any, since the sandbox's own few
  asks make thin charts.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Awaitable, Callable
from importlib import resources
from typing import Any

import aiohttp
from aiohttp import web

from relay.errors import ErrorCode
from relay.report.page import PAGE_POLICY as REPORT_POLICY
from relay.report.page import render_page as render_report
from relay.sandbox.directory import PEOPLE
from relay.sandbox.samples import SAMPLES, sample_path, sample_request
from relay.sandbox.standin import ActionRefused, Sandbox
from relay.seam.plan_review import PLAN_REVIEW_ID
from relay.testing import ViewResult

__all__ = ["CONTENT_SECURITY_POLICY", "SandboxPage"]

_log = logging.getLogger("relay.sandbox")

CONTENT_SECURITY_POLICY = "; ".join(
    (
        "default-src 'none'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self' data:",
        "connect-src 'self'",
        "base-uri 'none'",
        "form-action 'none'",
        "frame-ancestors 'none'",
        "require-trusted-types-for 'script'",
        "trusted-types 'none'",
    )
)
"""The page's policy: only its own script and style; no inline code, no frames, and no
string-to-DOM sinks at all (Trusted Types), so agent text can only ever become text."""

_HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}
_ASSETS = {
    "emoji.js": "text/javascript",
    "blockkit.js": "text/javascript",
    "sandbox.js": "text/javascript",
    "sandbox.css": "text/css",
}
_HEARTBEAT = 15.0
# Asks shown in the "what the agents got back" panel, newest first.
_ANSWERS_SHOWN = 10


class SandboxPage:
    """Serves the page for ``sandbox``; asks its samples through ``api_url`` with ``token``."""

    def __init__(
        self,
        sandbox: Sandbox,
        *,
        api_url: str,
        token: str,
        hostnames: frozenset[str] | None = None,
    ) -> None:
        self._sandbox = sandbox
        # Host names the page answers to (None: any). On loopback only loopback names, so a
        # web page elsewhere cannot reach it through DNS rebinding (its Host would differ).
        self._hostnames = hostnames
        self._api_url = api_url.rstrip("/")
        self._token = token
        self._http: aiohttp.ClientSession | None = None
        self._closing = asyncio.Event()
        self._report_page: str | None = None

    def install(self, app: web.Application) -> None:
        """Add the page's routes and lifecycle hooks to the relay's ``app``."""
        app.router.add_get("/", self._guarded(self._index))
        app.router.add_get("/sandbox/assets/{name}", self._guarded(self._asset))
        app.router.add_get("/sandbox/events", self._guarded(self._events))
        app.router.add_post("/sandbox/act", self._guarded(self._act))
        app.router.add_post("/sandbox/sample", self._guarded(self._sample))
        app.router.add_get("/sandbox/answers", self._guarded(self._answers))
        app.router.add_get("/sandbox/report", self._guarded(self._report))
        app.on_startup.append(self._startup)
        app.on_shutdown.append(self._shutdown)

    async def _startup(self, _: web.Application) -> None:
        self._sandbox.start()
        self._http = aiohttp.ClientSession(headers={"Authorization": f"Bearer {self._token}"})

    async def _shutdown(self, _: web.Application) -> None:
        self._closing.set()
        await self._sandbox.stop()
        if self._http is not None:
            await self._http.close()

    def _guarded(
        self, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
    ) -> Callable[[web.Request], Awaitable[web.StreamResponse]]:
        async def guarded(request: web.Request) -> web.StreamResponse:
            if self._hostnames is not None and _hostname(request.host) not in self._hostnames:
                return _error(
                    421, ErrorCode.WRONG_HOST, f"open the sandbox as {min(self._hostnames)}"
                )
            return await handler(request)

        return guarded

    # -- the page ---------------------------------------------------------------------------

    async def _index(self, _: web.Request) -> web.Response:
        html = resources.files("relay.sandbox").joinpath("assets/index.html").read_text("utf-8")
        return web.Response(text=html, content_type="text/html", headers=_HEADERS)

    async def _asset(self, request: web.Request) -> web.Response:
        name = request.match_info["name"]
        if name not in _ASSETS:
            raise web.HTTPNotFound()
        text = resources.files("relay.sandbox").joinpath(f"assets/{name}").read_text("utf-8")
        return web.Response(text=text, content_type=_ASSETS[name], headers=_HEADERS)

    # -- live updates -----------------------------------------------------------------------

    async def _events(self, request: web.Request) -> web.StreamResponse:
        viewer = request.query.get("as") or PEOPLE[0].id
        if not self._sandbox.is_person(viewer):
            return _error(400, ErrorCode.BAD_REQUEST, "as= must name one of the sandbox's people")
        response = web.StreamResponse(
            headers={
                "Content-Type": "text/event-stream",
                "Cache-Control": "no-store",
                "X-Accel-Buffering": "no",
            }
        )
        await response.prepare(request)
        with contextlib.suppress(ConnectionResetError, asyncio.CancelledError):
            await self._stream(response, viewer)
        return response

    async def _stream(self, response: web.StreamResponse, viewer: str) -> None:
        sandbox, slack = self._sandbox, self._sandbox.slack
        generation = sandbox.generation
        owners = sandbox.dm_owners()
        sent: dict[tuple[str, str], tuple[int, bool]] = {}
        messages = []
        for message in slack.messages:
            sent[(message.channel, message.ts)] = (len(message.versions), message.deleted)
            if sandbox.visible(message.channel, viewer, owners):
                messages.append(sandbox.message_view(message, viewer))
        notices_seen = len(slack.ephemerals)
        dms = {channel for channel, owner in owners.items() if owner == viewer}
        snapshot = {
            "me": viewer,
            **sandbox.directory(),
            "dms": sorted(dms),
            "messages": messages,
            "ephemerals": sandbox.ephemerals_for(viewer),
            "samples": [{"name": k, "title": v["title"]} for k, v in SAMPLES.items()],
            "modal": sandbox.modal_view(viewer),
        }
        shown_modal = snapshot["modal"]
        await _send(response, "snapshot", snapshot)
        while not self._closing.is_set():
            changed = await sandbox.wait_for_change(generation, timeout=_HEARTBEAT)
            if changed == generation:
                await response.write(b": still here\n\n")
                continue
            generation = changed
            owners = sandbox.dm_owners()
            for channel, owner in owners.items():
                if owner == viewer and channel not in dms:
                    dms.add(channel)
                    await _send(response, "dm", {"channel": channel})
            for message in slack.messages:
                key = (message.channel, message.ts)
                now = (len(message.versions), message.deleted)
                if sent.get(key) == now:
                    continue
                sent[key] = now
                if sandbox.visible(message.channel, viewer, owners):
                    await _send(response, "message", sandbox.message_view(message, viewer))
            for notice in sandbox.ephemerals_for(viewer, notices_seen):
                await _send(response, "ephemeral", notice)
            notices_seen = len(slack.ephemerals)
            modal = sandbox.modal_view(viewer)
            if modal != shown_modal:
                shown_modal = modal
                await _send(response, "modal", {"modal": modal})

    # -- actions ----------------------------------------------------------------------------

    async def _act(self, request: web.Request) -> web.Response:
        body = await _json_body(request)
        if isinstance(body, web.Response):
            return body
        try:
            result = await self._sandbox.act(str(body.get("as", "")), body)
        except ActionRefused as exc:
            return _error(exc.status, exc.code, str(exc))
        answer: dict[str, Any] = {
            "status": result.status,
            "body": result.body,
            "dispatched": result.dispatched,
        }
        if isinstance(result, ViewResult):
            answer.update(outcome=result.outcome, errors=result.errors, problem=result.problem)
        return web.json_response(answer)

    async def _sample(self, request: web.Request) -> web.Response:
        body = await _json_body(request)
        if isinstance(body, web.Response):
            return body
        ask = sample_request(str(body.get("name", "")))
        if ask is None:
            return _error(400, ErrorCode.BAD_REQUEST, f"name must be one of {', '.join(SAMPLES)}")
        if self._http is None:
            return _error(503, ErrorCode.UNAVAILABLE, "the sandbox is starting; try again")
        # Through the relay's own API, exactly as an agent would ask.
        path = sample_path(str(body["name"]))
        async with self._http.post(f"{self._api_url}{path}", json=ask) as response:
            record = await response.json(content_type=None)
        # 201: asked (a question, a plan, a call posted); 200: decided at once (a call
        # inside an approved plan, or one the rules decide).
        if response.status not in (200, 201):
            _log.warning("sample %s refused: %s", body.get("name"), record)
        return web.json_response(record, status=response.status)

    # -- the approvals report, on sample data ---------------------------------------------

    async def _report(self, _: web.Request) -> web.Response:
        if self._report_page is None:
            self._report_page = await _sample_report()
        return web.Response(
            text=self._report_page,
            content_type="text/html",
            headers={**_HEADERS, "Content-Security-Policy": REPORT_POLICY},
        )

    # -- what the agents got back ----------------------------------------------------------

    async def _answers(self, _: web.Request) -> web.Response:
        """The JSON each of the latest asks' agents got back: ``GET /v1/asks/{id}``, what an
        agent waiting on the ask receives, asked of the relay's own API with the sandbox's
        token (an agent using another token is not shown)."""
        if self._http is None:
            return _error(503, ErrorCode.UNAVAILABLE, "the sandbox is starting; try again")
        listed = f"{self._api_url}/v1/asks"
        try:
            async with self._http.get(listed, params={"limit": str(_ANSWERS_SHOWN)}) as response:
                listing = await response.json(content_type=None)
                if response.status != 200:
                    return web.json_response(listing, status=response.status)
            records = []
            for item in listing.get("asks", []):
                got = await self._got(self._http, item)
                if got is not None:
                    # Who asked, from the listing: the agent's reply does not repeat it.
                    records.append({"id": item["id"], "agent": item.get("agent"), "got": got})
        except (aiohttp.ClientError, TimeoutError, ValueError):
            # The relay's API is stopping or not yet up: say so, as the page does for itself.
            return _error(503, ErrorCode.UNAVAILABLE, "the relay's API is not answering; try again")
        return web.json_response({"asks": records})

    async def _got(self, http: aiohttp.ClientSession, item: dict[str, Any]) -> Any:
        """What the agent of listed ask ``item`` reads: a plan's review as ``/v1/plans``
        answers (a plan review with no plan behind it, as ``/v1/asks``), else the ask."""
        questions = item.get("questions") or []
        paths = [f"/v1/asks/{item['id']}"]
        if any(q.get("id") == PLAN_REVIEW_ID for q in questions):
            paths.insert(0, f"/v1/plans/{item['id']}")
        for path in paths:
            async with http.get(f"{self._api_url}{path}") as response:
                if response.status == 200:
                    return await response.json(content_type=None)
        return None


async def _sample_report() -> str:
    """The report page of a sample log: receipted, verified and counted as the relay's own."""
    from relay.report import figures, read_bundle, verified
    from relay.report.sample import sample_log
    from relay.report.suggested import learned_rules

    log = await sample_log()
    evidence = verified(*read_bundle(log.bundle), log.keys)
    names = {person.id: person.real_name for person in PEOPLE}
    rule_for = learned_rules(evidence.payloads, log.asks)
    return render_report(
        figures(evidence.payloads, labels=log.labels, rule_for=rule_for),
        source="the sandbox's sample receipts",
        names=names,
    )


async def _json_body(request: web.Request) -> dict[str, Any] | web.Response:
    # A JSON body and a same-origin Origin: another site open in the browser cannot post
    # here (a cross-origin JSON POST needs a CORS preflight, which this server never grants).
    origin = request.headers.get("Origin")
    if origin is not None and origin != f"{request.scheme}://{request.host}":
        return _error(403, ErrorCode.FORBIDDEN, "requests from another site are refused")
    if request.content_type != "application/json":
        return _error(415, ErrorCode.UNSUPPORTED_MEDIA_TYPE, "send the body as application/json")
    try:
        body = json.loads(await request.content.read(64 * 1024))
    except ValueError:
        return _error(400, ErrorCode.BAD_REQUEST, "the body is not valid JSON")
    if not isinstance(body, dict):
        return _error(400, ErrorCode.BAD_REQUEST, "the body must be a JSON object")
    return body


def _hostname(host: str) -> str:
    """``host`` (a Host header) without its port: ``[::1]:3000`` -> ``::1``."""
    if host.startswith("["):
        return host[1:].split("]")[0]
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


def _error(status: int, code: ErrorCode, message: str) -> web.Response:
    return web.json_response({"error": {"code": code, "message": message}}, status=status)


async def _send(response: web.StreamResponse, event: str, data: object) -> None:
    payload = json.dumps(data, separators=(",", ":"))
    await response.write(f"event: {event}\ndata: {payload}\n\n".encode())
