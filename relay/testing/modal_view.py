"""What a modal is in the fake: its views (the app's definition, Slack's id and hash, what
the user entered, the errors shown), the ``trigger_id``s interactions hand out, and a clock a
test moves by hand."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .elements import (
    CHECKBOXES,
    MULTI_SELECTS,
    SINGLE_SELECTS,
    TEXT_INPUTS,
    Located,
    ViewerState,
    find_options,
    iter_elements,
    state_values,
)

__all__ = ["Clock", "FakeModal", "FakeView", "ManualClock", "Trigger"]

Clock = Callable[[], float]
"""Seconds on a monotonic scale."""


class ManualClock:
    """A clock that moves only when told: ``FakeSlack(clock=clock)``, then
    ``clock.advance(3.1)`` expires the triggers issued so far, with no sleep."""

    def __init__(self, start: float = 1_000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        """Move the clock ``seconds`` forward."""
        if seconds < 0:
            raise ValueError("a clock does not go back")
        self.now += seconds


@dataclass(kw_only=True)
class Trigger:
    """One ``trigger_id``: who caused it, when, from which view (if any), whether used."""

    trigger_id: str
    user: str
    issued: float
    view_id: str | None = None
    used: bool = False


@dataclass(kw_only=True, eq=False)
class FakeView:
    """One view of a modal as Slack holds it: the app's ``view`` with Slack's own fields."""

    id: str
    definition: dict[str, Any]
    """The view as the app sent it (``type``, ``title``, ``blocks`` …)."""
    hash: str
    root_view_id: str
    previous_view_id: str | None
    state: ViewerState = field(default_factory=dict)
    """What the user typed, chose and ticked: ``(block_id, action_id)`` -> state entry."""
    errors: dict[str, str] = field(default_factory=dict)
    """Field errors shown under input blocks (``block_id`` -> message), from the app's
    ``response_action: errors`` or from Slack's client (a required field left empty)."""

    @property
    def blocks(self) -> list[dict[str, Any]]:
        """The view's blocks."""
        blocks = self.definition.get("blocks")
        return blocks if isinstance(blocks, list) else []

    @property
    def title(self) -> str:
        """The modal's title text."""
        return _text_of(self.definition.get("title"))

    @property
    def callback_id(self) -> str:
        """The view's ``callback_id`` (``""`` when unset)."""
        return str(self.definition.get("callback_id") or "")

    @property
    def private_metadata(self) -> str:
        """The view's ``private_metadata`` (``""`` when unset)."""
        return str(self.definition.get("private_metadata") or "")

    def input_block_ids(self) -> set[str]:
        """The ``block_id`` of every ``input`` block."""
        return {
            str(b.get("block_id"))
            for b in self.blocks
            if b.get("type") == "input" and b.get("block_id")
        }


@dataclass(kw_only=True, eq=False)
class FakeModal:
    """A modal open (or once open) in one user's client: a stack of views, top last.

    Fill it as the user would (``fill``, ``choose``, ``tick``), then submit it with
    ``FakeSlack.submit_view``; ``errors`` shows what the app (or Slack's client) reported.
    """

    user: str
    stack: list[FakeView]
    closed: bool = False
    problem: str | None = None
    """What the user's client showed instead of the app's answer to the last submission
    (Slack shows such failures as a generic error at the top of the modal), else ``None``."""

    @property
    def top(self) -> FakeView:
        """The view the user sees (once closed: the one they saw last)."""
        return self.stack[-1]

    @property
    def id(self) -> str:
        """The shown view's id (``V…``)."""
        return self.top.id

    @property
    def view(self) -> dict[str, Any]:
        """The shown view as the app defined it."""
        return self.top.definition

    @property
    def title(self) -> str:
        """The shown view's title."""
        return self.top.title

    @property
    def errors(self) -> dict[str, str]:
        """Field errors under the shown view's input blocks: ``block_id`` -> message."""
        return self.top.errors

    @property
    def is_open(self) -> bool:
        """Whether the modal is still on the user's screen."""
        return not self.closed

    def labels(self) -> list[str]:
        """The label of every input block of the shown view, in order."""
        return [_text_of(b.get("label")) for b in self.top.blocks if b.get("type") == "input"]

    def field(self, label: str) -> Located:
        """The input element whose block's label is ``label`` (or whose ``block_id`` is)."""
        found = [
            located
            for located in iter_elements(self.top.blocks)
            if located.block.get("type") == "input"
            and label in (_text_of(located.block.get("label")), located.block_id)
        ]
        if len(found) != 1:
            count = "no" if not found else str(len(found))
            raise LookupError(f"{count} input labelled {label!r}; the modal has {self.labels()}")
        return found[0]

    def value(self, label: str) -> dict[str, Any]:
        """The ``state.values`` entry the field ``label`` would submit now."""
        located = self.field(label)
        values = state_values([located.block], self.top.state)
        return values[located.block_id][located.action_id]

    def fill(self, label: str, text: str) -> None:
        """Type ``text`` into the text or number input labelled ``label`` (replacing what
        was there); ``""`` empties it."""
        located = self.field(label)
        if located.kind not in TEXT_INPUTS:
            raise LookupError(f"{label!r} is a {located.kind}, not a text input")
        self.top.state[located.key] = {"type": located.kind, "value": text or None}

    def choose(self, label: str, option: str) -> None:
        """Pick ``option`` (its visible text) in the select or radio buttons ``label``."""
        located = self.field(label)
        _, options = find_options(
            [located.block], SINGLE_SELECTS, [option], block_id=located.block_id
        )
        self.top.state[located.key] = {"type": located.kind, "selected_option": options[0]}

    def tick(self, label: str, options: list[str]) -> None:
        """Set the checkboxes (or multi-select) ``label`` to exactly ``options``."""
        if isinstance(options, str):
            raise TypeError("pass a list of option texts, not one string")
        located = self.field(label)
        _, picked = find_options(
            [located.block], CHECKBOXES | MULTI_SELECTS, list(options), block_id=located.block_id
        )
        self.top.state[located.key] = {"type": located.kind, "selected_options": picked}


def _text_of(text_object: object) -> str:
    if isinstance(text_object, dict):
        return str(text_object.get("text", ""))
    return ""
