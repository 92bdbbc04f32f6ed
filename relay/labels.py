"""The option labels of an answer, as ``AskUserQuestionAnswerItem.selected`` holds them."""

from __future__ import annotations

__all__ = ["Labels"]


class Labels(tuple[str, ...]):
    """The option labels of an answer: a tuple (an answer is immutable) that also equals
    the list with the same labels, as the JSON shows them and as tests write them:
    ``item.selected == ["Delete"]`` is true, like ``item.selected == ("Delete",)``."""

    __slots__ = ()

    def __eq__(self, other: object) -> bool:
        if isinstance(other, list):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))
        return tuple.__eq__(self, other)

    def __ne__(self, other: object) -> bool:
        return not self == other

    # Equal to a list, which has no hash: equal tuples still hash alike.
    __hash__ = tuple.__hash__
