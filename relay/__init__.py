"""relay: ask a team of humans a question in Slack from an AI agent, and get a trustworthy answer.

The interaction seam (``UserInteractionService``, the request and answer types, the errors) is
importable from here; the Slack provider lives in ``relay.slack`` and the fake Slack used for
testing in ``relay.testing``.
"""

from .abort import AbortController, AbortSignal
from .errors import (
    AbortReason,
    ErrorCode,
    HarnessError,
    RelayConfigError,
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
