"""Decoding JSON that someone else wrote: the API's bodies, request files, relay replies.

``json.loads`` trusts its input more than an HTTP server can: 100,000 ``[`` raise
``RecursionError``, an integer of 400 digits decodes fine but raises ``OverflowError`` in the
first arithmetic that mixes it with a float, and ``1e400`` decodes to infinity. ``loads``
refuses all three (and ``NaN``/``Infinity``, which are not JSON) with ``UnreadableJSON``, a
``ValueError``, so that every caller that already handles malformed JSON handles these too.
"""

from __future__ import annotations

import json
import math

__all__ = ["MAX_DEPTH", "MAX_INT_DIGITS", "JSONTooComplex", "UnreadableJSON", "loads"]

# Deeper than any request or Slack payload (a few levels), far below Python's recursion limit.
MAX_DEPTH = 100
# A float holds up to ~1.8e308; 30 digits are beyond any count, size or time the relay reads.
MAX_INT_DIGITS = 30


class UnreadableJSON(ValueError):
    """The text is not JSON the relay will read; the message says why."""


class JSONTooComplex(UnreadableJSON):
    """Valid JSON that nests too deep or holds a number too large to compute with."""


def _int(text: str) -> int:
    if len(text) - text.startswith("-") > MAX_INT_DIGITS:
        raise JSONTooComplex(f"a number has more than {MAX_INT_DIGITS} digits")
    return int(text)


def _float(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise JSONTooComplex(f"the number {text[:20]}… is too large")
    return value


def _constant(name: str) -> object:
    raise UnreadableJSON(f"{name} is not a JSON value")


# Built once: ``json.loads`` given hooks builds a decoder, and its scanner, on every call
# (two thirds of the time it takes on a Web API reply of 50 bytes).
_DECODER = json.JSONDecoder(parse_int=_int, parse_float=_float, parse_constant=_constant)


def loads(data: str | bytes | bytearray) -> object:
    """Decode ``data``; raises ``UnreadableJSON`` (a ``ValueError``) saying what is wrong."""
    try:
        # As json.loads reads it: bytes in UTF-8, -16 or -32 by their first bytes; a str
        # that starts with a byte-order mark is refused.
        if isinstance(data, str):
            text = data
            if text.startswith("\ufeff"):
                raise json.JSONDecodeError("Unexpected UTF-8 BOM (decode using utf-8-sig)", text, 0)
        elif isinstance(data, bytes | bytearray):
            text = data.decode(json.detect_encoding(data), "surrogatepass")
        else:
            kind = type(data).__name__
            raise TypeError(f"the JSON object must be str, bytes or bytearray, not {kind}")
        value: object = _DECODER.decode(text)
    except RecursionError:
        raise JSONTooComplex(f"it nests deeper than {MAX_DEPTH} levels") from None
    except UnicodeDecodeError:
        raise UnreadableJSON("it is not UTF-8 text") from None
    except UnreadableJSON:
        raise
    except json.JSONDecodeError as exc:
        raise UnreadableJSON(f"{exc.msg} at line {exc.lineno}, column {exc.colno}") from None
    # Fewer brackets than the limit cannot nest past it: skip the walk (the common case).
    if _brackets(data) > MAX_DEPTH:
        _check_depth(value)
    return value


def _brackets(data: str | bytes | bytearray) -> int:
    if isinstance(data, str):
        return data.count("[") + data.count("{")
    return data.count(b"[") + data.count(b"{")


def _check_depth(value: object) -> None:
    stack: list[tuple[object, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: list[object] = list(item.values())
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth > MAX_DEPTH:
            raise JSONTooComplex(f"it nests deeper than {MAX_DEPTH} levels")
        stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list))
