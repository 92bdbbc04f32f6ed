"""The OpenAPI parts of the operators' features (issue 16): idempotent creates, the audit
list and signed outcome webhooks, laid over the document ``relay.server.openapi`` builds."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from relay.server.idempotency import HEADER, MAX_KEY_LENGTH

__all__ = ["OPERATOR_ERROR_CODES", "with_operator_features"]

ErrorResponse = Callable[[str], dict[str, Any]]
OPERATOR_ERROR_CODES = ["IDEMPOTENCY_KEY_REUSED", "IDEMPOTENCY_IN_FLIGHT"]

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
    return doc
