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
