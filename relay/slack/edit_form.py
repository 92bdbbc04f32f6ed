"""The "Edit…" modal of a tool approval: built from the input's JSON Schema when one is
known, else from the input's shape, and read back with Slack's field errors. Pure.

The common tools get one field for what a reviewer fixes: a shell command (``Bash``,
``exec``) as one multiline code field, an ``Edit`` as its ``new_string``, a ``Write`` as its
``content``; the rest of their input stays as it was. Otherwise each top-level field gets
an input: a string a text field (multiline when long), an enum a ``static_select``, a
boolean a checkbox, a number a text field checked as a number, anything nested JSON text
checked on submit. Invalid values come back as ``response_action: errors`` under their
field; the modal stays open and nothing is recorded.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from relay.intents import ToolEdit
from relay.slack.kit import plain
from relay.slack.text import cut, within

__all__ = [
    "EDIT_CALLBACK",
    "MAX_FIELDS",
    "edit_view",
    "editable_fields",
    "read_edit_view",
    "too_long",
]

EDIT_CALLBACK = "relay.edit"
MAX_FIELDS = 40  # a modal holds 100 blocks; a tool with more fields is edited as JSON
_TITLE = "Edit, then allow"  # Slack: at most 24 characters
_CHOICE_BLOCK = "relay_choice"
_ACTION = "v"
_TEXT_MAX = 3000  # plain_text_input's own limit
_SHORT = 150  # longer strings get a multiline field
# Where the common tools keep what a reviewer fixes: that field alone is offered.
_FOCUS = {"Bash": "command", "exec": "command", "Edit": "new_string", "Write": "content"}
_CODE_FIELDS = frozenset({"command", "content", "new_string"})


def editable_fields(edit: ToolEdit) -> list[tuple[str, Mapping[str, Any]]]:
    """The fields the form offers, each with its JSON Schema (known or read off the value)."""
    props = _properties(edit.input_schema)
    focus = _FOCUS.get(edit.tool)
    if focus is not None and isinstance(edit.input.get(focus), str):
        return [(focus, props.get(focus, {"type": "string"}))]
    names = list(props) if props else list(edit.input)
    names += [n for n in edit.input if n not in names]
    if len(names) > MAX_FIELDS:
        return [("", {"type": "object"})]  # the whole input as one JSON field
    return [(n, props.get(n) or _schema_of(edit.input.get(n))) for n in names]


def _properties(schema: Mapping[str, Any] | None) -> dict[str, Mapping[str, Any]]:
    raw = schema.get("properties") if schema is not None else None
    if not isinstance(raw, Mapping):
        return {}
    return {str(k): v for k, v in raw.items() if isinstance(v, Mapping)}


def _schema_of(value: object) -> Mapping[str, Any]:
    if isinstance(value, bool):
        return {"type": "boolean"}
    if isinstance(value, int):
        return {"type": "integer"}
    if isinstance(value, float):
        return {"type": "number"}
    if isinstance(value, str):
        return {"type": "string"}
    return {"type": "object"}


def _kind(schema: Mapping[str, Any]) -> str:
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return "enum"
    kind = schema.get("type")
    if isinstance(kind, list):  # ["string", "null"] and the like: the first real type
        kind = next((k for k in kind if k != "null"), "string")
    return kind if kind in ("string", "boolean", "integer", "number") else "json"


def _block_id(name: str) -> str:
    return cut(f"f:{name}", 255)  # Slack counts UTF-16 code units (relay.slack.text)


def _label(name: str) -> str:
    return cut(name or "Input (JSON)", 2000)


def _input_block(name: str, schema: Mapping[str, Any], value: object) -> dict[str, Any]:
    kind = _kind(schema)
    block: dict[str, Any] = {
        "type": "input",
        "block_id": _block_id(name),
        "label": plain(_label(name)),
        "optional": True,
    }
    if isinstance(schema.get("description"), str) and schema["description"].strip():
        block["hint"] = plain(cut(schema["description"], 2000))
    if kind == "enum":
        options = [plain_option(json.dumps(v, ensure_ascii=False)) for v in schema["enum"][:100]]
        element: dict[str, Any] = {
            "type": "static_select",
            "action_id": _ACTION,
            "options": options,
        }
        current = json.dumps(value, ensure_ascii=False)
        chosen = [o for o in options if o["value"] == current]
        if chosen:
            element["initial_option"] = chosen[0]
    elif kind == "boolean":
        option = plain_option("true", text="true")
        element = {"type": "checkboxes", "action_id": _ACTION, "options": [option]}
        if value is True:
            element["initial_options"] = [option]
    else:
        if kind == "string":
            text = value if isinstance(value, str) else ""
        elif kind in ("integer", "number"):
            text = "" if value is None or isinstance(value, bool) else json.dumps(value)
        else:
            text = "" if value is None else json.dumps(value, ensure_ascii=False, indent=2)
        element = {"type": "plain_text_input", "action_id": _ACTION, "max_length": _TEXT_MAX}
        if kind == "json" or name in _CODE_FIELDS or "\n" in text or len(text) > _SHORT:
            element["multiline"] = True
        if text:
            element["initial_value"] = cut(text, _TEXT_MAX)
    block["element"] = element
    return block


def plain_option(value: str, *, text: str | None = None) -> dict[str, Any]:
    """A select or checkbox option whose value is ``value`` (at most 150 characters)."""
    return {"text": plain(cut(text or value, 75)), "value": cut(value, 150)}


def too_long(edit: ToolEdit) -> bool:
    """Whether a field the form would offer holds more than a Slack text input takes
    (3,000 characters): a form showing it cut would allow a call nobody meant."""
    for name, schema in editable_fields(edit):
        value = dict(edit.input) if name == "" else edit.input.get(name)
        kind = _kind(schema)
        if kind == "string" and isinstance(value, str):
            text = value
        elif kind == "json":
            text = json.dumps(value, ensure_ascii=False, indent=2)
        else:
            continue
        if not within(text, _TEXT_MAX):
            return True
    return False


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
    then = "submitting allows the edited call, exactly as you leave it here."
    if quorum > 1:
        then = (
            f"submitting makes it version {version + 1}, with your vote to allow it; votes on"
            f" version {version} no longer count, and {quorum} people must allow the new one."
        )
    blocks: list[dict[str, Any]] = [
        {
            "type": "section",
            "text": {
                "type": "mrkdwn",
                "text": f"*{_escape(who)}* wants to use `{_escape(edit.tool)}`. Fix the input;"
                f" {then}",
            },
        }
    ]
    for name, schema in editable_fields(edit):
        value = dict(edit.input) if name == "" else edit.input.get(name)
        blocks.append(_input_block(name, schema, value))
    options = [plain_option(c) for c in choices]
    blocks.append(
        {
            "type": "input",
            "block_id": _CHOICE_BLOCK,
            "label": plain("Then"),
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
        "title": plain(_TITLE),
        "submit": plain("Allow edited call" if quorum <= 1 else "Vote to allow"),
        "close": plain("Cancel"),
        "private_metadata": metadata,
        "blocks": blocks,
    }


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def read_edit_view(
    edit: ToolEdit, values: Mapping[str, Any], choices: tuple[str, ...]
) -> tuple[dict[str, Any], str] | dict[str, str]:
    """The edited input and the option chosen, read from a submitted view's
    ``state.values``; else the errors to show, by ``block_id``."""
    out = dict(edit.input)
    errors: dict[str, str] = {}
    for name, schema in editable_fields(edit):
        block = _block_id(name)
        element = values.get(block, {}).get(_ACTION, {})
        read = _read(_kind(schema), element)
        if isinstance(read, _Invalid):
            errors[block] = read.why
            continue
        if name == "":
            if not isinstance(read.value, dict):
                errors[block] = "Enter the whole input as one JSON object."
                continue
            out = read.value
        elif read.value is _MISSING:
            out.pop(name, None)
        else:
            out[name] = read.value
    chosen = values.get(_CHOICE_BLOCK, {}).get(_ACTION, {}).get("selected_option")
    choice = chosen.get("value") if isinstance(chosen, Mapping) else None
    if choice not in choices:
        errors[_CHOICE_BLOCK] = "Choose how to allow the edited call."
    if errors:
        return errors
    assert isinstance(choice, str)
    return out, choice


class _Invalid:
    def __init__(self, why: str) -> None:
        self.why = why


class _Read:
    def __init__(self, value: object) -> None:
        self.value = value


_MISSING = object()


def _read(kind: str, element: Mapping[str, Any]) -> _Read | _Invalid:
    if kind == "boolean":
        ticked = element.get("selected_options")
        return _Read(bool(ticked))
    if kind == "enum":
        chosen = element.get("selected_option")
        if not isinstance(chosen, Mapping):
            return _Read(_MISSING)
        try:
            return _Read(json.loads(chosen.get("value", "")))
        except ValueError:
            return _Invalid("Choose one of the listed values.")
    text = element.get("value")
    if not isinstance(text, str):
        return _Read("" if kind == "string" else _MISSING)
    if kind == "string":
        return _Read(text)
    if kind in ("integer", "number"):
        try:
            number = json.loads(text.strip())
        except ValueError:
            number = None
        if isinstance(number, bool) or not isinstance(number, int | float):
            return _Invalid(f"Enter a number{' (a whole one)' if kind == 'integer' else ''}.")
        if kind == "integer" and not isinstance(number, int):
            return _Invalid("Enter a whole number.")
        return _Read(number)
    try:
        return _Read(json.loads(text))
    except json.JSONDecodeError as exc:
        return _Invalid(f"This is not valid JSON ({exc.msg}, line {exc.lineno}).")
