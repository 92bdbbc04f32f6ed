"""What a human sees in a message's blocks: the interactive elements, found by their visible
text, the client-side state of the stateful ones, and the ``actions`` entry Slack sends when
one is used. Pure functions over block dicts.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

__all__ = [
    "BUTTON",
    "BUTTON_SHOWN_CHARS",
    "CHECKBOXES",
    "MULTI_SELECTS",
    "SINGLE_SELECTS",
    "TEXT_INPUTS",
    "Located",
    "ViewerState",
    "action_for",
    "button_text_shown",
    "find_button",
    "find_input",
    "find_options",
    "initial_state",
    "iter_elements",
    "state_values",
    "visible_text_matches",
]

BUTTON_SHOWN_CHARS = 30
"""Characters of a button's text Slack's client shows before it cuts the rest off with "…"
(about 30; the text itself may hold 75, docs.slack.dev/reference/block-kit/block-elements/
button-element). Observed in Slack's clients, not documented: relay issue 12."""

BUTTON = frozenset({"button"})
CHECKBOXES = frozenset({"checkboxes"})
SINGLE_SELECTS = frozenset({"static_select", "radio_buttons"})
MULTI_SELECTS = frozenset({"multi_static_select"})
TEXT_INPUTS = frozenset({"plain_text_input", "email_text_input", "url_text_input", "number_input"})

# type -> (state/action key, key of the initial value in the element)
_STATEFUL: dict[str, tuple[str, str]] = {
    "plain_text_input": ("value", "initial_value"),
    "email_text_input": ("value", "initial_value"),
    "url_text_input": ("value", "initial_value"),
    "number_input": ("value", "initial_value"),
    "checkboxes": ("selected_options", "initial_options"),
    "radio_buttons": ("selected_option", "initial_option"),
    "static_select": ("selected_option", "initial_option"),
    "multi_static_select": ("selected_options", "initial_options"),
    "datepicker": ("selected_date", "initial_date"),
    "timepicker": ("selected_time", "initial_time"),
    "users_select": ("selected_user", "initial_user"),
    "multi_users_select": ("selected_users", "initial_users"),
    "conversations_select": ("selected_conversation", "initial_conversation"),
    "channels_select": ("selected_channel", "initial_channel"),
}

ViewerState = dict[tuple[str, str], dict[str, Any]]
"""One viewer's client-side state: ``(block_id, action_id)`` -> the ``state.values`` entry."""


@dataclass(frozen=True, kw_only=True)
class Located:
    """An interactive element and the block holding it."""

    block: dict[str, Any]
    element: dict[str, Any]

    @property
    def kind(self) -> str:
        """The element's ``type``."""
        return str(self.element.get("type"))

    @property
    def block_id(self) -> str:
        """The holding block's ``block_id``."""
        return str(self.block.get("block_id", ""))

    @property
    def action_id(self) -> str:
        """The element's ``action_id``."""
        return str(self.element.get("action_id", ""))

    @property
    def key(self) -> tuple[str, str]:
        """Where the element's state lives in a ``ViewerState``."""
        return (self.block_id, self.action_id)

    def dispatches(self, trigger: str = "on_enter_pressed") -> bool:
        """Whether using the element sends ``block_actions``: always in actions blocks and
        section accessories; in input blocks only with ``dispatch_action`` (and, for text
        inputs, when ``trigger`` is among ``dispatch_action_config.trigger_actions_on``)."""
        if self.block.get("type") != "input":
            return True
        if self.block.get("dispatch_action") is not True:
            return False
        if self.kind not in TEXT_INPUTS:
            return True
        config = self.element.get("dispatch_action_config") or {}
        return trigger in config.get("trigger_actions_on", ["on_enter_pressed"])

    def describe(self) -> str:
        """The element for an error message: its visible text and ids."""
        text = _text_of(self.element.get("text")) or _text_of(self.element.get("placeholder"))
        if self.kind == "button":
            text = button_text_shown(text)
        shown = f"{text!r} " if text else ""
        return f"{shown}({self.kind}, block_id={self.block_id!r}, action_id={self.action_id!r})"


def iter_elements(blocks: Iterable[dict[str, Any]]) -> Iterator[Located]:
    """Every interactive element of ``blocks``, in display order."""
    for block in blocks:
        kind = block.get("type")
        if kind == "actions":
            for element in block.get("elements") or []:
                if isinstance(element, dict):
                    yield Located(block=block, element=element)
        elif kind == "section" and isinstance(block.get("accessory"), dict):
            if block["accessory"].get("type") != "image":
                yield Located(block=block, element=block["accessory"])
        elif kind == "input" and isinstance(block.get("element"), dict):
            yield Located(block=block, element=block["element"])


def button_text_shown(text: str) -> str:
    """What Slack's client shows of a button whose text is ``text``."""
    if len(text) <= BUTTON_SHOWN_CHARS:
        return text
    return text[: BUTTON_SHOWN_CHARS - 1].rstrip() + "…"


def visible_text_matches(shown: str, wanted: str) -> bool:
    """Whether ``wanted`` is what a human reads as ``shown``: equal, or ``shown`` is a
    truncation ending in "…" of which ``wanted`` extends the visible part."""
    if shown == wanted:
        return True
    return shown.endswith("…") and wanted.startswith(shown[:-1])


def _select(
    blocks: Iterable[dict[str, Any]],
    kinds: frozenset[str],
    *,
    block_id: str | None,
    action_id: str | None,
) -> list[Located]:
    return [
        located
        for located in iter_elements(blocks)
        if located.kind in kinds
        and (block_id is None or located.block_id == block_id)
        and (action_id is None or located.action_id == action_id)
    ]


def _unique(found: list[Located], what: str, visible: list[Located]) -> Located:
    if len(found) == 1:
        return found[0]
    listing = "; ".join(v.describe() for v in visible) or "nothing"
    if not found:
        raise LookupError(f"no {what} in the message; visible: {listing}")
    matches = "; ".join(f.describe() for f in found)
    raise LookupError(
        f"{len(found)} elements match {what}: {matches}; pass block_id= or action_id="
    )


def find_button(
    blocks: Iterable[dict[str, Any]],
    text: str,
    *,
    block_id: str | None = None,
    action_id: str | None = None,
) -> Located:
    """The one button whose visible text is ``text``; ``LookupError`` naming what is visible."""
    buttons = _select(blocks, BUTTON, block_id=block_id, action_id=action_id)
    found = [
        b
        for b in buttons
        if visible_text_matches(button_text_shown(_text_of(b.element.get("text"))), text)
    ]
    return _unique(found, f"button {text!r}", buttons)


def find_input(
    blocks: Iterable[dict[str, Any]],
    kinds: frozenset[str],
    *,
    block_id: str | None = None,
    action_id: str | None = None,
) -> Located:
    """The one element of one of ``kinds``; ``LookupError`` when there is none or several."""
    found = _select(blocks, kinds, block_id=block_id, action_id=action_id)
    return _unique(found, " or ".join(sorted(kinds)), list(iter_elements(blocks)))


def find_options(
    blocks: Iterable[dict[str, Any]],
    kinds: frozenset[str],
    texts: list[str],
    *,
    block_id: str | None = None,
    action_id: str | None = None,
) -> tuple[Located, list[dict[str, Any]]]:
    """The one element of ``kinds`` offering an option for each of ``texts``, and those
    options (copies, in the order of ``texts``)."""
    candidates = _select(blocks, kinds, block_id=block_id, action_id=action_id)
    chosen: list[tuple[Located, list[dict[str, Any]]]] = []
    for located in candidates:
        options = _options_of(located.element)
        picked = [_pick_option(options, text) for text in texts]
        if all(option is not None for option in picked):
            chosen.append((located, [copy.deepcopy(o) for o in picked if o is not None]))
    what = f"{' or '.join(sorted(kinds))} with options {texts!r}"
    if len(chosen) != 1:
        visible = [
            f"{c.describe()} options {[_text_of(o.get('text')) for o in _options_of(c.element)]}"
            for c in candidates
        ]
        listing = "; ".join(visible) or "nothing of that kind"
        count = "no" if not chosen else str(len(chosen))
        raise LookupError(f"{count} {what} in the message; visible: {listing}")
    return chosen[0]


def _options_of(element: dict[str, Any]) -> list[dict[str, Any]]:
    options = [o for o in element.get("options") or [] if isinstance(o, dict)]
    for group in element.get("option_groups") or []:
        options.extend(o for o in group.get("options") or [] if isinstance(o, dict))
    return options


def _pick_option(options: list[dict[str, Any]], text: str) -> dict[str, Any] | None:
    found = [o for o in options if visible_text_matches(_text_of(o.get("text")), text)]
    return found[0] if len(found) == 1 else None


def _text_of(text_object: object) -> str:
    if isinstance(text_object, dict):
        return str(text_object.get("text", ""))
    return text_object if isinstance(text_object, str) else ""


def initial_state(element: dict[str, Any]) -> dict[str, Any]:
    """The ``state.values`` entry of a stateful element nobody has touched yet."""
    kind = str(element.get("type"))
    key, initial_key = _STATEFUL[kind]
    default: object = [] if key.endswith("s") else None
    return {"type": kind, key: copy.deepcopy(element.get(initial_key, default))}


def state_values(
    blocks: Iterable[dict[str, Any]], state: ViewerState
) -> dict[str, dict[str, dict[str, Any]]]:
    """``state.values`` for a viewer: every stateful element of ``blocks``, as they left it."""
    values: dict[str, dict[str, dict[str, Any]]] = {}
    for located in iter_elements(blocks):
        if located.kind in _STATEFUL:
            entry = state.get(located.key) or initial_state(located.element)
            values.setdefault(located.block_id, {})[located.action_id] = copy.deepcopy(entry)
    return values


def action_for(located: Located, *, action_ts: str, state: ViewerState) -> dict[str, Any]:
    """The ``actions[0]`` entry Slack sends when ``located`` is used, with the value the
    viewer's ``state`` holds for it."""
    element = located.element
    action: dict[str, Any] = {
        "type": located.kind,
        "block_id": located.block_id,
        "action_id": located.action_id,
    }
    if located.kind == "button":
        action["text"] = copy.deepcopy(element.get("text"))
        for key in ("value", "style", "url"):
            if key in element:
                action[key] = element[key]
    elif located.kind in _STATEFUL:
        key = _STATEFUL[located.kind][0]
        entry = state.get(located.key) or initial_state(element)
        action[key] = copy.deepcopy(entry[key])
        if "placeholder" in element and located.kind in SINGLE_SELECTS | MULTI_SELECTS:
            action["placeholder"] = copy.deepcopy(element["placeholder"])
    action["action_ts"] = action_ts
    return action
