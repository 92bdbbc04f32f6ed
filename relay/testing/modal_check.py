"""A modal view checked as Slack checks the ``view`` of ``views.open``, ``views.update``,
``views.push`` and ``response_action: update/push``.

Slack's rules (docs.slack.dev/reference/views/modal-views): ``type`` is ``modal``; ``title``
a ``plain_text`` of at most 24 characters; ``blocks`` at most 100; ``close`` and ``submit``
``plain_text`` of at most 24 characters, ``submit`` required once an ``input`` block is in
the view; ``private_metadata`` at most 3,000 characters; ``callback_id`` and ``external_id``
at most 255. Blocks follow Block Kit's rules (``relay.testing.blockkit``, with slack_sdk's
block and view validators as a backstop, as for messages), ``block_id``s are unique in the view and
``action_id``s unique in their block. A view over 250 kB answers ``view_too_large``.
Errors read like Slack's, with a ``[json-pointer:/view/…]``.
"""

from __future__ import annotations

import copy
import json
import warnings
from typing import Any

from slack_sdk.models.views import View

from .blockkit_check import block_errors, code_units
from .blockkit_cross import cross_errors
from .blocks import sdk_block_errors

__all__ = [
    "MAX_BUTTON_CHARS",
    "MAX_CALLBACK_ID_CHARS",
    "MAX_PRIVATE_METADATA_CHARS",
    "MAX_TITLE_CHARS",
    "MAX_VIEW_BLOCKS",
    "MAX_VIEW_BYTES",
    "view_errors",
    "view_too_large",
]

MAX_TITLE_CHARS = 24
"""Characters of a modal's ``title``."""
MAX_BUTTON_CHARS = 24
"""Characters of a modal's ``submit`` and ``close`` texts."""
MAX_VIEW_BLOCKS = 100
"""Blocks in one view."""
MAX_PRIVATE_METADATA_CHARS = 3000
"""Characters of ``private_metadata``."""
MAX_CALLBACK_ID_CHARS = 255
"""Characters of ``callback_id`` (and of ``external_id``)."""
MAX_VIEW_BYTES = 250_000
"""Bytes of a view's JSON past which Slack answers ``view_too_large`` ("greater than 250kb")."""

_FIELDS = frozenset(
    {
        "type",
        "title",
        "blocks",
        "close",
        "submit",
        "private_metadata",
        "callback_id",
        "clear_on_close",
        "notify_on_close",
        "external_id",
        "submit_disabled",
    }
)


def view_too_large(view: object) -> bool:
    """Whether ``view``'s JSON is over Slack's 250 kB."""
    return len(json.dumps(view, ensure_ascii=False).encode()) > MAX_VIEW_BYTES


def view_errors(view: object) -> list[str]:
    """Every way ``view`` breaks Slack's rules for a modal, each with its json-pointer."""
    if not isinstance(view, dict):
        return [_at("must provide an object", "/view")]
    errors: list[str] = []
    for name in view:
        if name not in _FIELDS:
            errors.append(_at(f"unknown field {name!r}", f"/view/{name}"))
    if view.get("type") != "modal":
        errors.append(_at("must be modal", "/view/type"))
    for name in ("title", "blocks"):
        if name not in view:
            errors.append(_at(f"missing required field: {name}", "/view"))
    for name in ("title", "close", "submit"):
        if name in view:
            errors.extend(_plain_text_errors(view[name], f"/view/{name}"))
    for name, limit in (
        ("private_metadata", MAX_PRIVATE_METADATA_CHARS),
        ("callback_id", MAX_CALLBACK_ID_CHARS),
        ("external_id", MAX_CALLBACK_ID_CHARS),
    ):
        if name in view:
            errors.extend(_string_errors(view[name], limit, f"/view/{name}"))
    for name in ("clear_on_close", "notify_on_close", "submit_disabled"):
        if name in view and not isinstance(view[name], bool):
            errors.append(_at("must be a boolean", f"/view/{name}"))
    blocks = view.get("blocks")
    if "blocks" in view:
        errors.extend(_blocks_errors(blocks))
    if (
        isinstance(blocks, list)
        and any(isinstance(b, dict) and b.get("type") == "input" for b in blocks)
        and "submit" not in view
    ):
        errors.append(_at("must provide submit when the view has input blocks", "/view"))
    return errors or _sdk_view_errors(view)


def _sdk_view_errors(view: dict[str, Any]) -> list[str]:
    # slack_sdk's View validators as a backstop, as for a message's blocks; its constructor
    # may warn or raise on input it does not expect, and neither may escape into the server.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            View(**copy.deepcopy(view)).validate_json()
        except Exception as exc:
            return [_at(str(exc), "/view")]
    return []


def _blocks_errors(blocks: object) -> list[str]:
    if not isinstance(blocks, list):
        return [_at("must provide an array", "/view/blocks")]
    errors: list[str] = []
    if len(blocks) > MAX_VIEW_BLOCKS:
        errors.append(_at(f"no more than {MAX_VIEW_BLOCKS} items allowed", "/view/blocks"))
    block_ids: set[str] = set()
    for index, block in enumerate(blocks):
        pointer = f"/view/blocks/{index}"
        found = block_errors(block, pointer)
        if not found and isinstance(block, dict):
            found = sdk_block_errors(block, pointer)
        errors.extend(found)
        if not isinstance(block, dict):
            continue
        block_id = block.get("block_id")
        if isinstance(block_id, str):
            if block_id in block_ids:
                errors.append(_at(f"duplicate block_id {block_id!r}", f"{pointer}/block_id"))
            block_ids.add(block_id)
        errors.extend(_duplicate_action_ids(block, pointer))
    errors.extend(cross_errors(blocks, "/view/blocks"))
    return errors


def _duplicate_action_ids(block: dict[str, Any], pointer: str) -> list[str]:
    elements = block.get("elements")
    if block.get("type") != "actions" or not isinstance(elements, list):
        return []
    errors: list[str] = []
    seen: set[str] = set()
    for index, element in enumerate(elements):
        action_id = element.get("action_id") if isinstance(element, dict) else None
        if isinstance(action_id, str):
            if action_id in seen:
                where = f"{pointer}/elements/{index}"
                errors.append(_at(f"duplicate action_id {action_id!r}", where))
            seen.add(action_id)
    return errors


def _plain_text_errors(value: object, pointer: str) -> list[str]:
    if not isinstance(value, dict):
        return [_at("must provide a text object", pointer)]
    if value.get("type") != "plain_text":
        return [_at(f"must be a plain_text text object, not {value.get('type')!r}", pointer)]
    errors = [
        _at(f"unknown field {name!r}", f"{pointer}/{name}")
        for name in value
        if name not in ("type", "text", "emoji")
    ]
    text = value.get("text")
    if not isinstance(text, str):
        errors.append(_at("must be a string", f"{pointer}/text"))
    elif not text:
        errors.append(_at("must be more than 0 characters", f"{pointer}/text"))
    elif code_units(text) > MAX_TITLE_CHARS:
        errors.append(_at(f"must be less than {MAX_TITLE_CHARS + 1} characters", f"{pointer}/text"))
    if "emoji" in value and not isinstance(value["emoji"], bool):
        errors.append(_at("must be a boolean", f"{pointer}/emoji"))
    return errors


def _string_errors(value: object, limit: int, pointer: str) -> list[str]:
    if not isinstance(value, str):
        return [_at("must be a string", pointer)]
    if code_units(value) > limit:
        return [_at(f"must be less than {limit + 1} characters", pointer)]
    return []


def _at(message: str, pointer: str) -> str:
    return f"{message} [json-pointer:{pointer}]"
