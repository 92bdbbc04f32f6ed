"""Errors a user, an operator or an agent can see, each with a stable code.

Every exception the relay raises for a caller to catch descends from ``RelayException``
(some also keep a builtin base, e.g. ``ValueError``, so existing handlers still match).

Hierarchy::

    Exception
    └── RelayException                   the base: ``except RelayException`` catches them all
        ├── HarnessError                 .code: str — a runtime failure the harness reports
        │   └── UserInteractionError     .reason: "aborted" | "timed_out" | "closed" | None
        ├── RelayConfigError             a developer or operator mistake in configuration
        ├── ApiError                     relay.server.errors — an HTTP API error response
        ├── RateLimited                  relay.server.limits — a token went past a limit
        ├── ClientGone                   relay.server.bodies — the client hung up
        ├── CommandError                 relay.cli.common — a CLI command failed
        ├── BadHookInput                 relay.hooks.common — a hook's stdin is not understood
        ├── RulesError                   relay.gate.rules — the rules file is missing or wrong
        ├── StoreUnavailable             relay.store.base — the store could not be reached
        ├── PendingLimitReached          relay.store.base — too many pending asks
        ├── NotSupported                 relay.store.redis_listener — no hiredis reader
        ├── Retry                        relay.replies — the same request may be sent again
        ├── Released                     relay.waits — the relay is stopping
        ├── Unrecorded                   relay.slack.messages — posted but not recorded
        ├── ResponseUrlRefused           relay.slack.webapi — Slack refused a response_url
        ├── CallbackRefused              relay.webhooks.policy — a callback URL not allowed
        ├── ActionRefused                relay.sandbox.standin — a sandbox action refused
        ├── UnreadableJSON (ValueError)  relay.safejson — text the relay will not read as JSON
        │   └── JSONTooComplex           too deep, or a number too large
        ├── BadJWS (ValueError)          relay.receipts.jws — a receipt's JWS fails
        └── ReceiptKeyError (ValueError) relay.receipts.keys — a key file cannot be read

Runtime failures carry an ``ErrorCode``; configuration mistakes are a separate type so that
callers can tell "the human never answered" from "the relay was set up wrong".
"""

from __future__ import annotations

from enum import StrEnum
from typing import Literal

__all__ = [
    "ABORTED_MESSAGE",
    "AbortReason",
    "ErrorCode",
    "HarnessError",
    "RelayConfigError",
    "RelayException",
    "UserInteractionError",
    "ask_aborted",
    "ask_closed",
    "ask_timed_out",
    "bad_request",
]

AbortReason = Literal["aborted", "timed_out", "closed"]

ABORTED_MESSAGE = "ask_user_question was aborted before the user answered"


class ErrorCode(StrEnum):
    """Stable error codes of the interaction seam and the relay."""

    EMPTY_QUESTIONS = "EMPTY_QUESTIONS"
    BAD_INTENT = "BAD_INTENT"
    NO_PROVIDER = "NO_PROVIDER"
    DUPLICATE_PROVIDER = "DUPLICATE_PROVIDER"
    ASK_ABORTED = "ASK_ABORTED"
    ASK_CANCELLED = "ASK_CANCELLED"
    BAD_REQUEST = "BAD_REQUEST"
    PROVIDER_FAILED = "PROVIDER_FAILED"


class RelayException(Exception):
    """The base of every exception the relay raises for its caller to catch."""


class HarnessError(RelayException):
    """A failure the agent harness reports to its caller; ``str(err)`` is the message."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = str(code)
        self.message = message

    def __repr__(self) -> str:
        return f"{type(self).__name__}(code={self.code!r}, message={self.message!r})"


class UserInteractionError(HarnessError):
    """An error of the interaction seam; ``reason`` says why an ``ASK_ABORTED`` ask ended."""

    def __init__(self, code: str, message: str, *, reason: AbortReason | None = None) -> None:
        super().__init__(code, message)
        self.reason: AbortReason | None = reason


class RelayConfigError(RelayException):
    """The relay was configured wrong; the message names the setting and how to fix it."""

    def __init__(self, message: str, *, setting: str | None = None) -> None:
        super().__init__(message)
        self.code = "BAD_CONFIG"
        self.setting = setting


def bad_request(message: str) -> UserInteractionError:
    """A ``BAD_REQUEST`` error: the input breaks a rule, named in the message."""
    return UserInteractionError(ErrorCode.BAD_REQUEST, message)


def ask_aborted() -> UserInteractionError:
    """The ask was aborted by its signal or its task was cancelled."""
    return UserInteractionError(ErrorCode.ASK_ABORTED, ABORTED_MESSAGE, reason="aborted")


def ask_timed_out(seconds: float) -> UserInteractionError:
    """The ask ran past its timeout; the message says so, so nobody reads it as a refusal."""
    return UserInteractionError(
        ErrorCode.ASK_ABORTED,
        f"ask_user_question timed out after {seconds:g} s before the user answered",
        reason="timed_out",
    )


def ask_closed() -> UserInteractionError:
    """The provider was closed while the ask was pending."""
    return UserInteractionError(
        ErrorCode.ASK_ABORTED,
        f"{ABORTED_MESSAGE}: the provider was closed",
        reason="closed",
    )
