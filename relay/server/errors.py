"""The API's error responses: ``{"error": {"code", "message"}}`` with a stable code."""

from __future__ import annotations

from aiohttp import web

from relay.errors import ErrorCode, HarnessError, RelayException

__all__ = ["ApiError", "error_response", "status_for"]

_STATUS: dict[str, int] = {
    ErrorCode.BAD_REQUEST: 400,
    ErrorCode.EMPTY_QUESTIONS: 400,
    ErrorCode.BAD_INTENT: 400,
    ErrorCode.PROVIDER_FAILED: 502,
    ErrorCode.ASK_ABORTED: 409,
    ErrorCode.NO_PROVIDER: 503,
    "UNAUTHORIZED": 401,
    "NOT_FOUND": 404,
    "METHOD_NOT_ALLOWED": 405,
    "REQUEST_TIMEOUT": 408,
    "TOO_LARGE": 413,
    "UNSUPPORTED_MEDIA_TYPE": 415,
    "RATE_LIMITED": 429,
    "IDEMPOTENCY_KEY_REUSED": 409,
    "IDEMPOTENCY_IN_FLIGHT": 409,
    "NOT_THIS_CALL": 409,
    "CONSUMED": 409,
    "CALLBACK_NOT_ALLOWED": 400,
    "UNAVAILABLE": 503,
    "INTERNAL": 500,
}


class ApiError(RelayException):
    """An error the API answers with; ``code`` is stable, ``message`` says what to do."""

    def __init__(self, code: str, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.status = status or status_for(code)

    @classmethod
    def of(cls, exc: HarnessError) -> ApiError:
        """The API error for a seam error."""
        return cls(exc.code, str(exc))


def status_for(code: str) -> int:
    """The HTTP status the API uses for ``code``."""
    return _STATUS.get(code, 400)


def error_response(
    code: str, message: str, *, status: int | None = None, headers: dict[str, str] | None = None
) -> web.Response:
    """A JSON error response."""
    return web.json_response(
        {"error": {"code": code, "message": message}},
        status=status or status_for(code),
        headers=headers,
    )
