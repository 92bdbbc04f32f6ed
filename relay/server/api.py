"""The relay API under ``/v1/``: create an ask, read it (long-polling), abort it."""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping
from typing import Any

from aiohttp import web

from relay.asks.channel import AskChannel
from relay.asks.records import needs_votes, record_json
from relay.asks.target import UNSET, AskTarget
from relay.audit.trail import audit_json, encode_cursor
from relay.errors import ErrorCode, HarnessError, UserInteractionError, bad_request
from relay.seam import safejson
from relay.seam.questions import AskUserQuestionRequest, validate_request
from relay.server.bodies import read_body
from relay.server.connections import Connections
from relay.server.errors import ApiError
from relay.server.idempotency import DEFAULT_WINDOW, CreateKeys
from relay.server.idempotency import HEADER as IDEMPOTENCY_HEADER
from relay.server.limits import Limiter, start_refused
from relay.server.listing import LIST_MAX, LIST_SCAN_BUDGET, read_list_query
from relay.server.shapes import check_body
from relay.store.idempotency import IdempotencyStore
from relay.store.listing import AskListing
from relay.store.record import AskRecord
from relay.webhooks.policy import CallbackRefused
from relay.webhooks.sender import Subscription, Webhooks

__all__ = [
    "OPERATOR",
    "OWNER",
    "REPLAYED",
    "AskApi",
    "not_found",
    "read_slack_section",
    "slack_target",
]

_CALLBACK = ("callback_url", "callback_events")  # checked after the schema (AskApi.callback)
_log = logging.getLogger("relay.server")
OWNER = "relay_owner"  # request key: the authenticated token's fingerprint
# Request key: set when the token is an operator's (RELAY_OPERATOR_TOKENS), which the
# middleware lets through on the receipt routes only; it reads every token's asks there.
OPERATOR = "relay_operator"
REPLAYED = "Idempotent-Replayed"  # response header: this create was answered from its key


class AskApi:
    """Handlers for ``/v1/asks``; requests arrive authenticated, with ``request[OWNER]`` set."""

    def __init__(
        self,
        *,
        channel: AskChannel,
        max_wait: float,
        max_body: int,
        read_timeout: float,
        limiter: Limiter,
        connections: Connections,
        idempotency_window: float = DEFAULT_WINDOW,
        webhooks: Webhooks | None = None,
    ) -> None:
        self.channel = channel
        """Shows the asks and records their answers (Slack, on ``relay serve``)."""
        self.webhooks = webhooks
        """Sends outcome webhooks to an ask's ``callback_url`` (``None``: not configured)."""
        store = channel.store
        self.keys = CreateKeys(
            store=store if isinstance(store, IdempotencyStore) else None,
            window=idempotency_window,
        )
        """The ``Idempotency-Key`` claims of ``POST /v1/asks`` (and ``/v1/approvals``)."""
        self._max_wait = max_wait
        self._max_body = max_body
        self._read_timeout = read_timeout
        self._limiter = limiter
        self._connections = connections

    def routes(self) -> list[web.RouteDef]:
        """The routes to add to the application."""
        return [
            web.post("/v1/asks", self.create),
            web.get("/v1/asks", self.list),
            web.get("/v1/asks/{ask_id}", self.read),
            web.delete("/v1/asks/{ask_id}", self.delete),
        ]

    async def create(self, request: web.Request) -> web.Response:
        """``POST /v1/asks``: post the questions; with ``?wait=S`` hold until done or S pass."""
        wait = self.wait_param(request)
        body = await self.json_body(request)
        ask_request, target = _read_ask(body)
        subscription = self.callback(body)
        headers: dict[str, str] = {}
        async with self.keys.create(request, owner=request[OWNER], route="asks", body=body) as slot:
            if slot is not None and slot.replay is not None:
                record = await self.replayed(request, slot.replay)
                headers[REPLAYED] = "true"
            else:
                with start_refused():
                    validate_request(ask_request)
                    record = await self.channel.start(
                        ask_request, target=target, owner=request[OWNER]
                    )
                if slot is not None:
                    slot.bind(record.id)
        if subscription is not None and self.webhooks is not None:
            # (Again on a replay: the first request may have died before subscribing.)
            await self.webhooks.subscribe(record, subscription)
        record = await self.waited(request, record, wait)
        return web.json_response(
            await self.shown(record),
            status=201,
            headers={"Location": f"/v1/asks/{record.id}", **headers},
        )

    def callback(self, body: object) -> Subscription | None:
        """The body's ``callback_url`` (and ``callback_events``), checked against the
        operator's allowlist before anything is posted; ``None`` without one."""
        if not isinstance(body, Mapping) or body.get("callback_url") is None:
            if isinstance(body, Mapping) and body.get("callback_events") is not None:
                raise ApiError(ErrorCode.BAD_REQUEST, "callback_events needs a callback_url")
            return None
        if self.webhooks is None:
            raise ApiError(
                ErrorCode.CALLBACK_NOT_ALLOWED,
                "this relay sends no webhooks; its operator turns them on with"
                " RELAY_WEBHOOK_KEY and RELAY_WEBHOOK_ALLOWED_HOSTS (or poll GET /v1/asks/{id})",
            )
        try:
            return self.webhooks.subscription(body["callback_url"], body.get("callback_events"))
        except CallbackRefused as exc:
            raise ApiError(ErrorCode.CALLBACK_NOT_ALLOWED, str(exc)) from None

    async def replayed(self, request: web.Request, ask_id: str) -> AskRecord:
        """The ask an earlier request with the same ``Idempotency-Key`` created."""
        record = await self.channel.store.get(ask_id=ask_id)
        if record is None or record.owner != request[OWNER]:
            raise ApiError(
                ErrorCode.NOT_FOUND,
                f"the ask {ask_id} this {IDEMPOTENCY_HEADER} created is no longer kept"
                " (RELAY_RETENTION passed); send a new key to ask again",
            )
        return record

    async def list(self, request: web.Request) -> web.Response:
        """``GET /v1/asks``: the token's asks, newest first, filtered, a page at a time."""
        query = read_list_query(request.query)
        store = self.channel.store
        if not isinstance(store, AskListing):
            raise ApiError(ErrorCode.BAD_REQUEST, "this relay's store keeps no audit index")
        items: list[AskRecord] = []
        after = query.after
        budget = LIST_SCAN_BUDGET
        more = True
        while len(items) < query.limit and budget > 0:
            asked = min(LIST_MAX, budget)
            batch = await store.list_owned(
                owner=request[OWNER],
                since=query.since,
                until=query.until,
                after=after,
                limit=asked,
            )
            budget -= len(batch)
            for record in batch:
                after = (record.created_at.timestamp(), record.id)
                if query.filter.matches(record):
                    items.append(record)
                    if len(items) >= query.limit:
                        break
            if len(batch) < asked and len(items) < query.limit:
                more = False
                break
        cursor = encode_cursor(after) if more and after is not None else None
        return web.json_response({"asks": [audit_json(r) for r in items], "next_cursor": cursor})

    async def read(self, request: web.Request) -> web.Response:
        """``GET /v1/asks/{id}``: the record; with ``?wait=S`` long-polls while pending."""
        wait = self.wait_param(request)
        record = await self.waited(request, await self.owned(request), wait)
        return web.json_response(await self.shown(record))

    async def shown(self, record: AskRecord) -> dict[str, Any]:
        """``record_json``, with the votes cast so far when questions are decided by votes."""
        if not needs_votes(record):
            return record_json(record)
        return record_json(record, votes=await self.channel.store.votes(ask_id=record.id))

    async def waited(self, request: web.Request, record: AskRecord, wait: float) -> AskRecord:
        """``record`` after ``?wait=`` held the request while it was pending (``long_poll``);
        ``record`` itself when it has ended or ``wait`` is 0."""
        if not record.pending or wait <= 0:
            return record
        _log.debug("long-poll ask=%s wait=%g", record.id, wait)
        return await self.long_poll(request, record.id, wait)

    async def long_poll(self, request: web.Request, ask_id: str, wait: float) -> AskRecord:
        """Wait for the ask, within the token's long-poll limit; a client that hangs up
        ends the wait at once (its handler is cancelled) instead of after ``wait``."""
        with (
            self._limiter.long_poll(request[OWNER]),
            self._connections.cancel_on_hangup(request),
        ):
            try:
                return await self.channel.wait(ask_id, within=wait)
            except UserInteractionError as exc:
                if exc.code != ErrorCode.PROVIDER_FAILED:
                    raise
                if await self.channel.store.get(ask_id=ask_id) is not None:
                    raise
                # The store lost the ask while it was waited on (Redis restarted empty).
                raise ApiError(
                    ErrorCode.NOT_FOUND,
                    f"ask {ask_id} is no longer in the relay's store (it was lost, e.g. when"
                    " Redis restarted empty); ask again",
                ) from None

    async def delete(self, request: web.Request) -> web.Response:
        """``DELETE /v1/asks/{id}``: abort a pending ask; the final record either way."""
        record = await self.owned(request)
        if record.pending:
            record = await self.channel.abort(record.id) or record
        return web.json_response(await self.shown(record))

    async def owned(self, request: web.Request, *, what: str = "ask") -> AskRecord:
        """The ask named in the path if this request's token created it, else ``NOT_FOUND``."""
        ask_id = request.match_info["ask_id"]
        record = await self.channel.store.get(ask_id=ask_id)
        # Someone else's ask is reported exactly like a missing one: ids reveal nothing.
        if record is None or (record.owner != request[OWNER] and not request.get(OPERATOR)):
            raise not_found(what, ask_id)
        return record

    def wait_param(self, request: web.Request) -> float:
        """``?wait=`` in seconds (0 when absent), at most ``RELAY_MAX_WAIT``."""
        raw = request.query.get("wait")
        if raw is None:
            return 0.0
        try:
            wait = float(raw)
        except ValueError:
            wait = math.nan
        if not math.isfinite(wait) or wait < 0:
            raise ApiError(
                ErrorCode.BAD_REQUEST, f"wait must be a number of seconds, 0 or more (got {raw!r})"
            )
        return min(wait, self._max_wait)

    async def json_body(self, request: web.Request, *, hint: str = "shorten the detail") -> object:
        """The whole body as untrusted JSON, within the size cap and the read deadline, and
        only what relay carries and signs exactly (``safejson.refusal``): else a 400 with its
        code (``JSON_LONE_SURROGATE`` …, or ``BAD_REQUEST``) before anything is stored or
        posted."""
        data = await read_body(
            request,
            limit=self._max_body,
            timeout=self._read_timeout,
            hint=f"; {hint} (or raise RELAY_MAX_BODY)",
        )
        try:
            body = safejson.loads(data)
        except safejson.UnreadableJSON as exc:
            # Past one of the limits below: that limit's code; else malformed.
            code = ErrorCode(exc.code) if exc.code else ErrorCode.BAD_REQUEST
            raise ApiError(code, f"the body is not valid JSON: {exc}") from None
        except ValueError as exc:
            raise ApiError(ErrorCode.BAD_REQUEST, f"the body is not valid JSON: {exc}") from None
        if (refused := safejson.refusal(body)) is not None:
            # I-JSON (RFC 7493), which a receipt's JCS (RFC 8785) needs, and the depth bound.
            # (Parsed JSON holds only JSON values: never JSON_NOT_JSON, the one code that
            # is not the API's.)
            raise ApiError(ErrorCode(refused.code), refused.sentence("the body") + ".")
        return body


def not_found(what: str, ask_id: str) -> ApiError:
    """``NOT_FOUND`` for the ``what`` (ask, approval, plan) ``ask_id``: a missing one and
    another token's read alike, so that ids reveal nothing."""
    return ApiError(
        ErrorCode.NOT_FOUND,
        f"no {what} {ask_id} for this token (it never existed, expired, or belongs to"
        " another token)",
    )


def _read_ask(body: object) -> tuple[AskUserQuestionRequest, AskTarget | None]:
    """Read the ``AskRequest`` body: its shape is the schema's (``relay.server.shapes``);
    then the seam's reader makes the request of it (the one /mcp and the CLI use), and the
    optional ``slack`` object is read as the routing."""
    # A callback's fields are the webhook policy's to judge (CALLBACK_NOT_ALLOWED).
    check_body(body, "AskRequest", checked_after=_CALLBACK)
    assert isinstance(body, Mapping)  # (the schema's type: object)
    fields = {key: body[key] for key in ("questions", "agent") if key in body}
    slack = body.get("slack")
    try:
        request = AskUserQuestionRequest.from_dict(fields, strict=True)
        target = slack_target(slack) if slack is not None else None  # (the schema's object)
    except HarnessError as exc:
        raise ApiError.of(exc) from None
    return request, target


def read_slack_section(data: object) -> AskTarget:
    """The API body's ``slack`` object as a ``AskTarget``, or ``BAD_REQUEST`` naming the
    field that is wrong: its shape is the ``AskSlack`` schema's (``relay ask --file`` and the
    command line's flags are checked by it too)."""
    try:
        check_body(data, "AskSlack", within=("slack",))
    except ApiError as exc:  # (a seam error: the command line reads it too)
        raise UserInteractionError(exc.code, exc.message) from None
    if not isinstance(data, Mapping):  # (the schema's null: the callers read it as unset)
        raise bad_request("slack must be an object: where to ask, and who may answer")
    return slack_target(data)


def slack_target(data: Mapping[str, Any]) -> AskTarget:
    """The ``slack`` object of a body its schema has checked, as an ``AskTarget``."""

    def given(key: str) -> Any:
        return data.get(key, UNSET)

    return AskTarget(
        channel=data.get("channel") or "",
        thread_ts=data.get("thread_ts"),
        allowed_users=given("allowed_users"),
        timeout=given("timeout_s"),
        allowed_groups=given("allowed_groups"),
        requester=data.get("requester"),
        prevent_self_approval=given("prevent_self_approval"),
        remind_after=given("remind_after_s"),
        reminders=given("reminders"),
        escalate_after=given("escalate_after_s"),
        escalate_users=given("escalate_users"),
        escalate_groups=given("escalate_groups"),
        escalate_channel=given("escalate_channel"),
    )
