"""relay: ask a team of humans a question in Slack from an AI agent, and get a trustworthy answer.

The interaction seam (``UserInteractionService``, the request and answer types, the errors) is
importable from here; the Slack provider lives in ``relay.slack`` and the fake Slack used for
testing in ``relay.testing``.
"""

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .abort import AbortController, AbortSignal
    from .errors import (
        AbortReason,
        ErrorCode,
        HarnessError,
        RelayConfigError,
        RelayException,
        UserInteractionError,
    )
    from .plan_review import PlanVerdict, plan_review_question, review_plan
    from .questions import (
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
    from .service import UserInteractionProvider, UserInteractionService
    from .tool import ASK_USER_QUESTION_TOOL, ToolResult, run_ask_user_question

# Each public name and the module it lives in: loaded on first use (PEP 562), so a process
# that needs one submodule (``relay hook``, decided by its rules before every tool call)
# does not pay for asyncio and the whole seam.
_HOME = {
    "AbortController": "abort",
    "AbortSignal": "abort",
    "AbortReason": "errors",
    "ErrorCode": "errors",
    "HarnessError": "errors",
    "RelayConfigError": "errors",
    "RelayException": "errors",
    "UserInteractionError": "errors",
    "PlanVerdict": "plan_review",
    "plan_review_question": "plan_review",
    "review_plan": "plan_review",
    "AgentRef": "questions",
    "AskUserQuestionAnswer": "questions",
    "AskUserQuestionAnswerItem": "questions",
    "AskUserQuestionIntent": "questions",
    "AskUserQuestionItem": "questions",
    "AskUserQuestionOption": "questions",
    "AskUserQuestionRequest": "questions",
    "Responder": "questions",
    "validate_answer": "questions",
    "UserInteractionProvider": "service",
    "UserInteractionService": "service",
    "ASK_USER_QUESTION_TOOL": "tool",
    "ToolResult": "tool",
    "run_ask_user_question": "tool",
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
