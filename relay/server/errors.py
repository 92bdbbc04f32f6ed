"""The API's error responses: ``{"error": {"code", "message"}}`` with a stable code."""

from __future__ import annotations

from aiohttp import web

from relay.errors import ErrorCode, HarnessError, RelayException

__all__ = ["ApiError", "error_response"]

# Each code's status is the enum's (relay.errors.ErrorCode.status): one table for the API,
# the MCP door and the errors reference.
_STATUS: dict[str, int] = {code: code.status for code in ErrorCode if code.status is not None}


class ApiError(RelayException):
    """An error the API answers with; ``code`` is stable, ``message`` says what to do."""

    def __init__(self, code: ErrorCode, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.status = status or status_for(code)

    @classmethod
    def of(cls, exc: HarnessError) -> ApiError:
        """The API error for a seam error (its code is one of the enum's: the seam's own)."""
        return cls(ErrorCode(exc.code), str(exc))


def status_for(code: ErrorCode) -> int:
    """The HTTP status the API uses for ``code``."""
    return _STATUS.get(code, 400)


def error_response(
    code: ErrorCode,
    message: str,
    *,
    status: int | None = None,
    headers: dict[str, str] | None = None,
) -> web.Response:
    """A JSON error response."""
    return web.json_response(
        {"error": {"code": code, "message": message}},
        status=status or status_for(code),
        headers=headers,
    )
