"""One event, one line: make untrusted text safe to write into a log line.

An agent id, a channel, a URL path: anything a client sends may hold a newline, which would
write a second, well-formed log line ("event=answered … by=U0ALICE") that never happened,
or be 60,000 characters long. ``for_log`` escapes every control character (and Unicode's
line and paragraph separators) and bounds the length, with a marker saying how much was cut.
"""

from __future__ import annotations

__all__ = ["LOG_VALUE_LIMIT", "for_log"]

LOG_VALUE_LIMIT = 200
"""The characters of one value kept in a log line; the rest is replaced by a marker."""

_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
# C0 controls, DEL, C1 controls (NEL, U+0085, among them) and the line/paragraph separators:
# everything a log reader or str.splitlines() could take for the end of a line.
_ESCAPES = {
    code: _NAMED.get(chr(code), f"\\x{code:02x}")
    for code in (*range(0x00, 0x20), *range(0x7F, 0xA0))
} | {0x2028: "\\u2028", 0x2029: "\\u2029"}


def for_log(value: object, *, limit: int = LOG_VALUE_LIMIT) -> str:
    """``str(value)`` on one line: control characters escaped, at most ``limit`` characters
    of it kept (then ``…(+N chars)``)."""
    text = str(value)
    cut = len(text) - limit
    if cut > 0:
        text = text[:limit]
    if not text.isprintable():  # the common case, printable text, costs one C-level scan
        text = text.translate(_ESCAPES)
    return f"{text}…(+{cut} chars)" if cut > 0 else text
