"""The OpenAPI description of ``/v1/approvals`` (merged into ``relay.server.openapi``)."""

from __future__ import annotations

from typing import Any

from relay.errors import ErrorCode
from relay.seam.questions import MAX_APPROVALS
from relay.server.openapi_schemas import agent_schema

__all__ = ["APPROVAL_ERROR_CODES", "approval_paths", "approval_schemas"]

# POST /v1/approvals/{id}/consume (relay.server.approval_use): a use the relay refuses.
APPROVAL_ERROR_CODES: list[ErrorCode] = [ErrorCode.NOT_THIS_CALL, ErrorCode.CONSUMED]

_STRINGS = {"type": ["array", "null"], "items": {"type": "string", "minLength": 1}}
_PATTERN = {
    "type": "object",
    "additionalProperties": False,
    "description": "What a grant made from this approval would cover: tool-name globs and"
    " command or path globs/regexes (a team's rule). Unset: exactly this input.",
    "properties": {
        "tools": _STRINGS,
        "commands": _STRINGS,
        "command_regex": _STRINGS,
        "paths": _STRINGS,
        "path_regex": _STRINGS,
        "digest": {"type": ["string", "null"], "minLength": 1},
    },
}
_OUTCOMES = ["approved", "granted", "allowed", "denied", "timed_out", "aborted", "failed"]


def approval_schemas(slack: dict[str, Any]) -> dict[str, Any]:
    """The approval schemas; ``slack`` is the ask's ``slack`` routing object."""
    return {
        "Pattern": _PATTERN,
        "ApprovalRequest": _approval_request(slack),
        "Grant": _GRANT,
        "Decision": _DECISION,
        "ApprovalUse": _APPROVAL_USE,
        "Approval": _APPROVAL,
    }


def _approval_request(slack: dict[str, Any]) -> dict[str, Any]:
    """``POST /v1/approvals``' body; ``relay.server.shapes`` checks bodies against it (and
    its ``x-relay-hint`` words are the refusals' own)."""
    return {
        "type": "object",
        "additionalProperties": False,
        "required": ["tool", "agent"],
        "x-relay-hint": "a JSON object with tool, input and agent",
        "properties": {
            "tool": {
                "type": "string",
                "minLength": 1,
                "pattern": "\\S",
                "x-relay-hint": "a non-blank string: the name of the tool the agent wants to use",
            },
            "input": {
                "type": ["object", "null"],
                "description": "The tool's input.",
                "x-relay-hint": "an object: the tool's input",
            },
            "tool_use_id": {"type": ["string", "null"], "x-relay-hint": "a string, or null"},
            "agent": agent_schema(
                "Who asks; grants are kept per agent id (a session).", "who asks"
            ),
            "context": {
                "type": ["object", "null"],
                "maxProperties": 20,
                "additionalProperties": {"type": "string"},
                "description": "Shown to the reviewer: working directory, host, CI job.",
                "x-relay-hint": "an object of strings, at most 20 entries",
            },
            "pattern": {
                "anyOf": [{"$ref": "#/components/schemas/Pattern"}, {"type": "null"}],
                "description": "Not accepted: any value but null is refused (400"
                " BAD_PATTERN). A grant's scope is the relay's: its operator's ask rule's"
                " command or path globs when they cover this very input, else exactly it.",
            },
            "client_verdict": {
                "type": ["string", "null"],
                "enum": ["allow", "ask", None],
                "description": "What the client's own rules say (default ask). allow: the"
                " relay allows at once if its RELAY_RULES_FILE allows too (or it has none),"
                " else asks or denies; the stricter of the two always decides.",
                "x-relay-hint": '"allow" or "ask": what the client\'s rules say',
            },
            "reason": {"type": ["string", "null"], "x-relay-hint": "a string, or null"},
            **_approval_options(),
            "slack": slack,
        },
    }


def _approval_options() -> dict[str, Any]:
    """The fields that shape the question: grants offered, approvers needed, edits."""
    return {
        "session_grants": {
            "type": ["boolean", "null"],
            "default": True,
            "x-relay-hint": "true or false",
        },
        "grant_minutes": {
            "type": ["integer", "null"],
            "minimum": 0,
            "maximum": 1440,
            "default": 30,
            "x-relay-hint": "a whole number from 0 to 1440",
        },
        "approvals_required": {
            "type": ["integer", "null"],
            "minimum": 1,
            "maximum": MAX_APPROVALS,
            "description": "Distinct people who must allow (default 1). At 2 or more"
            " no grant is offered (only Allow once and Deny). The relay's"
            " RELAY_APPROVALS_REQUIRED is a floor: asking for fewer (or none) gets"
            " that many.",
            "x-relay-hint": f"a whole number from 1 to {MAX_APPROVALS}: how many distinct"
            " people must allow",
        },
        "deny_vetoes": {
            "type": ["boolean", "null"],
            "description": "With approvals_required of 2 or more: one person's Deny"
            " decides at once (default true); false: a deny needs as many votes.",
            "x-relay-hint": "true or false",
        },
        "editable": {
            "type": ["boolean", "null"],
            "description": "true only if the client runs decision.updated_input when"
            " present: then reviewers may edit the input before allowing it (default"
            " false; docs/edit-then-approve.md).",
            "x-relay-hint": "true or false: true only if the client runs"
            " decision.updated_input when a reviewer edits the call",
        },
        "input_schema": {
            "type": ["object", "null"],
            "description": "The tool's input JSON Schema: the edit form's fields.",
            "x-relay-hint": "an object: the tool's input JSON Schema",
        },
    }


_GRANT = {
    "type": "object",
    "required": ["id", "agent", "pattern", "kind", "granted_by", "granted_at"],
    "properties": {
        "id": {"type": "string"},
        "owner": {"type": "string"},
        "agent": {"type": "string"},
        "pattern": {"$ref": "#/components/schemas/Pattern"},
        "kind": {"type": "string", "enum": ["session", "minutes"]},
        "granted_by": {"$ref": "#/components/schemas/Person"},
        "granted_at": {"type": "string", "format": "date-time"},
        "expires_at": {"type": "string", "format": "date-time"},
    },
}
_DECISION = {
    "type": "object",
    "required": ["behavior", "message", "outcome"],
    "properties": {
        "behavior": {"type": "string", "enum": ["allow", "deny"]},
        "message": {"type": "string", "description": "What the agent is told."},
        "outcome": {"type": "string", "enum": _OUTCOMES},
        "by": {"$ref": "#/components/schemas/Person"},
        "at": {"type": "string", "format": "date-time"},
        "grant": {"$ref": "#/components/schemas/Grant"},
        "updated_input": {
            "type": "object",
            "description": "On an allow of a call a reviewer edited: the input to run"
            " instead of the one asked about (only with editable: true).",
        },
        "edited_by": {
            "type": "string",
            "description": "The Slack user id of whoever edited the call.",
        },
        "feedback": {
            "type": "string",
            "description": "On a plan sent back (ExitPlanMode denied): the reviewer's"
            " words for the agent.",
        },
        "plan": {
            "type": "string",
            "description": "On an allow under an approved plan: the plan's id (its"
            " review ask's, whose receipt binds the plan and its scope).",
        },
        "receipt": {
            "type": "string",
            "description": "On a decision made at once, with nobody asked, by a relay that"
            " signs receipts: the id (jti) of its receipt, written just after the answer"
            " (GET /v1/receipts lists it).",
        },
    },
}
_APPROVAL_USE = {
    "type": "object",
    "additionalProperties": False,
    "required": ["tool"],
    "description": "The call about to run, as it was sent to POST /v1/approvals: the"
    " approval answers only if it was asked for exactly this tool, input (compared"
    " canonically, key order ignored) and tool_use_id.",
    "properties": {
        "tool": {"type": "string", "minLength": 1, "pattern": "\\S"},
        "input": {"type": ["object", "null"], "description": "The tool's input."},
        "tool_use_id": {
            "type": ["string", "null"],
            "description": "The approval's tool_use_id (null or absent if it had none).",
        },
    },
}
_APPROVAL = {
    "type": "object",
    "required": ["id", "status", "decision"],
    "properties": {
        "id": {"type": ["string", "null"], "description": "null: decided by a grant."},
        "status": {"type": "string", "enum": ["pending", "decided"]},
        "decision": {"anyOf": [{"$ref": "#/components/schemas/Decision"}, {"type": "null"}]},
        "deadline": {"type": "string", "format": "date-time"},
    },
}


def _approval(description: str) -> dict[str, Any]:
    return {
        "description": description,
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Approval"}}},
    }


def approval_paths(
    error: Any, common: dict[str, Any], wait: dict[str, Any], ask_id: dict[str, Any]
) -> dict[str, Any]:
    """The ``/v1/approvals`` paths, built with the main document's shared parts."""
    missing = error("No such approval for this token (NOT_FOUND)")
    down = error("The store is unreachable (UNAVAILABLE)")
    return {
        "/v1/approvals": {
            "post": {
                "operationId": "createApproval",
                "summary": "Ask whether an agent may use a tool; a grant answers at once.",
                "parameters": [wait],
                "requestBody": {
                    "required": True,
                    "content": {
                        "application/json": {
                            "schema": {"$ref": "#/components/schemas/ApprovalRequest"}
                        }
                    },
                },
                "responses": {
                    "200": _approval("Decided at once by one of the token's grants"),
                    "201": _approval("Sent to a reviewer; the approval as it stands"),
                    "400": error("Malformed request (BAD_REQUEST)"),
                    **common,
                    "413": error("Body over the size cap (TOO_LARGE)"),
                    "502": error("Slack refused the post (PROVIDER_FAILED)"),
                    "503": down,
                },
            }
        },
        "/v1/approvals/{ask_id}": {
            "parameters": [ask_id],
            "get": {
                "operationId": "getApproval",
                "summary": "Read an approval; long-poll with ?wait= while it is pending.",
                "parameters": [wait],
                "responses": {
                    "200": _approval("The approval (a decided one records its grant)"),
                    "400": error("Bad wait parameter (BAD_REQUEST)"),
                    **common,
                    "404": missing,
                    "503": down,
                },
            },
            "delete": {
                "operationId": "withdrawApproval",
                "summary": "Withdraw a pending approval (a deny) and its Slack message.",
                "responses": {
                    "200": _approval("The approval after the withdrawal"),
                    **common,
                    "404": missing,
                    "503": down,
                },
            },
        },
        "/v1/approvals/{ask_id}/consume": _consume(error, common, wait, ask_id),
    }


def _consume(
    error: Any, common: dict[str, Any], wait: dict[str, Any], ask_id: dict[str, Any]
) -> dict[str, Any]:
    """``POST /v1/approvals/{ask_id}/consume``: an approval used for its one call."""
    missing = error("No such approval for this token (NOT_FOUND)")
    down = error("The store is unreachable (UNAVAILABLE)")
    return {
        "parameters": [ask_id],
        "post": {
            "operationId": "consumeApproval",
            "summary": "Use an approval to run the one call it was asked for, once.",
            "description": "For a client that keeps approval ids where others can write"
            " them (a paused run's tickets): name the call about to run. An allow is used"
            " once, atomically across replicas; a deny or a pending approval (?wait="
            " long-polls) is answered as GET answers it and uses nothing. Send the same"
            " Idempotency-Key again after a lost reply: it is the same use. A grant the"
            " reviewer chose still covers later identical calls at POST /v1/approvals.",
            "parameters": [
                wait,
                {
                    "name": "Idempotency-Key",
                    "in": "header",
                    "required": False,
                    "description": "This use's key: sent again, it answers as the first"
                    " time did (1 to 255 printable ASCII characters, no spaces).",
                    "schema": {"type": "string", "minLength": 1, "maxLength": 255},
                },
            ],
            "requestBody": {
                "required": True,
                "content": {
                    "application/json": {"schema": {"$ref": "#/components/schemas/ApprovalUse"}}
                },
            },
            "responses": {
                "200": _approval("The approval; an allow is now used by this call"),
                "400": error("Malformed request (BAD_REQUEST)"),
                **common,
                "404": missing,
                "409": error(
                    "The approval was asked for another call, tool_use_id or run"
                    " (NOT_THIS_CALL), or its allow was used already (CONSUMED): ask again"
                ),
                "413": error("Body over the size cap (TOO_LARGE)"),
                "503": down,
            },
        },
    }
