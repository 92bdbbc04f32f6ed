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
        "JSON_INEXACT_NUMBER", "JSON_TOO_DEEP", "CANNOT_READ", "NOT_EXECUTABLE", "ABORTED",
        "WRONG_HOST", "FORBIDDEN", "GONE", "UNREACHABLE", "RECEIPTS_UNVERIFIED",
        "RULE_ALLOWS_DENIED",
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


_RAISERS = {"ApiError", "CommandError", "error_response", "error_line", "ActionRefused", "_error"}


def _string_codes(source: str) -> set[str]:
    """Codes written as string literals where an error is raised or answered in ``source``."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
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


def test_no_code_is_written_as_a_string() -> None:
    # Each is ErrorCode.X (mypy refuses a str where the raisers take ErrorCode; this also
    # catches one that slipped through an Any).
    assert _string_codes('raise ApiError("NOPE", "m")\nerror_line("ALSO", "m")') == {
        "NOPE",
        "ALSO",
    }  # (the scan finds them where they would be)
    for path in (ROOT / "relay").rglob("*.py"):
        assert not _string_codes(path.read_text(encoding="utf-8")), path
