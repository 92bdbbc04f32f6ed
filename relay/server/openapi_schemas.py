"""The OpenAPI schemas of the ask's wire form (request, answer, record, vote, error), which
``relay.server.openapi`` puts into the document."""

from __future__ import annotations

from typing import Any

from relay.seam.limits import (
    LONGEST_TIMEOUT,
    MAX_ALLOWED_GROUPS,
    MAX_ALLOWED_USERS,
    MAX_REMINDERS,
)
from relay.seam.questions import MAX_QUESTIONS

__all__ = [
    "ANSWER_SCHEMA",
    "ASK_REQUEST_SCHEMA",
    "ASK_SLACK_SCHEMA",
    "ERROR_BODY_SCHEMA",
    "ERROR_SCHEMA",
    "OPTION_SCHEMA",
    "PERSON_SCHEMA",
    "QUESTION_SCHEMA",
    "RECORD_SCHEMA",
    "VOTE_SCHEMA",
    "agent_schema",
]

OPTION_SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "required": ["label"],
    "x-relay-hint": 'an object: {"label": ..., "description": ...}',
    "properties": {
        "label": {"type": "string", "x-relay-hint": "a string: the option's exact label"},
        "description": {"type": ["string", "null"], "x-relay-hint": "a string, or null"},
    },
}
# Optional request fields may also be null, which the relay reads as unset.
QUESTION_SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "required": ["id", "question"],
    "x-relay-hint": 'an object: {"id": ..., "question": ..., "options": [...], ...}',
    "properties": {
        "id": {
            "type": "string",
            "description": "Stable id, echoed in the answer.",
            "x-relay-hint": "a string: the question's id, echoed in the answer",
        },
        # Slack shows at most 3,000 characters in a message section.
        "question": {
            "type": "string",
            "maxLength": 3000,
            "x-relay-hint": "a string of at most 3000 characters: keep the question short and"
            " put the rest in detail",
        },
        "header": {"type": ["string", "null"], "x-relay-hint": "a string, or null"},
        "detail": {
            "type": ["string", "null"],
            "description": "Markdown shown with the question.",
            "x-relay-hint": "a string (markdown), or null",
        },
        "options": {
            "type": ["array", "null"],
            "maxItems": 100,
            "items": {"$ref": "#/components/schemas/Option"},
            "x-relay-hint": "a list of at most 100 options, or null (Slack menus hold no more:"
            " split the question or offer fewer options)",
        },
        "multiSelect": {
            "type": ["boolean", "null"],
            "default": False,
            "x-relay-hint": "true or false, or null",
        },
        "default": {
            "type": ["string", "null"],
            "x-relay-hint": "a string: the label of one of the options, or null",
            "description": "The label of the option taken when nobody answers before the"
            " timeout; the answer is then marked defaulted (BAD_REQUEST unless it names one"
            " of the options). Without one, the ask times out (ASK_ABORTED, timed_out).",
        },
        "approvalsRequired": {
            "type": ["integer", "null"],
            "minimum": 1,
            "maximum": 25,
            "x-relay-hint": "a whole number from 1 to 25, or null",
            "description": "How many different people must vote for an option before it is"
            " the answer (single-select questions with options); each person votes once, a"
            " second click does not change the vote. Default 1: the first click decides.",
        },
        "veto": {
            "type": ["array", "null"],
            "items": {"type": "string"},
            "x-relay-hint": "a list of option labels (strings), or null",
            "description": "Option labels that one vote decides at once, however many"
            " approvalsRequired says (such as Reject).",
        },
        "intent": {
            "type": ["object", "null"],
            "additionalProperties": False,
            "required": ["kind", "approve"],
            "x-relay-hint": "an object with kind and approve (and edit, for a tool-approval),"
            " or null",
            "properties": {
                "kind": {
                    "type": "string",
                    "enum": ["plan-review", "tool-approval"],
                    "x-relay-hint": '"plan-review" or "tool-approval"',
                },
                "approve": {
                    "type": "string",
                    "x-relay-hint": "a string: the label of the option that approves",
                },
                "edit": {
                    "type": ["object", "null"],
                    "x-relay-hint": "an object with tool and input (the call the reviewer may"
                    " edit), or null",
                    "description": "tool-approval only: the reviewer may edit the input"
                    " before approving; the edit comes back in custom (docs/edit-then-approve.md).",
                    "additionalProperties": False,
                    "required": ["tool", "input"],
                    "properties": {
                        "tool": {"type": "string", "x-relay-hint": "a string: the tool's name"},
                        "input": {"type": "object", "x-relay-hint": "an object: the tool's input"},
                        "inputSchema": {
                            "type": ["object", "null"],
                            "x-relay-hint": "an object (a JSON Schema), or null",
                        },
                    },
                },
            },
        },
    },
}
PERSON_SCHEMA = {
    "type": "object",
    "required": ["id"],
    "properties": {"id": {"type": "string"}, "name": {"type": "string"}},
}
# The refusal's words for a string field that must say something.
_NON_EMPTY = {"x-relay-hint": "a non-empty string, or null"}


def _ids(what: str, most: int) -> dict[str, Any]:
    """A list of at most ``most`` Slack ``what`` ids, or null."""
    return {
        "x-relay-hint": f"a list of at most {most} Slack {what} ids, or null",
        "type": ["array", "null"],
        "maxItems": most,
        "items": {"type": "string", "minLength": 1},
    }


_USER_IDS = _ids("user", MAX_ALLOWED_USERS)
_GROUP_IDS = _ids("user group", MAX_ALLOWED_GROUPS)


def _seconds(otherwise: str) -> dict[str, Any]:
    """A positive number of seconds, at most a year, or null (``otherwise``: what null is)."""
    return {
        "x-relay-hint": f"a positive number of seconds (at most a year), {otherwise}",
        "type": ["number", "null"],
        "exclusiveMinimum": 0,
        "maximum": LONGEST_TIMEOUT,
    }


# The ask's ``slack`` object: where to ask and who may answer (the API's asks and approvals,
# and ``relay ask --file``, read it through this one schema).
ASK_SLACK_SCHEMA = {
    "type": ["object", "null"],
    "additionalProperties": False,
    "description": "Where to ask; unset (or null) fields use the relay's defaults.",
    "x-relay-hint": "an object: where to ask, and who may answer",
    "properties": {
        # null, like leaving a field out, means the relay's default.
        "channel": {
            "type": ["string", "null"],
            "minLength": 1,
            "pattern": "\\S",
            **_NON_EMPTY,
        },
        "thread_ts": {
            "type": ["string", "null"],
            "minLength": 1,
            "pattern": "\\S",
            **_NON_EMPTY,
        },
        "allowed_users": {
            **_USER_IDS,
            "description": "User ids (U…) who may answer; null: anyone the relay's"
            " own allowlist (RELAY_ALLOWED_USERS/GROUPS) admits. An ask can narrow"
            " that allowlist, never widen it.",
        },
        "allowed_groups": {
            **_GROUP_IDS,
            "description": "User group ids (S…) whose members may answer too (within"
            " the relay's own allowlist).",
        },
        "requester": {
            "x-relay-hint": "a non-empty string, or null",
            "type": ["string", "null"],
            "minLength": 1,
            "pattern": "\\S",
            "description": "The Slack user on whose behalf the agent asks.",
        },
        "prevent_self_approval": {
            "x-relay-hint": "true or false",
            "type": "boolean",
            "description": "The requester may not answer their own ask.",
        },
        "timeout_s": {
            **_seconds("or null: the relay's longest"),
            "description": "Seconds before the ask times out; null: the relay's"
            " longest (RELAY_MAX_TIMEOUT, or none). Never past RELAY_MAX_TIMEOUT.",
        },
        "remind_after_s": {
            **_seconds("or null for no reminders"),
            "description": "Seconds after posting (and between reminders) at which a"
            " thread reply mentions who may answer, with the time left; null: none."
            " Never after the ask ends or past its deadline.",
        },
        "reminders": {
            "x-relay-hint": f"a whole number from 1 to {MAX_REMINDERS}",
            "type": "integer",
            "minimum": 1,
            "maximum": MAX_REMINDERS,
            "description": "How many reminders at most (default 1).",
        },
        "escalate_after_s": {
            **_seconds("or null for no escalation"),
            "description": "Seconds after posting at which the ask is escalated:"
            " escalate_users and escalate_groups may answer too from then on (still"
            " within RELAY_ALLOWED_USERS/GROUPS), they are mentioned in"
            " escalate_channel with a link back (else in the question's thread), and"
            " the message says it was escalated. Needs one of the three; null: none.",
        },
        "escalate_users": {
            **_USER_IDS,
            "description": "User ids (U…) the escalation adds to who may answer.",
        },
        "escalate_groups": {
            **_GROUP_IDS,
            "description": "User group ids (S…) the escalation adds.",
        },
        "escalate_channel": {
            "x-relay-hint": "a channel id (or a user id), or null",
            "type": ["string", "null"],
            "minLength": 1,
            "pattern": "\\S",
            "description": "Where the escalation is posted, with a link back to the"
            " question: a channel id, or a user id for a DM.",
        },
    },
}
ASK_REQUEST_SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "required": ["questions"],
    "x-relay-hint": "a JSON object with a questions list",
    "properties": {
        "questions": {
            "type": "array",
            "minItems": 1,
            "maxItems": MAX_QUESTIONS,
            "items": {"$ref": "#/components/schemas/Question"},
            # No questions is the seam's own code (relay.seam.questions.validate_request).
            "x-relay-code": {"minItems": "EMPTY_QUESTIONS"},
            "x-relay-hint": f"a list of at least one question and at most {MAX_QUESTIONS}:"
            " split the rest into another ask",
            "description": "Each question's id, and each option label within a question, must"
            " be unique (BAD_REQUEST otherwise).",
        },
        "agent": {
            "type": ["object", "null"],
            "additionalProperties": False,
            "required": ["id"],
            "x-relay-hint": '{"id": ..., "name": ...}, who asks; or null',
            "properties": {
                "id": {"type": "string", "x-relay-hint": "a string: the agent's id"},
                "name": {"type": ["string", "null"], "x-relay-hint": "a string, or null"},
            },
        },
        "slack": {"$ref": "#/components/schemas/AskSlack"},
    },
}
ANSWER_SCHEMA = {
    "type": "object",
    "required": ["answers"],
    "properties": {
        "answers": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["id", "selected"],
                "properties": {
                    "id": {"type": "string"},
                    "selected": {"type": "array", "items": {"type": "string"}},
                    "custom": {"type": "string"},
                    "defaulted": {
                        "type": "boolean",
                        "description": "Present (true) when nobody answered in time and this"
                        " is the question's default, never a person's choice.",
                    },
                },
            },
        }
    },
}
RECORD_SCHEMA = {
    "type": "object",
    "required": ["id", "status", "created_at"],
    "properties": {
        "id": {"type": "string"},
        "status": {
            "type": "string",
            "enum": ["pending", "answered", "aborted", "timed_out", "failed"],
        },
        "created_at": {
            "type": "string",
            "format": "date-time",
            "description": "When the ask was created (ISO 8601, UTC, like every time here).",
        },
        "deadline": {
            "type": "string",
            "format": "date-time",
            "description": "When the ask times out (ISO 8601, UTC); absent when it never"
            " does (timeouts are at most a year).",
        },
        "answer": {"$ref": "#/components/schemas/Answer"},
        "defaulted": {
            "type": "boolean",
            "description": "Present (true) when some question took its default because"
            " nobody answered in time.",
        },
        "answered_by": {
            "$ref": "#/components/schemas/Person",
            "description": "Who gave the last answer; absent when it was a default.",
        },
        "answered_at": {"type": "string", "format": "date-time"},
        "responses": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["id"],
                "properties": {
                    "id": {"type": "string"},
                    "answered_by": {"$ref": "#/components/schemas/Person"},
                    "answered_at": {"type": "string", "format": "date-time"},
                    "defaulted": {
                        "type": "boolean",
                        "description": "Present (true) for a default: no answered_by then.",
                    },
                    "votes": {
                        "type": "array",
                        "items": {"$ref": "#/components/schemas/Vote"},
                        "description": "On a question decided by votes: every vote counted;"
                        " answered_by cast the deciding one.",
                    },
                },
            },
        },
        "votes": {
            "type": "array",
            "description": "Votes cast so far on questions decided by votes that are not"
            " decided yet.",
            "items": {
                "type": "object",
                "required": ["id", "votes"],
                "properties": {
                    "id": {"type": "string"},
                    "votes": {"type": "array", "items": {"$ref": "#/components/schemas/Vote"}},
                },
            },
        },
        "error": {"$ref": "#/components/schemas/ErrorBody"},
    },
}
VOTE_SCHEMA = {
    "type": "object",
    "required": ["by", "label", "at"],
    "properties": {
        "by": {"$ref": "#/components/schemas/Person"},
        "label": {"type": "string"},
        "at": {"type": "string", "format": "date-time"},
        "version": {
            "type": "integer",
            "minimum": 2,
            "description": "The version of an edited tool call this vote was cast on (absent:"
            " the original). Only votes on the version that decided count toward it.",
        },
    },
}
ERROR_BODY_SCHEMA = {
    "type": "object",
    "required": ["code", "message"],
    "properties": {
        "code": {"type": "string"},
        "message": {"type": "string"},
        "reason": {
            "type": "string",
            "enum": ["aborted", "timed_out", "closed"],
            "description": "Why an ASK_ABORTED ask ended.",
        },
    },
}
ERROR_SCHEMA = {
    "type": "object",
    "required": ["error"],
    "properties": {"error": {"$ref": "#/components/schemas/ErrorBody"}},
}


def agent_schema(description: str, hint: str) -> dict[str, Any]:
    """The required ``agent`` of an approval or a plan: its session id, never blank."""
    return {
        "type": "object",
        "additionalProperties": False,
        "required": ["id"],
        "description": description,
        "x-relay-hint": f'{{"id": ..., "name": ...}}, {hint}',
        "properties": {
            "id": {
                "type": "string",
                "minLength": 1,
                "pattern": "\\S",
                "x-relay-hint": "a non-blank string: the agent's session id",
            },
            "name": {"type": ["string", "null"], "x-relay-hint": "a string, or null"},
        },
    }
