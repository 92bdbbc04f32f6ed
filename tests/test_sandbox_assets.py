"""The sandbox page's own data, checked against relay's source: every emoji shortcode relay
puts in a message is one the page's renderer shows as an emoji (the browser tests render
them; this keeps the table in step with the messages)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EMOJI_JS = ROOT / "relay" / "sandbox" / "assets" / "emoji.js"
# A shortcode in a message's text: after a quote, a space or a newline, and before a space
# (so that a Redis key "relay:ask:" or an address "64:ff9b::" is none).
SHORTCODE = re.compile(r"""(?:^|["'\s(]|\\n)(:[a-z][a-z0-9_+-]*:) """)


def table() -> set[str]:
    return set(re.findall(r'(?<![\w"])"?([a-z0-9_+-]+)"?: "\\u', EMOJI_JS.read_text()))


def test_every_shortcode_relays_messages_use_is_in_the_pages_emoji_table() -> None:
    used = {
        code.strip(":")
        for path in (ROOT / "relay").rglob("*.py")
        for code in SHORTCODE.findall(path.read_text())
    }
    assert {"pencil2", "no_entry", "white_check_mark", "rotating_light"} <= used
    assert used - table() == set()


def test_the_table_reads_as_slacks_names() -> None:
    names = table()
    assert len(names) > 200
    assert {"+1", "thumbsup", "tada", "rocket", "eyes", "warning", "x"} <= names


def test_the_scripting_page_names_every_event_kind_and_error_of_the_pages_endpoints() -> None:
    doc = (ROOT / "docs" / "sandbox-scripting.md").read_text()
    sandbox = ROOT / "relay" / "sandbox"
    page, standin = (sandbox / "page.py").read_text(), (sandbox / "standin.py").read_text()
    events = set(re.findall(r'_send\(response, "(\w+)"', page))
    assert events == {"snapshot", "message", "ephemeral", "dm", "modal"}
    kinds = set(re.findall(r'"(\w+)"', "".join(re.findall(r"_KINDS = \((.*?)\)", standin))))
    assert {"button", "enter", "view_submit", "view_close"} <= kinds
    act = page.split("async def _act")[1].split("async def _sample")[0]
    codes = set(
        re.findall(r"(?:_error\(\s*\d+, |ActionRefused\(\s*)ErrorCode\.([A-Z_]+)", page + standin)
    )
    assert {"BAD_REQUEST", "GONE", "NOT_FOUND", "UNREACHABLE", "WRONG_HOST"} <= codes
    assert "_json_body" in act  # FORBIDDEN and UNSUPPORTED_MEDIA_TYPE come from it
    for event in events:
        assert f"| `{event}` |" in doc, event
    for kind in kinds:
        assert f"`{kind}`" in doc, kind
    for code in codes - {"UNAVAILABLE"}:  # (only /sandbox/sample and /sandbox/answers)
        assert f"`{code}`" in doc, code
