"""The vocabulary of ``relay.testing.blockkit``'s rules: what a field of a Block Kit object may
hold (a bounded string, a boolean, an integer, one of some values, a text object, an element
or composition object, a list of these) and the shape of one kind of object."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

__all__ = ["Bool", "Enum", "Int", "ListOf", "Loose", "Obj", "Rule", "Shape", "Str", "Text"]


@dataclass(frozen=True)
class Str:
    """A string of ``min``..``max`` UTF-16 code units."""

    max: int
    min: int = 1


@dataclass(frozen=True)
class Bool:
    """A JSON boolean (``"yes"`` or ``"true"`` are refused, as by Slack)."""


@dataclass(frozen=True)
class Int:
    """A JSON integer within ``min``..``max`` (``None``: unbounded)."""

    min: int | None = None
    max: int | None = None


@dataclass(frozen=True)
class Enum:
    """One of ``values`` (strings)."""

    values: frozenset[str]


@dataclass(frozen=True)
class Text:
    """A text object of one of ``kinds`` (``plain_text``, ``mrkdwn``) whose ``text`` holds at
    most ``max`` code units."""

    max: int
    kinds: frozenset[str] = frozenset({"plain_text", "mrkdwn"})


@dataclass(frozen=True)
class Obj:
    """An object whose ``type`` is one of ``kinds`` (keys of ``ELEMENTS``), or, for a
    composition object without a ``type``, the ``COMPOSITIONS`` shape named ``shape``."""

    kinds: frozenset[str] = frozenset()
    shape: str | None = None


@dataclass(frozen=True)
class ListOf:
    """A list of ``min``..``max`` items, each following ``item``."""

    item: Rule
    max: int
    min: int = 1


@dataclass(frozen=True)
class Loose:
    """A value the fake does not check in depth (rich text's nested elements, a file's
    source): any JSON of the given Python ``kind``."""

    kind: type


Rule = Str | Bool | Int | Enum | Text | Obj | ListOf | Loose


@dataclass(frozen=True)
class Shape:
    """The fields a kind of object may hold (``type`` and ``block_id`` aside) and which of
    them are required; ``one_of`` lists field groups of which at least one must be present."""

    fields: Mapping[str, Rule]
    required: frozenset[str] = frozenset()
    one_of: tuple[tuple[str, ...], ...] = field(default=())
