"""``relay preview FILE``: how a request would look in Slack, without calling Slack."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from relay.cli.common import Commands, parse_json, read_text
from relay.seam.questions import AskUserQuestionRequest, validate_request

if TYPE_CHECKING:
    from relay.slack.rendering.render import RenderedQuestion

__all__ = ["BLOCK_KIT_BUILDER", "add_preview", "builder_url"]

BLOCK_KIT_BUILDER = "https://app.slack.com/block-kit-builder#"


def add_preview(commands: Commands) -> None:
    parser = commands.add_parser(
        "preview",
        help="render a request's questions as Slack messages, without calling Slack",
        description=(
            'Read a request in the JSON wire form ({"questions": [...], "agent": {...}}),'
            " check it as the relay would, and print each question's Slack message with a"
            " Block Kit Builder link to see it rendered."
        ),
    )
    parser.add_argument("file", metavar="FILE", help="the request JSON file, or - for stdin")
    parser.set_defaults(handler=_run_preview)


def _run_preview(args: argparse.Namespace) -> int:
    from relay.slack.rendering.render import render_question

    source = "stdin" if args.file == "-" else args.file
    data = parse_json(read_text(args.file), source)
    request = AskUserQuestionRequest.from_dict(data, strict=True)
    validate_request(request)
    count = len(request.questions)
    messages = [
        _preview_message(
            render_question(
                question,
                ask_id="preview",
                index=index,
                count=count,
                agent=request.agent,
                deadline=None,
            )
        )
        for index, question in enumerate(request.questions)
    ]
    sys.stdout.write(json.dumps({"messages": messages}, indent=2, ensure_ascii=False) + "\n")
    return 0


def _preview_message(rendered: RenderedQuestion) -> dict[str, Any]:
    return {
        "text": rendered.text,
        "blocks": rendered.blocks,
        "builder_url": builder_url(rendered.blocks),
        "detail_overflow": list(rendered.detail_overflow),
    }


def builder_url(blocks: Sequence[dict[str, Any]]) -> str:
    """A Block Kit Builder link that opens with ``blocks`` loaded (the JSON, URL-encoded)."""
    payload = json.dumps({"blocks": list(blocks)}, separators=(",", ":"), ensure_ascii=False)
    return BLOCK_KIT_BUILDER + quote(payload, safe="")
