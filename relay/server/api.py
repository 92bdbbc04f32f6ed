"""The relay API under ``/v1/``: create an ask, read it (long-polling), abort it."""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping
from typing import Any

from aiohttp import web

from relay import safejson
from relay.errors import HarnessError, bad_request
from relay.questions import AskUserQuestionRequest, validate_request
from relay.server.bodies import read_body
from relay.server.connections import Connections
from relay.server.errors import ApiError
from relay.server.limits import Limiter, RateLimited
from relay.server.records import needs_votes, record_json
from relay.slack.provider import LONGEST_TIMEOUT, UNSET, SlackProvider, SlackTarget
from relay.slack.target import MAX_REMINDERS
from relay.store import PendingLimitReached
from relay.store.record import AskRecord

__all__ = ["AskApi", "read_slack_section"]

_SLACK_KEYS = frozenset(
    {
        "channel",
        "thread_ts",
        "allowed_users",
        "allowed_groups",
        "requester",
        "prevent_self_approval",
        "timeout_s",
        "remind_after_s",
        "reminders",
    }
)
_log = logging.getLogger("relay.server")
OWNER = "relay_owner"  # request key: the authenticated token's fingerprint
# Who may answer one ask: enough for any team; each group is a Slack call on a click.
MAX_ALLOWED_USERS = 100
MAX_ALLOWED_GROUPS = 10
# When a token at its pending limit may try again: asks end when people answer.
_PENDING_RETRY_AFTER = 10.0


class AskApi:
    """Handlers for ``/v1/asks``; requests arrive authenticated, with ``request[OWNER]`` set."""

    def __init__(
        self,
        *,
        provider: SlackProvider,
        max_wait: float,
        max_body: int,
        read_timeout: float,
        limiter: Limiter,
        connections: Connections,
    ) -> None:
        self.provider = provider
        self._max_wait = max_wait
        self._max_body = max_body
        self._read_timeout = read_timeout
        self._limiter = limiter
        self._connections = connections

    def routes(self) -> list[web.RouteDef]:
        """The routes to add to the application."""
        return [
            web.post("/v1/asks", self.create),
            web.get("/v1/asks/{ask_id}", self.read),
            web.delete("/v1/asks/{ask_id}", self.delete),
        ]

    async def create(self, request: web.Request) -> web.Response:
        """``POST /v1/asks``: post the questions; with ``?wait=S`` hold until done or S pass."""
        wait = self.wait_param(request)
        body = await self.json_body(request)
        ask_request, target = _read_ask(body)
        try:
            validate_request(ask_request)
            record = await self.provider.start(ask_request, target=target, owner=request[OWNER])
        except HarnessError as exc:
            raise ApiError.of(exc) from None
        except PendingLimitReached as exc:
            raise RateLimited(
                "pending",
                f"this token has {exc.limit} asks pending, the most it may"
                " (RELAY_MAX_PENDING); wait for one to end, or DELETE one",
                retry_after=_PENDING_RETRY_AFTER,
            ) from None
        if wait > 0:
            record = await self.long_poll(request, record.id, wait)
        return web.json_response(
            await self.shown(record), status=201, headers={"Location": f"/v1/asks/{record.id}"}
        )

    async def read(self, request: web.Request) -> web.Response:
        """``GET /v1/asks/{id}``: the record; with ``?wait=S`` long-polls while pending."""
        wait = self.wait_param(request)
        record = await self.owned(request)
        if record.pending and wait > 0:
            _log.debug("long-poll ask=%s wait=%g", record.id, wait)
            record = await self.long_poll(request, record.id, wait)
        return web.json_response(await self.shown(record))

    async def shown(self, record: AskRecord) -> dict[str, Any]:
        """``record_json``, with the votes cast so far when questions are decided by votes."""
        if not needs_votes(record):
            return record_json(record)
        return record_json(record, votes=await self.provider.store.votes(ask_id=record.id))

    async def long_poll(self, request: web.Request, ask_id: str, wait: float) -> AskRecord:
        """Wait for the ask, within the token's long-poll limit; a client that hangs up
        ends the wait at once (its handler is cancelled) instead of after ``wait``."""
        with (
            self._limiter.long_poll(request[OWNER]),
            self._connections.cancel_on_hangup(request),
        ):
            return await self.provider.wait(ask_id, within=wait)

    async def delete(self, request: web.Request) -> web.Response:
        """``DELETE /v1/asks/{id}``: abort a pending ask; the final record either way."""
        record = await self.owned(request)
        if record.pending:
            record = await self.provider.abort(record.id) or record
        return web.json_response(await self.shown(record))

    async def owned(self, request: web.Request, *, what: str = "ask") -> AskRecord:
        """The ask named in the path if this request's token created it, else ``NOT_FOUND``."""
        ask_id = request.match_info["ask_id"]
        record = await self.provider.store.get(ask_id=ask_id)
        # Someone else's ask is reported exactly like a missing one: ids reveal nothing.
        if record is None or record.owner != request[OWNER]:
            raise ApiError(
                "NOT_FOUND",
                f"no {what} {ask_id} for this token (it never existed, expired, or belongs to"
                " another token)",
            )
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
                "BAD_REQUEST", f"wait must be a number of seconds, 0 or more (got {raw!r})"
            )
        return min(wait, self._max_wait)

    async def json_body(self, request: web.Request, *, hint: str = "shorten the detail") -> object:
        """The whole body as untrusted JSON, within the size cap and the read deadline."""
        data = await read_body(
            request,
            limit=self._max_body,
            timeout=self._read_timeout,
            hint=f"; {hint} (or raise RELAY_MAX_BODY)",
        )
        try:
            return safejson.loads(data)
        except ValueError as exc:
            raise ApiError("BAD_REQUEST", f"the body is not valid JSON: {exc}") from None


def _read_ask(body: object) -> tuple[AskUserQuestionRequest, SlackTarget | None]:
    """Read the strict wire form plus the optional ``slack`` routing object."""
    if not isinstance(body, Mapping):
        raise ApiError("BAD_REQUEST", "the body must be a JSON object with a questions list")
    fields = dict(body)
    slack = fields.pop("slack", None)
    try:
        request = AskUserQuestionRequest.from_dict(fields, strict=True)
        target = read_slack_section(slack) if slack is not None else None
    except HarnessError as exc:
        raise ApiError.of(exc) from None
    return request, target


def read_slack_section(data: object) -> SlackTarget:
    """The API body's ``slack`` object as a ``SlackTarget``, or ``BAD_REQUEST`` naming the
    field that is wrong (``relay ask --file`` checks its requests with it too)."""
    if not isinstance(data, Mapping):
        raise bad_request("slack must be an object")
    for key in data:
        if key not in _SLACK_KEYS:
            raise bad_request(f"slack.{key} is not a known field")
    channel = data.get("channel")
    thread_ts = data.get("thread_ts")
    requester = data.get("requester")
    for name, value in (("channel", channel), ("thread_ts", thread_ts), ("requester", requester)):
        if value is not None and (not isinstance(value, str) or not value.strip()):
            raise bad_request(f"slack.{name} must be a non-empty string")
    allowed = _id_list(data, "allowed_users", "user", MAX_ALLOWED_USERS)
    groups = _id_list(data, "allowed_groups", "user group", MAX_ALLOWED_GROUPS)
    prevent: Any = UNSET
    if "prevent_self_approval" in data:
        prevent = data["prevent_self_approval"]
        if not isinstance(prevent, bool):
            raise bad_request("slack.prevent_self_approval must be true or false")
    timeout: Any = UNSET
    if "timeout_s" in data:
        timeout = data["timeout_s"]
        if timeout is not None and (
            isinstance(timeout, bool)
            or not isinstance(timeout, int | float)
            or not math.isfinite(timeout)
            or timeout <= 0
        ):
            raise bad_request("slack.timeout_s must be a positive number of seconds, or null")
        if timeout is not None and timeout > LONGEST_TIMEOUT:
            raise bad_request(
                f"slack.timeout_s must be at most {LONGEST_TIMEOUT:g} (a year); null waits"
                " as long as the relay allows"
            )
    remind_after: Any = UNSET
    if "remind_after_s" in data:
        remind_after = data["remind_after_s"]
        if remind_after is not None and (
            isinstance(remind_after, bool)
            or not isinstance(remind_after, int | float)
            or not 0 < remind_after <= LONGEST_TIMEOUT
        ):
            raise bad_request(
                "slack.remind_after_s must be a positive number of seconds (at most a year),"
                " or null for no reminders"
            )
    reminders: Any = UNSET
    if "reminders" in data:
        reminders = data["reminders"]
        if (
            isinstance(reminders, bool)
            or not isinstance(reminders, int)
            or not (1 <= reminders <= MAX_REMINDERS)
        ):
            raise bad_request(f"slack.reminders must be a whole number from 1 to {MAX_REMINDERS}")
    return SlackTarget(
        channel=channel or "",
        thread_ts=thread_ts,
        allowed_users=allowed,
        timeout=timeout,
        allowed_groups=groups,
        requester=requester,
        prevent_self_approval=prevent,
        remind_after=remind_after,
        reminders=reminders,
    )


def _id_list(data: Mapping[str, Any], key: str, what: str, most: int) -> Any:
    if key not in data:
        return UNSET
    value = data[key]
    if value is not None and (
        not isinstance(value, list) or not all(isinstance(i, str) and i for i in value)
    ):
        raise bad_request(f"slack.{key} must be a list of Slack {what} ids, or null")
    if value is not None and len(value) > most:
        raise bad_request(f"slack.{key} names {len(value)} {what}s; at most {most}")
    return value
