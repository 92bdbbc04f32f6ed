"""Reading a relay's HTTP reply the way each of its clients must: ``RelayProvider``, the
hook's ``RemoteApprover`` and the framework integrations. Bounded in size, parsed without
letting deep nesting exhaust the stack, and a proxy's error page told apart from the relay's
own errors, which each client then maps to its own outcome."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

import aiohttp

from relay.errors import ErrorCode, RelayException, UserInteractionError
from relay.seam import safejson

__all__ = ["MAX_REPLY", "RETRYABLE", "RelayError", "Retry", "read_reply", "unreadable"]

# Failures of the connection itself: the relay restarted or a network blipped, so the
# request may be sent again (asks and approvals are idempotent by key).
RETRYABLE = (aiohttp.ClientConnectionError, aiohttp.ServerTimeoutError, asyncio.TimeoutError)
# A record or an error is a few kB; a reply far larger is not one the relay sent.
MAX_REPLY = 8 * 1024 * 1024


class Retry(RelayException):
    """The relay could not answer this time (restarting, overloaded, behind a proxy's error
    page): the same request may be sent again."""


@dataclass(frozen=True)
class RelayError:
    """An error the relay answered: its HTTP status, stable code and sentence."""

    status: int
    code: str
    message: str


async def read_reply(response: aiohttp.ClientResponse) -> dict[str, Any] | RelayError:
    """The reply's JSON object when the status is 2xx, else the relay's error. Raises
    ``Retry`` for a reply the relay did not write (a gateway's page, no JSON) and
    ``PROVIDER_FAILED`` for one no relay sends (too large, too deeply nested)."""
    status = response.status
    if status in (502, 503, 504) and response.content_type != "application/json":
        raise Retry(f"the relay answered HTTP {status}")
    if response.content_length is not None and response.content_length > MAX_REPLY:
        raise unreadable(status, f"it is {response.content_length} bytes long")
    raw = await response.content.read(MAX_REPLY + 1)
    while len(raw) <= MAX_REPLY and (more := await response.content.read(MAX_REPLY + 1)):
        raw += more
    if len(raw) > MAX_REPLY:
        raise unreadable(status, f"it is over {MAX_REPLY} bytes long")
    try:
        data = safejson.loads(raw)
    except safejson.JSONTooComplex as exc:
        raise unreadable(status, str(exc)) from None
    except ValueError:
        raise Retry(f"the relay answered HTTP {status} without JSON") from None
    if not isinstance(data, dict):
        raise Retry(f"the relay answered HTTP {status} with unexpected JSON")
    if status < 300:
        return data
    raw_error = data.get("error")
    error: dict[str, Any] = raw_error if isinstance(raw_error, dict) else {}
    return RelayError(
        status=status,
        code=str(error.get("code") or "PROVIDER_FAILED"),
        message=str(error.get("message") or f"HTTP {status}"),
    )


def unreadable(status: int, why: str) -> UserInteractionError:
    """A reply no relay sends: a fault or an attack, not something to retry."""
    return UserInteractionError(
        ErrorCode.PROVIDER_FAILED,
        f"the relay's reply (HTTP {status}) could not be read: {why}; check RELAY_URL points"
        " at a relay",
    )
