"""Every text object the relay puts in a message, made in one place that keeps it within its
kind's limit. Pure: no I/O.

Slack refuses a whole message (``invalid_blocks``) when one text is over its limit, and
counts the characters it receives: a section's 3,000 are *escaped* characters, so "&" counts
five. Whatever a caller passes, what comes out of here fits: over-long text is cut, never
inside an escape (``&amp;``) or a Slack token (``<@U…>``, ``<!date^…|…>``), and ends in "…".
Callers shorten first where they can say something better (a label's full text listed under
the question, "and 87 others"); this is the last line, so no message is refused for length.

Characters are counted as UTF-16 code units (``text.units``: an emoji outside the Basic
Multilingual Plane counts 2), the larger of the two readings of Slack's "characters", so a
cut never leaves more than Slack could count; nor does it split such an emoji.

Limits from Slack's Block Kit reference (docs.slack.dev/reference/block-kit): a text
object 3,000 (a section's text, a context element), a section field 2,000, a header 150, a
button's text 75, an option's text and description 75, a placeholder 150, an input's label
2,000, a markdown block 12,000.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from relay.slack.rendering.text import cut, head, units, within

__all__ = [
    "BUTTON_CHARS",
    "CONTEXT_CHARS",
    "DESCRIPTION_CHARS",
    "FIELD_CHARS",
    "HEADER_CHARS",
    "INPUT_LABEL_CHARS",
    "OPTION_CHARS",
    "PLACEHOLDER_CHARS",
    "SECTION_CHARS",
    "button",
    "context",
    "fit",
    "header",
    "mention_list",
    "mrkdwn",
    "option",
    "plain",
    "section",
]

SECTION_CHARS = 3000
CONTEXT_CHARS = 3000
FIELD_CHARS = 2000
HEADER_CHARS = 150
BUTTON_CHARS = 75
OPTION_CHARS = 75
DESCRIPTION_CHARS = 75
PLACEHOLDER_CHARS = 150
INPUT_LABEL_CHARS = 2000

_CUT = "…"
_ENTITY_CHARS = 5  # the longest escape relay writes: "&amp;"


def fit(text: str, limit: int) -> str:
    """``text`` (mrkdwn, escaped where it is someone else's) in ``limit`` characters at most:
    cut before any escape or ``<…>`` token the cut would break, marked with "…"."""
    if within(text, limit):
        return text
    at = head(text, max(limit - len(_CUT), 0))
    opened = text.rfind("<", 0, at)
    if opened >= 0 and text.rfind(">", opened, at) < 0:
        at = opened  # inside a token: "<@U12" or "<!date^1|at" would show as garbage
    amp = text.rfind("&", max(0, at - _ENTITY_CHARS + 1), at)
    if amp >= 0 and ";" not in text[amp:at]:
        at = amp  # "&am" is no escape: Slack would refuse nothing, but show "&am"
    return text[:at] + _CUT


def plain(text: str, limit: int = SECTION_CHARS) -> dict[str, Any]:
    """A ``plain_text`` object (shown as it is: Slack parses nothing in it) of at most
    ``limit`` characters."""
    shown = text if within(text, limit) else cut(text, limit - len(_CUT)) + _CUT
    return {"type": "plain_text", "text": shown, "emoji": True}


def mrkdwn(text: str, limit: int = SECTION_CHARS) -> dict[str, Any]:
    """A ``mrkdwn`` object of at most ``limit`` characters; ``text`` must already be escaped
    where it is someone else's."""
    return {"type": "mrkdwn", "text": fit(text, limit)}


def section(escaped: str) -> dict[str, Any]:
    """A section block of mrkdwn text (3,000 characters at most)."""
    return {"type": "section", "text": mrkdwn(escaped, SECTION_CHARS)}


def context(escaped: str) -> dict[str, Any]:
    """A context block with one mrkdwn element (3,000 characters at most)."""
    return {"type": "context", "elements": [mrkdwn(escaped, CONTEXT_CHARS)]}


def header(text: str) -> dict[str, Any]:
    """A header block (plain text, 150 characters at most)."""
    return {"type": "header", "text": plain(text, HEADER_CHARS)}


def button(text: str, action_id: str, value: str, style: str | None = None) -> dict[str, Any]:
    """A button whose text is 75 characters at most (Slack's clients show about 30)."""
    made: dict[str, Any] = {
        "type": "button",
        "text": plain(text, BUTTON_CHARS),
        "action_id": action_id,
        "value": value,
    }
    if style:
        made["style"] = style
    return made


def option(text: str, value: str, description: str | None = None) -> dict[str, Any]:
    """A menu or checkbox option: text and description 75 characters at most each."""
    made: dict[str, Any] = {"text": plain(text, OPTION_CHARS), "value": value}
    if description:
        made["description"] = plain(description, DESCRIPTION_CHARS)
    return made


def mention_list(mentions: Sequence[str], limit: int) -> str:
    """``mentions`` (``<@U…>``, ``<!subteam^S…>``) joined with commas, as many as fit in
    ``limit`` characters, the rest counted: "<@U1>, <@U2> and 87 others". Whole tokens only:
    a cut one would show as garbage and ping nobody."""
    joined = ", ".join(mentions)
    if within(joined, limit):
        return joined
    room = limit - len(f" and {len(mentions)} others")  # the longest tail it may need
    shown: list[str] = []
    used = 0
    for token in mentions:
        size = units(token) + (2 if shown else 0)
        if used + size > room:
            break
        shown.append(token)
        used += size
    others = len(mentions) - len(shown)
    if not shown:
        return f"{others} people and groups"
    return f"{', '.join(shown)} and {others} other{'s' if others != 1 else ''}"
