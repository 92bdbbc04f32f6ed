"""The OpenAPI parts of the operators' features (issue 16): idempotent creates, the audit
list and signed outcome webhooks, laid over the document ``relay.server.openapi`` builds."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from relay.errors import ErrorCode
from relay.server.idempotency import HEADER, MAX_KEY_LENGTH
from relay.server.listing import LIST_DEFAULT, LIST_MAX

__all__ = ["OPERATOR_ERROR_CODES", "with_operator_features"]

ErrorResponse = Callable[[str], dict[str, Any]]
OPERATOR_ERROR_CODES: list[ErrorCode] = [
    ErrorCode.IDEMPOTENCY_KEY_REUSED,
    ErrorCode.IDEMPOTENCY_IN_FLIGHT,
    ErrorCode.CALLBACK_NOT_ALLOWED,
]

_IDEMPOTENCY_KEY = {
    "name": HEADER,
    "in": "header",
    "required": False,
    "description": "Makes the create safe to retry: the same key and body within"
    " RELAY_IDEMPOTENCY_WINDOW (default 24 h) answer with the ask the first request created"
    " (posted once, also while the first request is still posting, on any replica); the same"
    " key with another body is a 409 IDEMPOTENCY_KEY_REUSED. Keys are per API token.",
    "schema": {"type": "string", "minLength": 1, "maxLength": MAX_KEY_LENGTH},
}
_REPLAYED = {
    "Idempotent-Replayed": {
        "description": "true when this reply is the ask an earlier request with the same"
        " Idempotency-Key created.",
        "schema": {"type": "string", "enum": ["true"]},
    }
}


def _conflict(error: ErrorResponse) -> dict[str, Any]:
    return error(
        "The Idempotency-Key was used with another body (IDEMPOTENCY_KEY_REUSED), or its"
        " first request is still being created after 30 s (IDEMPOTENCY_IN_FLIGHT: retry)"
    )


_STATUSES = ["pending", "answered", "aborted", "timed_out", "failed"]


def _query(name: str, description: str, schema: dict[str, Any]) -> dict[str, Any]:
    return {
        "name": name,
        "in": "query",
        "required": False,
        "description": description,
        "schema": schema,
    }


_AUDIT_RECORD = {
    "allOf": [
        {"$ref": "#/components/schemas/AskRecord"},
        {
            "type": "object",
            "required": ["questions", "channel"],
            "properties": {
                "questions": {
                    "type": "array",
                    "items": {"$ref": "#/components/schemas/Question"},
                    "description": "The questions and options as asked.",
                },
                "agent": {"type": ["object", "null"], "description": "Who asked."},
                "channel": {"type": "string"},
                "thread_ts": {"type": "string"},
                "finished_at": {"type": "string", "format": "date-time"},
                "escalated_at": {
                    "type": "string",
                    "format": "date-time",
                    "description": "When the ask was escalated (escalate_after_s), if it was"
                    " before it ended.",
                },
            },
        },
    ]
}
_AUDIT_PAGE = {
    "type": "object",
    "required": ["asks", "next_cursor"],
    "properties": {
        "asks": {"type": "array", "items": {"$ref": "#/components/schemas/AuditRecord"}},
        "next_cursor": {
            "type": ["string", "null"],
            "description": "Pass as ?cursor= for the next page; null on the last page. A page"
            " may hold fewer than limit asks (a sparse filter) and still have a next one.",
        },
    },
}


def _list_asks(error: ErrorResponse) -> dict[str, Any]:
    return {
        "operationId": "listAsks",
        "summary": "The token's asks, newest first, filtered, in cursor pages (the audit trail).",
        "description": "Asks are kept RELAY_RETENTION after they end (and, without Redis,"
        " within RELAY_RETENTION_BYTES); the trail is as long as that.",
        "parameters": [
            _query(
                "status",
                "Only asks in these statuses: repeat it, or separate them with commas.",
                {"type": "string"},
            ),
            _query("agent", "Only asks made by this agent id.", {"type": "string"}),
            _query("channel", "Only asks posted in this channel id.", {"type": "string"}),
            _query(
                "responder",
                "Only asks this Slack user id answered (a question of).",
                {"type": "string"},
            ),
            _query(
                "since",
                "Only asks created at or after this ISO 8601 time or date (UTC when it names"
                " no zone).",
                {"type": "string"},
            ),
            _query(
                "until",
                "Only asks created before this ISO 8601 time or date.",
                {"type": "string"},
            ),
            _query("cursor", "next_cursor from the previous page.", {"type": "string"}),
            _query(
                "limit",
                f"Most asks in one page (default {LIST_DEFAULT}).",
                {"type": "integer", "minimum": 1, "maximum": LIST_MAX},
            ),
        ],
        "responses": {
            "200": {
                "description": "One page of asks",
                "content": {
                    "application/json": {"schema": {"$ref": "#/components/schemas/AuditPage"}}
                },
            },
            "400": error("A parameter is malformed (BAD_REQUEST names it)"),
            "401": error("Missing or unknown bearer token (UNAUTHORIZED)"),
            "503": error("The store is unreachable (UNAVAILABLE)"),
        },
    }


_CALLBACK_FIELDS = {
    "callback_url": {
        "type": ["string", "null"],
        "maxLength": 2048,
        "description": "POST the ask's record here, signed, when it ends (answered, timed out,"
        " aborted, failed): see the webhooks section. The host must be on the operator's"
        " RELAY_WEBHOOK_ALLOWED_HOSTS and resolve to a public address (or one in"
        " RELAY_WEBHOOK_ALLOWED_NETWORKS); else 400 CALLBACK_NOT_ALLOWED.",
    },
    "callback_events": {
        "type": ["array", "null"],
        "items": {"type": "string"},
        "description": "Progress events to send too, besides the end: voted (type"
        " ask.vote: each vote on a question that needs several approvals), reminded (type"
        " ask.reminded: each reminder posted) and escalated (type ask.escalated: the ask"
        " was escalated).",
    },
}
_WEBHOOK_EVENT = {
    "type": "object",
    "required": ["id", "type", "created_at", "ask"],
    "properties": {
        "id": {
            "type": "string",
            "description": "The event id (also in X-Relay-Event-Id): deliveries are at least"
            " once, so deduplicate by it.",
        },
        "type": {
            "type": "string",
            "enum": [
                "ask.answered",
                "ask.timed_out",
                "ask.aborted",
                "ask.failed",
                "ask.vote",
                "ask.reminded",
                "ask.escalated",
            ],
        },
        "created_at": {"type": "string", "format": "date-time"},
        "ask": {"$ref": "#/components/schemas/AuditRecord"},
    },
}
_SIGNATURE = {
    "name": "X-Relay-Signature",
    "in": "header",
    "required": True,
    "description": "t=<unix seconds>,v1=<hex HMAC-SHA256 of '<t>.<raw body>'> under the"
    " token's webhook secret (`relay webhook-secret`); check it with"
    " relay.client.verify_webhook(body, header, secret, tolerance=300).",
    "schema": {"type": "string"},
}


def _webhook() -> dict[str, Any]:
    return {
        "post": {
            "operationId": "askEnded",
            "summary": "The relay calls an ask's callback_url when it ends.",
            "description": "Retried with backoff (RELAY_WEBHOOK_BACKOFF doubling to 10 min) for"
            " RELAY_WEBHOOK_RETRY_FOR (24 h) until a 2xx answers; redirects are not followed."
            " Each attempt is signed anew.",
            "parameters": [
                _SIGNATURE,
                {
                    "name": "X-Relay-Event-Id",
                    "in": "header",
                    "required": True,
                    "schema": {"type": "string"},
                },
                {
                    "name": "X-Relay-Event-Type",
                    "in": "header",
                    "required": True,
                    "schema": {"type": "string"},
                },
            ],
            "requestBody": {
                "required": True,
                "content": {
                    "application/json": {"schema": {"$ref": "#/components/schemas/WebhookEvent"}}
                },
            },
            "responses": {"200": {"description": "Any 2xx: received (no retry)"}},
        }
    }


def with_operator_features(document: dict[str, Any], *, error: ErrorResponse) -> dict[str, Any]:
    """``document`` with the operators' features added (a copy; ``error`` builds an error
    response as the base document does)."""
    doc = copy.deepcopy(document)
    paths = doc["paths"]
    for path in ("/v1/asks", "/v1/approvals"):
        post = paths[path]["post"]
        post["parameters"] = [*post.get("parameters", []), _IDEMPOTENCY_KEY]
        post["responses"]["409"] = _conflict(error)
        created = post["responses"].get("201")
        if created is not None:
            created["headers"] = {**created.get("headers", {}), **_REPLAYED}
    paths["/v1/asks"]["get"] = _list_asks(error)
    schemas = doc["components"]["schemas"]
    schemas["AuditRecord"] = _AUDIT_RECORD
    schemas["AuditPage"] = _AUDIT_PAGE
    schemas["WebhookEvent"] = _WEBHOOK_EVENT
    for name, path in (("AskRequest", "/v1/asks"), ("ApprovalRequest", "/v1/approvals")):
        schemas[name]["properties"].update(copy.deepcopy(_CALLBACK_FIELDS))
        paths[path]["post"]["responses"]["400"]["description"] += (
            "; a callback_url the relay may not call (CALLBACK_NOT_ALLOWED)"
        )
    doc["webhooks"] = {"askEnded": _webhook()}
    return doc
