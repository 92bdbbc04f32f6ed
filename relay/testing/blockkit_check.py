"""Applies ``relay.testing.blockkit``'s rules to one block: every field known to its kind,
every required field present, every value of its kind and within its bounds.

Each error reads like Slack's own (``must be less than 3001 characters [json-pointer:/blocks/0/
text/text]``); the fake sends them in ``errors`` and, prefixed ``[ERROR]``, in
``response_metadata.messages``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from .blockkit import BLOCKS, COMPOSITIONS, ELEMENTS, TEXT_FIELDS
from .blockkit_types import (
    Bool,
    Enum,
    Int,
    ListOf,
    Loose,
    Obj,
    Rule,
    Shape,
    Str,
    Text,
)

__all__ = ["block_errors", "code_units"]

_TEXT_KINDS = frozenset({"plain_text", "mrkdwn"})
_BLOCK_ID = Str(max=255)


def code_units(text: str) -> int:
    """``text``'s length in UTF-16 code units, as the fake counts Slack's limits: an emoji
    outside the Basic Multilingual Plane counts 2. Slack's reference says "characters" and
    names no unit; code units are never fewer than code points, so this refuses every text
    either reading would (the strict side)."""
    if text.isascii():  # the common case, counted without encoding
        return len(text)
    # surrogatepass: a lone surrogate (JSON allows one) is the one unit it is.
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def block_errors(block: object, pointer: str) -> list[str]:
    """Every way ``block`` breaks Block Kit's rules, each ending with its json-pointer."""
    if not isinstance(block, dict):
        return [_at("must provide an object", pointer)]
    kind = block.get("type")
    shape = BLOCKS.get(kind) if isinstance(kind, str) else None
    if shape is None:
        return [_at(f"unsupported block type {kind!r}", f"{pointer}/type")]
    errors = list(_shape_errors(shape, block, pointer, extra=("type", "block_id")))
    if "block_id" in block:
        errors.extend(_value_errors(_BLOCK_ID, block["block_id"], f"{pointer}/block_id"))
    return errors


def _at(message: str, pointer: str) -> str:
    return f"{message} [json-pointer:{pointer}]"


def _shape_errors(
    shape: Shape, obj: Mapping[str, Any], pointer: str, *, extra: tuple[str, ...]
) -> Iterator[str]:
    for name in obj:
        if name not in shape.fields and name not in extra:
            # Slack's schema has no additional properties: a misspelt field is an error.
            yield _at(f"unknown field {name!r}", f"{pointer}/{name}")
    for name in sorted(shape.required):
        if name not in obj:
            yield _at(f"missing required field: {name}", pointer)
    for group in shape.one_of:
        if not any(name in obj for name in group):
            yield _at(f"must provide {' or '.join(group)}", pointer)
    for name, rule in shape.fields.items():
        if name in obj:
            yield from _value_errors(rule, obj[name], f"{pointer}/{name}")


def _value_errors(rule: Rule, value: object, pointer: str) -> Iterator[str]:
    if isinstance(rule, Str):
        yield from _str_errors(rule, value, pointer)
    elif isinstance(rule, Bool):
        if not isinstance(value, bool):
            yield _at("must be a boolean", pointer)
    elif isinstance(rule, Int):
        yield from _int_errors(rule, value, pointer)
    elif isinstance(rule, Enum):
        if not isinstance(value, str) or value not in rule.values:
            yield _at(f"must be one of {', '.join(sorted(rule.values))}", pointer)
    elif isinstance(rule, Text):
        yield from _text_errors(rule, value, pointer)
    elif isinstance(rule, Obj):
        yield from _object_errors(rule, value, pointer)
    elif isinstance(rule, ListOf):
        yield from _list_errors(rule, value, pointer)
    elif isinstance(rule, Loose) and not isinstance(value, rule.kind):
        yield _at(f"must provide a {'object' if rule.kind is dict else 'value'}", pointer)


def _str_errors(rule: Str, value: object, pointer: str) -> Iterator[str]:
    if not isinstance(value, str):
        yield _at("must be a string", pointer)
        return
    length = code_units(value)
    if length > rule.max:
        yield _at(f"must be less than {rule.max + 1} characters", pointer)
    elif length < rule.min:
        yield _at(f"must be more than {rule.min - 1} characters", pointer)


def _int_errors(rule: Int, value: object, pointer: str) -> Iterator[str]:
    if not isinstance(value, int) or isinstance(value, bool):
        yield _at("must be an integer", pointer)
    elif rule.min is not None and value < rule.min:
        yield _at(f"must be at least {rule.min}", pointer)
    elif rule.max is not None and value > rule.max:
        yield _at(f"must be at most {rule.max}", pointer)


def _text_errors(rule: Text, value: object, pointer: str) -> Iterator[str]:
    if not isinstance(value, dict):
        yield _at("must provide a text object", pointer)
        return
    kind = value.get("type")
    if kind not in rule.kinds:
        allowed = " or ".join(sorted(rule.kinds))
        yield _at(f"must be a {allowed} text object, not {kind!r}", f"{pointer}/type")
        return
    yield from _shape_errors(TEXT_FIELDS[str(kind)], value, pointer, extra=("type",))
    text = value.get("text")
    if isinstance(text, str) and rule.max < 3000 and code_units(text) > rule.max:
        yield _at(f"must be less than {rule.max + 1} characters", f"{pointer}/text")


def _object_errors(rule: Obj, value: object, pointer: str) -> Iterator[str]:
    if not isinstance(value, dict):
        yield _at("must provide an object", pointer)
        return
    if rule.shape is not None:
        yield from _shape_errors(COMPOSITIONS[rule.shape], value, pointer, extra=())
        return
    kind = value.get("type")
    if not isinstance(kind, str) or kind not in rule.kinds:
        yield _at(f"{kind!r} is not allowed here", f"{pointer}/type")
        return
    if kind in _TEXT_KINDS:
        yield from _text_errors(Text(max=3000), value, pointer)
        return
    yield from _shape_errors(ELEMENTS[kind], value, pointer, extra=("type",))
    yield from _element_rules(kind, value, pointer)


def _element_rules(kind: str, element: Mapping[str, Any], pointer: str) -> Iterator[str]:
    low, high = element.get("min_length"), element.get("max_length")
    if isinstance(low, int) and isinstance(high, int) and low > high:
        yield _at("min_length must not exceed max_length", f"{pointer}/min_length")


def _list_errors(rule: ListOf, value: object, pointer: str) -> Iterator[str]:
    if not isinstance(value, list):
        yield _at("must provide an array", pointer)
        return
    if len(value) < rule.min:
        yield _at(f"must provide at least {rule.min} items", pointer)
    if len(value) > rule.max:
        yield _at(f"no more than {rule.max} items allowed", pointer)
    for index, item in enumerate(value):
        yield from _value_errors(rule.item, item, f"{pointer}/{index}")
