"""relay: ask a team of humans a question in Slack from an AI agent, and get a trustworthy answer.

The interaction seam (``UserInteractionService``, the request and answer types, the errors) is
importable from here; the Slack provider lives in ``relay.slack`` and the fake Slack used for
testing in ``relay.testing``.
"""

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from relay.seam.abort import AbortController, AbortSignal
    from relay.seam.plan_review import PlanVerdict, plan_review_question, review_plan
    from relay.seam.questions import (
        AgentRef,
        AskUserQuestionAnswer,
        AskUserQuestionAnswerItem,
        AskUserQuestionIntent,
        AskUserQuestionItem,
        AskUserQuestionOption,
        AskUserQuestionRequest,
        Responder,
        validate_answer,
    )
    from relay.seam.service import UserInteractionProvider, UserInteractionService
    from relay.seam.tool import ASK_USER_QUESTION_TOOL, ToolResult, run_ask_user_question

    from .errors import (
        AbortReason,
        ErrorCode,
        HarnessError,
        RelayConfigError,
        RelayException,
        UserInteractionError,
    )

# Each public name and the module it lives in: loaded on first use (PEP 562), so a process
# that needs one submodule (``relay hook``, decided by its rules before every tool call)
# does not pay for asyncio and the whole seam.
_HOME = {
    "AbortController": "seam.abort",
    "AbortSignal": "seam.abort",
    "AbortReason": "errors",
    "ErrorCode": "errors",
    "HarnessError": "errors",
    "RelayConfigError": "errors",
    "RelayException": "errors",
    "UserInteractionError": "errors",
    "PlanVerdict": "seam.plan_review",
    "plan_review_question": "seam.plan_review",
    "review_plan": "seam.plan_review",
    "AgentRef": "seam.questions",
    "AskUserQuestionAnswer": "seam.questions",
    "AskUserQuestionAnswerItem": "seam.questions",
    "AskUserQuestionIntent": "seam.questions",
    "AskUserQuestionItem": "seam.questions",
    "AskUserQuestionOption": "seam.questions",
    "AskUserQuestionRequest": "seam.questions",
    "Responder": "seam.questions",
    "validate_answer": "seam.questions",
    "UserInteractionProvider": "seam.service",
    "UserInteractionService": "seam.service",
    "ASK_USER_QUESTION_TOOL": "seam.tool",
    "ToolResult": "seam.tool",
    "run_ask_user_question": "seam.tool",
}


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module 'relay' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f"relay.{home}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_HOME))


__version__ = "0.1.0"

__all__ = [
    "ASK_USER_QUESTION_TOOL",
    "AbortController",
    "AbortReason",
    "AbortSignal",
    "AgentRef",
    "AskUserQuestionAnswer",
    "AskUserQuestionAnswerItem",
    "AskUserQuestionIntent",
    "AskUserQuestionItem",
    "AskUserQuestionOption",
    "AskUserQuestionRequest",
    "ErrorCode",
    "HarnessError",
    "PlanVerdict",
    "RelayConfigError",
    "RelayException",
    "Responder",
    "ToolResult",
    "UserInteractionError",
    "UserInteractionProvider",
    "UserInteractionService",
    "__version__",
    "plan_review_question",
    "review_plan",
    "run_ask_user_question",
    "validate_answer",
]
