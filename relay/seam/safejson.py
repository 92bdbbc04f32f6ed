"""Decoding JSON that someone else wrote: the API's bodies, request files, relay replies.

``json.loads`` trusts its input more than an HTTP server can: 100,000 ``[`` raise
``RecursionError``, an integer of 400 digits decodes fine but raises ``OverflowError`` in the
first arithmetic that mixes it with a float, and ``1e400`` decodes to infinity. ``loads``
refuses all three (and ``NaN``/``Infinity``, which are not JSON) with ``UnreadableJSON``, a
``ValueError``, so that every caller that already handles malformed JSON handles these too.

``unfit`` says why a decoded value cannot be carried exactly, and signed (RFC 8785 JCS), as
it is: a lone surrogate (no UTF-8 text holds one), ``NaN`` or an infinity, an integer that
no double holds as its own digits (JSON numbers are doubles to most readers, and to JCS),
nesting past a bound. The relay's doors (``/v1`` bodies, ``/mcp`` tool arguments, the hooks'
input, the Edit form) refuse what it names, so what enters can always be receipted;
``refusal`` gives the same answer with its stable code and a sentence saying what to send.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass

from relay.errors import RelayException

__all__ = [
    "LONE_SURROGATE",
    "MAX_DEPTH",
    "SAFE_INTEGER",
    "JSONTooComplex",
    "UnreadableJSON",
    "exact_integer",
    "loads",
    "refusal",
    "unfit",
]

# Deeper than any request or Slack payload (a few levels), far below Python's recursion limit.
MAX_DEPTH = 100
# A float holds up to ~1.8e308; 30 digits are beyond any count, size or time the relay reads.
MAX_INT_DIGITS = 30
SAFE_INTEGER = 2**53
"""Every integer up to this size (either sign) is a double; past it, doubles skip some."""

_SURROGATE = re.compile("[\ud800-\udfff]")

LONE_SURROGATE = "JSON_LONE_SURROGATE"
NOT_FINITE = "JSON_NOT_FINITE"
INEXACT_NUMBER = "JSON_INEXACT_NUMBER"
TOO_DEEP = "JSON_TOO_DEEP"
NOT_JSON = "JSON_NOT_JSON"
_FIXES = {
    LONE_SURROGATE: "send valid Unicode text: pair each surrogate, or replace it with U+FFFD",
    NOT_FINITE: "send a finite number, or the value as a string",
    INEXACT_NUMBER: "send integers beyond ±2^53 (and over-long numbers) as strings",
    TOO_DEEP: "send a flatter value",
    NOT_JSON: "send JSON values only",
}
NOT_CANONICAL_CODES = frozenset(_FIXES)
"""The stable codes of what ``refusal`` names (I-JSON, RFC 7493, and the depth bound)."""


@dataclass(frozen=True, slots=True)
class Refusal:
    """Why a value cannot enter: ``code`` (stable), ``problem`` (a phrase to follow the
    value's name), ``fix`` (what to send instead)."""

    code: str
    problem: str

    @property
    def fix(self) -> str:
        """One sentence fragment saying what to send instead."""
        return _FIXES[self.code]

    def sentence(self, name: str) -> str:
        """``name``'s problem and its fix, as one sentence."""
        return f"{name} {self.problem}: {self.fix}"


class UnreadableJSON(RelayException, ValueError):
    """The text is not JSON the relay will read; the message says why, ``code`` (one of
    ``NOT_CANONICAL_CODES``, else ``None``: malformed) which limit it went past."""

    def __init__(self, message: str, code: str | None = None) -> None:
        super().__init__(message)
        self.code = code


class JSONTooComplex(UnreadableJSON):
    """Valid JSON that nests too deep or holds a number too large to compute with."""


def _int(text: str) -> int:
    if len(text) - text.startswith("-") > MAX_INT_DIGITS:
        raise JSONTooComplex(f"a number has more than {MAX_INT_DIGITS} digits", INEXACT_NUMBER)
    return int(text)


def _float(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise JSONTooComplex(f"the number {text[:20]}… is too large", NOT_FINITE)
    return value


def _constant(name: str) -> object:
    raise UnreadableJSON(f"{name} is not a JSON value", NOT_FINITE)


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
        raise JSONTooComplex(f"it nests deeper than {MAX_DEPTH} levels", TOO_DEEP) from None
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
            raise JSONTooComplex(f"it nests deeper than {MAX_DEPTH} levels", TOO_DEEP)
        stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list))


def exact_integer(value: int) -> bool:
    """Whether a double holds ``value`` with these very digits as its shortest form: then a
    reader of JSON numbers as doubles (ECMAScript, JCS) reads and writes it unchanged. True
    within ±``SAFE_INTEGER``; past it, of 10**18 but not of 2**60 (read as ...847000)."""
    if -SAFE_INTEGER <= value <= SAFE_INTEGER:
        return True
    try:
        double = float(value)
    except OverflowError:
        return False
    from decimal import Decimal  # (here: the hooks import this module on every tool call)

    return math.isfinite(double) and Decimal(repr(double)) == value


def unfit(value: object, *, max_depth: int = MAX_DEPTH) -> str | None:
    """Why decoded JSON ``value`` cannot be carried and canonicalised exactly, as a phrase
    to follow its name ("holds a lone surrogate …"), or ``None`` when it can."""
    found = refusal(value, max_depth=max_depth)
    return None if found is None else found.problem


def refusal(value: object, *, max_depth: int = MAX_DEPTH) -> Refusal | None:
    """Why decoded JSON ``value`` cannot be carried and canonicalised exactly (RFC 7493
    I-JSON, which RFC 8785 JCS needs, and ``max_depth``), or ``None`` when it can. The one
    check every door makes. Iterative: no value exhausts the stack."""
    stack: list[tuple[object, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, str):
            if _SURROGATE.search(item):
                return Refusal(
                    LONE_SURROGATE,
                    "holds a lone surrogate (\\ud800-\\udfff), which no UTF-8 text carries",
                )
        elif item is None or isinstance(item, bool):
            continue
        elif isinstance(item, int):
            if not exact_integer(item):
                digits = str(item)
                shown = digits if len(digits) <= 24 else digits[:24] + "…"
                return Refusal(
                    INEXACT_NUMBER,
                    f"holds the integer {shown}, which a JSON number (a double) does not hold"
                    " exactly",
                )
        elif isinstance(item, float):
            if not math.isfinite(item):
                return Refusal(NOT_FINITE, "holds NaN or an infinity, which are not JSON numbers")
        elif isinstance(item, dict | list | tuple):
            if depth > max_depth:
                return Refusal(TOO_DEEP, f"nests deeper than {max_depth} levels (relay's bound)")
            if isinstance(item, dict):
                if not all(isinstance(key, str) for key in item):
                    return Refusal(NOT_JSON, "has an object key that is not a string")
                stack.extend((key, depth) for key in item)
                stack.extend((child, depth + 1) for child in item.values())
            else:
                stack.extend((child, depth + 1) for child in item)
        else:
            return Refusal(NOT_JSON, f"holds a {type(item).__name__}, which is not a JSON value")
    return None
