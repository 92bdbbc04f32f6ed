"""Render a question, and each way it can end, as a Slack Block Kit message. Pure: no I/O.

Routing lives in the ids: every interactive block has ``block_id = relay:{ask_id}:{index}:{part}``
and every value carries an option *index*, never a label, so labels of any length come back
exactly (they are looked up in the request on the server).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from relay.errors import bad_request
from relay.questions import AgentRef, AskUserQuestionAnswerItem, AskUserQuestionItem

__all__ = [
    "ACTION_PREFIX",
    "BLOCK_PREFIX",
    "MAX_OPTIONS",
    "Outcome",
    "RenderedQuestion",
    "block_id",
    "escape",
    "render_detail_reply",
    "render_outcome",
    "render_question",
]

BLOCK_PREFIX = "relay"
ACTION_PREFIX = "relay."
MAX_OPTIONS = 100
MAX_BUTTONS = 5
MAX_CHECKBOXES = 10
MAX_BLOCKS = 50
SECTION_CHARS = 3000
HEADER_CHARS = 150
LABEL_CHARS = 75
MARKDOWN_CHARS = 12_000
TEXT_INPUT_CHARS = 3000
FALLBACK_CHARS = 3000

# Actions carried by each element; parse.py reads the same names.
ACTION_OPTION = "relay.option"  # a button per option: relay.option.{index}
ACTION_SELECT = "relay.select"
ACTION_CHECKS = "relay.checks"
ACTION_MULTI = "relay.multi"
ACTION_SUBMIT = "relay.submit"
ACTION_SKIP = "relay.skip"
ACTION_TEXT = "relay.text"

Outcome = Literal["answered", "timed_out", "aborted", "closed", "failed"]


@dataclass(frozen=True, slots=True)
class RenderedQuestion:
    """A question's message: its blocks, fallback text, and detail that did not fit."""

    blocks: list[dict[str, Any]]
    text: str
    detail_overflow: tuple[str, ...] = ()


def block_id(ask_id: str, index: int, part: str) -> str:
    """The routing id of an interactive block of question ``index`` of ask ``ask_id``."""
    return f"{BLOCK_PREFIX}:{ask_id}:{index}:{part}"


def escape(text: str) -> str:
    """Escape text for Slack ``mrkdwn`` so it cannot mention, link or format by accident."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _plain(text: str) -> dict[str, Any]:
    return {"type": "plain_text", "text": text, "emoji": True}


def _mrkdwn(text: str) -> dict[str, Any]:
    return {"type": "mrkdwn", "text": text}


def _shorten(text: str, limit: int) -> str:
    """Fit ``text`` in ``limit`` characters for display, marking the cut with an ellipsis."""
    text = " ".join(text.split()) or "(blank)"
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _chunks(text: str, limit: int) -> list[str]:
    """Split ``text`` into pieces of at most ``limit`` characters, preferring line breaks.

    Lossless: ``"".join(_chunks(t, n)) == t``, so nothing is ever silently cut.
    """
    pieces: list[str] = []
    rest = text
    while len(rest) > limit:
        cut = rest.rfind("\n", 0, limit) + 1
        if cut <= limit // 2:
            cut = rest.rfind(" ", 0, limit) + 1
        if cut <= limit // 2:
            cut = limit
        pieces.append(rest[:cut])
        rest = rest[cut:]
    if rest:
        pieces.append(rest)
    return pieces


def _sections(text: str) -> list[dict[str, Any]]:
    return [{"type": "section", "text": _mrkdwn(piece)} for piece in _chunks(text, SECTION_CHARS)]


def _heading_blocks(question: AskUserQuestionItem) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    if question.header:
        header = " ".join(question.header.split())
        if header and len(header) <= HEADER_CHARS:
            blocks.append({"type": "header", "text": _plain(header)})
        elif header:
            blocks.extend(_sections(f"*{escape(header)}*"))
    text = escape(question.question) if question.question.strip() else "_(no question text)_"
    if len(text) > SECTION_CHARS:
        raise bad_request(
            f"question {question.id} is {len(question.question)} characters; Slack shows at most"
            f" {SECTION_CHARS} in a message section: keep the question short and put the rest"
            " in detail"
        )
    blocks.append({"type": "section", "text": _mrkdwn(text)})
    return blocks


def _detail_blocks(
    question: AskUserQuestionItem, budget: int
) -> tuple[list[dict[str, Any]], list[str]]:
    """Blocks showing the detail within ``budget`` markdown characters, and the overflow."""
    if question.detail is None:
        return [], []
    blocks: list[dict[str, Any]] = []
    if question.intent is not None:
        blocks.append({"type": "context", "elements": [_mrkdwn("*Plan under review*")]})
    if not question.detail.strip():
        blocks.append({"type": "context", "elements": [_mrkdwn("_(no detail given)_")]})
        return blocks, []
    first, *overflow = _chunks(question.detail, min(budget, MARKDOWN_CHARS))
    blocks.append({"type": "markdown", "text": first})
    if overflow:
        blocks.append(
            {
                "type": "context",
                "elements": [
                    _mrkdwn(
                        f"_The detail continues in {len(overflow)} thread repl"
                        f"{'y' if len(overflow) == 1 else 'ies'}._"
                    )
                ],
            }
        )
    return blocks, overflow


def _option_listing(question: AskUserQuestionItem) -> list[dict[str, Any]]:
    """Descriptions, and full labels too long for a button, as a list under the question."""
    options = question.options or ()
    shown = any(o.description for o in options) or any(len(o.label) > LABEL_CHARS for o in options)
    if not shown:
        return []
    lines = []
    for o in options:
        line = f"• *{escape(o.label)}*"
        if o.description:
            line += f" — {escape(o.description)}"
        lines.append(line)
    return _sections("\n".join(lines))


def _button(text: str, action_id: str, value: str, style: str | None = None) -> dict[str, Any]:
    button: dict[str, Any] = {
        "type": "button",
        "text": _plain(_shorten(text, LABEL_CHARS)),
        "action_id": action_id,
        "value": value,
    }
    if style:
        button["style"] = style
    return button


def _option_object(index: int, label: str, description: str | None) -> dict[str, Any]:
    option: dict[str, Any] = {"text": _plain(_shorten(label, LABEL_CHARS)), "value": str(index)}
    if description:
        option["description"] = _plain(_shorten(description, LABEL_CHARS))
    return option


def _input_blocks(
    question: AskUserQuestionItem, ask_id: str, index: int, batch: bool
) -> list[dict[str, Any]]:
    options = question.options or ()
    if len(options) > MAX_OPTIONS:
        raise bad_request(
            f"question {question.id} has {len(options)} options; Slack menus hold at most"
            f" {MAX_OPTIONS}: split the question or offer fewer options"
        )
    elements: list[dict[str, Any]] = []
    if options and not question.multi_select:
        if len(options) <= MAX_BUTTONS:
            approve = question.intent.approve if question.intent else None
            for i, o in enumerate(options):
                style = "primary" if o.label == approve else None
                elements.append(_button(o.label, f"{ACTION_OPTION}.{i}", str(i), style))
        else:
            elements.append(
                {
                    "type": "static_select",
                    "action_id": ACTION_SELECT,
                    "placeholder": _plain("Choose an option"),
                    "options": [
                        _option_object(i, o.label, o.description) for i, o in enumerate(options)
                    ],
                }
            )
    elif options:
        objects = [_option_object(i, o.label, o.description) for i, o in enumerate(options)]
        if len(options) <= MAX_CHECKBOXES:
            elements.append({"type": "checkboxes", "action_id": ACTION_CHECKS, "options": objects})
        else:
            elements.append(
                {
                    "type": "multi_static_select",
                    "action_id": ACTION_MULTI,
                    "placeholder": _plain("Choose options"),
                    "options": objects,
                }
            )
        elements.append(_button("Submit", ACTION_SUBMIT, "submit", "primary"))
    if batch:
        elements.append(_button("Skip", ACTION_SKIP, "skip"))
    blocks: list[dict[str, Any]] = []
    if elements:
        blocks.append(
            {"type": "actions", "block_id": block_id(ask_id, index, "act"), "elements": elements}
        )
    if question.intent is not None:
        label = "Feedback for the agent (press Enter to send it and keep planning)"
    elif not options:
        label = "Your answer (press Enter to send)"
    elif question.multi_select:
        label = "Add a note or your own answer (Enter sends it with the ticked options)"
    else:
        label = "Or answer in your own words (press Enter to send)"
    blocks.append(
        {
            "type": "input",
            "block_id": block_id(ask_id, index, "text"),
            "dispatch_action": True,
            "label": _plain(label),
            "element": {
                "type": "plain_text_input",
                "action_id": ACTION_TEXT,
                "max_length": TEXT_INPUT_CHARS,
                "dispatch_action_config": {"trigger_actions_on": ["on_enter_pressed"]},
            },
        }
    )
    return blocks


def _slack_date(epoch: float, fallback: str) -> str:
    return f"<!date^{int(epoch)}^{{date_short_pretty}} at {{time}}|{fallback}>"


def _asked_by(
    agent: AgentRef | None, index: int, count: int, deadline: float | None
) -> dict[str, Any]:
    parts = [
        f"Asked by *{escape(_shorten(agent.display_name, 200))}*" if agent else "Asked by an agent"
    ]
    if count > 1:
        parts.append(f"question {index + 1} of {count}")
    if deadline is not None:
        parts.append(f"times out {_slack_date(deadline, 'at the deadline')}")
    return {"type": "context", "elements": [_mrkdwn(" · ".join(parts))]}


def _fallback(question: AskUserQuestionItem, suffix: str = "") -> str:
    head = f"{question.header}: " if question.header else ""
    return _shorten(f"{head}{question.question}{suffix}", FALLBACK_CHARS)


def _check_size(question: AskUserQuestionItem, blocks: list[dict[str, Any]]) -> None:
    if len(blocks) > MAX_BLOCKS:
        raise bad_request(
            f"question {question.id} needs {len(blocks)} Slack blocks, more than the"
            f" {MAX_BLOCKS} a message may have: shorten the option descriptions"
        )


def render_question(
    question: AskUserQuestionItem,
    *,
    ask_id: str,
    index: int,
    count: int = 1,
    agent: AgentRef | None = None,
    deadline: float | None = None,
) -> RenderedQuestion:
    """The pending message for question ``index`` of ``count``; ``BAD_REQUEST`` if unshowable."""
    detail, overflow = _detail_blocks(question, MARKDOWN_CHARS)
    blocks = [
        *_heading_blocks(question),
        *detail,
        *_option_listing(question),
        *_input_blocks(question, ask_id, index, count > 1),
        _asked_by(agent, index, count, deadline),
    ]
    _check_size(question, blocks)
    return RenderedQuestion(
        blocks=blocks, text=_fallback(question), detail_overflow=tuple(overflow)
    )


def render_detail_reply(piece: str, *, part: int, parts: int) -> dict[str, Any]:
    """A thread reply carrying one more piece of a detail too long for the question message."""
    return {
        "text": f"Detail, continued ({part} of {parts})",
        "blocks": [{"type": "markdown", "text": piece}],
    }


def _who(item: AskUserQuestionAnswerItem) -> str:
    if item.answered_by is None:
        return "someone"
    return f"<@{item.answered_by.id}>"


def _answered_line(item: AskUserQuestionAnswerItem) -> str:
    who = _who(item)
    when = ""
    if item.answered_at is not None:
        when = f" · {_slack_date(item.answered_at.timestamp(), item.answered_at.isoformat())}"
    if not item.selected and item.custom is None:
        return f":next_track_button: Skipped by {who}{when}"
    parts = [", ".join(f"*{escape(label)}*" for label in item.selected)] if item.selected else []
    if item.custom is not None:
        quoted = "\n".join(f"> {escape(line)}" for line in item.custom.splitlines() or [""])
        parts.append(f"\n{quoted}")
    return f":white_check_mark: Answered by {who}{when}: " + "".join(parts)


_ENDINGS: dict[str, str] = {
    "timed_out": ":hourglass: *Timed out* — nobody answered in time; the agent was told so.",
    "aborted": ":no_entry_sign: *Withdrawn* — the agent no longer needs an answer.",
    "closed": ":no_entry_sign: *Withdrawn* — the relay shut down before anyone answered.",
    "failed": ":warning: *Not delivered* — the relay could not finish posting this question.",
}


def render_outcome(
    question: AskUserQuestionItem,
    *,
    outcome: Outcome,
    item: AskUserQuestionAnswerItem | None = None,
    agent: AgentRef | None = None,
    index: int = 0,
    count: int = 1,
) -> RenderedQuestion:
    """The final message for a question that has ended: no inputs left, the outcome shown."""
    detail, _ = _detail_blocks(question, MARKDOWN_CHARS)
    if outcome == "answered" and item is not None:
        line = _answered_line(item)
        summary = "answered"
    else:
        line = _ENDINGS.get(outcome, _ENDINGS["aborted"])
        summary = outcome.replace("_", " ")
    blocks = [
        *_heading_blocks(question),
        *detail,
        *_option_listing(question),
        *_sections(line),
        _asked_by(agent, index, count, None),
    ]
    if len(blocks) > MAX_BLOCKS:
        # The outcome must always fit: drop the option list rather than fail the update.
        blocks = [*_heading_blocks(question), *detail, *_sections(line)][:MAX_BLOCKS]
    return RenderedQuestion(blocks=blocks, text=_fallback(question, f" — {summary}"))


def labels_of(question: AskUserQuestionItem, indices: Sequence[int]) -> tuple[str, ...]:
    """The exact labels at ``indices``, in option order, without repeats."""
    labels = question.labels
    return tuple(labels[i] for i in sorted(set(indices)))
