"""Block Kit validation as Slack applies it to ``chat.postMessage`` and friends, and the
``block_id``/``action_id`` values Slack fills in when a message leaves them out.

The checks are ``slack_sdk.models.blocks``' validators plus the limits the SDK does not know
about (block count, total ``markdown`` text, element types allowed in an actions block,
duplicate ids, empty text objects); each error ends with a ``[json-pointer:/blocks/…]`` like
Slack's own ``errors`` list.

Slack also refuses a message whose blocks hold too much text in total, with
``msg_blocks_too_long``, even when every block is within its own documented limit: at about
13,200 characters (slackapi/bolt-js#2509 measured 13,297 with markdown blocks alone, fewer
with other blocks; Slack's reply there speaks of 12,000 characters "with a buffer for block
containers"; bolt-js#2867). The fake totals every ``text`` string of the blocks and refuses
past ``MAX_BLOCK_TEXT_CHARS``.
"""

from __future__ import annotations

import copy
import hashlib
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from slack_sdk.models.blocks import Block

__all__ = [
    "MAX_BLOCKS",
    "MAX_BLOCK_TEXT_CHARS",
    "MAX_MARKDOWN_CHARS",
    "MAX_TEXT_CHARS",
    "BlocksRejected",
    "block_text_chars",
    "check_blocks",
    "with_generated_ids",
]

MAX_BLOCKS = 50
"""Blocks allowed in one message."""
MAX_MARKDOWN_CHARS = 12_000
"""Characters allowed across all ``markdown`` blocks of one message."""
MAX_BLOCK_TEXT_CHARS = 13_200
"""Characters of text all blocks of one message may hold (Slack: ``msg_blocks_too_long``)."""
MAX_TEXT_CHARS = 40_000
"""Characters allowed in a message's top-level ``text`` (Slack answers ``msg_too_long``)."""
_MAX_TEXT_INPUT_LENGTH = 3_000

_INPUT_ONLY_ELEMENTS = frozenset(
    {
        "plain_text_input",
        "email_text_input",
        "url_text_input",
        "number_input",
        "rich_text_input",
        "file_input",
    }
)
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
        errors.extend(_sdk_errors(block, pointer))
        errors.extend(_structure_errors(block, pointer))
        errors.extend(_empty_text_errors(block, pointer))
        block_id = block.get("block_id")
        if isinstance(block_id, str):
            if block_id in block_ids:
                errors.append(f"duplicate block_id {block_id!r} [json-pointer:{pointer}/block_id]")
            block_ids.add(block_id)
        if block.get("type") == "markdown" and isinstance(block.get("text"), str):
            markdown_chars += len(block["text"])
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
                f"the blocks hold {total} characters of text, more than Slack takes in one"
                f" message (about {MAX_BLOCK_TEXT_CHARS}) [json-pointer:/blocks]"
            ],
        )
    return None


def block_text_chars(node: object) -> int:
    """Every ``text`` string's characters in ``node`` (blocks, a block, an element)."""
    if isinstance(node, list):
        return sum(block_text_chars(item) for item in node)
    if not isinstance(node, dict):
        return 0
    return sum(
        len(value) if key == "text" and isinstance(value, str) else block_text_chars(value)
        for key, value in node.items()
    )


def _sdk_errors(block: dict[str, Any], pointer: str) -> list[str]:
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


def _structure_errors(block: dict[str, Any], pointer: str) -> list[str]:
    errors: list[str] = []
    kind = block.get("type")
    if kind == "actions":
        elements = block.get("elements")
        if not isinstance(elements, list) or not elements:
            return [f"must provide at least 1 element [json-pointer:{pointer}/elements]"]
        action_ids: set[str] = set()
        for index, element in enumerate(elements):
            where = f"{pointer}/elements/{index}"
            element_type = element.get("type") if isinstance(element, dict) else None
            if element_type in _INPUT_ONLY_ELEMENTS:
                errors.append(
                    f"{element_type} is not allowed in an actions block [json-pointer:{where}]"
                )
            action_id = element.get("action_id") if isinstance(element, dict) else None
            if isinstance(action_id, str):
                if action_id in action_ids:
                    errors.append(f"duplicate action_id {action_id!r} [json-pointer:{where}]")
                action_ids.add(action_id)
    elif kind == "header":
        text = block.get("text")
        if not isinstance(text, dict) or text.get("type") != "plain_text":
            errors.append(f"header text must be a plain_text object [json-pointer:{pointer}/text]")
    elif kind == "section" and isinstance(block.get("text"), str):
        errors.append(f"text must be a text object [json-pointer:{pointer}/text]")
    elif kind == "input":
        element = block.get("element")
        if not isinstance(element, dict) or "type" not in element:
            errors.append(f"must provide an element [json-pointer:{pointer}/element]")
        elif element["type"] == "plain_text_input":
            max_length = element.get("max_length")
            if isinstance(max_length, int) and max_length > _MAX_TEXT_INPUT_LENGTH:
                errors.append(
                    f"max_length must be at most {_MAX_TEXT_INPUT_LENGTH} "
                    f"[json-pointer:{pointer}/element/max_length]"
                )
    return errors


def _empty_text_errors(node: object, pointer: str) -> Iterator[str]:
    if isinstance(node, dict):
        if node.get("type") in ("plain_text", "mrkdwn") and node.get("text") == "":
            yield f"must be more than 0 characters [json-pointer:{pointer}/text]"
        for key, value in node.items():
            yield from _empty_text_errors(value, f"{pointer}/{key}")
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _empty_text_errors(value, f"{pointer}/{index}")


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
