"""The OpenAPI parts of the receipts (issues 41, 51): an ask's and an approval's receipt,
the chain, its signed checkpoints, and the public keys, laid over the document
``relay.server.openapi`` builds."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

__all__ = ["with_receipts"]

ErrorResponse = Callable[[str], dict[str, Any]]

_ID = {"name": "ask_id", "in": "path", "required": True, "schema": {"type": "string"}}
_JWS = {
    "description": "The receipt: a compact JWS (EdDSA, Ed25519) over the JCS canonical JSON"
    " of the ask's outcome; verify it against /.well-known/jwks.json (`relay verify`).",
    "content": {"application/jose": {"schema": {"type": "string"}}},
}


def _receipt(what: str, operation: str, error: ErrorResponse) -> dict[str, Any]:
    return {
        "get": {
            "operationId": operation,
            "summary": f"The signed receipt of an ended {what}.",
            "parameters": [_ID],
            "responses": {
                "200": _JWS,
                "401": error("Missing or unknown bearer token (UNAUTHORIZED)"),
                "404": error(
                    f"No such {what} for this token, not ended yet, or the relay signs no"
                    " receipts (NOT_FOUND)"
                ),
                "429": error("The token went past a limit of its own (RATE_LIMITED)"),
            },
        }
    }


def _chain(error: ErrorResponse) -> dict[str, Any]:
    page = {
        "type": "object",
        "required": ["receipts", "next_after"],
        "properties": {
            "receipts": {
                "type": "array",
                "items": {
                    "type": "object",
                    "required": ["seq", "receipt"],
                    "properties": {
                        "seq": {"type": "integer", "minimum": 1},
                        "id": {"type": ["string", "null"]},
                        "ask": {"type": ["string", "null"]},
                        "receipt": {"type": "string"},
                    },
                },
            },
            "next_after": {"type": ["integer", "null"]},
        },
    }
    return {
        "get": {
            "operationId": "listReceipts",
            "summary": "The token's own receipts (an operator token's: every one), in chain"
            " order, a page at a time.",
            "parameters": [
                {
                    "name": "after",
                    "in": "query",
                    "required": False,
                    "description": "Start after this place (next_after of the last page).",
                    "schema": {"type": "integer", "minimum": 0},
                },
                {
                    "name": "limit",
                    "in": "query",
                    "required": False,
                    "schema": {"type": "integer", "minimum": 1, "maximum": 1000},
                },
            ],
            "responses": {
                "200": {
                    "description": "One page of the chain",
                    "content": {"application/json": {"schema": page}},
                },
                "400": error("after or limit is not a whole number in range (BAD_REQUEST)"),
                "401": error("Missing or unknown bearer token (UNAUTHORIZED)"),
                "404": error("The relay signs no receipts (NOT_FOUND)"),
                "429": error("The token went past a limit of its own (RATE_LIMITED)"),
            },
        }
    }


def _jwks(error: ErrorResponse) -> dict[str, Any]:
    return {
        "get": {
            "operationId": "receiptKeys",
            "summary": "The public keys receipts verify with (RFC 7517 JWK Set).",
            "security": [],
            "responses": {
                "200": {
                    "description": "The current key and every retired one still published",
                    "content": {
                        "application/jwk-set+json": {
                            "schema": {
                                "type": "object",
                                "required": ["keys"],
                                "properties": {"keys": {"type": "array"}},
                            }
                        }
                    },
                },
                "404": error("The relay signs no receipts (NOT_FOUND)"),
            },
        }
    }


_CHECKPOINT = {
    "type": "object",
    "required": ["number", "checkpoint", "timestamp"],
    "properties": {
        "number": {"type": "integer", "minimum": 1, "description": "Its place, first is 1."},
        "checkpoint": {
            "type": "string",
            "description": "A compact JWS (typ relay-checkpoint+jws, the receipts' key) over"
            " the JCS of {v, iss, kid, first, base, last, head, count, at}: the chain's first"
            " and last place, the digest its first receipt names as prev, the last receipt's"
            " digest, how many, and when.",
        },
        "timestamp": {
            "type": ["string", "null"],
            "description": "Base64 of the TSA's RFC 3161 TimeStampResp over the SHA-256 of"
            " the checkpoint's compact JWS (null when no RELAY_TSA_URL is set).",
        },
    },
}


def _checkpoint(error: ErrorResponse) -> dict[str, Any]:
    return {
        "get": {
            "operationId": "latestReceiptCheckpoint",
            "summary": "The latest signed checkpoint of the receipt chain (no token: it holds"
            " nothing of any ask).",
            "security": [],
            "responses": {
                "200": {
                    "description": "The latest checkpoint",
                    "content": {"application/json": {"schema": _CHECKPOINT}},
                },
                "404": error("No checkpoint yet, or the relay signs no receipts (NOT_FOUND)"),
            },
        }
    }


def _checkpoints(error: ErrorResponse) -> dict[str, Any]:
    page = {
        "type": "object",
        "required": ["checkpoints", "next_after"],
        "properties": {
            "checkpoints": {"type": "array", "items": _CHECKPOINT},
            "next_after": {"type": ["integer", "null"]},
        },
    }
    return {
        "get": {
            "operationId": "listReceiptCheckpoints",
            "summary": "Every signed checkpoint of the receipt chain in the order made, a"
            " page at a time (no token).",
            "security": [],
            "parameters": [
                {
                    "name": "after",
                    "in": "query",
                    "required": False,
                    "description": "Start after this checkpoint number (next_after).",
                    "schema": {"type": "integer", "minimum": 0},
                },
                {
                    "name": "limit",
                    "in": "query",
                    "required": False,
                    "schema": {"type": "integer", "minimum": 1, "maximum": 1000},
                },
            ],
            "responses": {
                "200": {
                    "description": "One page of checkpoints",
                    "content": {"application/json": {"schema": page}},
                },
                "400": error("after or limit is not a whole number in range (BAD_REQUEST)"),
                "404": error("The relay signs no receipts (NOT_FOUND)"),
            },
        }
    }


def with_receipts(document: dict[str, Any], *, error: ErrorResponse) -> dict[str, Any]:
    """``document`` with the receipt routes added (a copy)."""
    doc = copy.deepcopy(document)
    paths = doc["paths"]
    paths["/v1/asks/{ask_id}/receipt"] = _receipt("ask", "getAskReceipt", error)
    paths["/v1/approvals/{ask_id}/receipt"] = _receipt("approval", "getApprovalReceipt", error)
    paths["/v1/receipts"] = _chain(error)
    paths["/.well-known/jwks.json"] = _jwks(error)
    paths["/receipts/checkpoint"] = _checkpoint(error)
    paths["/receipts/checkpoints"] = _checkpoints(error)
    event = doc["components"]["schemas"].get("WebhookEvent")
    if event is not None:
        event["properties"]["receipt"] = {
            "type": "string",
            "description": "On an ask's end, when the relay signs receipts: its receipt (the"
            " compact JWS GET /v1/asks/{id}/receipt answers).",
        }
    return doc
