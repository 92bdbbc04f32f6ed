"""What a reviewer left in one field of the "Edit…" form, read as the JSON value it means,
or refused with a sentence shown under the field. Pure.

A field left as it opened keeps the agent's value exactly (or its absence): its text is not
read again, so nothing a second reading could change (a number's digits, a key's order)
changes. Equal ignoring the blank space around it and Unicode's normalization counts as left
as it opened, since a Slack client may trim or normalize what it sends back.

What is typed is passed on only if JSON carries it exactly: ``NaN`` and ``Infinity`` are no
JSON, ``1e400`` is past a double's range, a number with more digits than a double keeps would
reach the agent as another number (an integer past 2**53 is taken only where the agent's own
input held that literal), a lone surrogate is no Unicode, a key appears once, and nothing
nests deeper than ``MAX_DEPTH`` levels.
"""

from __future__ import annotations

import contextlib
import json
import math
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from enum import Enum
from typing import Any

from relay.seam.safejson import MAX_DEPTH
from relay.slack.editing.fields import FormField, enum_values

__all__ = ["FieldRefusal", "Kept", "Typed", "read_field"]

_SAFE_INTEGER = 2**53  # past it a double skips integers: 2**53 + 1 reads as 2**53
_DIGITS = 4000  # Python refuses to read an integer of more than 4,300 digits


class Kept(Enum):
    """A field that changes nothing: left as it opened (``SAME``), or emptied where the
    value was optional (``REMOVED``: the key goes)."""

    SAME = "same"
    REMOVED = "removed"


@dataclass(frozen=True, slots=True)
class Typed:
    """The value a reviewer gave a field."""

    value: object


@dataclass(frozen=True, slots=True)
class FieldRefusal:
    """Why what was typed cannot be passed on, as a sentence saying what to do."""

    why: str


class _Refused(ValueError):
    pass


def read_field(
    field: FormField, state: Mapping[str, Any], original: object
) -> Typed | Kept | FieldRefusal:
    """Read ``field`` from its ``state.values`` entry; ``original`` is the agent's value
    (its long integers may be typed back as they were)."""
    if field.kind == "enum":
        return _read_choice(field, state)
    if field.kind == "boolean":
        ticked = state.get("selected_options")
        on = isinstance(ticked, list) and any(
            isinstance(o, Mapping) and o.get("value") == "true" for o in ticked
        )
        return Kept.SAME if on == (field.initial == "true") else Typed(on)
    text = state.get("value")
    text = text if isinstance(text, str) else ""
    if _same_text(text, field.initial or ""):
        return Kept.SAME
    if field.kind == "string":
        if _lone_surrogate(text):
            return FieldRefusal(_NOT_UNICODE)
        return Typed(text)
    if not text.strip():
        if field.whole:
            return FieldRefusal("Enter the whole input as one JSON object.")
        return Kept.REMOVED
    numeric = field.kind in ("integer", "number")
    whole = " (a whole one)" if field.kind == "integer" else ""
    not_a_number = f"Enter a number{whole}, such as 3."
    read = _parse_json(
        text, _long_integers(original), 1 if field.whole else 2, not_a_number if numeric else None
    )
    if isinstance(read, FieldRefusal):
        return read
    if field.whole and not isinstance(read.value, dict):
        return FieldRefusal("Enter the whole input as one JSON object (in { and }).")
    if numeric:
        value = read.value
        if isinstance(value, bool) or not isinstance(value, int | float):
            return FieldRefusal(not_a_number)
        if field.kind == "integer" and not isinstance(value, int):
            return FieldRefusal("Enter a whole number, with no decimal point or exponent.")
    return read


def _parse_json(
    text: str, literals: frozenset[str], level: int, not_json: str | None
) -> Typed | FieldRefusal:
    """``text`` as strict JSON for a value at nesting ``level`` of the input (the input
    itself is 1), integers past 2**53 only among ``literals``; else why not (``not_json``
    for text that is no JSON at all, when given)."""

    def integer(literal: str) -> int:
        if len(literal) > _DIGITS:
            raise _Refused(f"{_short(literal)} has too many digits: enter a shorter number.")
        number = int(literal)
        if abs(number) > _SAFE_INTEGER and literal not in literals:
            raise _Refused(
                f"{_short(literal)} is past 2**53 (9,007,199,254,740,992): most programs"
                " would read another number. Enter a smaller one, or quote it as text."
            )
        return number

    def decimal(literal: str) -> float:
        number = float(literal)
        if not math.isfinite(number):
            raise _Refused(
                f"{_short(literal)} is past the largest number JSON carries (about 1.8e308):"
                " enter a smaller one."
            )
        if Decimal(literal) != Decimal(repr(number)):
            raise _Refused(
                f"{_short(literal)} has more digits than a number keeps: it would reach the"
                f" agent as {number!r}. Enter that, or quote it as text."
            )
        return number

    def constant(name: str) -> object:
        raise _Refused(f"{name} is not a JSON number: enter a number, or quote it as text.")

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        made: dict[str, Any] = {}
        for key, value in items:
            if key in made:
                raise _Refused(f"The key {_short(json.dumps(key))} appears twice: keep one.")
            made[key] = value
        return made

    decoder = json.JSONDecoder(
        parse_int=integer, parse_float=decimal, parse_constant=constant, object_pairs_hook=pairs
    )
    try:
        value = decoder.decode(text)
    except _Refused as refused:
        return FieldRefusal(str(refused))
    except json.JSONDecodeError as exc:
        if not_json is not None:
            return FieldRefusal(not_json)
        return FieldRefusal(
            f"This is not valid JSON ({exc.msg}, line {exc.lineno} column {exc.colno}): fix"
            " it, or close the form to leave the call as it is."
        )
    except RecursionError:
        return FieldRefusal(_too_deep())
    return _checked(value, level)


_NOT_UNICODE = (
    "This holds a character that is not valid Unicode (a lone surrogate): retype that part."
)


def _too_deep() -> str:
    return f"This nests deeper than an edited input may ({MAX_DEPTH} levels): flatten it."


def _checked(value: object, level: int) -> Typed | FieldRefusal:
    stack: list[tuple[object, int]] = [(value, level)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, str):
            if _lone_surrogate(item):
                return FieldRefusal(_NOT_UNICODE)
        elif isinstance(item, dict | list):
            if depth > MAX_DEPTH:
                return FieldRefusal(_too_deep())
            if isinstance(item, dict):
                stack.extend((key, depth) for key in item)
            children = item.values() if isinstance(item, dict) else item
            stack.extend((child, depth + 1) for child in children)
    return Typed(value)


def _read_choice(field: FormField, state: Mapping[str, Any]) -> Typed | Kept | FieldRefusal:
    chosen = state.get("selected_option")
    index = chosen.get("value") if isinstance(chosen, Mapping) else None
    if index == field.initial:
        return Kept.SAME
    if index is None:
        return Kept.REMOVED
    options = enum_values(field.schema)
    if not isinstance(index, str) or not index.isdigit() or int(index) >= len(options):
        return FieldRefusal("Choose one of the listed values.")
    return Typed(options[int(index)])


def _same_text(typed: str, initial: str) -> bool:
    if typed == initial:
        return True
    return (
        unicodedata.normalize("NFC", typed).strip() == unicodedata.normalize("NFC", initial).strip()
    )


def _long_integers(value: object) -> frozenset[str]:
    """The agent's own integers past 2**53, as their JSON literals."""
    found: set[str] = set()
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, int) and not isinstance(item, bool):
            if abs(item) > _SAFE_INTEGER:
                # (More digits than Python prints: nobody could type it back either.)
                with contextlib.suppress(ValueError):
                    found.add(str(item))
        elif isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return frozenset(found)


def _lone_surrogate(text: str) -> bool:
    return not text.isascii() and any("\ud800" <= char <= "\udfff" for char in text)


def _short(text: str) -> str:
    return text if len(text) <= 40 else text[:39] + "…"
