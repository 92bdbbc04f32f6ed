"""How much a question's message weighs: upper bounds on its text, and its JSON in bytes.

Slack refused one message at 11,341 characters of block text, which was 17,693 bytes of
blocks JSON plus one (slackapi/bolt-js#2867, compact UTF-8 JSON as bolt-js sends it); it
documents neither limit, so a message stays under both: ``MESSAGE_CHARS`` of text (in
``render``) and ``MESSAGE_BYTES`` of JSON. The bounds let most questions be laid out
without building their inputs (which costs more than the rest of the render).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import orjson

from relay.errors import UserInteractionError, bad_request
from relay.seam.questions import AgentRef, AskUserQuestionItem
from relay.slack.rendering.answered import OUTCOME_LINE_CHARS
from relay.slack.rendering.inputs import EDIT_NOTE_CHARS, LABEL_CHARS
from relay.slack.rendering.team import TALLY_CHARS
from relay.slack.rendering.versions import REVISION_CHARS

__all__ = [
    "ENDING_BYTES",
    "MAX_BLOCKS",
    "MESSAGE_BYTES",
    "OPTION_BYTES",
    "blocks_bytes",
    "bytes_bound",
    "check_blocks",
    "inputs_bound",
    "team_bytes",
    "team_chars",
    "text_bound",
    "too_heavy",
]

MAX_BLOCKS = 50
"""Blocks a message may have (Slack's limit)."""
MESSAGE_BYTES = 17_000
"""Bytes of blocks JSON the relay puts in one message (Slack refused 17,694 once)."""
OPTION_BYTES = 240
"""At least the JSON an option adds besides its text: its menu entry's objects and value,
its line in the listing (the largest measured is 150)."""
ENDING_BYTES = 3 * OUTCOME_LINE_CHARS + 200
"""Bytes kept for the final update's outcome line (3 bytes a unit: any script's text)."""
_FIXED_BYTES = 2_000  # the blocks' own JSON besides the options' (measured: under 1,200)


def blocks_bytes(blocks: Sequence[dict[str, Any]]) -> int:
    """The size of ``blocks`` as compact UTF-8 JSON, what the refusal was measured in."""
    return len(orjson.dumps(list(blocks)))


def bytes_bound(question: AskUserQuestionItem, agent: AgentRef | None) -> int:
    """At least the bytes of ``question``'s message, its final update's too, besides its
    detail's blocks: ``text_bound`` counts 5 units a character, and a character is at most
    6 bytes of JSON (a control character's escape; UTF-8 takes 4 at most)."""
    options = len(question.options or ())
    inputs = 6 * inputs_bound(options) + OPTION_BYTES * options
    text = 6 * text_bound(question, agent) // 5
    return text + max(inputs, ENDING_BYTES) + team_bytes(question) + _FIXED_BYTES


def team_bytes(question: AskUserQuestionItem) -> int:
    """Bytes kept for the tally and the edit voted on (``team_chars``): their text is mostly
    ASCII (mentions, JSON); a long edit in another script could weigh more (not counted)."""
    return 6 * team_chars(question) // 5 + 300 * (question.quorum > 1)


def team_chars(question: AskUserQuestionItem) -> int:
    """Room kept for what a vote adds: the tally, and the edit being voted on if any."""
    if question.quorum <= 1:
        return 0
    editable = question.intent is not None and question.intent.edit is not None
    return TALLY_CHARS + (REVISION_CHARS if editable else 0)


def text_bound(question: AskUserQuestionItem, agent: AgentRef | None) -> int:
    """At least the text in the question's heading, option listing and longest "Asked by"
    line: escaping makes a character at most five ("&" -> "&amp;"; an emoji is two UTF-16
    code units), and what the blocks add
    (emphasis, numbers, the date token, "question 2 of 3") is under 400, plus 20 an option."""
    raw = len(question.header or "") + len(question.question) + len(question.default or "")
    for option in question.options or ():
        raw += len(option.label) + len(option.description or "")
    if agent is not None:
        raw += min(len(agent.display_name), 200)  # (escape_within: 200 at most, escaped)
    return 5 * raw + 20 * len(question.options or ()) + 400


def inputs_bound(options: int) -> int:
    """At least the characters of text ``input_blocks`` puts in a question's inputs: each
    option's text and description are at most ``LABEL_CHARS`` (``inputs._shown``, ``shorten``),
    the placeholder, *Submit*, *Skip* and the field's label well under 200 together, and the
    line saying why *Edit…* is not offered at most ``EDIT_NOTE_CHARS``."""
    return options * 2 * LABEL_CHARS + 200 + EDIT_NOTE_CHARS


def check_blocks(question: AskUserQuestionItem, blocks: list[dict[str, Any]]) -> None:
    """``BAD_REQUEST`` when ``question``'s message has more blocks than Slack takes."""
    if len(blocks) > MAX_BLOCKS:
        raise bad_request(
            f"question {question.id} needs {len(blocks)} Slack blocks, more than the"
            f" {MAX_BLOCKS} a message may have: shorten the option descriptions"
        )


def too_heavy(question: AskUserQuestionItem, size: int) -> UserInteractionError:
    """The ``BAD_REQUEST`` for a question whose message would weigh ``size`` bytes without
    its detail and its menu's descriptions."""
    return bad_request(
        f"question {question.id} needs {size} bytes of Slack blocks for its question and"
        f" options, more than the {MESSAGE_BYTES} one message safely holds (Slack has"
        " refused 17,694): shorten the option labels or descriptions, or offer fewer options"
    )
