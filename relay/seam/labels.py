"""How an answer compares, so that a test reads as the JSON shows the answer.

``Labels`` (an item's ``selected``) and ``Answers`` (an answer's ``answers``) are tuples (an
answer is immutable) that also equal the list with the same items; ``equal_or_wire`` makes an
answer and each of its items also equal their wire form, the dict ``to_dict()`` gives.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import fields
from typing import Any, TypeVar

__all__ = ["Answers", "Labels", "equal_or_wire"]

_T = TypeVar("_T")


class _ListEqual(tuple[_T, ...]):
    """A tuple that also equals the list with the same items."""

    __slots__ = ()

    def __eq__(self, other: object) -> bool:
        if isinstance(other, list):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))
        return tuple.__eq__(self, other)

    def __ne__(self, other: object) -> bool:
        return not self == other

    # Equal to a list, which has no hash: equal tuples still hash alike.
    __hash__ = tuple.__hash__


class Labels(_ListEqual[str]):
    """The option labels of an answer: a tuple (an answer is immutable) that also equals
    the list with the same labels, as the JSON shows them and as tests write them:
    ``item.selected == ["Delete"]`` is true, like ``item.selected == ("Delete",)``."""

    __slots__ = ()


class Answers(_ListEqual[_T]):
    """An answer's items, one per question: a tuple that also equals the list of the same
    items, each written as an item or as its wire form:
    ``answer.answers == [{"id": "go", "selected": ["Delete"]}]`` is true."""

    __slots__ = ()


def equal_or_wire(self: Any, other: object) -> bool:
    """``__eq__`` for an answer or an answer item: equal to one of its own class whose
    compared fields are equal, and to a mapping equal to its wire form (``to_dict()``)."""
    if isinstance(other, Mapping):
        return bool(self.to_dict() == dict(other))
    compared = [f.name for f in fields(self) if f.compare]
    if type(other) is not type(self):
        # Something else: let it answer, as a dataclass's own ``__eq__`` does.
        return NotImplemented  # type: ignore[no-any-return]
    return all(getattr(self, name) == getattr(other, name) for name in compared)
