"""Reading a request body whole, within a size cap and a deadline.

``request.content.read(n)`` returns whatever has arrived so far, so a body sent in several
writes was cut at the first; and a client that trickles its body a byte at a time would hold
the handler (and a descriptor) for as long as it likes. ``read_body`` reads until the end of
the body, refuses more than ``limit`` bytes (before reading any, when ``Content-Length``
says so) and gives up after ``timeout`` seconds.
"""

from __future__ import annotations

import asyncio

from aiohttp import web
from aiohttp.http_exceptions import HttpProcessingError

from relay.errors import ErrorCode, RelayException
from relay.server.errors import ApiError

__all__ = ["ClientGone", "read_body"]


class ClientGone(RelayException):
    """The client hung up before its request was read: there is nobody to answer."""


async def read_body(request: web.Request, *, limit: int, timeout: float, hint: str = "") -> bytes:
    """The whole body; ``TOO_LARGE`` past ``limit`` bytes, ``REQUEST_TIMEOUT`` after
    ``timeout`` seconds, ``BAD_REQUEST`` for a malformed transfer, ``ClientGone`` on hang-up."""
    if request.content_length is not None and request.content_length > limit:
        raise ApiError(ErrorCode.TOO_LARGE, _too_large(limit, hint))
    chunks: list[bytes] = []
    size = 0
    try:
        async with asyncio.timeout(timeout):
            while chunk := await request.content.read(limit + 1 - size):
                chunks.append(chunk)
                size += len(chunk)
                if size > limit:
                    raise ApiError(ErrorCode.TOO_LARGE, _too_large(limit, hint))
    except TimeoutError:
        raise ApiError(
            ErrorCode.REQUEST_TIMEOUT,
            f"the request body did not arrive within {timeout:g} s; send it at once",
        ) from None
    except HttpProcessingError as exc:
        raise ApiError(ErrorCode.BAD_REQUEST, f"the body is malformed: {exc.message}") from None
    except (ConnectionError, OSError) as exc:
        raise ClientGone(str(exc) or type(exc).__name__) from None
    except RuntimeError as exc:  # aiohttp's "Connection closed." once the transport is gone
        if request.transport is None or request.transport.is_closing():
            raise ClientGone(str(exc)) from None
        raise
    return b"".join(chunks)


def _too_large(limit: int, hint: str) -> str:
    return f"the body is larger than {limit} bytes{hint}"
