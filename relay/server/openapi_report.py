"""The OpenAPI part of the approvals report (issue 55): ``GET /report``, an operator's page,
laid over the document ``relay.server.openapi`` builds."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

__all__ = ["with_report"]

ErrorResponse = Callable[[str], dict[str, Any]]


def _report(error: ErrorResponse) -> dict[str, Any]:
    return {
        "get": {
            "operationId": "approvalsReport",
            "summary": "The approvals report: a self-contained HTML page (inline SVG charts, no"
            " script) of approvals per day, time to decide (p50, p90), who decided, how they"
            " ended, what ended with nobody's answer, and the top repeated calls, made from"
            " the receipt chain once it verifies against the relay's own keys.",
            "description": "Needs an operator token (RELAY_OPERATOR_TOKENS), as a bearer"
            " token or as the password of HTTP Basic (any user name: a browser asks for it"
            " after the 401's WWW-Authenticate: Basic). An agent's API token is refused: the"
            " page shows every token's approvals.",
            "security": [{"bearer": []}, {"operatorBasic": []}],
            "responses": {
                "200": {
                    "description": "The page",
                    "content": {"text/html": {"schema": {"type": "string"}}},
                },
                "401": error(
                    "No operator token: none, an unknown one, or an agent's API token"
                    " (UNAUTHORIZED)"
                ),
                "404": error("The relay signs no receipts (NOT_FOUND)"),
                "500": error(
                    "The receipt chain does not verify; relay verify --chain says where (INTERNAL)"
                ),
            },
        }
    }


def with_report(document: dict[str, Any], *, error: ErrorResponse) -> dict[str, Any]:
    """``document`` with ``GET /report`` and the Basic scheme it also takes (a copy)."""
    doc = copy.deepcopy(document)
    doc["paths"]["/report"] = _report(error)
    doc["components"]["securitySchemes"]["operatorBasic"] = {
        "type": "http",
        "scheme": "basic",
        "description": "An operator token as the password (any user name); /report only.",
    }
    return doc
