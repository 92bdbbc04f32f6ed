"""Error codes are one enum, the wire codes never change, and the errors page is the enum's."""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

from relay.errors import ErrorCode
from relay.server.errors import status_for
from relay.server.openapi import ERROR_CODES

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))

import errors_doc  # noqa: E402  (scripts/ is no package)

# The stable API: a code here is never renamed or dropped (clients match on it). A new code
# is added here and to the enum together.
WIRE_CODES = frozenset(
    {
        "BAD_REQUEST", "EMPTY_QUESTIONS", "BAD_INTENT", "BAD_PATTERN", "CALLBACK_NOT_ALLOWED",
        "UNAUTHORIZED", "NOT_FOUND", "METHOD_NOT_ALLOWED", "REQUEST_TIMEOUT", "TOO_LARGE",
        "UNSUPPORTED_MEDIA_TYPE", "RATE_LIMITED", "IDEMPOTENCY_KEY_REUSED",
        "IDEMPOTENCY_IN_FLIGHT", "NOT_THIS_CALL", "CONSUMED", "ASK_ABORTED", "ASK_CANCELLED",
        "PROVIDER_FAILED", "NO_PROVIDER", "DUPLICATE_PROVIDER", "UNAVAILABLE", "INTERNAL",
        "TOO_MANY_SESSIONS", "MCP_SESSIONS_FULL", "ORIGIN_NOT_ALLOWED", "HOST_NOT_ALLOWED",
        "BAD_CONFIG", "BAD_RULES", "USAGE", "JSON_LONE_SURROGATE", "JSON_NOT_FINITE",
        "JSON_INEXACT_NUMBER", "JSON_TOO_DEEP",
    }
)  # fmt: skip


def test_the_wire_codes_are_pinned() -> None:
    assert {str(code) for code in ErrorCode} == WIRE_CODES
    assert all(code.value == code.name for code in ErrorCode)


def test_every_code_says_what_to_do_and_has_a_status_or_an_exit() -> None:
    for code in ErrorCode:
        assert code.hint.strip(), code
        assert code.status is None or 400 <= code.status < 600, code
        assert code.exit is None or code.status is None, code


def test_every_api_code_is_in_the_enum_with_the_status_the_api_answers() -> None:
    for code in ERROR_CODES:
        assert ErrorCode(code).status == status_for(code), code


def test_the_errors_page_is_generated_from_the_enum() -> None:
    doc = errors_doc
    page = doc.PAGE.read_text(encoding="utf-8")
    assert page == doc.render(page), "run: python scripts/errors_doc.py"
    for code in ErrorCode:
        assert f"| `{code}` |" in page


def test_the_check_fails_when_the_page_and_the_enum_disagree() -> None:
    doc = errors_doc
    page = doc.PAGE.read_text(encoding="utf-8")
    stale = page.replace("| `USAGE` | 2 |", "| `USAGE` | 3 |")
    assert stale != page
    assert doc.render(stale) != stale


# Codes still written as strings, outside the enum (CLI and sandbox-page refusals): pinned
# here so a new string code fails this test until it joins the enum or this list.
NOT_YET_IN_THE_ENUM = frozenset(
    {"ABORTED", "CANNOT_READ", "NOT_EXECUTABLE", "GONE", "UNREACHABLE", "WRONG_HOST", "FORBIDDEN"}
    # `relay rules` (relay/errors.py is at the most lines a module may have: they join the
    # enum when it is split).
    | {"RECEIPTS_UNVERIFIED", "RULE_ALLOWS_DENIED"}
)
_RAISERS = {"ApiError", "CommandError", "error_response", "error_line", "ActionRefused", "_error"}


def _string_codes() -> set[str]:
    found: set[str] = set()
    for path in (ROOT / "relay").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
            if name not in _RAISERS:
                continue
            for arg in node.args[:2]:
                text = arg.value if isinstance(arg, ast.Constant) else None
                if isinstance(text, str) and re.fullmatch(r"[A-Z][A-Z_]+", text):
                    found.add(text)
    return found


def test_every_code_written_as_a_string_is_pinned() -> None:
    codes = _string_codes()
    assert codes  # (the scan reads the raise sites: an empty set would pass anything)
    assert codes - {str(c) for c in ErrorCode} <= NOT_YET_IN_THE_ENUM, codes
