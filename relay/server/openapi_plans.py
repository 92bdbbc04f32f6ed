"""The OpenAPI description of ``/v1/plans`` (merged into ``relay.server.openapi``)."""

from __future__ import annotations

from typing import Any

from relay.plans.steps import MAX_ITEM_CHARS, MAX_ITEMS, MAX_PLAN_CHARS
from relay.server.openapi_schemas import agent_schema

__all__ = ["plan_paths", "plan_schemas"]

_TEXT = {"type": "string", "minLength": 1, "maxLength": MAX_ITEM_CHARS, "pattern": "\\S"}
# One step is an object with exactly one of these fields (a choice of one-field objects says
# the same, but costs a check of every choice for every step).
_STEP = {
    "type": "object",
    "additionalProperties": False,
    "minProperties": 1,
    "maxProperties": 1,
    "description": "Exactly one of run, write, tool, mcp_server.",
    "properties": {
        "run": {**_TEXT, "description": "One plain command, compared word for word."},
        "write": {**_TEXT, "description": "A path (a folder ends in /) in the project."},
        "tool": {**_TEXT, "description": "A tool name, called with neither command nor path."},
        "mcp_server": {**_TEXT, "description": "An MCP server whose tools may be called."},
    },
}


_PLAN_REQUEST = {
    "type": "object",
    "additionalProperties": False,
    "required": ["plan", "agent"],
    "x-relay-hint": "a JSON object with plan and agent",
    "properties": {
        "plan": {
            "type": "string",
            "minLength": 1,
            "maxLength": MAX_PLAN_CHARS,
            "pattern": "\\S",
            "x-relay-hint": f"the plan as markdown starting with a '# ' heading, at most"
            f" {MAX_PLAN_CHARS} characters (send a shorter plan)",
            "description": "The plan as markdown starting with a '# ' heading. relay"
            " reads commands (fenced bash blocks; `spans` after run), paths written"
            " (`spans` after edit, write, create…), tools and MCP servers (`spans`"
            " after use or call) from it.",
        },
        "agent": agent_schema(
            "The session the plan holds for: the same agent.id as its calls to POST"
            " /v1/approvals send.",
            "the session whose plan it is",
        ),
        "steps": {
            "type": ["array", "null"],
            "maxItems": MAX_ITEMS,
            "description": "Steps the client proposes besides the text; the scope is"
            " still what relay derives and the reviewer sees.",
            "x-relay-hint": f"a list of at most {MAX_ITEMS} objects, each with exactly one of"
            f" run, write, tool, mcp_server set to text of 1 to {MAX_ITEM_CHARS} characters,"
            ' such as {"run": "pytest"}',
            "items": _STEP,
        },
        "cwd": {
            "type": ["string", "null"],
            "pattern": "^/",
            "x-relay-hint": "the project's absolute directory, such as /home/me/project",
            "description": "The project's absolute directory: written paths must be"
            " inside it (without it no path is in scope).",
        },
    },
}
_PLAN_SCOPE = {
    "type": "object",
    "description": "What the plan lets its session do without a post.",
    "properties": {
        "root": {"type": ["string", "null"]},
        "runs": {"type": "array", "items": {"type": "array", "items": {"type": "string"}}},
        "writes": {"type": "array", "items": {"type": "string"}},
        "tools": {"type": "array", "items": {"type": "string"}},
        "mcp_servers": {"type": "array", "items": {"type": "string"}},
        "calls": {
            "type": "array",
            "items": {"type": "string"},
            "description": "Digests of exact calls a reviewer added.",
        },
        "ask_each_time": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "kind": {
                        "type": "string",
                        "enum": ["run", "write", "tool", "mcp_server"],
                    },
                    "text": {"type": "string"},
                    "why": {"type": "string"},
                },
            },
        },
    },
}
_PLAN = {
    "type": "object",
    "required": ["id", "status"],
    "properties": {
        "id": {"type": ["string", "null"], "description": "null: the rules denied it."},
        "status": {
            "type": "string",
            "enum": ["pending", "active", "rejected", "stopped", "denied"],
        },
        "agent": {"type": "string"},
        "scope": {"$ref": "#/components/schemas/PlanScope"},
        "scope_words": {"type": "array", "items": {"type": "string"}},
        "expires_at": {"type": "string", "format": "date-time"},
        "approved_by": {"$ref": "#/components/schemas/Person"},
        "approved_at": {"type": "string", "format": "date-time"},
        "ended_by": {"type": "string"},
        "narrowed_by": {
            "type": "string",
            "description": "The Slack user id of the reviewer who narrowed the scope"
            " in the Edit form before approving (only then).",
        },
        "dropped": {
            "type": "array",
            "items": {"type": "string"},
            "description": 'The scope items the reviewer took out ("run npm run'
            ' build", "write tests/"), when narrowed.',
        },
        "covered": {
            "type": "array",
            "description": "The latest calls allowed under the plan without a post"
            " (tool, digest of the input, time; at most 200 kept).",
            "items": {
                "type": "object",
                "properties": {
                    "tool": {"type": "string"},
                    "call": {"type": "string"},
                    "at": {"type": "string", "format": "date-time"},
                },
            },
        },
        "covered_count": {"type": "integer", "minimum": 0},
        "feedback": {"type": "string", "description": "The reviewer's words, sent back."},
        "deadline": {"type": "string", "format": "date-time"},
        "message": {"type": "string", "description": "Why the rules denied the plan."},
    },
}


def plan_schemas() -> dict[str, Any]:
    """The plan schemas."""
    return {"PlanRequest": _PLAN_REQUEST, "PlanScope": _PLAN_SCOPE, "Plan": _PLAN}


def _plan(description: str) -> dict[str, Any]:
    return {
        "description": description,
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Plan"}}},
    }


def plan_paths(
    error: Any, common: dict[str, Any], wait: dict[str, Any], ask_id: dict[str, Any]
) -> dict[str, Any]:
    """The ``/v1/plans`` paths, built with the main document's shared parts."""
    missing = error("No such plan for this token (NOT_FOUND)")
    down = error("The store is unreachable (UNAVAILABLE)")
    return {
        "/v1/plans": {
            "post": {
                "operationId": "createPlan",
                "summary": "Put a plan up for review; approved, its scope runs without posts.",
                "description": "relay derives the scope from the plan (and steps), binds it by"
                " the operator's rules (what they deny, or need other approvers for, stays ask"
                " each time) and posts plan and scope. Approved, POST /v1/approvals allows the"
                " calls of this token and agent.id inside the scope without a post (decision"
                ".plan names the plan) until RELAY_PLAN_TTL, a reviewer's Stop the plan, or"
                " DELETE.",
                "parameters": [wait],
                "requestBody": {
                    "required": True,
                    "content": {
                        "application/json": {"schema": {"$ref": "#/components/schemas/PlanRequest"}}
                    },
                },
                "responses": {
                    "200": _plan("Denied at once by the operator's rules (on ExitPlanMode)"),
                    "201": _plan("Sent for review; the plan as it stands"),
                    "400": error("Malformed request (BAD_REQUEST)"),
                    **common,
                    "413": error("Body over the size cap (TOO_LARGE)"),
                    "502": error("Slack refused the post (PROVIDER_FAILED)"),
                    "503": down,
                },
            }
        },
        "/v1/plans/{ask_id}": {
            "parameters": [ask_id],
            "get": {
                "operationId": "getPlan",
                "summary": "Read a plan; long-poll with ?wait= while it is in review.",
                "parameters": [wait],
                "responses": {
                    "200": _plan("The plan (a reviewed one is approved or rejected once)"),
                    "400": error("Bad wait parameter (BAD_REQUEST)"),
                    **common,
                    "404": missing,
                    "503": down,
                },
            },
            "delete": {
                "operationId": "stopPlan",
                "summary": "Withdraw a plan in review, or stop a live one: calls are asked.",
                "responses": {
                    "200": _plan("The plan after it ended"),
                    **common,
                    "404": missing,
                    "503": down,
                },
            },
        },
    }
