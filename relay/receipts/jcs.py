"""RFC 8785 JSON Canonicalization Scheme (JCS): the one byte form of a JSON value.

Object members sorted by their names' UTF-16 code units, no whitespace, strings escaped as
ECMAScript's ``JSON.stringify`` does (only ``"``, ``\\`` and controls; everything else as
UTF-8), numbers as ECMAScript's ``Number.prototype.toString``. Checked against the RFC's
examples (tests/test_receipts_jcs.py).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from relay.seam.safejson import SAFE_INTEGER, exact_integer

__all__ = ["canonical", "number"]

_ESCAPES = {
    '"': '\\"',
    "\\": "\\\\",
    "\b": "\\b",
    "\t": "\\t",
    "\n": "\\n",
    "\f": "\\f",
    "\r": "\\r",
}


def canonical(value: Any) -> bytes:
    """The JCS bytes of ``value`` (``dict``/``list``/``tuple``/``str``/``int``/``float``/
    ``bool``/``None``); ``ValueError`` for what JSON cannot carry (NaN, a lone surrogate)."""
    parts: list[str] = []
    _write(value, parts)
    try:
        return "".join(parts).encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ValueError("JCS: a string holds a lone surrogate") from exc


def _write(value: Any, out: list[str]) -> None:
    if value is None:
        out.append("null")
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif isinstance(value, str):
        out.append(_string(value))
    elif isinstance(value, int | float):
        out.append(number(value))
    elif isinstance(value, Mapping):
        if not all(isinstance(key, str) for key in value):
            raise ValueError("JCS: object member names must be strings")
        out.append("{")
        for i, key in enumerate(sorted(value, key=_utf16)):
            if i:
                out.append(",")
            out.append(_string(key))
            out.append(":")
            _write(value[key], out)
        out.append("}")
    elif isinstance(value, Sequence) and not isinstance(value, bytes | bytearray):
        out.append("[")
        for i, item in enumerate(value):
            if i:
                out.append(",")
            _write(item, out)
        out.append("]")
    else:
        raise ValueError(f"JCS: {type(value).__name__} is not a JSON value")


def _utf16(key: str) -> bytes:
    # Sorting by UTF-16BE bytes is sorting by UTF-16 code units (RFC 8785 §3.2.3).
    return key.encode("utf-16-be", "surrogatepass")


def _string(text: str) -> str:
    out = ['"']
    for ch in text:
        escaped = _ESCAPES.get(ch)
        if escaped is not None:
            out.append(escaped)
        elif ch < " ":
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def number(value: float) -> str:
    """``value`` as ECMAScript's ``Number.prototype.toString`` writes it (RFC 8785 §3.2.2.3:
    the shortest digits that read back the same double, in ES's choice of notation)."""
    if isinstance(value, int) and not isinstance(value, bool):
        if -SAFE_INTEGER <= value <= SAFE_INTEGER:
            return str(value)
        # Past 2**53 an integer is a double's only when it is that double's shortest digits
        # (10**18, not 2**60): then it is written as the double, which reads back the same.
        if not exact_integer(value):
            raise ValueError("JCS: an integer that no double holds exactly is not a JSON number")
        value = float(value)
    if math.isnan(value) or math.isinf(value):
        raise ValueError("JCS: NaN and Infinity are not JSON")
    if value == 0:
        return "0"  # (-0 too)
    sign = "-" if value < 0 else ""
    digits, n = _shortest(abs(value))  # the value is 0.digits × 10**n
    k = len(digits)
    if k <= n <= 21:
        text = digits + "0" * (n - k)
    elif 0 < n <= 21:
        text = digits[:n] + "." + digits[n:]
    elif -6 < n <= 0:
        text = "0." + "0" * (-n) + digits
    else:
        e = n - 1
        tail = f"e{'+' if e >= 0 else '-'}{abs(e)}"
        text = (digits[0] + ("." + digits[1:] if k > 1 else "")) + tail
    return sign + text


def _shortest(value: float) -> tuple[str, int]:
    """The shortest decimal digits of positive ``value`` (no trailing zeros) and ``n`` such
    that value = 0.digits × 10**n (``repr`` gives the shortest digits that round-trip)."""
    text = repr(value)
    mantissa, _, exp_text = text.partition("e")
    exp = int(exp_text) if exp_text else 0
    whole, _, frac = mantissa.partition(".")
    if frac == "0":
        frac = ""
    digits = (whole + frac).lstrip("0")
    lead = len(whole) if whole != "0" else 0
    if whole == "0":
        # 0.000ddd: the leading zeros of the fraction move the point left.
        stripped = frac.lstrip("0")
        lead = -(len(frac) - len(stripped))
        digits = stripped
    point = lead + exp
    digits = digits.rstrip("0")
    return digits, point
