"""Which fields of a tool's input the "Edit…" form offers, and which it only shows. Pure.

One judgement, asked by the message (*Edit…* is offered only when some field is editable),
by the form that opens and by the reading of a submitted form. A field is editable only
where a Slack input gives its value back exactly when nobody touches it: a string a text
field takes whole (3,000 characters, no control character Slack may drop), a number as its
JSON text, a boolean a checkbox, an enum value among the 100 options a menu lists,
anything else as JSON text of at most 3,000 characters. Any other field is shown read-only
and kept exactly as the agent sent it; a key only the schema names is offered empty and
added only when the reviewer fills it in.

The common tools get one field for what a reviewer fixes: a shell command (``Bash``,
``exec``), an ``Edit``'s ``new_string``, a ``Write``'s ``content``; the rest of their input
stays as it was. An input of more than ``MAX_FIELDS`` fields is edited as one JSON object,
the form's only field.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, Literal

from relay.seam.edits import same_json, unfit
from relay.seam.intents import ToolEdit
from relay.slack.rendering.text import units, within

__all__ = [
    "MAX_OPTIONS",
    "TEXT_CHARS",
    "FormField",
    "enum_values",
    "form_fields",
    "json_text",
    "shown",
    "unavailable",
]

MAX_FIELDS = 40  # a modal holds 100 blocks; a read-only field takes two
MAX_OPTIONS = 100  # a static_select's options
TEXT_CHARS = 3000  # plain_text_input's max_length, and so the longest initial_value it keeps
FieldKind = Literal["string", "integer", "number", "boolean", "enum", "json"]

# Where the common tools keep what a reviewer fixes: that field alone is offered.
_FOCUS = {"Bash": "command", "exec": "command", "Edit": "new_string", "Write": "content"}
# Characters a text field may not give back as sent: controls (a carriage return may come
# back as a line feed) and lone surrogates, which no UTF-8 text carries.
_UNTYPABLE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff]")
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
_INVISIBLE = re.compile("[\x7f-\x9f]")


@dataclass(frozen=True, slots=True)
class FormField:
    """One field of the form: the input's key (``""`` is a key like any other), its JSON
    Schema, the widget's kind, whether the input holds it, what the widget starts with
    (the text, the option's index, ``"true"`` ticked; ``None`` empty), and why it is only
    shown, as a clause ("is 3,412 characters long, …"; ``None``: editable). ``whole``: the
    whole input as one JSON object; ``too_long``: shown because it is too long."""

    name: str
    schema: Mapping[str, Any]
    kind: FieldKind
    present: bool
    initial: str | None
    why: str | None = None
    whole: bool = False
    too_long: bool = False

    @property
    def editable(self) -> bool:
        """Whether the form offers an input for it."""
        return self.why is None


def form_fields(edit: ToolEdit) -> list[FormField]:
    """Every field the form shows for ``edit``, editable or not, in the form's order."""
    return _judged(edit)[0]


def _judged(edit: ToolEdit) -> tuple[list[FormField], str | None]:
    """The form's fields, and why the whole input cannot be carried (``edits.unfit``)."""
    problem = unfit(edit.input)
    props = _properties(edit.input_schema)
    focus = _FOCUS.get(edit.tool)
    if focus is not None and isinstance(edit.input.get(focus), str):
        names = [focus]
    else:
        names = list(props) + [n for n in edit.input if n not in props]
        if len(names) > MAX_FIELDS:  # keys only the schema names go first: never in the call
            names = [n for n in names if n in edit.input]
        if len(names) > MAX_FIELDS:
            return [_whole(edit.input, problem)], problem
    fields = []
    for name in names:
        value, present = edit.input.get(name), name in edit.input
        field = _field(name, props.get(name) or _schema_of(value), value, present)
        if problem is not None and field.editable:
            # Any edit passes the whole input on, and this one is no JSON.
            field = _shown(field, f"belongs to an input that {problem}")
        fields.append(field)
    return fields, problem


def editable_fields(edit: ToolEdit) -> list[FormField]:
    """The fields the form offers an input for (none: *Edit…* is not offered)."""
    return [f for f in form_fields(edit) if f.editable]


def unavailable(edit: ToolEdit) -> str | None:
    """Why no field of ``edit`` can be edited in Slack, as a clause ("`command` is 3,412
    characters long, …"; mrkdwn, not escaped); ``None`` when some field can."""
    fields, problem = _judged(edit)
    if any(f.editable for f in fields):
        return None
    if problem is not None:
        return f"this call's input {problem}"
    if not fields:
        return "this call's input has no fields to edit"
    first = fields[0]
    if first.whole:
        return f"this call's input {first.why}"
    if len(fields) == 1:
        return f"{_named(first.name)} {first.why}"
    if all(f.too_long for f in fields):
        return (
            "every field of this call's input is too long to edit in Slack"
            f" ({TEXT_CHARS:,} characters a field)"
        )
    return f"no field of this call's input can be edited in Slack: {_named(first.name)} {first.why}"


def shown(text: str) -> str:
    """``text`` fit to show in Slack: a lone surrogate (no UTF-8 text holds one) as "\ufffd"."""
    if text.isascii() or not _LONE_SURROGATE.search(text):
        return text
    return _LONE_SURROGATE.sub("\ufffd", text)


def enum_values(schema: Mapping[str, Any]) -> list[Any]:
    """The values a menu offers for an enum field: the schema's first ``MAX_OPTIONS``."""
    values = schema.get("enum")
    return list(values[:MAX_OPTIONS]) if isinstance(values, list) else []


def json_text(value: object) -> str | None:
    """``value`` as the form shows it for editing: indented JSON, the invisible controls
    escaped; ``None`` when it is no JSON (``NaN``, an integer Python will not print)."""
    try:
        text = json.dumps(value, ensure_ascii=False, indent=2, allow_nan=False)
    except (ValueError, RecursionError):
        return None
    if _INVISIBLE.search(text):  # only inside strings: escapes a client cannot drop
        text = _INVISIBLE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
    return text


def _named(name: str) -> str:
    if name.strip() and name.isprintable() and within(name, 60):
        return f"`{shown(name)}`"
    return f"`{shown(json.dumps(name[:50], ensure_ascii=False))}`"


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
    return {}  # null, arrays, objects: JSON text


def _kind(schema: Mapping[str, Any], value: object, present: bool) -> FieldKind:
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return "enum"
    kind = schema.get("type", _schema_of(value).get("type"))
    if isinstance(kind, list):  # ["string", "null"]: a text field, or JSON text for null
        real = [k for k in kind if k != "null"]
        if len(real) != 1 or (present and value is None):
            return "json"
        kind = real[0]
    if kind == "string":
        return "string"
    if kind == "boolean":
        return "boolean"
    if kind == "integer":
        return "integer"
    if kind == "number":
        return "number"
    return "json"


def _shown(field: FormField, why: str, *, too_long: bool = False) -> FormField:
    return replace(field, initial=None, why=why, too_long=too_long)


def _what(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "text"
    return "a list" if isinstance(value, list) else "an object"


def _field(name: str, schema: Mapping[str, Any], value: object, present: bool) -> FormField:
    kind = _kind(schema, value, present)
    empty = FormField(name, schema, kind, present, None)
    if not present:
        return empty
    if kind == "enum":
        return _enum_field(empty, value)
    if kind == "boolean":
        if not isinstance(value, bool):
            return _shown(empty, f"is {_what(value)}, which a checkbox cannot hold")
        return replace(empty, initial="true" if value else None)
    if kind in ("integer", "number"):
        if isinstance(value, bool) or not isinstance(value, int | float):
            return _shown(empty, f"is {_what(value)}, which a number field cannot hold")
        return _text_field(empty, json_text(value))
    if kind == "string":
        if not isinstance(value, str):
            return _shown(empty, f"is {_what(value)}, which a text field cannot hold")
        if within(value, TEXT_CHARS) and _UNTYPABLE.search(value):
            return _shown(empty, _untypable(value))
        return _text_field(empty, value)
    return _json_field(empty, value)


def _enum_field(field: FormField, value: object) -> FormField:
    listed = enum_values(field.schema)
    for index, option in enumerate(listed):
        if same_json(option, value):
            return replace(field, initial=str(index))
    everything = field.schema["enum"]
    for index, option in enumerate(everything[MAX_OPTIONS:], start=MAX_OPTIONS + 1):
        if same_json(option, value):
            why = (
                f"is option {index:,} of {len(everything):,}, past the {MAX_OPTIONS} a Slack"
                " menu lists"
            )
            return _shown(field, why)
    return _shown(field, "is not one of the options its schema lists")


def _text_field(field: FormField, text: str | None) -> FormField:
    if text is None:  # (an integer of over 4,300 digits, which Python will not print)
        return _shown(field, "is too long to edit in a Slack form field", too_long=True)
    if not within(text, TEXT_CHARS):
        why = (
            f"is {units(text):,} characters long, more than the {TEXT_CHARS:,} a Slack form"
            " field holds"
        )
        return _shown(field, why, too_long=True)
    return replace(field, initial=text or None)


def _json_field(field: FormField, value: object) -> FormField:
    # Compact JSON is never longer than the indented text shown, and C-fast: a large value
    # is judged without indenting it (asked on every render of the message), and a lone
    # surrogate, left as it is by ensure_ascii=False, found without a walk.
    try:
        compact = json.dumps(value, ensure_ascii=False, allow_nan=False)
    except (ValueError, RecursionError):
        return _text_field(field, None)
    if not within(compact, TEXT_CHARS):
        return _text_field(field, compact)
    if not compact.isascii() and _LONE_SURROGATE.search(compact):
        return _shown(field, "holds text that is not valid Unicode (a lone surrogate)")
    return _text_field(field, json_text(value))


def _whole(value: Mapping[str, Any], problem: str | None) -> FormField:
    whole = FormField("", {"type": "object"}, "json", True, None, whole=True)
    if problem is not None:
        return _shown(whole, problem)
    return _json_field(whole, dict(value))


def _untypable(value: str) -> str:
    if _LONE_SURROGATE.search(value):
        return "holds text that is not valid Unicode (a lone surrogate)"
    return "holds a control character (such as a carriage return) Slack may not give back"
