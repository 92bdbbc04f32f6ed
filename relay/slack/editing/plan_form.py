"""The Edit form of a plan's review: the scope relay derived, as boxes to keep. Pure.

Every item that would run without asking is a box, ticked; what stays *ask each time* is
listed under them, with why, and has no box. Submitting approves the plan with the ticked
items only (``relay.slack.editing.plan_flow``; the Decider checks them again).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from relay.asks.plan_door import ScopeChoice
from relay.slack.editing.form import EDIT_CALLBACK
from relay.slack.rendering import kit
from relay.slack.rendering.text import escape_within

__all__ = ["SCOPE_BLOCK", "plan_scope_view", "read_kept"]

SCOPE_BLOCK = "relay.plan.scope"
_ACTION = "keep"
_MAX_BOXES = 10  # Slack's checkboxes; past it, a multi-select menu (100 options)
_MAX_OPTIONS = 100
_ASKED_CHARS = 2900


def plan_scope_view(
    choices: tuple[ScopeChoice, ...],
    *,
    ask_id: str,
    index: int,
    channel: str | None,
    ts: str | None,
) -> dict[str, Any]:
    """The form for the plan of question ``index`` of ask ``ask_id`` (whose message is
    ``channel``/``ts``): its scope items ticked, the ask-each-time ones shown apart."""
    free = [c for c in choices if c.asked is None][:_MAX_OPTIONS]
    asked = [c for c in choices if c.asked is not None]
    options = [kit.option(c.words, c.key) for c in free]
    element: dict[str, Any] = {
        "type": "checkboxes" if len(options) <= _MAX_BOXES else "multi_static_select",
        "action_id": _ACTION,
        "options": options,
        "initial_options": options,
    }
    if element["type"] == "multi_static_select":
        element["placeholder"] = kit.plain("Scope items", kit.PLACEHOLDER_CHARS)
    blocks: list[dict[str, Any]] = [
        kit.section(
            "Untick what this session should *not* do without asking; submitting approves"
            " the plan with the ticked items only (every other call is asked)."
        ),
        {
            "type": "input",
            "block_id": SCOPE_BLOCK,
            "optional": True,
            "label": kit.plain(
                "If approved, this session may, without asking again:", kit.INPUT_LABEL_CHARS
            ),
            "element": element,
        },
    ]
    if asked:
        lines = "\n".join(f"• {c.words} ({c.asked})" for c in asked)
        blocks.append(
            kit.context(escape_within(f"Ask each time (cannot be ticked):\n{lines}", _ASKED_CHARS))
        )
    where = {"a": ask_id, "i": index, "c": channel, "t": ts, "p": 1}
    return {
        "type": "modal",
        "callback_id": EDIT_CALLBACK,
        "title": kit.plain("Narrow the plan", 24),
        "submit": kit.plain("Approve", 24),
        "close": kit.plain("Cancel", 24),
        "private_metadata": json.dumps(where),
        "blocks": blocks,
    }


def read_kept(values: Mapping[str, Any]) -> tuple[str, ...] | None:
    """The keys ticked in a submitted form's ``values``; ``None`` when they are not there as
    the form sends them (a forged or foreign submission)."""
    block = values.get(SCOPE_BLOCK)
    element = block.get(_ACTION) if isinstance(block, Mapping) else None
    if not isinstance(element, Mapping):
        return None
    selected = element.get("selected_options")
    if selected is None:
        return ()
    if not isinstance(selected, list):
        return None
    keys = [o.get("value") if isinstance(o, Mapping) else None for o in selected]
    if not all(isinstance(k, str) for k in keys):
        return None
    return tuple(dict.fromkeys(k for k in keys if isinstance(k, str)))
