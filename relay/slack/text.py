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
escape apart.
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
    "escape",
    "escape_within",
    "inert_markdown",
    "mention",
    "shorten",
]

JOINER = "\u2060"
"""The invisible character that breaks a Slack token (``<`` + joiner + ``!here>``)."""

_ENTITY_CHARS = 5  # the longest escape: "&amp;"

# "<" (raw or as an HTML entity a markdown renderer may decode) opening a Slack token:
# <!here>, <!subteam^…>, <@U…>, <#C…>, or a link <scheme:…> (<https://…|label>, <mailto:…>).
_TOKEN = re.compile(r"(<|&lt;|&#0*60;|&#x0*3c;)(?=[!@#]|[a-z][a-z0-9+.-]{0,30}:)", re.IGNORECASE)
_BARE_BROADCAST = re.compile(r"(?<![\w@])@(?=(?:here|channel|everyone)\b)", re.IGNORECASE)
# [text](https://address "optional title"); images (![…](…)) are left alone.
_MARKDOWN_LINK = re.compile(
    r"(?<!!)\[([^\]\n]{1,500})\]\(\s*<?(https?://[^\s)>]{1,2000})>?[^)\n]*\)"
)
_CODE = re.compile(r"```.*?(?:```|\Z)|`[^`\n]*`", re.DOTALL)


def escape(text: str) -> str:
    """Escape text for Slack ``mrkdwn`` so it cannot mention, link or format by accident."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def shorten(text: str, limit: int) -> str:
    """Fit ``text`` in ``limit`` characters for display, marking the cut with an ellipsis."""
    text = " ".join(text.split()) or "(blank)"
    return text if len(text) <= limit else text[: limit - 1] + "…"


def escape_within(text: str, limit: int) -> str:
    """``text`` shortened for display and escaped, ``limit`` characters at most escaped."""
    shown = shorten(text, limit)
    escaped = escape(shown)
    if len(escaped) <= limit:
        return escaped
    # Cut the reader's text until its escaped form (and the ellipsis) fits.
    keep, used = [], 1
    for char in shown.rstrip("…"):
        size = len(escape(char))
        if used + size > limit:
            break
        keep.append(escape(char))
        used += size
    return "".join(keep) + "…"


def chunks(text: str, limit: int) -> list[str]:
    """Split ``text`` into pieces of at most ``limit`` characters, preferring line breaks,
    never inside an escape (``&amp;``…). Lossless: ``"".join(chunks(t, n)) == t``."""
    pieces: list[str] = []
    rest = text
    while len(rest) > limit:
        cut = rest.rfind("\n", 0, limit) + 1
        if cut <= limit // 2:
            cut = rest.rfind(" ", 0, limit) + 1
        if cut <= limit // 2:
            cut = limit
        amp = rest.rfind("&", max(0, cut - _ENTITY_CHARS + 1), cut)
        if amp > 0 and ";" not in rest[amp:cut]:
            cut = amp  # "…&am|p;" would show "&am" and "p;": cut before the "&"
        pieces.append(rest[:cut])
        rest = rest[cut:]
    if rest:
        pieces.append(rest)
    return pieces


def _host_note(match: re.Match[str]) -> str:
    label, address = match.group(1), match.group(2)
    host = urlsplit(address).hostname or ""
    shown = label.strip().strip("`*_~").lower()
    if not host or host in shown or shown in (address.lower(), address.lower().rstrip("/")):
        return match.group(0)
    return f"{match.group(0)} ({host})"


def _break_tokens(text: str) -> str:
    text = _TOKEN.sub(lambda m: m.group(1) + JOINER, text)
    return _BARE_BROADCAST.sub("@" + JOINER, text)


def inert_markdown(text: str) -> str:
    """``text`` for a ``markdown`` block with every mention, broadcast and Slack link inert
    and every markdown link's host shown; other markdown as it was."""
    parts: list[str] = []
    position = 0
    for code in _CODE.finditer(text):
        prose = text[position : code.start()]
        parts.append(_MARKDOWN_LINK.sub(_host_note, _break_tokens(prose)))
        parts.append(_break_tokens(code.group(0)))  # code shows links as text: no host note
        position = code.end()
    parts.append(_MARKDOWN_LINK.sub(_host_note, _break_tokens(text[position:])))
    return "".join(parts)


def block_text_length(blocks: Iterable[Any]) -> int:
    """The characters of text in ``blocks`` as Slack totals them for ``msg_blocks_too_long``:
    every ``text`` string (text objects, markdown blocks, option texts, labels)."""
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
                        total += len(value)
                elif kind is dict or kind is list or isinstance(value, dict | list):
                    stack.append(value)
                elif key == "text" and isinstance(value, str):
                    total += len(value)
        elif isinstance(node, list):
            stack.extend(node)
        elif isinstance(node, dict):
            stack.append(dict(node))
    return total


_USER_ID = re.compile(r"[UW][A-Z0-9]{1,20}")


def mention(user_id: str) -> str:
    """``<@U…>`` for a Slack user id; anything else is shown escaped, never parsed."""
    return f"<@{user_id}>" if _USER_ID.fullmatch(user_id) else escape(user_id)
