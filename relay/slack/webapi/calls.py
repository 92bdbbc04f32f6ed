"""Web API calls on a click's hot path, sent without slack-sdk's per-call machinery.

Every answered click costs one ``chat.update``. Through ``AsyncWebClient.api_call`` that
call spent about as much CPU in slack-sdk (argument merging, header building, debug-log
strings formatted whether or not debug logging is on) as aiohttp spent sending it, which
kept the relay's click throughput well under bare Bolt's (see BENCHMARKS.md).
``LeanCalls.call`` sends the very same request (the client's URL, token, headers, default
parameters, session, proxy and SSL settings; a JSON body) and treats failures the way
slack-sdk does: the client's own retry handlers decide on retries and waits, and a refusal
raises ``SlackApiError`` with an ``AsyncSlackResponse``. A successful call skips the retry
handlers, which only act on failures. Without a live session (the provider lends one while
it runs) the call goes through slack-sdk as before. ``LeanCalls.respond`` posts to a click's
``response_url`` over the same session (private notices; see ``relay.slack.intake.private``).
Each ask's ``chat.postMessage`` goes through ``call`` too (``SlackMessages.post``).
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urljoin

import aiohttp
import orjson
from slack_sdk.http_retry.request import HttpRequest
from slack_sdk.http_retry.response import HttpResponse
from slack_sdk.http_retry.state import RetryState
from slack_sdk.web.async_client import AsyncWebClient
from slack_sdk.web.async_slack_response import AsyncSlackResponse

from relay.errors import RelayException
from relay.seam import safejson
from relay.slack.webapi.deadlines import Deadlines

__all__ = ["LeanCalls", "ResponseUrlRefused"]

# A session, its total timeout, and its other timeouts without the total (LeanCalls.call).
_Timeouts = tuple[aiohttp.ClientSession, float | None, aiohttp.ClientTimeout]

# As slack-sdk: stop a misbehaving retry handler from looping forever.
_MAX_ATTEMPTS = 100


def encode_json(fields: dict[str, Any]) -> bytes:
    """``fields`` as a JSON body: by orjson (a tenth of what ``json.dumps`` takes on a
    message's blocks), compact and in UTF-8, which the Web API reads as it reads slack-sdk's
    ``json.dumps``; what orjson refuses (a lone surrogate, an integer past 64 bits, a key
    that is no string) is encoded by ``json``, as slack-sdk would. NaN is written ``null``
    (``json`` writes ``NaN``, which is no JSON: Slack would refuse the call)."""
    try:
        return orjson.dumps(fields)
    except orjson.JSONEncodeError:
        return json.dumps(fields).encode()


class LeanCalls:
    """Sends JSON-bodied Web API calls for ``client`` with little per-call overhead."""

    def __init__(self, client: AsyncWebClient) -> None:
        self.client = client
        self._urls: dict[tuple[str, str], str] = {}
        self._headers_for: tuple[object, ...] | None = None
        self._headers: dict[str, str] = {}
        self._deadlines = Deadlines()
        self._timeouts: _Timeouts | None = None

    async def call(self, method: str, fields: dict[str, Any]) -> dict[str, Any]:
        """Call ``method`` with ``fields`` as its JSON body; the response data.

        Raises ``SlackApiError`` when Slack refuses the call and the network's errors
        (``aiohttp.ClientError``, ``TimeoutError``) once the client's retry handlers give up.
        """
        client = self.client
        session = client.session
        if session is None or session.closed:
            response = await client.api_call(method, json=dict(fields))
            return dict(response.data) if isinstance(response.data, dict) else {}
        body = {**client.default_params, **fields} if client.default_params else fields
        url = self._url(method)
        headers = self._current_headers()
        options: dict[str, Any] = {}
        if client.proxy:
            options["proxy"] = client.proxy
        if client.ssl is not None:
            options["ssl"] = client.ssl
        payload = encode_json(body)
        total, untimed = self._timeout_of(session)
        state = RetryState()
        retry_request: HttpRequest | None = None
        for _ in range(_MAX_ATTEMPTS):
            try:
                # The session's total timeout, kept by a timer shared with the other calls
                # in flight (relay.slack.webapi.deadlines), not by one aiohttp arms per request.
                with self._deadlines.within(total):
                    async with session.post(
                        url, data=payload, headers=headers, timeout=untimed, **options
                    ) as res:
                        raw = await res.read()
                        status, reply_headers = res.status, res.headers
                        is_json = res.content_type == "application/json"
            except Exception as exc:
                retry_request = retry_request or _retry_request(url, headers, body)
                if await self._retry(state, retry_request, None, exc):
                    continue
                raise
            data = _decode(raw) if is_json else {}
            if status == 200 and data.get("ok"):
                return data
            retry_request = retry_request or _retry_request(url, headers, body)
            retry_response = HttpResponse(
                status_code=status,
                headers=reply_headers,  # type: ignore[arg-type]
                body=data,
            )
            if await self._retry(state, retry_request, retry_response, None):
                continue
            refused = AsyncSlackResponse(
                client=client,
                http_verb="POST",
                api_url=url,
                req_args={"json": body},
                data=data,
                headers=dict(reply_headers),
                status_code=status,
            )
            refused.validate()  # type: ignore[no-untyped-call]  # raises SlackApiError, as slack-sdk does
            return data
        raise RuntimeError(f"{method}: the client's retry handlers never stopped retrying")

    async def _retry(
        self,
        state: RetryState,
        request: HttpRequest,
        response: HttpResponse | None,
        error: Exception | None,
    ) -> bool:
        """Let the first of the client's retry handlers that takes this failure prepare the
        next attempt (it sleeps as it sees fit); whether there is one."""
        state.next_attempt_requested = False
        for handler in self.client.retry_handlers:
            if await handler.can_retry_async(
                state=state, request=request, response=response, error=error
            ):
                await handler.prepare_for_next_attempt_async(
                    state=state, request=request, response=response, error=error
                )
                break
        return state.next_attempt_requested

    async def respond(self, response_url: str, fields: dict[str, Any]) -> None:
        """Post ``fields`` as JSON to an interaction's ``response_url`` (it needs no token).

        Raises ``ResponseUrlRefused`` when Slack answers with an error (an expired or used
        URL: 404) and the network's errors; there are no retries: the caller falls back.
        """
        client = self.client
        session = client.session
        options: dict[str, Any] = {}
        if client.proxy:
            options["proxy"] = client.proxy
        if client.ssl is not None:
            options["ssl"] = client.ssl
        headers = {"Content-Type": "application/json;charset=utf-8"}
        payload = encode_json(fields)
        if session is None or session.closed:
            timeout = aiohttp.ClientTimeout(total=client.timeout)
            async with aiohttp.ClientSession(timeout=timeout) as own:
                await _respond(own, response_url, payload, headers, options)
            return
        await _respond(session, response_url, payload, headers, options)

    def _timeout_of(
        self, session: aiohttp.ClientSession
    ) -> tuple[float | None, aiohttp.ClientTimeout]:
        """``session``'s total timeout, and its timeouts without it (found once a session)."""
        held = self._timeouts
        if held is None or held[0] is not session:
            timeout = session.timeout
            untimed = aiohttp.ClientTimeout(
                connect=timeout.connect,
                sock_read=timeout.sock_read,
                sock_connect=timeout.sock_connect,
                ceil_threshold=timeout.ceil_threshold,
            )
            held = self._timeouts = (session, timeout.total, untimed)
        return held[1], held[2]

    def _url(self, method: str) -> str:
        key = (self.client.base_url, method)
        url = self._urls.get(key)
        if url is None:
            url = self._urls[key] = urljoin(key[0], method)
        return url

    def _current_headers(self) -> dict[str, str]:
        """slack-sdk's headers for a JSON call, rebuilt when the token or headers change."""
        client = self.client
        key = (client.token, *client.headers.items())
        if key != self._headers_for:
            headers: dict[str, str] = {}
            if client.token:
                headers["Authorization"] = f"Bearer {client.token}"
            headers.update(client.headers)
            headers["Content-Type"] = "application/json;charset=utf-8"
            self._headers, self._headers_for = headers, key
        return self._headers


class ResponseUrlRefused(RelayException):
    """Slack refused a post to a ``response_url`` (HTTP status and its error, if any)."""

    def __init__(self, status: int, error: str | None) -> None:
        super().__init__(f"response_url answered HTTP {status}: {error or 'no error given'}")
        self.status = status
        self.error = error


async def _respond(
    session: aiohttp.ClientSession,
    url: str,
    payload: bytes,
    headers: dict[str, str],
    options: dict[str, Any],
) -> None:
    async with session.post(url, data=payload, headers=headers, **options) as res:
        raw = await res.read()
        # Slack answers {"ok": true}, or (older surfaces) a bare "ok"; errors are non-200
        # ("expired_url", "used_url") or {"ok": false, "error": …}.
        data = _decode(raw) if res.content_type == "application/json" else {}
        if res.status != 200 or data.get("ok") is False:
            error = data.get("error") if isinstance(data.get("error"), str) else None
            raise ResponseUrlRefused(res.status, error or raw[:100].decode(errors="replace"))


def _decode(raw: bytes) -> dict[str, Any]:
    # By orjson (a tenth of what json takes on a short reply): a reply's fields are strings,
    # booleans and lists, so its one difference (integers past 64 bits read as floats) does
    # not matter here. What it refuses goes to safejson: a reply nested too deep or with
    # absurd numbers is treated like one that is not JSON, with no ``ok``, so the call fails
    # as refused instead of raising ``RecursionError``.
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError:
        try:
            data = safejson.loads(raw)
        except ValueError:
            return {}
    return data if isinstance(data, dict) else {}


def _retry_request(url: str, headers: dict[str, str], body: dict[str, Any]) -> HttpRequest:
    return HttpRequest(method="POST", url=url, headers=dict(headers), body_params=body)
