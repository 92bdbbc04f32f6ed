"""The MCP server's two tools, and what a call of each returns.

``ask_user_question`` is the relay's model-facing tool (``relay.seam.tool``): the same schema and
the same result text. ``approve_tool_use`` is a permission tool for Claude Code's
``--permission-prompt-tool``. Claude Code calls it with ``{tool_name, input, tool_use_id}``
and parses the result's text as JSON: ``{"behavior": "allow", "updatedInput": {...}}`` or
``{"behavior": "deny", "message": "..."}`` (Claude Code's PermissionPromptToolResultSchema:
``updatedInput`` is required on allow, ``tool_use_id`` is optional on input; the flag is
documented in the CLI reference, docs.claude.com/en/docs/claude-code/cli-reference, and the
decision shape matches the Agent SDK's ``PermissionResult``, cf. anthropics/claude-code#56155).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import mcp_types as types

from relay.gate.approval import Decision
from relay.seam.safejson import refusal
from relay.seam.tool import ASK_USER_QUESTION_TOOL, ToolResult

__all__ = [
    "APPROVE_TOOL_USE",
    "ASK_USER_QUESTION",
    "TOOLS",
    "ApproveArguments",
    "decision_result",
    "read_approve_arguments",
    "refused_arguments",
    "tool_result",
]

ASK_USER_QUESTION = "ask_user_question"
APPROVE_TOOL_USE = "approve_tool_use"

_APPROVE_DESCRIPTION = (
    "Ask the team in Slack whether a tool use may go ahead (a permission prompt tool: pass"
    " --permission-prompt-tool mcp__relay__approve_tool_use to Claude Code). Returns JSON:"
    ' {"behavior": "allow", "updatedInput": {...}} or {"behavior": "deny", "message": "..."}.'
)

TOOLS: tuple[types.Tool, ...] = (
    types.Tool(
        name=ASK_USER_QUESTION,
        description=str(ASK_USER_QUESTION_TOOL["description"]),
        input_schema=ASK_USER_QUESTION_TOOL["parameters"],
        # Asking people changes nothing where the agent runs: clients that gate tools by
        # these hints (Codex under approval_policy = "never") let the question through.
        annotations=types.ToolAnnotations(read_only_hint=True, open_world_hint=True),
        # A person may take hours: a client with tasks gets a task id at once (relay.mcp.tasks).
        execution=types.ToolExecution(task_support="optional"),
    ),
    types.Tool(
        name=APPROVE_TOOL_USE,
        description=_APPROVE_DESCRIPTION,
        input_schema={
            "type": "object",
            "properties": {
                "tool_name": {
                    "type": "string",
                    "description": "The name of the tool asking for permission.",
                },
                "input": {
                    "type": "object",
                    "description": "The input the tool would run with.",
                },
                "tool_use_id": {
                    "type": "string",
                    "description": "The tool use's id, if the harness has one.",
                },
            },
            "required": ["tool_name", "input"],
        },
        annotations=types.ToolAnnotations(read_only_hint=True, open_world_hint=True),
        # A person may take hours: a client with tasks gets a task id at once (relay.mcp.tasks).
        execution=types.ToolExecution(task_support="optional"),
    ),
)


def tool_result(result: ToolResult) -> types.CallToolResult:
    """An ``ask_user_question`` result as MCP content: its exact text, and its error flag."""
    return types.CallToolResult(
        content=[types.TextContent(text=result.text)],
        is_error=result.is_error,
    )


def refused_arguments(arguments: Mapping[str, Any]) -> types.CallToolResult | None:
    """The tool's error result for arguments relay cannot carry and sign exactly (a lone
    surrogate, NaN, an integer no double holds, nesting too deep); ``None`` when fine."""
    refused = refusal(arguments)
    if refused is None:
        return None
    message = refused.sentence("the arguments")
    return tool_result(
        ToolResult(
            is_error=True,
            text=f"Error: {message} ({refused.code})",
            error={"message": message, "info": {"code": refused.code}},
        )
    )


class ApproveArguments:
    """The checked arguments of an ``approve_tool_use`` call."""

    def __init__(self, tool: str, tool_input: dict[str, Any], tool_use_id: str | None) -> None:
        self.tool = tool
        self.input = tool_input
        self.tool_use_id = tool_use_id


def read_approve_arguments(arguments: Mapping[str, Any] | None) -> ApproveArguments | str:
    """The arguments, or a sentence saying what is wrong with them."""
    args = arguments or {}
    if (refused := refusal(args)) is not None:
        return f"{refused.code}: " + refused.sentence("the arguments")
    tool = args.get("tool_name")
    if not isinstance(tool, str) or not tool.strip():
        return "tool_name is required: the name of the tool asking for permission"
    tool_input = args.get("input", {})
    if not isinstance(tool_input, Mapping):
        return "input must be an object: the tool's input"
    tool_use_id = args.get("tool_use_id")
    if tool_use_id is not None and not isinstance(tool_use_id, str):
        return "tool_use_id must be a string"
    return ApproveArguments(tool, dict(tool_input), tool_use_id)


def decision_result(decision: Decision, tool_input: Mapping[str, Any]) -> types.CallToolResult:
    """A decision as Claude Code's permission prompt tool result (JSON in a text block)."""
    body: dict[str, Any]
    if decision.allowed:
        # The input as shown, or as the reviewer edited it and then allowed it.
        allowed = decision.updated_input if decision.updated_input is not None else tool_input
        body = {"behavior": "allow", "updatedInput": dict(allowed)}
    else:
        body = {"behavior": "deny", "message": decision.message}
    return types.CallToolResult(
        content=[types.TextContent(text=json.dumps(body, ensure_ascii=False))]
    )
