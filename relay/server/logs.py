"""The hosted relay's log lines: one line per record, whatever a client sends.

- ``OneLineFilter`` escapes control characters in every record's message and bounds it, so
  no value (a URL path, an exception's text) can start a forged second line.
- ``LogFormatter`` marks each line of a traceback with ``| ``: only a record's first line
  ever starts with a timestamp.
- ``ProtocolLog`` is the logger aiohttp's server writes to: a request that is not HTTP
  (a malformed request line, an invalid header, a line too long) is the client's fault,
  logged as one short INFO line instead of an ERROR with a traceback, so nobody can flood
  the relay's alerts without credentials.
"""

from __future__ import annotations

import logging
import sys
from typing import Any

from aiohttp.http_exceptions import HttpProcessingError

from relay.asks.logline import for_log

__all__ = ["MESSAGE_LIMIT", "LogFormatter", "OneLineFilter", "ProtocolLog"]

MESSAGE_LIMIT = 4000
"""The characters of one log message kept (a traceback comes on top, marked line by line)."""


class OneLineFilter(logging.Filter):
    """Rewrites each record's message onto one bounded line; never drops a record."""

    def filter(self, record: logging.LogRecord) -> bool:
        """Escape control characters in the message and cut it at ``MESSAGE_LIMIT``."""
        message = record.getMessage()
        safe = for_log(message, limit=MESSAGE_LIMIT)
        if safe != message:
            record.msg, record.args = safe, None
        return True


class LogFormatter(logging.Formatter):
    """The relay's format, with every traceback line marked as the record's continuation."""

    def formatException(self, ei: Any) -> str:
        """The traceback, each line starting with ``| ``."""
        return _continued(super().formatException(ei))

    def formatStack(self, stack_info: str) -> str:
        """The stack, each line starting with ``| ``."""
        return _continued(super().formatStack(stack_info))


def _continued(text: str) -> str:
    return "\n".join(f"| {line}" for line in text.splitlines())


class ProtocolLog(logging.LoggerAdapter[logging.Logger]):
    """aiohttp's server logger, with requests that are not HTTP logged as one INFO line."""

    def __init__(self, logger: logging.Logger | None = None) -> None:
        super().__init__(logger or logging.getLogger("aiohttp.server"), {})

    def exception(self, msg: object, *args: object, exc_info: Any = True, **kwargs: Any) -> None:
        """Log ``msg`` with its traceback, unless it reports a malformed request."""
        error = exc_info if isinstance(exc_info, BaseException) else sys.exc_info()[1]
        if isinstance(error, HttpProcessingError):
            remote = args[0] if args else "an unknown client"
            lines = error.message.strip().splitlines() if error.message else []
            reason = lines[0].rstrip(":") if lines else type(error).__name__
            self.logger.info(
                "refused a malformed HTTP request from %s (%s): %s",
                remote,
                error.code,
                for_log(reason, limit=120),  # it may quote the client's bytes
            )
            return
        self.logger.exception(msg, *args, exc_info=exc_info, **kwargs)
