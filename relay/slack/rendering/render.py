"""Render a question, and each way it can end, as a Slack Block Kit message. Pure: no I/O.

Routing lives in the ids: every interactive block has ``block_id = relay:{ask_id}:{index}:{part}``
and every value carries an option *index*, never a label, so labels of any length come back
exactly (they are looked up in the request on the server). The inputs are ``inputs``'.

Sizes: Slack refuses a message whose blocks hold about 13,200 characters of text in total
(``msg_blocks_too_long``, slackapi/bolt-js#2509) even when each block is within its own
limit, and one was measured refused at 11,341 characters (17,694 bytes, 45 blocks;
slackapi/bolt-js#2867); Slack documents no figure. So every message stays within
``MESSAGE_CHARS`` (10,000, below the lowest refusal measured), its final update too: the
detail gets what the question, the options and the inputs (or the outcome line, whichever
is longer) leave, and the rest continues in thread replies. Someone else's text is escaped
(mrkdwn, the fallback ``text``) or made inert (the ``markdown`` block): see ``text``; every
text object is made by ``kit``, which keeps it within its kind's limit.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

from relay.errors import UserInteractionError, bad_request
from relay.seam.edits import read_edit
from relay.seam.questions import AgentRef, AskUserQuestionAnswerItem, AskUserQuestionItem, Vote
from relay.slack.rendering import kit
from relay.slack.rendering.inputs import (
    ACTION_CHECKS,
    ACTION_MULTI,
    ACTION_OPTION,
    ACTION_PREFIX,
    ACTION_SELECT,
    ACTION_SKIP,
    ACTION_SUBMIT,
    ACTION_TEXT,
    BLOCK_PREFIX,
    LABEL_CHARS,
    MAX_OPTIONS,
    block_id,
    input_blocks,
    option_listing,
    plain,
    sections,
)
from relay.slack.rendering.room import (
    ENDING_BYTES,
    MAX_BLOCKS,
    MESSAGE_BYTES,
    blocks_bytes,
    bytes_bound,
    check_blocks,
    team_bytes,
    too_heavy,
)
from relay.slack.rendering.room import inputs_bound as _inputs_bound
from relay.slack.rendering.room import team_chars as _team_chars
from relay.slack.rendering.room import text_bound as _text_bound
from relay.slack.rendering.team import defaulted_line, tally_block
from relay.slack.rendering.text import (
    block_text_length,
    chunks,
    escape,
    escape_within,
    inert_markdown,
    mention,
    shorten,
    units,
    within,
)
from relay.slack.rendering.versions import revision_block

from .answered import OUTCOME_LINE_CHARS, answered_line, answered_summary, slack_date

__all__ = [
    "ACTION_CHECKS",
    "ACTION_MULTI",
    "ACTION_OPTION",
    "ACTION_PREFIX",
    "ACTION_SELECT",
    "ACTION_SKIP",
    "ACTION_SUBMIT",
    "ACTION_TEXT",
    "BLOCK_PREFIX",
    "MAX_OPTIONS",
    "MESSAGE_BYTES",
    "MESSAGE_CHARS",
    "Outcome",
    "RenderedQuestion",
    "block_id",
    "escape",
    "labels_of",
    "mention",
    "render_detail_reply",
    "render_outcome",
    "render_question",
]

SECTION_CHARS = 3000
HEADER_CHARS = 150
MARKDOWN_CHARS = 10_000  # across the markdown blocks of one message (Slack: 12,000 a block)
FALLBACK_CHARS = 3000
MESSAGE_CHARS = 10_000
"""Characters of text the relay puts in one message's blocks (Slack refused 11,341 once)."""
_MAX_ID = 64  # the longest ask id a click routes (parse._MAX_ID)
_LAST_DEADLINE = 9_999_999_999.0  # sizes the "times out …" line for any deadline
_MIN_DETAIL = 500  # with less room left than this, the whole detail goes to the thread
_NOTE_CHARS = 100  # the "continues in N thread replies" line
Outcome = Literal["answered", "timed_out", "aborted", "closed", "failed"]


@dataclass(frozen=True, slots=True)
class RenderedQuestion:
    """A question's message: its blocks, fallback text, and detail that did not fit."""

    blocks: list[dict[str, Any]]
    text: str
    detail_overflow: tuple[str, ...] = ()


def _heading_blocks(question: AskUserQuestionItem) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    if question.header:
        header = " ".join(question.header.split())
        if header and within(header, HEADER_CHARS):
            blocks.append(kit.header(header))
        elif header:
            blocks.extend(sections(f"*{escape(header)}*"))
    # The limit is what the reader sees; Slack's 3,000 per section count the escaped text,
    # which can be longer: it is split over two sections then, or (longer still, as when it
    # is mostly "&") sent as plain_text, which needs no escaping, when that fits one. (Both
    # count UTF-16 code units; the reader's limit counts characters.)
    if len(question.question) > SECTION_CHARS:
        raise bad_request(
            f"question {question.id} is {len(question.question)} characters; Slack shows at most"
            f" {SECTION_CHARS} in a message section: keep the question short and put the rest"
            " in detail"
        )
    if not question.question.strip():
        blocks.append(kit.section("_(no question text)_"))
        return blocks
    text = escape(question.question)
    if units(text) <= 2 * SECTION_CHARS or not within(question.question, SECTION_CHARS):
        blocks.extend(sections(text))
    else:  # mostly & < >: shown as it is, nothing in plain_text is parsed
        blocks.append({"type": "section", "text": plain(question.question)})
    return blocks


def _detail_blocks(
    question: AskUserQuestionItem, room: int
) -> tuple[list[dict[str, Any]], list[str]]:
    """Blocks showing the detail within ``room`` characters, and the pieces for the thread."""
    if question.detail is None:
        return [], []
    blocks: list[dict[str, Any]] = []
    if question.intent is not None and question.intent.kind == "plan-review":
        blocks.append(kit.context("*Plan under review*"))
    if not question.detail.strip():
        blocks.append(kit.context("_(no detail given)_"))
        return blocks, []
    detail = inert_markdown(question.detail)
    first = min(MARKDOWN_CHARS, room - _NOTE_CHARS)
    if within(detail, min(MARKDOWN_CHARS, room)):
        blocks.append({"type": "markdown", "text": detail})
        return blocks, []
    shown = chunks(detail, first)[0] if first >= _MIN_DETAIL else ""
    overflow = chunks(detail[len(shown) :], MARKDOWN_CHARS)
    replies = f"{len(overflow)} thread repl{'y' if len(overflow) == 1 else 'ies'}"
    if shown:
        blocks.append({"type": "markdown", "text": shown})
        blocks.append(kit.context(f"_The detail continues in {replies}._"))
    else:
        blocks.append(kit.context(f"_The detail is in {replies}._"))
    return blocks, overflow


def _asked_by(
    agent: AgentRef | None,
    index: int,
    count: int,
    deadline: float | None,
    default: str | None = None,
    note: str | None = None,
) -> dict[str, Any]:
    who = f"Asked by *{escape_within(agent.display_name, 200)}*" if agent else "Asked by an agent"
    parts = [who]
    if count > 1:
        parts.append(f"question {index + 1} of {count}")
    if deadline is not None:
        ends = f"times out {slack_date(deadline, 'at the deadline')}"
        if default is not None:
            # (a label: one longer than its button shows is listed whole under the question)
            ends += f", then takes *{escape(shorten(default, LABEL_CHARS))}*"
        parts.append(ends)
    if note is not None:
        parts.append(note)
    return kit.context(" · ".join(parts))


def _fallback(question: AskUserQuestionItem, suffix: str = "") -> str:
    # The top-level text is what notifications show, and Slack parses it as mrkdwn.
    head = f"{question.header}: " if question.header else ""
    return escape_within(f"{head}{question.question}", FALLBACK_CHARS - len(suffix)) + suffix


@dataclass(frozen=True, slots=True)
class _Layout:
    """What a question's pending message and its final update share."""

    heading: list[dict[str, Any]]
    detail: list[dict[str, Any]]
    overflow: list[str]
    listing: list[dict[str, Any]]
    describe: bool  # option descriptions on menu entries (dropped when they do not fit)


def _layout(
    question: AskUserQuestionItem, agent: AgentRef | None, index: int, count: int
) -> _Layout:
    """The message's layout (``_text_layout``), lightened until its blocks' JSON is within
    ``MESSAGE_BYTES`` too: the menu's descriptions go first (the listing has them), then
    detail moves to the thread; a question too heavy without them is ``BAD_REQUEST``."""
    layout = _text_layout(question, agent, index, count)
    if bytes_bound(question, agent) + blocks_bytes(layout.detail) <= MESSAGE_BYTES:
        return layout  # (most questions: no need to build the inputs to know)
    asked = _asked_by(agent, index, count, _LAST_DEADLINE, question.default)
    for describe in (True, False) if layout.describe else (False,):
        inputs = input_blocks(question, "r" * _MAX_ID, index, count > 1, describe=describe)
        ending = max(blocks_bytes(inputs), ENDING_BYTES) + team_bytes(question)
        fixed = blocks_bytes([*layout.heading, *layout.listing, asked]) + ending
        if fixed + blocks_bytes(layout.detail) <= MESSAGE_BYTES:
            return replace(layout, describe=describe)
    room = MESSAGE_BYTES - fixed
    if room < 0:
        raise too_heavy(question, fixed)
    chars = block_text_length(layout.detail)
    while True:  # the detail's text, cut until its blocks fit the bytes left
        detail, overflow = _detail_blocks(question, chars)
        size = blocks_bytes(detail)
        if size <= room or chars <= 0:
            return _Layout(layout.heading, detail, overflow, layout.listing, False)
        chars = max(0, min(chars - 1, chars * room // size - _NOTE_CHARS))


def _text_layout(
    question: AskUserQuestionItem, agent: AgentRef | None, index: int, count: int
) -> _Layout:
    """Split the message's room the same way for the pending message and its final update,
    so that the thread replies continue exactly where either leaves off.

    Whatever it lays out keeps ``OUTCOME_LINE_CHARS`` free beside the "Asked by" line, which
    is what lets ``render_outcome`` skip counting its message's text."""
    heading, listing = _heading_blocks(question), option_listing(question)
    options, tally = len(question.options or ()), _team_chars(question)
    # Most questions fit with room to spare: upper bounds on the text decide it without
    # building the inputs (which costs more than the rest of the render) or, when there is
    # no detail to share the room with, counting any text at all. What fits within the
    # bounds is laid out exactly as ``_measured_layout`` would lay it out.
    if options <= MAX_OPTIONS:
        reserve = max(_inputs_bound(options), OUTCOME_LINE_CHARS) + tally
        if question.detail is None and _text_bound(question, agent) + reserve <= MESSAGE_CHARS:
            return _Layout(heading, [], [], listing, True)
    asked = _asked_by(agent, index, count, _LAST_DEADLINE, question.default)
    fixed = block_text_length([*heading, *listing, asked]) + tally
    if options <= MAX_OPTIONS:
        room = MESSAGE_CHARS - fixed - max(_inputs_bound(options), OUTCOME_LINE_CHARS)
        if room >= 0:
            detail, overflow = _detail_blocks(question, room)
            if not overflow:
                return _Layout(heading, detail, overflow, listing, True)
    return _measured_layout(question, index, count, heading, listing, fixed)


def _measured_layout(
    question: AskUserQuestionItem,
    index: int,
    count: int,
    heading: list[dict[str, Any]],
    listing: list[dict[str, Any]],
    fixed: int,
) -> _Layout:
    for describe in (True, False):  # menu descriptions repeat the listing: they go first
        inputs = block_text_length(input_blocks(question, "", index, count > 1, describe=describe))
        room = MESSAGE_CHARS - fixed - max(inputs, OUTCOME_LINE_CHARS)
        if room >= 0:
            detail, overflow = _detail_blocks(question, room)
            return _Layout(heading, detail, overflow, listing, describe)
    raise bad_request(
        f"question {question.id} needs {fixed + inputs} characters of Slack text for its"
        f" question and options (labels, descriptions), more than the {MESSAGE_CHARS} one"
        " message safely holds (Slack has refused 11,341): shorten the option labels or"
        " descriptions, or offer fewer options"
    )


def render_question(
    question: AskUserQuestionItem,
    *,
    ask_id: str,
    index: int,
    count: int = 1,
    agent: AgentRef | None = None,
    deadline: float | None = None,
    votes: Sequence[Vote] = (),
    note: str | None = None,
    revision: str | None = None,
) -> RenderedQuestion:
    """The pending message for question ``index`` of ``count``; ``BAD_REQUEST`` if unshowable.
    A question that needs several votes shows the ``votes`` cast so far and, once a tool
    call was edited, the edit being voted on (``revision``, its ``custom``); ``note`` (such
    as that the ask was escalated) ends the line saying who asked."""
    layout = _layout(question, agent, index, count)
    edit = read_edit(revision) if question.quorum > 1 else None
    version = edit.version if edit is not None else 1
    shown = revision_block(question, revision) if edit is not None else None
    tally = [tally_block(question, votes, version)] if question.quorum > 1 else []
    inputs = input_blocks(
        question, ask_id, index, count > 1, describe=layout.describe, version=version, revised=edit
    )
    blocks = [
        *layout.heading,
        *layout.detail,
        *layout.listing,
        *([shown] if shown is not None else []),
        *inputs,
        *tally,
        _asked_by(agent, index, count, deadline, question.default, note),
    ]
    if note is not None and block_text_length(blocks) > MESSAGE_CHARS:
        blocks[-1] = _asked_by(agent, index, count, deadline, question.default)  # no room
    check_blocks(question, blocks)
    return RenderedQuestion(
        blocks=blocks, text=_fallback(question), detail_overflow=tuple(layout.overflow)
    )


def render_detail_reply(piece: str, *, part: int, parts: int) -> dict[str, Any]:
    """A thread reply carrying one more piece of a detail too long for the question message
    (``piece`` as ``render_question`` made it: mentions and links already inert)."""
    return {
        "text": f"Detail, continued ({part} of {parts})",
        "blocks": [{"type": "markdown", "text": piece}],
    }


_ENDINGS: dict[str, str] = {
    "timed_out": ":hourglass: *Timed out* — nobody answered in time; the agent was told so.",
    "aborted": ":no_entry_sign: *Withdrawn* — the agent no longer needs an answer.",
    "closed": ":no_entry_sign: *Withdrawn* — the relay shut down before anyone answered.",
    "failed": ":warning: *Not delivered* — the relay could not finish posting this question.",
}
# The same, for the message's fallback text (what notifications and screen readers say).
_SUMMARIES = {"timed_out": "timed out", "failed": "not delivered"}


def render_outcome(
    question: AskUserQuestionItem,
    *,
    outcome: Outcome,
    item: AskUserQuestionAnswerItem | None = None,
    agent: AgentRef | None = None,
    index: int = 0,
    count: int = 1,
    timeout: float | None = None,
) -> RenderedQuestion:
    """The final message for a question that has ended: no inputs left, the outcome shown.
    It always fits: what ``render_question`` would refuse loses its options list, then its
    detail. A ``defaulted`` answer says so, with ``timeout`` (how long nobody answered)."""
    if outcome == "answered" and item is not None and item.defaulted:
        line = defaulted_line(item, timeout)
        summary = "timed out, defaulted"
    elif outcome == "answered" and item is not None:
        line = answered_line(item, question)
        summary = answered_summary(item, question)
    else:
        line = _ENDINGS.get(outcome, _ENDINGS["aborted"])
        summary = _SUMMARIES.get(outcome, "withdrawn")
    ending = [*sections(line), _asked_by(agent, index, count, None)]
    try:
        layout = _layout(question, agent, index, count)
        heading, detail, listing = layout.heading, layout.detail, layout.listing
        # The layout kept this much room beside a longer "Asked by" line than the ending's.
        fits = within(line, OUTCOME_LINE_CHARS)
    except UserInteractionError:  # no message could hold it (asked before these limits)
        heading, detail, listing = _heading_blocks(question), [], []
        fits = False
    blocks = [*heading, *detail, *listing, *ending]
    if len(blocks) <= MAX_BLOCKS and (fits or block_text_length(blocks) <= MESSAGE_CHARS):
        return RenderedQuestion(blocks=blocks, text=_fallback(question, f" — {summary}"))
    blocks = [*heading, *detail, *ending]
    if len(blocks) > MAX_BLOCKS or block_text_length(blocks) > MESSAGE_CHARS:
        blocks = [*heading, *ending][:MAX_BLOCKS]
    return RenderedQuestion(blocks=blocks, text=_fallback(question, f" — {summary}"))


def labels_of(question: AskUserQuestionItem, indices: Sequence[int]) -> tuple[str, ...]:
    """The exact labels at ``indices``, in option order, without repeats."""
    labels = question.labels
    return tuple(labels[i] for i in sorted(set(indices)))
