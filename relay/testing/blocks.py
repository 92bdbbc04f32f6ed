"""Block Kit validation as Slack applies it to ``chat.postMessage`` and friends, and the
``block_id``/``action_id`` values Slack fills in when a message leaves them out.

The checks are Block Kit's rules as data (``relay.testing.blockkit``: kinds, fields, required
fields, text kinds, lengths; unknown fields refused) plus the limits of a whole message (block
count, total ``markdown`` text, duplicate ids); ``slack_sdk.models.blocks``' validators run
last as a backstop. Each error ends with a ``[json-pointer:/blocks/…]`` like Slack's own
``errors`` list.

Slack also refuses a message whose blocks hold too much text in total, with
``msg_blocks_too_long``, even when every block is within its own documented limit. The limit
is undocumented: slackapi/bolt-js#2509 measured a refusal at 13,297 characters (markdown
blocks alone; Slack's reply there speaks of 12,000 "with a buffer for block containers"), and
bolt-js#2867 one at 11,341 characters of block text (17,694 bytes of blocks JSON, 45 blocks).
The fake takes the conservative side: it refuses from 11,341 characters, the lowest refusal
measured in public (``MAX_BLOCK_TEXT_CHARS``). It applies no byte limit: Slack documents menus
of 100 options, which alone pass 17,694 bytes, so bytes were unlikely the cause there.

Every length here, as in the rules, is in UTF-16 code units (``code_units``: an emoji outside
the Basic Multilingual Plane counts 2), the strict reading of Slack's "characters".
"""

from __future__ import annotations

import copy
import hashlib
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from slack_sdk.models.blocks import Block

from .blockkit_check import block_errors, code_units
from .blockkit_cross import cross_errors

__all__ = [
    "MAX_BLOCKS",
    "MAX_BLOCK_TEXT_CHARS",
    "MAX_MARKDOWN_CHARS",
    "MAX_TEXT_CHARS",
    "BlocksRejected",
    "block_text_chars",
    "check_blocks",
    "sdk_block_errors",
    "with_generated_ids",
]

MAX_BLOCKS = 50
"""Blocks allowed in one message."""
MAX_MARKDOWN_CHARS = 12_000
"""Characters allowed across all ``markdown`` blocks of one message."""
MAX_BLOCK_TEXT_CHARS = 11_340
"""Characters of text all blocks of one message may hold (Slack: ``msg_blocks_too_long``;
undocumented: one below the lowest refusal measured in public, bolt-js#2867)."""
MAX_TEXT_CHARS = 40_000
"""Characters (UTF-16 code units) allowed in a message's top-level ``text`` (Slack answers
``msg_too_long``)."""
_ELEMENT_CONTAINERS = ("elements", "element", "accessory")


@dataclass(frozen=True, kw_only=True)
class BlocksRejected:
    """Why Slack refuses a message's blocks: the ``error`` code and the ``errors`` details."""

    error: str
    errors: list[str]


def check_blocks(blocks: object) -> BlocksRejected | None:
    """Validate a message's ``blocks`` like Slack does; ``None`` when they are acceptable."""
    if not isinstance(blocks, list) or not all(isinstance(b, dict) for b in blocks):
        return BlocksRejected(
            error="invalid_blocks_format", errors=["blocks must be an array of objects"]
        )
    errors: list[str] = []
    if len(blocks) > MAX_BLOCKS:
        errors.append(f"no more than {MAX_BLOCKS} items allowed [json-pointer:/blocks]")
    markdown_chars = 0
    block_ids: set[str] = set()
    for index, block in enumerate(blocks):
        pointer = f"/blocks/{index}"
        errors.extend(block_errors(block, pointer) or sdk_block_errors(block, pointer))
        errors.extend(_duplicate_action_ids(block, pointer))
        block_id = block.get("block_id")
        if isinstance(block_id, str):
            if block_id in block_ids:
                errors.append(f"duplicate block_id {block_id!r} [json-pointer:{pointer}/block_id]")
            block_ids.add(block_id)
        if block.get("type") == "markdown" and isinstance(block.get("text"), str):
            markdown_chars += code_units(block["text"])
    errors.extend(cross_errors(blocks, "/blocks"))
    if markdown_chars > MAX_MARKDOWN_CHARS:
        errors.append(
            f"markdown blocks hold {markdown_chars} characters in total, more than "
            f"{MAX_MARKDOWN_CHARS} [json-pointer:/blocks]"
        )
    if errors:
        return BlocksRejected(error="invalid_blocks", errors=errors)
    total = block_text_chars(blocks)
    if total > MAX_BLOCK_TEXT_CHARS:
        return BlocksRejected(
            error="msg_blocks_too_long",
            errors=[
                f"the blocks hold {total} characters of text, more than Slack is known to take"
                f" in one message ({MAX_BLOCK_TEXT_CHARS}) [json-pointer:/blocks]"
            ],
        )
    return None


def block_text_chars(node: object) -> int:
    """Every ``text`` string's characters (UTF-16 code units) in ``node`` (blocks, a block,
    an element)."""
    if isinstance(node, list):
        return sum(block_text_chars(item) for item in node)
    if not isinstance(node, dict):
        return 0
    return sum(
        code_units(value) if key == "text" and isinstance(value, str) else block_text_chars(value)
        for key, value in node.items()
    )


def sdk_block_errors(block: dict[str, Any], pointer: str) -> list[str]:
    """slack_sdk's own validators on ``block`` (a backstop after Block Kit's rules)."""
    # The SDK's constructors can warn (deprecated keys) and raise on malformed input; neither
    # may escape into the server, and pytest turns warnings into errors.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            parsed = Block.parse(copy.deepcopy(block))
            if parsed is None:
                return [f"unsupported block type {block.get('type')!r} [json-pointer:{pointer}]"]
            parsed.validate_json()
            parsed.to_dict()
        except Exception as exc:
            return [f"{exc} [json-pointer:{pointer}]"]
    return []


def _duplicate_action_ids(block: dict[str, Any], pointer: str) -> list[str]:
    errors: list[str] = []
    elements = block.get("elements") if block.get("type") == "actions" else None
    action_ids: set[str] = set()
    for index, element in enumerate(elements if isinstance(elements, list) else []):
        action_id = element.get("action_id") if isinstance(element, dict) else None
        if isinstance(action_id, str):
            if action_id in action_ids:
                where = f"{pointer}/elements/{index}"
                errors.append(f"duplicate action_id {action_id!r} [json-pointer:{where}]")
            action_ids.add(action_id)
    return errors


def with_generated_ids(blocks: list[dict[str, Any]], *, seed: str) -> list[dict[str, Any]]:
    """A copy of ``blocks`` where every block has a ``block_id`` and every interactive element
    an ``action_id``, generated from ``seed`` and the position where missing, as Slack does."""
    filled = copy.deepcopy(blocks)
    for index, block in enumerate(filled):
        if "block_id" not in block:
            block["block_id"] = _short_id(f"{seed}/{index}")
        for position, element in enumerate(_elements(block)):
            if "action_id" not in element and element.get("type") not in ("image", None):
                element["action_id"] = _short_id(f"{seed}/{index}/{position}")
    return filled


def _elements(block: dict[str, Any]) -> Iterator[dict[str, Any]]:
    for key in _ELEMENT_CONTAINERS:
        value = block.get(key)
        if isinstance(value, dict) and "type" in value:
            yield value
        elif isinstance(value, list) and block.get("type") == "actions":
            yield from (e for e in value if isinstance(e, dict))


def _short_id(source: str) -> str:
    # Slack's generated ids are a few random base62-ish characters; a hash keeps them
    # deterministic so that two runs of a test see the same payloads.
    digest = hashlib.sha256(source.encode()).hexdigest()
    return digest[:5]
