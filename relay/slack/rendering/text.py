"""Someone else's text made safe and sized for Slack. Pure: no I/O.

Slack parses ``<…>`` in ``mrkdwn`` text and in a message's top-level ``text``: ``<!channel>``,
``<!here>``, ``<!everyone>`` and ``<!subteam^S…>`` notify people, ``<@U…>`` mentions one, and
``<https://x|label>`` shows ``label`` for any address; escaping ``&``, ``<`` and ``>`` is the
documented way to show such text as it is (docs.slack.dev/messaging/formatting-message-text,
"Escaping text"). A ``markdown`` block takes standard markdown instead and leaves the
translation to Slack (docs.slack.dev/reference/block-kit/blocks/markdown-block); its reference
lists no mention syntax and no escapes, yet Slack's own ``<…>`` tokens written into one are
live there (relay issue 12), and ``&lt;`` is no escape in markdown (it may be decoded).
``inert_markdown`` therefore breaks each such token with an invisible U+2060 WORD JOINER
after its ``<``, which no Slack token allows there, so the reader sees the same characters
and nothing fires; bare ``@here``/``@channel``/``@everyone`` get the same. Ordinary markdown
keeps working; a markdown link whose text is not its address gets the address's host
written after it, so that "[Approve here](https://evil.example)" shows where it goes.

Lengths: Slack's limits count the characters it receives (a section's 3,000 are escaped
characters), while a question's own limit is what its reader sees; ``chunks`` never cuts an
escape apart. Slack's reference says "characters" without naming a unit, so the relay counts
the larger reading, UTF-16 code units (``units``): a character outside the Basic Multilingual
Plane, as most emoji are, counts 2, and what fits that count fits a count of code points too.
A cut (``head``, ``cut``) never splits such a character.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any
from urllib.parse import urlsplit

__all__ = [
    "JOINER",
    "block_text_length",
    "chunks",
    "cut",
    "escape",
    "escape_within",
    "head",
    "inert_markdown",
    "mention",
    "shorten",
    "units",
    "within",
]

JOINER = "\u2060"
"""The invisible character that breaks a Slack token (``<`` + joiner + ``!here>``)."""

_ENTITY_CHARS = 5  # the longest escape: "&amp;"

# "<" (raw or as an HTML entity a markdown renderer may decode) opening a Slack token:
# <!here>, <!subteam^…>, <@U…>, <#C…>, or a link <scheme:…> (<https://…|label>, <mailto:…>).
_TOKEN = re.compile(r"(<|&lt;|&#0*60;|&#x0*3c;)(?=[!@#]|[a-z][a-z0-9+.-]{0,30}:)", re.IGNORECASE)
_BARE_BROADCAST = re.compile(r"(?<![\w@])@(?=(?:here|channel|everyone)\b)", re.IGNORECASE)
# After a link's "]": an inline destination "(https://address "optional title")", or a
# reference "[name]" / "[]"; a definition "[name]: https://address" on a line of its own.
_DESTINATION = re.compile(r"\(\s*<?([a-z][a-z0-9+.-]{0,30}://[^\s)>]{1,2000})>?[^)]*\)", re.I)
_REFERENCE = re.compile(r"\[([^\[\]]{0,999})\]")
_DEFINITION = re.compile(
    r"^ {0,3}\[([^\[\]]{1,999})\]:[ \t]*\n?[ \t]*<?([a-z][a-z0-9+.-]{0,30}://[^\s>]{1,2000})",
    re.I | re.M,
)
_BLANK_LINE = re.compile(r"\n[ \t]*\n")
_MAX_LABEL = 1000
_CODE = re.compile(r"```.*?(?:```|\Z)|`[^`\n]*`", re.DOTALL)


def units(text: str) -> int:
    """``text``'s length in UTF-16 code units, the unit the relay counts Slack's limits in:
    a character outside the Basic Multilingual Plane (most emoji) counts 2."""
    if text.isascii():
        return len(text)
    # surrogatepass: a lone surrogate (JSON allows one) is the one unit it is.
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def within(text: str, limit: int) -> bool:
    """Whether ``text`` is at most ``limit`` UTF-16 code units; counts them only when the
    number of characters cannot decide it (never fewer units than characters, at most two
    a character)."""
    count = len(text)
    if count > limit:
        return False
    return 2 * count <= limit or text.isascii() or units(text) <= limit


def head(text: str, limit: int) -> int:
    """How many of ``text``'s leading characters fit in ``limit`` UTF-16 code units: never
    half of a character that takes two."""
    if within(text, limit):
        return len(text)
    if limit <= 0:
        return 0
    if text.isascii():
        return limit
    # The first ``limit`` units lie within the first ``limit`` characters.
    encoded = text[:limit].encode("utf-16-le", "surrogatepass")[: 2 * limit]
    prefix = encoded.decode("utf-16-le", "surrogatepass")
    if prefix and "\ud800" <= prefix[-1] <= "\udbff":
        prefix = prefix[:-1]  # the first half of a pair the limit cut through
    if text.startswith(prefix):
        return len(prefix)
    # Separate surrogate characters that decoding joined: count them one by one.
    used = 0
    for position, char in enumerate(text):
        used += 2 if char > "\uffff" else 1
        if used > limit:
            return position
    return len(text)


def cut(text: str, limit: int) -> str:
    """The longest start of ``text`` within ``limit`` UTF-16 code units (no mark added)."""
    return text[: head(text, limit)]


def escape(text: str) -> str:
    """Escape text for Slack ``mrkdwn`` so it cannot mention, link or format by accident."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def shorten(text: str, limit: int) -> str:
    """Fit ``text`` in ``limit`` characters (``units``) for display, marking the cut with an
    ellipsis."""
    text = " ".join(text.split()) or "(blank)"
    return text if within(text, limit) else cut(text, limit - 1) + "…"


def escape_within(text: str, limit: int) -> str:
    """``text`` shortened for display and escaped, ``limit`` characters (``units``) at most
    escaped."""
    shown = shorten(text, limit)
    escaped = escape(shown)
    if within(escaped, limit):
        return escaped
    # Cut the reader's text until its escaped form (and the ellipsis) fits.
    keep, used = [], 1
    for char in shown.rstrip("…"):
        size = units(escape(char))
        if used + size > limit:
            break
        keep.append(escape(char))
        used += size
    return "".join(keep) + "…"


def chunks(text: str, limit: int) -> list[str]:
    """Split ``text`` into pieces of at most ``limit`` characters (``units``), preferring line
    breaks, never inside an escape (``&amp;``…) or a character. Lossless:
    ``"".join(chunks(t, n)) == t``."""
    pieces: list[str] = []
    rest = text
    while not within(rest, limit):
        room = max(head(rest, limit), 1)  # (1: a limit of 1 still moves past a wide one)
        at = rest.rfind("\n", 0, room) + 1
        if at <= room // 2:
            at = rest.rfind(" ", 0, room) + 1
        if at <= room // 2:
            at = room
        amp = rest.rfind("&", max(0, at - _ENTITY_CHARS + 1), at)
        if amp > 0 and ";" not in rest[amp:at]:
            at = amp  # "…&am|p;" would show "&am" and "p;": cut before the "&"
        pieces.append(rest[:at])
        rest = rest[at:]
    if rest:
        pieces.append(rest)
    return pieces


def _ref_key(name: str) -> str:
    return " ".join(name.split()).casefold()  # CommonMark matches references this way


def _note(label: str, address: str) -> str | None:
    """The host to write after a link, unless its label already reads as its address."""
    host = urlsplit(address).hostname or ""
    if not host:
        return None
    shown = " ".join(label.split()).strip("`*_~<> ").lower()
    if shown in (host, address.lower(), address.lower().rstrip("/")):
        return None
    return host


def _link_notes(text: str, references: dict[str, str]) -> str:
    """``text`` with the host written after every link whose label is not its address:
    inline or by reference, labels nested or over several lines, any scheme's case."""
    notes: dict[int, str] = {}  # where a link ends -> the host to write there
    opened: list[int] = []
    for position, char in enumerate(text):
        if position and text[position - 1] == "\\":
            continue  # "\[" and "\]" are literal brackets
        if char == "[":
            opened.append(position)
            continue
        if char != "]" or not opened:
            continue
        start = opened.pop()
        label = text[start + 1 : position]
        if (start and text[start - 1] == "!") or len(label) > _MAX_LABEL:
            continue  # an image, or too long to be a label
        if _BLANK_LINE.search(label) or text.startswith(":", position + 1):
            continue  # a label cannot span a blank line; "[name]:" is a definition
        inline = _DESTINATION.match(text, position + 1)
        if inline is not None:
            address, end = inline.group(1), inline.end()
        else:
            ref = _REFERENCE.match(text, position + 1)
            key = ref.group(1) if ref is not None and ref.group(1).strip() else label
            end = ref.end() if ref is not None else position + 1
            address = references.get(_ref_key(key), "")
        host = _note(label, address) if address else None
        if host is not None:
            notes[end] = host
    if not notes:
        return text
    parts: list[str] = []
    last = 0
    for end in sorted(notes):
        parts.append(f"{text[last:end]} ({notes[end]})")
        last = end
    parts.append(text[last:])
    return "".join(parts)


def _break_tokens(text: str) -> str:
    text = _TOKEN.sub(lambda m: m.group(1) + JOINER, text)
    return _BARE_BROADCAST.sub("@" + JOINER, text)


def inert_markdown(text: str) -> str:
    """``text`` for a ``markdown`` block with every mention, broadcast and Slack link inert
    and every markdown link's host shown; other markdown as it was."""
    references: dict[str, str] = {}
    for definition in _DEFINITION.finditer(_CODE.sub("", text)):
        references.setdefault(_ref_key(definition.group(1)), definition.group(2))
    parts: list[str] = []
    position = 0
    for code in _CODE.finditer(text):
        prose = text[position : code.start()]
        parts.append(_link_notes(_break_tokens(prose), references))
        parts.append(_break_tokens(code.group(0)))  # code shows links as text: no host note
        position = code.end()
    parts.append(_link_notes(_break_tokens(text[position:]), references))
    return "".join(parts)


def block_text_length(blocks: Iterable[Any]) -> int:
    """The characters (``units``) of text in ``blocks`` as Slack totals them for
    ``msg_blocks_too_long``: every ``text`` string (text objects, markdown blocks, option
    texts, labels)."""
    total = 0
    stack: list[Any] = list(blocks)
    # Exact types first (blocks are plain JSON: ~40% quicker than isinstance with a union,
    # and the click's update counts its message); subclasses take the slower branches.
    while stack:
        node = stack.pop()
        if type(node) is dict:
            for key, value in node.items():
                kind = type(value)
                if kind is str:
                    if key == "text":
                        total += len(value) if value.isascii() else units(value)
                elif kind is dict or kind is list or isinstance(value, dict | list):
                    stack.append(value)
                elif key == "text" and isinstance(value, str):
                    total += units(value)
        elif isinstance(node, list):
            stack.extend(node)
        elif isinstance(node, dict):
            stack.append(dict(node))
    return total


_USER_ID = re.compile(r"[UW][A-Z0-9]{1,20}")


def mention(user_id: str) -> str:
    """``<@U…>`` for a Slack user id; anything else is shown escaped, never parsed."""
    return f"<@{user_id}>" if _USER_ID.fullmatch(user_id) else escape(user_id)
