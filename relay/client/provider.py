"""``RelayProvider``: a seam provider that asks through a hosted relay's HTTP API; and
``verify_webhook``, which checks the signature of the relay's outcome webhooks.

An agent anywhere registers it exactly like ``SlackProvider``. It creates the ask, then
long-polls the same ask id until it ends, surviving dropped connections and relay restarts;
on abort or cancellation it deletes the ask so the Slack message is withdrawn.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import uuid
from collections.abc import Awaitable, Collection, Mapping
from datetime import datetime
from typing import Any, TypeVar

import aiohttp

from relay.errors import (
    AbortReason,
    ErrorCode,
    RelayConfigError,
    UserInteractionError,
    ask_aborted,
    bad_request,
)
from relay.seam.questions import (
    AskUserQuestionAnswer,
    AskUserQuestionAnswerItem,
    AskUserQuestionRequest,
    Responder,
)
from relay.seam.replies import RETRYABLE, RelayError, Retry, read_reply
from relay.webhooks.signing import verify_webhook

__all__ = ["RelayProvider", "verify_webhook"]

_log = logging.getLogger("relay.client")
T = TypeVar("T")


class _Limited(Exception):
    """The relay refused the request for this token's rate or limits (429): nothing was
    done, so the same request may be sent again after ``retry_after`` seconds."""

    def __init__(self, message: str, retry_after: float) -> None:
        super().__init__(message)
        self.retry_after = retry_after


# How long to keep retrying requests the relay refuses with 429 before giving up.
_LIMITED_FOR = 300.0
# Tries of one create whose reply is lost before giving up (about 10 s of backoff).
_CREATE_ATTEMPTS = 6


class RelayProvider:
    """Asks through a hosted relay (``relay serve``) at ``url`` with bearer ``token``.

    ``channel``, ``thread_ts``, ``allowed_users`` and ``timeout`` route every ask; ``slack``
    adds any other field of the API's ``slack`` section (``allowed_groups``, ``requester``,
    ``prevent_self_approval``). Close it with ``aclose()`` or use ``async with``.
    """

    def __init__(
        self,
        url: str,
        token: str,
        *,
        channel: str | None = None,
        thread_ts: str | None = None,
        allowed_users: Collection[str] | None = None,
        allowed_groups: Collection[str] | None = None,
        timeout: float | None = None,
        poll: float = 30.0,
        give_up_after: float | None = None,
        session: aiohttp.ClientSession | None = None,
        slack: Mapping[str, Any] | None = None,
    ) -> None:
        if not url.startswith(("http://", "https://")):
            raise RelayConfigError(
                f"url must be the relay's http(s) URL (got {url!r})", setting="url"
            )
        if not token:
            raise RelayConfigError(
                "token is empty: pass one of the relay's API tokens", setting="token"
            )
        self._url = url.rstrip("/")
        self._token = token
        # The API's ``slack`` section for every ask (allowed_groups, requester, …); the
        # named parameters above win over it.
        self._slack: dict[str, Any] = dict(slack or {})
        if channel is not None:
            self._slack["channel"] = channel
        if thread_ts is not None:
            self._slack["thread_ts"] = thread_ts
        if allowed_users is not None:
            self._slack["allowed_users"] = sorted(allowed_users)
        if allowed_groups is not None:
            self._slack["allowed_groups"] = sorted(allowed_groups)
        if timeout is not None:
            self._slack["timeout_s"] = timeout
        self._poll = poll
        self._give_up_after = give_up_after
        self._session = session
        self._own_session = session is None

    async def _client(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession(
                headers={"Authorization": f"Bearer {self._token}"},
                timeout=aiohttp.ClientTimeout(total=None, sock_connect=10),
            )
            self._own_session = True
        return self._session

    def _headers(self) -> dict[str, str]:
        return {} if self._own_session else {"Authorization": f"Bearer {self._token}"}

    async def ask(self, request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
        """Create the ask on the relay and wait for its outcome."""
        signal = request.signal
        if signal is not None and signal.aborted:
            raise ask_aborted()
        body = request.to_dict()
        if self._slack:
            body["slack"] = self._slack
        creating = asyncio.ensure_future(self._create(body))
        try:
            record = await self._abortable(asyncio.shield(creating), request)
        except BaseException:
            # Aborted while the relay was posting: let it finish, then withdraw the ask.
            with contextlib.suppress(Exception):
                async with asyncio.timeout(60):
                    created = await asyncio.shield(creating)
                await asyncio.shield(self._delete_quietly(str(created["id"])))
            raise
        ask_id = str(record["id"])
        try:
            while record.get("status") == "pending":
                record = await self._abortable(self._poll_until_done(ask_id), request)
        except BaseException:
            # Aborted, cancelled, or failed for good: withdraw the question in Slack.
            await asyncio.shield(self._delete_quietly(ask_id))
            raise
        return _outcome(record)

    async def _abortable(self, work: Awaitable[T], request: AskUserQuestionRequest) -> T:
        signal = request.signal
        task = asyncio.ensure_future(work)
        if signal is None:
            return await task
        aborted = asyncio.ensure_future(signal.wait())
        try:
            done, _ = await asyncio.wait({task, aborted}, return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            task.cancel()
            aborted.cancel()
            raise
        if task in done:
            aborted.cancel()
            return task.result()
        task.cancel()
        with contextlib.suppress(BaseException):
            await task
        raise ask_aborted()

    async def _create(self, body: dict[str, Any]) -> dict[str, Any]:
        session = await self._client()
        attempt = 0
        limited_until = asyncio.get_running_loop().time() + _LIMITED_FOR
        # One key for every attempt of this create: the relay posts the ask once, however
        # many of our requests reach it, and answers each with the same ask.
        headers = {**self._headers(), "Idempotency-Key": f"relay-{uuid.uuid4()}"}
        while True:
            try:
                # No ?wait here: the ask id must be known at once, so an abort can delete it.
                async with session.post(
                    f"{self._url}/v1/asks",
                    json=body,
                    headers=headers,
                    timeout=aiohttp.ClientTimeout(total=60),
                ) as response:
                    return await _record(response)
            except _Limited as exc:
                # Refused before anything was posted: asking again cannot ask twice.
                if asyncio.get_running_loop().time() + exc.retry_after > limited_until:
                    raise UserInteractionError(ErrorCode.PROVIDER_FAILED, str(exc)) from None
                await asyncio.sleep(exc.retry_after)
            except (Retry, *RETRYABLE) as exc:
                # Refused, lost on the way, or its reply lost: the key makes a retry safe.
                attempt += 1
                if attempt > _CREATE_ATTEMPTS:
                    if isinstance(exc, aiohttp.ClientConnectorError):
                        raise _unreachable(self._url, exc) from exc
                    raise UserInteractionError(
                        ErrorCode.PROVIDER_FAILED,
                        f"the relay did not confirm creating the ask after {attempt} attempts"
                        f" ({exc or type(exc).__name__}); check RELAY_URL and the relay's"
                        " health, then ask again",
                    ) from None
                _log.info("creating an ask failed (%s); retrying with its idempotency key", exc)
                await asyncio.sleep(_backoff(attempt))

    async def _poll_until_done(self, ask_id: str) -> dict[str, Any]:
        session = await self._client()
        attempt = 0
        loop = asyncio.get_running_loop()
        started = loop.time()
        while True:
            try:
                async with session.get(
                    f"{self._url}/v1/asks/{ask_id}",
                    params={"wait": str(self._poll)},
                    headers=self._headers(),
                    timeout=aiohttp.ClientTimeout(total=self._poll + 30),
                ) as response:
                    return await _record(response)
            except _Limited as exc:
                _log.info("relay limits this token (%s); polling ask %s again", exc, ask_id)
                await asyncio.sleep(exc.retry_after)
            except (*RETRYABLE, Retry) as exc:
                # The relay restarted or the connection dropped: the ask lives on, poll again.
                attempt += 1
                waited = loop.time() - started
                if self._give_up_after is not None and waited > self._give_up_after:
                    raise _unreachable(self._url, exc) from None
                _log.info("relay unreachable while waiting for ask %s (%s); retrying", ask_id, exc)
                await asyncio.sleep(_backoff(attempt))

    async def _delete_quietly(self, ask_id: str) -> None:
        with contextlib.suppress(Exception):
            session = await self._client()
            async with session.delete(
                f"{self._url}/v1/asks/{ask_id}",
                headers=self._headers(),
                timeout=aiohttp.ClientTimeout(total=10),
            ):
                pass

    async def aclose(self) -> None:
        """Close the HTTP session this provider opened."""
        if self._own_session and self._session is not None:
            await self._session.close()
            self._session = None

    async def __aenter__(self) -> RelayProvider:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


def _backoff(attempt: int) -> float:
    return float(min(5.0, 0.2 * 2 ** (attempt - 1)) * (0.5 + random.random() / 2))  # noqa: S311


def _unreachable(url: str, exc: BaseException) -> UserInteractionError:
    return UserInteractionError(
        ErrorCode.PROVIDER_FAILED,
        f"cannot reach the relay at {url} ({exc or type(exc).__name__}); check RELAY_URL and"
        " that relay serve is running",
    )


async def _record(response: aiohttp.ClientResponse) -> dict[str, Any]:
    reply = await read_reply(response)
    if not isinstance(reply, RelayError):
        return reply
    code, message = reply.code, reply.message
    if (reply.status, code) in ((503, "UNAVAILABLE"), (409, "IDEMPOTENCY_IN_FLIGHT")):
        raise Retry(message)
    if reply.status == 429 and code == "RATE_LIMITED":
        raise _Limited(message, _retry_after(response.headers.get("Retry-After")))
    if code == "UNAUTHORIZED":
        raise UserInteractionError(
            ErrorCode.PROVIDER_FAILED, f"the relay refused the API token: {message}"
        )
    if code == "NOT_FOUND":
        raise UserInteractionError(
            ErrorCode.PROVIDER_FAILED,
            f"the relay no longer knows this ask ({message}); was it restarted without Redis?",
        )
    if code in ("TOO_LARGE", "METHOD_NOT_ALLOWED", "UNSUPPORTED_MEDIA_TYPE"):
        raise bad_request(message)
    if code in ErrorCode.__members__:
        raise UserInteractionError(code, message)
    raise UserInteractionError(ErrorCode.PROVIDER_FAILED, f"{code}: {message}")


def _retry_after(value: str | None) -> float:
    """``Retry-After`` seconds, within reason (1 s when missing or unreadable)."""
    try:
        seconds = float(value or "1")
    except ValueError:
        return 1.0
    return min(max(seconds, 0.1), 60.0) if seconds == seconds else 1.0


def _outcome(record: dict[str, Any]) -> AskUserQuestionAnswer:
    status = record.get("status")
    if status == "answered":
        answer = AskUserQuestionAnswer.from_dict(record.get("answer"))
        audit = {r.get("id"): r for r in record.get("responses") or [] if isinstance(r, dict)}
        return AskUserQuestionAnswer(tuple(_with_audit(a, audit.get(a.id)) for a in answer.answers))
    raw_error = record.get("error")
    error: dict[str, Any] = raw_error if isinstance(raw_error, dict) else {}
    code = str(error.get("code") or ErrorCode.PROVIDER_FAILED)
    message = str(error.get("message") or f"the ask ended as {status}")
    reason: AbortReason | None = None
    if code == ErrorCode.ASK_ABORTED:
        given = error.get("reason")
        if given in ("aborted", "timed_out", "closed"):
            reason = given
        else:
            reason = "timed_out" if status == "timed_out" else "aborted"
    raise UserInteractionError(code, message, reason=reason)


def _with_audit(
    item: AskUserQuestionAnswerItem, audit: dict[str, Any] | None
) -> AskUserQuestionAnswerItem:
    if not audit:
        return item
    by = audit.get("answered_by")
    at = audit.get("answered_at")
    return AskUserQuestionAnswerItem(
        id=item.id,
        selected=item.selected,
        custom=item.custom,
        answered_by=Responder.from_dict(by) if isinstance(by, dict) else None,
        answered_at=datetime.fromisoformat(at) if isinstance(at, str) else None,
        defaulted=item.defaulted,
    )
