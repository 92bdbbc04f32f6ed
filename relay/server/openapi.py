"""The OpenAPI 3.1 description of the relay API, served at ``GET /openapi.json``."""

from __future__ import annotations

from typing import Any

import relay
from relay.errors import ErrorCode
from relay.server.openapi_approvals import (
    APPROVAL_ERROR_CODES,
    approval_paths,
    approval_schemas,
)
from relay.server.openapi_operators import OPERATOR_ERROR_CODES, with_operator_features
from relay.server.openapi_plans import plan_paths, plan_schemas
from relay.server.openapi_receipts import with_receipts
from relay.server.openapi_report import with_report
from relay.server.openapi_schemas import (
    ANSWER_SCHEMA,
    ASK_REQUEST_SCHEMA,
    ASK_SLACK_SCHEMA,
    ERROR_BODY_SCHEMA,
    ERROR_SCHEMA,
    OPTION_SCHEMA,
    PERSON_SCHEMA,
    QUESTION_SCHEMA,
    RECORD_SCHEMA,
    VOTE_SCHEMA,
)

__all__ = ["openapi_document"]

ERROR_CODES: list[ErrorCode] = [
    ErrorCode.BAD_REQUEST,
    # (issue 51: a body I-JSON excludes, or nested past the bound; relay.seam.safejson.refusal)
    ErrorCode.JSON_LONE_SURROGATE,
    ErrorCode.JSON_NOT_FINITE,
    ErrorCode.JSON_INEXACT_NUMBER,
    ErrorCode.JSON_TOO_DEEP,
    ErrorCode.EMPTY_QUESTIONS,
    ErrorCode.BAD_PATTERN,  # /v1/approvals: a grant scope that does not cover the input shown
    ErrorCode.BAD_INTENT,
    ErrorCode.UNAUTHORIZED,
    ErrorCode.NOT_FOUND,
    ErrorCode.METHOD_NOT_ALLOWED,
    ErrorCode.REQUEST_TIMEOUT,
    ErrorCode.TOO_LARGE,
    ErrorCode.RATE_LIMITED,
    ErrorCode.PROVIDER_FAILED,
    ErrorCode.UNAVAILABLE,
    ErrorCode.INTERNAL,
    *OPERATOR_ERROR_CODES,  # (issue 16: idempotency, audit, webhooks; openapi_operators)
    *APPROVAL_ERROR_CODES,  # (issue 49: a paused run's ticket used once; openapi_approvals)
]


def _error(description: str) -> dict[str, Any]:
    return {
        "description": description,
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}},
    }


def _record(description: str) -> dict[str, Any]:
    return {
        "description": description,
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/AskRecord"}}},
    }


_WAIT = {
    "name": "wait",
    "in": "query",
    "required": False,
    "description": "Hold the request up to this many seconds (capped by RELAY_MAX_WAIT)"
    " until the ask is no longer pending.",
    "schema": {"type": "number", "minimum": 0},
}
_ASK_ID = {"name": "ask_id", "in": "path", "required": True, "schema": {"type": "string"}}
_RATE_LIMITED = {
    **_error(
        "The token went past a limit of its own (RATE_LIMITED): requests per second"
        " (RELAY_RATE_LIMIT), requests held open with ?wait= (RELAY_MAX_LONG_POLLS), or asks"
        " pending (RELAY_MAX_PENDING, POST only); retry after Retry-After seconds"
    ),
    "headers": {
        "Retry-After": {
            "description": "Seconds to wait before retrying.",
            "schema": {"type": "integer", "minimum": 1},
        }
    },
}
_COMMON = {
    "401": _error("Missing or unknown bearer token (UNAUTHORIZED)"),
    "429": _RATE_LIMITED,
}


def openapi_document() -> dict[str, Any]:
    """The OpenAPI document; tests check it against the routes and their responses."""
    document = with_receipts(with_operator_features(_base_document(), error=_error), error=_error)
    return with_report(document, error=_error)


def _base_document() -> dict[str, Any]:
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "relay",
            "version": relay.__version__,
            "description": "Ask a team of humans a question in Slack and get the answer back."
            " The same bearer tokens also open /mcp, the relay's MCP server (Streamable HTTP;"
            " see docs/harnesses/mcp.md), which is not described here.",
        },
        "components": {
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
            "schemas": _schemas(),
        },
        "security": [{"bearer": []}],
        "paths": {
            **_ask_paths(),
            **approval_paths(_error, _COMMON, _WAIT, _ASK_ID),
            **plan_paths(_error, _COMMON, _WAIT, _ASK_ID),
            **_service_paths(),
        },
    }


def _schemas() -> dict[str, Any]:
    """The component schemas: the ask's wire form, then the approvals' and the plans'."""
    return {
        "Option": OPTION_SCHEMA,
        "Question": QUESTION_SCHEMA,
        "Vote": VOTE_SCHEMA,
        "Person": PERSON_SCHEMA,
        "AskSlack": ASK_SLACK_SCHEMA,
        "AskRequest": ASK_REQUEST_SCHEMA,
        "Answer": ANSWER_SCHEMA,
        "AskRecord": RECORD_SCHEMA,
        "ErrorBody": ERROR_BODY_SCHEMA,
        "Error": ERROR_SCHEMA,
        **approval_schemas({"$ref": "#/components/schemas/AskSlack"}),
        **plan_schemas(),
    }


def _ask_paths() -> dict[str, Any]:
    """``/v1/asks`` and ``/v1/asks/{ask_id}``."""
    return {
        "/v1/asks": {
            "post": {
                "operationId": "createAsk",
                "summary": "Post questions to Slack; optionally wait for the outcome.",
                "parameters": [_WAIT],
                "requestBody": {
                    "required": True,
                    "content": {
                        "application/json": {"schema": {"$ref": "#/components/schemas/AskRequest"}}
                    },
                },
                "responses": {
                    "201": _record("The ask, as it stands after any wait"),
                    "400": _error(
                        "Malformed request (BAD_REQUEST, EMPTY_QUESTIONS, BAD_INTENT, JSON_*)"
                    ),
                    **_COMMON,
                    "408": _error(
                        "The body did not arrive within RELAY_READ_TIMEOUT (REQUEST_TIMEOUT)"
                    ),
                    "413": _error("Body over the size cap (TOO_LARGE)"),
                    "502": _error(
                        "Slack refused the post, or the store failed while posting"
                        " (PROVIDER_FAILED; the message says whether anything was posted)"
                    ),
                    "503": _error("The store is unreachable (UNAVAILABLE)"),
                },
            }
        },
        "/v1/asks/{ask_id}": {
            "parameters": [_ASK_ID],
            "get": {
                "operationId": "getAsk",
                "summary": "Read an ask; long-poll with ?wait= while it is pending.",
                "parameters": [_WAIT],
                "responses": {
                    "200": _record("The ask"),
                    "400": _error("Bad wait parameter (BAD_REQUEST)"),
                    **_COMMON,
                    "404": _error("No such ask for this token (NOT_FOUND)"),
                    "503": _error("The store is unreachable (UNAVAILABLE)"),
                },
            },
            "delete": {
                "operationId": "abortAsk",
                "summary": "Abort a pending ask and withdraw its Slack messages.",
                "responses": {
                    "200": _record("The ask after the abort (or as it ended before)"),
                    **_COMMON,
                    "404": _error("No such ask for this token (NOT_FOUND)"),
                    "503": _error("The store is unreachable (UNAVAILABLE)"),
                },
            },
        },
    }


def _service_paths() -> dict[str, Any]:
    """The probes and the metrics, open without a token."""
    return {
        "/healthz": {
            "get": {
                "operationId": "health",
                "security": [],
                "responses": {"200": {"description": "The process is alive"}},
            }
        },
        "/readyz": {
            "get": {
                "operationId": "ready",
                "security": [],
                "responses": {
                    "200": {
                        "description": "Slack auth.test passed, the store answers and (in"
                        " Socket Mode) the WebSocket to Slack is connected"
                    },
                    "503": {
                        "description": "Not ready; the body names each failed check"
                        " (slack, store, socket_mode) and why"
                    },
                },
            }
        },
        "/metrics": {
            "get": {
                "operationId": "metrics",
                "security": [],
                "responses": {"200": {"description": "Prometheus text format"}},
            }
        },
    }
