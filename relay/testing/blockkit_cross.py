"""Block Kit rules that span more than one field, which Slack applies to a message's or a
view's blocks as a whole:

- ``initial_option`` / ``initial_options`` must each exactly match one of the element's
  ``options`` (or of its ``option_groups``' options). Slack's select menu, radio button
  group, checkboxes and overflow references: "A single option that exactly matches one of
  the options within options or option_groups" (docs.slack.dev/reference/block-kit/
  block-elements/select-menu-element, …/radio-button-group-element, …/checkboxes-element).
- At most one element may set ``focus_on_load``: "Only one element can be set to true"
  (the same pages, on ``focus_on_load``).

Each error reads like the others (``… [json-pointer:/blocks/0/element/initial_option]``).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

__all__ = ["cross_errors"]

_CONTAINERS = ("elements", "element", "accessory")


def cross_errors(blocks: list[Any], prefix: str) -> list[str]:
    """The errors of rules spanning ``blocks``' elements; ``prefix`` is the pointer of the
    blocks array (``/blocks`` in a message, ``/view/blocks`` in a view)."""
    errors: list[str] = []
    focused: list[str] = []
    for index, block in enumerate(blocks):
        if not isinstance(block, dict):
            continue
        for element, pointer in _elements(block, f"{prefix}/{index}"):
            if element.get("focus_on_load") is True:
                focused.append(pointer)
            errors.extend(_initial_errors(element, pointer))
    for pointer in focused[1:]:
        errors.append(
            f"only one element may set focus_on_load to true [json-pointer:{pointer}/focus_on_load]"
        )
    return errors


def _elements(block: dict[str, Any], pointer: str) -> Iterator[tuple[dict[str, Any], str]]:
    for key in _CONTAINERS:
        value = block.get(key)
        if isinstance(value, dict):
            yield value, f"{pointer}/{key}"
        elif isinstance(value, list):
            for index, element in enumerate(value):
                if isinstance(element, dict):
                    yield element, f"{pointer}/{key}/{index}"


def _initial_errors(element: dict[str, Any], pointer: str) -> Iterator[str]:
    choices = _options(element)
    if choices is None:
        return
    initial = element.get("initial_option")
    if isinstance(initial, dict) and initial not in choices:
        where = f"{pointer}/initial_option"
        yield f"initial_option must match one of the options [json-pointer:{where}]"
    initials = element.get("initial_options")
    if isinstance(initials, list):
        for index, option in enumerate(initials):
            if option not in choices:
                yield (
                    "initial_options must each match one of the options "
                    f"[json-pointer:{pointer}/initial_options/{index}]"
                )


def _options(element: dict[str, Any]) -> list[Any] | None:
    """The element's own options, or ``None`` where they come from elsewhere (an external
    data source, users, conversations: nothing here to match)."""
    options = element.get("options")
    if isinstance(options, list):
        return options
    groups = element.get("option_groups")
    if isinstance(groups, list):
        return [
            option
            for group in groups
            if isinstance(group, dict) and isinstance(group.get("options"), list)
            for option in group["options"]
        ]
    return None
