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
        ├── Retry                        relay.seam.replies — the same request may be sent again
        ├── Released                     relay.asks.inflight — the relay is stopping
        ├── Unrecorded                   relay.slack.webapi.messages — posted but not recorded
        ├── ResponseUrlRefused           relay.slack.webapi.calls — Slack refused a response_url
        ├── CallbackRefused              relay.webhooks.policy — a callback URL not allowed
        ├── ActionRefused                relay.sandbox.standin — a sandbox action refused
        ├── UnreadableJSON (ValueError)  relay.seam.safejson — text the relay will not read as JSON
        │   └── JSONTooComplex           too deep, or a number too large
        ├── LogMismatch (ValueError)     relay.learn.log — asks that do not match their receipts
        ├── BadJWS (ValueError)          relay.receipts.jws — a receipt's JWS fails
        ├── ReceiptKeyError (ValueError) relay.receipts.keys — a key file cannot be read
        └── TimestampError (RuntimeError) relay.receipts.checkpoint — the TSA granted none

Runtime failures carry an ``ErrorCode``; configuration mistakes are a separate type so that
callers can tell "the human never answered" from "the relay was set up wrong".
"""

from __future__ import annotations

from enum import StrEnum
from typing import Literal

__all__ = [
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


class _Section(StrEnum):
    """Where a code is met: the headings of the errors reference page."""

    REQUEST = "The request"
    ASK = "The ask"
    MCP = "`/mcp`"
    CLI = "Configuration and the command line"
    SANDBOX = "The sandbox page"


class ErrorCode(StrEnum):
    """Every stable error code the relay answers with (on the wire: never renamed).

    ``status`` is its HTTP status (``None`` where no HTTP answer carries it), ``exit`` the
    CLI's exit status for a command-line code, and ``hint`` says when it comes and what to do;
    docs/reference/errors.md is generated from them (``scripts/errors_doc.py``).
    """

    BAD_REQUEST = "BAD_REQUEST"
    EMPTY_QUESTIONS = "EMPTY_QUESTIONS"
    BAD_INTENT = "BAD_INTENT"
    BAD_PATTERN = "BAD_PATTERN"
    JSON_LONE_SURROGATE = "JSON_LONE_SURROGATE"
    JSON_NOT_FINITE = "JSON_NOT_FINITE"
    JSON_INEXACT_NUMBER = "JSON_INEXACT_NUMBER"
    JSON_TOO_DEEP = "JSON_TOO_DEEP"
    CALLBACK_NOT_ALLOWED = "CALLBACK_NOT_ALLOWED"
    UNAUTHORIZED = "UNAUTHORIZED"
    NOT_FOUND = "NOT_FOUND"
    METHOD_NOT_ALLOWED = "METHOD_NOT_ALLOWED"
    REQUEST_TIMEOUT = "REQUEST_TIMEOUT"
    TOO_LARGE = "TOO_LARGE"
    UNSUPPORTED_MEDIA_TYPE = "UNSUPPORTED_MEDIA_TYPE"
    RATE_LIMITED = "RATE_LIMITED"
    IDEMPOTENCY_KEY_REUSED = "IDEMPOTENCY_KEY_REUSED"
    IDEMPOTENCY_IN_FLIGHT = "IDEMPOTENCY_IN_FLIGHT"
    NOT_THIS_CALL = "NOT_THIS_CALL"
    CONSUMED = "CONSUMED"
    ASK_ABORTED = "ASK_ABORTED"
    ASK_CANCELLED = "ASK_CANCELLED"
    PROVIDER_FAILED = "PROVIDER_FAILED"
    NO_PROVIDER = "NO_PROVIDER"
    DUPLICATE_PROVIDER = "DUPLICATE_PROVIDER"
    UNAVAILABLE = "UNAVAILABLE"
    INTERNAL = "INTERNAL"
    TOO_MANY_SESSIONS = "TOO_MANY_SESSIONS"
    MCP_SESSIONS_FULL = "MCP_SESSIONS_FULL"
    ORIGIN_NOT_ALLOWED = "ORIGIN_NOT_ALLOWED"
    HOST_NOT_ALLOWED = "HOST_NOT_ALLOWED"
    BAD_CONFIG = "BAD_CONFIG"
    BAD_RULES = "BAD_RULES"
    USAGE = "USAGE"
    CANNOT_READ = "CANNOT_READ"
    NOT_EXECUTABLE = "NOT_EXECUTABLE"
    ABORTED = "ABORTED"
    RECEIPTS_UNVERIFIED = "RECEIPTS_UNVERIFIED"
    RULE_ALLOWS_DENIED = "RULE_ALLOWS_DENIED"
    WRONG_HOST = "WRONG_HOST"
    FORBIDDEN = "FORBIDDEN"
    GONE = "GONE"
    UNREACHABLE = "UNREACHABLE"

    @property
    def section(self) -> str:
        """The heading of the errors reference this code is listed under."""
        return str(_ABOUT[self][0])

    @property
    def status(self) -> int | None:
        """The HTTP status the relay answers this code with, if any."""
        return _ABOUT[self][1]

    @property
    def exit(self) -> int | None:
        """The exit status of a CLI that stops with this code, if it is a command-line code."""
        return _ABOUT[self][2]

    @property
    def hint(self) -> str:
        """When the code comes, and what to do about it (Markdown)."""
        return _ABOUT[self][3]


_About = tuple[_Section, int | None, int | None, str]


def _codes(section: _Section, **about: tuple[int | None, str]) -> dict[str, _About]:
    """``section``'s codes: each with its HTTP status (a command-line code: its exit status)
    and its advice."""
    if section is _Section.CLI:
        return {code: (section, None, number, hint) for code, (number, hint) in about.items()}
    return {code: (section, number, None, hint) for code, (number, hint) in about.items()}


# code -> (section, HTTP status, CLI exit status, when and what to do), by section: each
# code's number is its HTTP status, or for the command line its exit status. Plain strings
# as keys, so this table is read once, at import, without a second pass over the enum.
_ABOUT: dict[str, _About] = {
    **_codes(
        _Section.REQUEST,
        BAD_REQUEST=(
            400,
            (
                "the request breaks a rule; the message names the field or rule (also more than"
                " 25 questions, two questions with one id, two options of one question with one"
                " label, an unknown field, a channel or group the operator does not list)"
            ),
        ),
        EMPTY_QUESTIONS=(400, "the request has no questions: send at least one"),
        BAD_INTENT=(
            400,
            (
                "an intent whose `approve` names none of the question's options, or that has no"
                " `detail`"
            ),
        ),
        BAD_PATTERN=(
            400,
            (
                "`/v1/approvals`: the body carries a `pattern`; a grant's scope is the relay's "
                "(its operator's rules, else exactly the input shown): leave `pattern` out"
            ),
        ),
        JSON_LONE_SURROGATE=(
            400,
            (
                'a string or key holds a lone surrogate (`"\\ud800"`), which no UTF-8 text '
                "carries: send valid Unicode, pairing each surrogate or replacing it with "
                "U+FFFD"
            ),
        ),
        JSON_NOT_FINITE=(
            400,
            (
                "`NaN`, `Infinity`, or a number past a double's range (`1e400`): send a finite "
                "number, or the value as a string"
            ),
        ),
        JSON_INEXACT_NUMBER=(
            400,
            (
                "an integer a double does not hold exactly (past ±2^53, such as 2^53 + 1; or "
                "more than 30 digits): send it as a string"
            ),
        ),
        JSON_TOO_DEEP=(
            400,
            "objects and arrays nested deeper than 100 levels: send a flatter value",
        ),
        CALLBACK_NOT_ALLOWED=(
            400,
            (
                "a `callback_url` the relay may not call (not http(s), its host off "
                "`RELAY_WEBHOOK_ALLOWED_HOSTS`, a non-public address), or webhooks are off "
                "([Outcome webhooks](../operate/webhooks.md))"
            ),
        ),
        UNAUTHORIZED=(
            401,
            "no bearer token, or one the relay does not know: send `Authorization: Bearer <token>`",
        ),
        NOT_FOUND=(
            404,
            "no such ask, or another token's (the same answer, on purpose), or one past retention",
        ),
        METHOD_NOT_ALLOWED=(405, "the route exists, the method does not"),
        REQUEST_TIMEOUT=(
            408,
            "the body did not arrive within `RELAY_READ_TIMEOUT`: send it whole, promptly",
        ),
        TOO_LARGE=(413, "the body is over `RELAY_MAX_BODY` (answered before it is read)"),
        UNSUPPORTED_MEDIA_TYPE=(415, "the body is not `application/json`"),
        RATE_LIMITED=(
            429,
            (
                "the token went past one of its limits (`RELAY_RATE_LIMIT`, "
                "`RELAY_MAX_LONG_POLLS`, `RELAY_MAX_PENDING`): retry after `Retry-After` "
                "seconds (`RelayProvider` does)"
            ),
        ),
        IDEMPOTENCY_KEY_REUSED=(
            409,
            "an `Idempotency-Key` sent again with another body: send a new key",
        ),
        IDEMPOTENCY_IN_FLIGHT=(409, "the key's first request is still posting after 30 s: retry"),
        NOT_THIS_CALL=(
            409,
            (
                "`/v1/approvals/{id}/consume`: the approval was asked for another call (tool "
                "and input), run or `tool_use_id` than the one about to run; it runs only the "
                "call its reviewers were shown: submit this call to ask for it"
            ),
        ),
        CONSUMED=(
            409,
            (
                "`/v1/approvals/{id}/consume`: the approval's allow already ran its call once; "
                "submit the call again to ask for another run"
            ),
        ),
    ),
    **_codes(
        _Section.ASK,
        ASK_ABORTED=(
            409,
            (
                "no answer: `.reason` is `aborted` (signal, cancel, `DELETE`), `timed_out` "
                '("timed out after 900 s…") or `closed` (the provider or relay shut down)'
            ),
        ),
        ASK_CANCELLED=(
            None,
            (
                "the user dismissed the question (for providers with a dismiss action; the "
                "Slack provider offers *Skip* instead)"
            ),
        ),
        PROVIDER_FAILED=(
            502,
            (
                "Slack refused the post or could not be reached (`channel_not_found`: check the"
                " id; `not_in_channel`: invite the bot; …), or the store failed while posting; "
                "the message says whether anything is still showing in Slack"
            ),
        ),
        NO_PROVIDER=(503, "no provider is registered with the service"),
        DUPLICATE_PROVIDER=(
            None,
            "a second provider was registered: the seam has one active provider",
        ),
        UNAVAILABLE=(503, "the store (Redis) is unreachable; nothing was posted: retry"),
        INTERNAL=(
            500,
            "the relay failed unexpectedly: its log has the traceback; please report it",
        ),
    ),
    **_codes(
        _Section.MCP,
        TOO_MANY_SESSIONS=(
            429,
            (
                "the token holds `RELAY_MCP_SESSIONS_PER_TOKEN` sessions: end one with "
                "`DELETE`, or wait for an idle one to close"
            ),
        ),
        MCP_SESSIONS_FULL=(503, "the relay holds `RELAY_MCP_MAX_SESSIONS`: retry shortly"),
        ORIGIN_NOT_ALLOWED=(403, "a web page's `Origin` is off `RELAY_MCP_ALLOWED_ORIGINS`"),
        HOST_NOT_ALLOWED=(
            421,
            (
                "the `Host` is off `RELAY_MCP_ALLOWED_HOSTS`: the operator lists the relay's "
                "public name"
            ),
        ),
    ),
    **_codes(
        _Section.CLI,
        BAD_CONFIG=(
            2,
            (
                "a configuration mistake (`RelayConfigError`); the line names the setting and "
                "how to fix it"
            ),
        ),
        BAD_RULES=(
            2,
            "a rules file that does not load; the line names the key (a hook denies instead)",
        ),
        USAGE=(2, "a command line the CLI cannot use; the line says which flag"),
        CANNOT_READ=(
            2,
            "a file (or stdin) the command was given cannot be read; the line says which and why",
        ),
        RECEIPTS_UNVERIFIED=(
            2,
            (
                "`relay rules`, `relay report`: the receipts do not verify, or the asks export"
                " does not match them: rules and figures come only from receipts that verify"
                " (see `relay verify --chain`); export both again from the same relay"
            ),
        ),
        RULE_ALLOWS_DENIED=(
            1,
            (
                "`relay rules replay`: a rule of the file would allow a call people denied or"
                " edited (each is listed): narrow or drop it before the file goes live"
            ),
        ),
        NOT_EXECUTABLE=(
            126,
            "`relay exec`: the command was allowed but is not executable: check its mode and path",
        ),
        ABORTED=(
            130,
            (
                "`relay exec`: a signal stopped it while people decided and the question was "
                "withdrawn; the exit is 128 + the signal's number (130 for Ctrl-C, 143 for "
                "SIGTERM)"
            ),
        ),
    ),
    **_codes(
        _Section.SANDBOX,
        WRONG_HOST=(
            421,
            (
                "the sandbox was opened under a host name it does not serve: open the address "
                "it printed"
            ),
        ),
        FORBIDDEN=(403, "a request from another site (cross-origin): use the sandbox's own page"),
        GONE=(409, "the button or modal clicked is no longer in the message: reload the page"),
        UNREACHABLE=(
            502,
            "the sandbox's relay did not answer the click: check its log, then click again",
        ),
    ),
}


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
        self.code = ErrorCode.BAD_CONFIG
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
