"""The MCP doors' refusal of a message no receipt could carry, before the SDK reads it.

The SDK's JSON-RPC parser fails on a lone surrogate (``"\\ud800"``): over HTTP it answers a
bare ``Parse error`` (-32700), and over stdio it drops the line, so the client waits for an
answer that never comes. Both doors ask ``refused_message`` first and answer its error, which
names the request's id and carries the boundary's stable code (``safejson.refusal``) in
``error.data.code``. What the SDK does read (``NaN``, deep nesting, huge integers) reaches the
tools, which refuse it with the same codes as a tool error.
"""

from __future__ import annotations

import re
from typing import Any

from relay.seam import safejson

__all__ = ["INVALID_PARAMS", "refused_message"]

INVALID_PARAMS = -32602
"""JSON-RPC 2.0's code for invalid method parameters."""

# An escaped surrogate (paired or lone) or a raw one: only then is the full check worth it.
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89abcdefABCDEF]|\xed[\xa0-\xbf]")


def refused_message(body: bytes) -> dict[str, Any] | None:
    """The JSON-RPC error answering ``body`` (one message) when it holds a lone surrogate;
    ``None`` for anything else (the SDK answers malformed JSON itself)."""
    if not _SURROGATE_ESCAPE.search(body):
        return None
    try:
        value = safejson.loads(body)
    except ValueError:
        return None
    refused = safejson.refusal(value)
    if refused is None or refused.code != safejson.LONE_SURROGATE:
        return None
    ident = value.get("id") if isinstance(value, dict) else None
    if isinstance(ident, bool) or not isinstance(ident, str | int):
        ident = None
    elif safejson.unfit(ident) is not None:
        ident = None  # (the id itself is what cannot be echoed)
    return {
        "jsonrpc": "2.0",
        "id": ident,
        "error": {
            "code": INVALID_PARAMS,
            "message": refused.sentence("the message") + ".",
            "data": {"code": refused.code},
        },
    }
