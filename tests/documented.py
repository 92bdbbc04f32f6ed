"""Check a value the relay sent against the OpenAPI document's schema for it."""

from __future__ import annotations

import jsonschema

from relay.server.openapi import openapi_document


def assert_documented(value: object, schema: str) -> None:
    """``value`` matches the OpenAPI document's schema ``schema``."""
    document = openapi_document()
    jsonschema.validate(
        value,
        {"$ref": f"#/components/schemas/{schema}", "components": document["components"]},
        format_checker=jsonschema.FormatChecker(),
    )
