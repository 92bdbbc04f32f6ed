"""The model-facing tool ``ask_user_question``: its definition and how a call is run."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from relay.errors import HarnessError, bad_request

from .abort import AbortSignal
from .questions import AgentRef, AskUserQuestionRequest
from .service import UserInteractionService

__all__ = ["ASK_USER_QUESTION_TOOL", "ToolResult", "js_json", "run_ask_user_question"]

_DESCRIPTION = (
    "Ask the user a concise question when you need confirmation, a choice, or missing"
    " information before proceeding. Send one or more questions, each with a stable id that"
    " will be echoed in the answer."
)

ASK_USER_QUESTION_TOOL: dict[str, Any] = {
    "name": "ask_user_question",
    "description": _DESCRIPTION,
    "parameters": {
        "type": "object",
        "properties": {
            "questions": {
                "type": "array",
                "description": "The questions to ask, in the order they should be answered.",
                "minItems": 1,
                "items": {
                    "type": "object",
                    "properties": {
                        "id": {
                            "type": "string",
                            "description": "A stable id, echoed in the answer.",
                        },
                        "question": {"type": "string", "description": "The question itself."},
                        "header": {
                            "type": "string",
                            "description": "A short title shown above the question.",
                        },
                        "options": {
                            "type": "array",
                            "description": (
                                "Choices to offer. If you recommend one, put it first and"
                                ' append "(Recommended)" to its label.'
                            ),
                            "items": {
                                "type": "object",
                                "properties": {
                                    "label": {"type": "string"},
                                    "description": {"type": "string"},
                                },
                                "required": ["label"],
                            },
                        },
                        "multi_select": {
                            "type": "boolean",
                            "description": "Allow choosing several options.",
                            "default": False,
                        },
                    },
                    "required": ["id", "question"],
                },
            }
        },
        "required": ["questions"],
    },
}

_MODEL_QUESTION_KEYS = ("id", "question", "header", "options")


@dataclass(frozen=True, slots=True)
class ToolResult:
    """What a tool call returns to the model: text, plus structured value or error."""

    is_error: bool
    text: str
    value: dict[str, Any] | None = None
    error: dict[str, Any] | None = None


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def js_json(value: Any) -> str:
    """Compact JSON exactly as JavaScript's ``JSON.stringify`` writes it."""
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    # JSON.stringify escapes lone surrogates; Python would emit them raw (and unencodable).
    return _LONE_SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def _request_from_arguments(
    arguments: Mapping[str, Any], agent: AgentRef | None, signal: AbortSignal | None
) -> AskUserQuestionRequest:
    if not isinstance(arguments, Mapping):
        raise bad_request("the arguments must be an object with a questions list")
    raw = arguments.get("questions")
    if raw is None:
        raise bad_request("questions is required")
    if not isinstance(raw, list):
        raise bad_request("questions must be a list")
    wire: list[Any] = []
    for i, q in enumerate(raw):
        if not isinstance(q, Mapping):
            raise bad_request(f"questions[{i}] must be an object")
        # The model speaks snake_case and may not send detail or intent (internal fields).
        item: dict[str, Any] = {k: q[k] for k in _MODEL_QUESTION_KEYS if k in q}
        multi = q.get("multi_select")
        if multi is not None and not isinstance(multi, bool):
            raise bad_request(f"questions[{i}].multi_select must be a boolean")
        if multi:
            item["multiSelect"] = True
        wire.append(item)
    request = AskUserQuestionRequest.from_dict({"questions": wire}, signal=signal)
    if agent is not None:
        request = AskUserQuestionRequest(request.questions, agent=agent, signal=signal)
    return request


async def run_ask_user_question(
    service: UserInteractionService,
    arguments: Mapping[str, Any],
    *,
    agent: AgentRef | None = None,
    signal: AbortSignal | None = None,
) -> ToolResult:
    """Run one ``ask_user_question`` call; failures come back as error results, not exceptions."""
    try:
        request = _request_from_arguments(arguments, agent, signal)
        answer = await service.ask(request)
    except HarnessError as exc:
        return ToolResult(
            is_error=True,
            text=f"Error: {exc}",
            error={"message": str(exc), "info": {"name": type(exc).__name__, "code": exc.code}},
        )
    except Exception as exc:
        return ToolResult(is_error=True, text=f"Error: {exc}", error={"message": str(exc)})
    value = answer.to_dict()
    return ToolResult(is_error=False, text=js_json(value), value=value)
