"""The "Edit…" modal of a tool approval, and the edited input read back from it. Pure.

Its fields are ``edit_fields``' judgement: an input for each editable field (a string a text
field, multiline when long; an enum a ``static_select``; a boolean a checkbox; a number a
text field checked as one; anything nested JSON text checked on submit), a read-only
section for each field a Slack input cannot give back exactly (its value shown, cut with a
mark, and why). Submitted untouched, the form gives back exactly the input it showed; only
its inputs can change anything. What cannot be passed on comes back as ``response_action:
errors`` under its field (``edit_values``); the modal stays open and nothing is recorded.

Every text in the view is within its Slack limit in UTF-16 code units (``kit``), mrkdwn
counted escaped. ``block_id``s are the field's place in the form and a digest of its key:
unique whatever the keys, and a form whose fields no longer match the call is refused.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

from relay.seam.edits import unfit
from relay.seam.intents import ToolEdit
from relay.slack.editing.fields import (
    TEXT_CHARS,
    FormField,
    enum_values,
    form_fields,
    json_text,
    shown,
)
from relay.slack.editing.values import FieldRefusal, Kept, Typed, read_field
from relay.slack.rendering import kit
from relay.slack.rendering.text import escape, escape_within, units

__all__ = ["EDIT_CALLBACK", "edit_view", "first_block", "read_edit_view"]

EDIT_CALLBACK = "relay.edit"
_TITLE = "Edit, then allow"  # Slack: at most 24 characters
_CHOICE_BLOCK = "relay_choice"
_ACTION = "v"
_MAX_CHOICES = 10  # radio buttons hold 10 options
_SHORT = 150  # longer text gets a multiline field
_CODE_FIELDS = frozenset({"command", "content", "new_string"})
_OUT_OF_DATE = "This form no longer matches the call: close it and click Edit… again."


def _block_id(index: int, field: FormField) -> str:
    key = field.name.encode("utf-8", "surrogatepass")
    return f"f{index}.{hashlib.sha256(key).hexdigest()[:8]}"


def first_block(edit: ToolEdit) -> str:
    """The ``block_id`` errors about the whole form are shown under: the first input's."""
    for index, field in enumerate(form_fields(edit)):
        if field.editable:
            return _block_id(index, field)
    return _CHOICE_BLOCK


def edit_view(
    edit: ToolEdit,
    *,
    metadata: str,
    choices: tuple[str, ...],
    who: str,
    quorum: int = 1,
    version: int = 1,
) -> dict[str, Any]:
    """The modal for editing ``edit``'s input (as it stands at ``version``); ``choices`` are
    the allow options offered (the first is the default); ``metadata`` names the ask and
    question. With a ``quorum`` the edit is a new version others vote on."""
    fields = form_fields(edit)
    blocks = [_intro(edit, who, quorum, version, fields)]
    for index, field in enumerate(fields):
        if field.editable:
            blocks.append(_input_block(_block_id(index, field), field))
        else:
            value = dict(edit.input) if field.whole else edit.input.get(field.name)
            blocks.append(_read_only_block(field, value))
    options = [kit.option(_choice_text(c), str(i)) for i, c in enumerate(choices[:_MAX_CHOICES])]
    blocks.append(
        {
            "type": "input",
            "block_id": _CHOICE_BLOCK,
            "label": kit.plain("Then", kit.INPUT_LABEL_CHARS),
            "element": {
                "type": "radio_buttons",
                "action_id": _ACTION,
                "options": options,
                "initial_option": options[0],
            },
        }
    )
    return {
        "type": "modal",
        "callback_id": EDIT_CALLBACK,
        "title": kit.plain(_TITLE, 24),
        "submit": kit.plain("Allow edited call" if quorum <= 1 else "Vote to allow", 24),
        "close": kit.plain("Cancel", 24),
        "private_metadata": metadata,
        "blocks": blocks,
    }


def _intro(
    edit: ToolEdit, who: str, quorum: int, version: int, fields: list[FormField]
) -> dict[str, Any]:
    then = "submitting allows the edited call, exactly as you leave it here."
    if quorum > 1:
        then = (
            f"submitting makes it version {version + 1}, with your vote to allow it; votes on"
            f" version {version} no longer count, and {quorum} people must allow the new one."
        )
    text = (
        f"*{escape_within(shown(who), 200)}* wants to use"
        f" `{escape_within(shown(edit.tool), 200)}`. Fix the input; {then}"
    )
    if any(not f.editable for f in fields):
        text += " Fields shown without a box cannot be edited here and stay as the agent sent them."
    return kit.section(text)


def _label(field: FormField) -> str:
    if field.whole:
        return "Input (JSON)"
    name = field.name if field.name.strip() else json.dumps(field.name)
    return shown(name)


def _input_block(block_id: str, field: FormField) -> dict[str, Any]:
    block: dict[str, Any] = {
        "type": "input",
        "block_id": block_id,
        "label": kit.plain(_label(field), kit.INPUT_LABEL_CHARS),
        "optional": True,
    }
    hint = field.schema.get("description")
    hint = shown(hint).strip() if isinstance(hint, str) else ""
    element: dict[str, Any]
    if field.kind == "enum":
        values = enum_values(field.schema)
        options = [kit.option(shown(_one_line(v)), str(i)) for i, v in enumerate(values)]
        element = {"type": "static_select", "action_id": _ACTION, "options": options}
        if field.initial is not None:
            element["initial_option"] = options[int(field.initial)]
        listed = len(field.schema["enum"])
        if listed > len(values):
            hint = f"{hint} (The menu lists the first {len(values)} of {listed:,} values.)"
    elif field.kind == "boolean":
        option = kit.option("true", "true")
        element = {"type": "checkboxes", "action_id": _ACTION, "options": [option]}
        if field.initial == "true":
            element["initial_options"] = [option]
    else:
        text = field.initial or ""
        element = {"type": "plain_text_input", "action_id": _ACTION, "max_length": TEXT_CHARS}
        multiline = field.kind == "json" or field.name in _CODE_FIELDS
        if multiline or "\n" in text or len(text) > _SHORT:
            element["multiline"] = True
        if text:
            element["initial_value"] = text
    if hint.strip():
        block["hint"] = kit.plain(hint.strip(), kit.INPUT_LABEL_CHARS)
    block["element"] = element
    return block


def _choice_text(label: str) -> str:
    return shown(label).strip() or json.dumps(label)


def _one_line(value: object) -> str:
    try:
        return json.dumps(value, ensure_ascii=False)
    except (ValueError, RecursionError):
        return "(a value too long to show)"


def _read_only_block(field: FormField, value: object) -> dict[str, Any]:
    """The field's name, why it cannot be edited here, and its value (cut with a mark)."""
    name = "The input" if field.whole else _label(field)
    head = (
        f"*{escape_within(name, 200)}* {escape(field.why or '')}, so it is not editable"
        " here and stays exactly as the agent sent it:"
    )
    # No more than a section shows: a long value is cut before anything copies it whole,
    # and a large one is not indented (the form must open within Slack's 3 seconds).
    if isinstance(value, str):
        text = value[: TEXT_CHARS + 1]
    else:
        text = _one_line(value)
        text = text[: TEXT_CHARS + 1] if len(text) > TEXT_CHARS else json_text(value) or text
    body = escape(shown(text)).replace("```", "``\u200b`")  # (a fence would end the block)
    room = kit.SECTION_CHARS - units(head) - len("\n``````")
    if units(body) > room:
        body = kit.fit(body, room)
    return kit.section(f"{head}\n```{body}```")


def read_edit_view(
    edit: ToolEdit, values: Mapping[str, Any], choices: tuple[str, ...]
) -> tuple[dict[str, Any], str] | dict[str, str]:
    """The edited input and the option chosen, read from a submitted view's
    ``state.values``; else the errors to show, by ``block_id``. Untouched, the input
    comes back exactly as ``edit`` holds it."""
    out = dict(edit.input)
    errors: dict[str, str] = {}
    changed = False
    for index, field in enumerate(form_fields(edit)):
        if not field.editable:
            continue  # shown only: kept as it is
        block = _block_id(index, field)
        entry = values.get(block)
        state = entry.get(_ACTION) if isinstance(entry, Mapping) else None
        if not isinstance(state, Mapping):
            errors[block] = _OUT_OF_DATE
            continue
        original = dict(edit.input) if field.whole else edit.input.get(field.name)
        read = read_field(field, state, original)
        if isinstance(read, FieldRefusal):
            errors[block] = read.why
        elif read is Kept.REMOVED:
            out.pop(field.name, None)
            changed = True
        elif isinstance(read, Typed):
            changed = True
            if field.whole and isinstance(read.value, dict):
                out = read.value
            else:
                out[field.name] = read.value
    choice = _choice(values, choices)
    if choice is None:
        errors[_CHOICE_BLOCK] = "Choose how to allow the edited call."
    if changed and not errors and (problem := unfit(out)) is not None:
        errors[first_block(edit)] = f"The edited input {problem}: change it, then submit."
    if errors or choice is None:
        return errors
    return out, choice


def _choice(values: Mapping[str, Any], choices: tuple[str, ...]) -> str | None:
    entry = values.get(_CHOICE_BLOCK)
    state = entry.get(_ACTION) if isinstance(entry, Mapping) else None
    chosen = state.get("selected_option") if isinstance(state, Mapping) else None
    index = chosen.get("value") if isinstance(chosen, Mapping) else None
    if not isinstance(index, str) or not index.isdigit():
        return None
    at = int(index)
    return choices[at] if at < min(len(choices), _MAX_CHOICES) else None
