"""A pending question's inputs as Block Kit, and the list of its options. Pure: no I/O.

Every interactive block has ``block_id = relay:{ask_id}:{index}:{part}`` and every value an
option *index*, never a label (parse.py reads them back). Slack's clients show about 30
characters of a button's text (75 may be sent; relay issue 12, spec/slack.md "Learned the
hard way") and 75 of a menu or checkbox option: when any label is longer than its element
shows, the options are numbered, on the element and in the full list under the question, so
that two labels alike that far are still told apart.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from relay.errors import bad_request
from relay.seam.edits import Edit
from relay.seam.plan_review import SCOPED_QUESTION
from relay.seam.questions import AskUserQuestionItem
from relay.slack.editing.fields import unavailable
from relay.slack.rendering import kit
from relay.slack.rendering.kit import mrkdwn, plain
from relay.slack.rendering.text import chunks, escape, shorten, within

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
    "BUTTON_CHARS",
    "EDIT_NOTE_CHARS",
    "MAX_OPTIONS",
    "block_id",
    "input_blocks",
    "mrkdwn",
    "option_listing",
    "plain",
    "sections",
]

BLOCK_PREFIX = "relay"
ACTION_PREFIX = "relay."
MAX_OPTIONS = 100
MAX_BUTTONS = 5
MAX_CHECKBOXES = 10
SECTION_CHARS = 3000
LABEL_CHARS = 75  # an option object's or a button's text
BUTTON_CHARS = 30  # of a button's text Slack shows
TEXT_INPUT_CHARS = 3000
EDIT_NOTE_CHARS = 200  # the line saying why Edit… is not offered

# Actions carried by each element; parse.py reads the same names.
ACTION_OPTION = "relay.option"  # a button per option: relay.option.{index}
ACTION_SELECT = "relay.select"
ACTION_CHECKS = "relay.checks"
ACTION_MULTI = "relay.multi"
ACTION_SUBMIT = "relay.submit"
ACTION_SKIP = "relay.skip"
ACTION_TEXT = "relay.text"
ACTION_EDIT = "relay.edit"  # a tool approval's "Edit…": opens the edit modal
ACTION_PLAN_STOP = "relay.plan_stop"  # an approved plan's "Stop the plan"
ACTION_PLAN_EDIT = "relay.plan_edit"  # a plan review's "Edit…": narrows the scope


def block_id(ask_id: str, index: int, part: str, version: int = 1) -> str:
    """The routing id of an interactive block of question ``index`` of ask ``ask_id``, as
    shown at ``version`` (an edited call's; the part then ends in ``.v{version}``, so a click
    says which version its clicker saw, and Slack drops what was typed for the one before)."""
    suffix = f".v{version}" if version > 1 else ""
    return f"{BLOCK_PREFIX}:{ask_id}:{index}:{part}{suffix}"


def sections(escaped: str) -> list[dict[str, Any]]:
    """Sections holding ``escaped`` mrkdwn: Slack's 3,000 count the escaped characters."""
    return [kit.section(piece) for piece in chunks(escaped, SECTION_CHARS)]


def _on_buttons(question: AskUserQuestionItem) -> bool:
    options = question.options or ()
    return bool(options) and not question.multi_select and len(options) <= MAX_BUTTONS


def _numbered(question: AskUserQuestionItem) -> bool:
    """Whether some label is longer than its element shows (the options get numbers)."""
    shows = BUTTON_CHARS if _on_buttons(question) else LABEL_CHARS
    return any(not within(" ".join(o.label.split()), shows) for o in question.options or ())


def _shown(question: AskUserQuestionItem, index: int, limit: int) -> str:
    label = (question.options or ())[index].label
    if not _numbered(question):
        return shorten(label, limit)
    number = f"{index + 1}. "
    return number + shorten(label, limit - len(number))


def option_listing(question: AskUserQuestionItem) -> list[dict[str, Any]]:
    """Descriptions, and labels longer than their element shows (numbered), in full."""
    options = question.options or ()
    numbered = _numbered(question)
    if not numbered and not any(o.description for o in options):
        return []
    lines = []
    for i, o in enumerate(options):
        line = f"{i + 1}. *{escape(o.label)}*" if numbered else f"• *{escape(o.label)}*"
        if o.description:
            line += f" — {escape(o.description)}"
        lines.append(line)
    return sections("\n".join(lines))


def _option_object(question: AskUserQuestionItem, index: int, describe: bool) -> dict[str, Any]:
    description = (question.options or ())[index].description
    shown = shorten(description, LABEL_CHARS) if description and describe else None
    return kit.option(_shown(question, index, LABEL_CHARS), str(index), shown)


def _elements(
    question: AskUserQuestionItem, batch: bool, describe: bool, editable: bool
) -> list[dict[str, Any]]:
    options = question.options or ()
    elements: list[dict[str, Any]] = []
    if _on_buttons(question):
        approve = question.intent.approve if question.intent else None
        for i, o in enumerate(options):
            style = "primary" if o.label == approve else None
            text = _shown(question, i, BUTTON_CHARS)
            elements.append(kit.button(text, f"{ACTION_OPTION}.{i}", str(i), style))
    elif options:
        objects = [_option_object(question, i, describe) for i in range(len(options))]
        if not question.multi_select:
            elements.append(
                {
                    "type": "static_select",
                    "action_id": ACTION_SELECT,
                    "placeholder": plain("Choose an option", kit.PLACEHOLDER_CHARS),
                    "options": objects,
                }
            )
        elif len(options) <= MAX_CHECKBOXES:
            elements.append({"type": "checkboxes", "action_id": ACTION_CHECKS, "options": objects})
        else:
            elements.append(
                {
                    "type": "multi_static_select",
                    "action_id": ACTION_MULTI,
                    "placeholder": plain("Choose options", kit.PLACEHOLDER_CHARS),
                    "options": objects,
                }
            )
        if question.multi_select:
            elements.append(kit.button("Submit", ACTION_SUBMIT, "submit", "primary"))
    if editable:
        elements.append(kit.button("Edit…", ACTION_EDIT, "edit"))
    elif _scope_narrowable(question):
        elements.append(kit.button("Edit…", ACTION_PLAN_EDIT, "edit"))
    if batch:
        elements.append(kit.button("Skip", ACTION_SKIP, "skip"))
    return elements


def _scope_narrowable(question: AskUserQuestionItem) -> bool:
    """Whether ``question`` reviews a plan with a scope its reviewer may narrow (one reviewer
    decides it: a narrowing is no vote)."""
    intent = question.intent
    return (
        intent is not None
        and intent.kind == "plan-review"
        and question.question == SCOPED_QUESTION
        and question.quorum <= 1
    )


def _field_label(question: AskUserQuestionItem) -> str:
    if question.intent is not None and question.intent.kind == "tool-approval":
        return "Reason to deny (press Enter, or Deny, to deny with it)"
    if question.intent is not None:
        return "Feedback for the agent (press Enter to send it and keep planning)"
    if not question.options:
        return "Your answer (press Enter to send)"
    if question.multi_select:
        return "Add a note or your own answer (Enter sends it with the ticked options)"
    return "Or answer in your own words (press Enter to send)"


def input_blocks(
    question: AskUserQuestionItem,
    ask_id: str,
    index: int,
    batch: bool,
    *,
    describe: bool = True,
    version: int = 1,
    revised: Edit | None = None,
) -> list[dict[str, Any]]:
    """The question's buttons, menu or checkboxes (option descriptions on menu entries
    unless ``describe`` is false), *Skip* in a batch, and the Enter-sending text field,
    routed to the question's ``version``; *Edit…* where the call as it stands (``revised``,
    the edit voted on, else the intent's) has a field Slack can edit."""
    options = question.options or ()
    if len(options) > MAX_OPTIONS:
        raise bad_request(
            f"question {question.id} has {len(options)} options; Slack menus hold at most"
            f" {MAX_OPTIONS}: split the question or offer fewer options"
        )
    blocks: list[dict[str, Any]] = []
    # Edit… only where the harness runs an edited call (the intent carries the edit) and
    # some field of it can be edited in Slack; else one line says why not.
    edit = question.intent.edit if question.intent is not None else None
    if edit is not None and revised is not None:
        edit = replace(edit, input=revised.input)
    not_offered = unavailable(edit) if edit is not None else None
    elements = _elements(question, batch, describe, edit is not None and not_offered is None)
    if elements:
        blocks.append(
            {
                "type": "actions",
                "block_id": block_id(ask_id, index, "act", version),
                "elements": elements,
            }
        )
    if not_offered is not None:
        line = f"Edit… is not offered: {escape(not_offered)}."
        blocks.append(kit.context(kit.fit(line, EDIT_NOTE_CHARS)))
    blocks.append(
        {
            "type": "input",
            "block_id": block_id(ask_id, index, "text", version),
            "dispatch_action": True,
            "label": plain(_field_label(question), kit.INPUT_LABEL_CHARS),
            "element": {
                "type": "plain_text_input",
                "action_id": ACTION_TEXT,
                "max_length": TEXT_INPUT_CHARS,
                "dispatch_action_config": {"trigger_actions_on": ["on_enter_pressed"]},
            },
        }
    )
    return blocks
