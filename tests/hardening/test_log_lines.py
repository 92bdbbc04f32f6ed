"""The relay's log cannot be forged or flooded from outside: one event, one bounded line."""

from __future__ import annotations

import asyncio
import io
import logging
import re
from collections.abc import AsyncIterator

import pytest

from relay.asks.logline import for_log
from relay.server.logs import LogFormatter, OneLineFilter
from relay.testing import FakeSlack
from tests.server_env import SECRET, Relay, relay_server

FORGED = "x\nevent=answered ask=… by=U0ALICE"
# A log line that starts a record: "2026-12-01 09:00:00,000 LEVEL logger message".
RECORD = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} [A-Z]+ \S+ ")


def ask(agent: str, channel: str = "C0SERVER") -> dict[str, object]:
    return {
        "questions": [{"id": "go", "question": "Ship it?", "options": [{"label": "yes"}]}],
        "agent": {"id": agent},
        "slack": {"channel": channel},
    }


@pytest.fixture
async def relay() -> AsyncIterator[Relay]:
    async with FakeSlack(signing_secret=SECRET) as slack, relay_server(slack) as served:
        yield served


async def created_line(relay: Relay, ask_id: str) -> str:
    await relay.wait_for_log(f"event=posted ask={ask_id}")
    lines = [line for line in relay.log if f"ask={ask_id}" in line]
    return next(line for line in lines if "event=created" in line)


@pytest.mark.parametrize("field", ["agent", "channel"])
async def test_a_newline_in_a_request_value_cannot_forge_a_second_event(
    relay: Relay, field: str
) -> None:
    body = ask(FORGED) if field == "agent" else ask("ci", channel=f"C0SERVER{FORGED}")
    status, created = await relay.request("POST", "/v1/asks", json=body)
    if field == "channel":
        # No operator lists such a channel (RELAY_ALLOWED_CHANNELS): refused before any log.
        assert status == 400, created
        assert not [entry for entry in relay.log if "by=U0ALICE" in entry]
        assert all(RECORD.match(entry) for entry in relay.log), relay.log
        return
    assert status == 201, created
    line = await created_line(relay, created["id"])
    assert '\\nevent=answered ask=… by=U0ALICE"' in line  # kept, escaped, readable
    # The value shows up only inside the real events of this ask, never as an event itself.
    mentions = [entry for entry in relay.log if "by=U0ALICE" in entry]
    assert line in mentions
    assert all(f"ask={created['id']}" in entry for entry in mentions), mentions
    assert not [entry for entry in relay.log if "INFO relay.ask event=answered" in entry]
    assert all(RECORD.match(entry) for entry in relay.log), relay.log  # each line a record


async def test_a_huge_request_value_makes_a_bounded_line(relay: Relay) -> None:
    status, created = await relay.request("POST", "/v1/asks", json=ask("a" * 60_000))
    assert status == 201, created
    line = await created_line(relay, created["id"])
    assert len(line) < 600
    assert "a" * 200 + "…(+59800 chars)" in line


GARBAGE = [
    b"GET / HTTP/1.1\r\nHost: relay\r\nBad Header\r\n\r\n",  # an invalid header
    b"GET /" + b"a" * 10_000 + b" HTTP/1.1\r\n\r\n",  # a request line too long
    b"GET / HTTP/9.9\r\n\r\n",  # no such version
    b"GET /\x00\x01 HTTP/1.1\r\n\r\n",  # control bytes in the request line
    b"POST /v1/asks HTTP/1.1\r\nHost: relay\r\nContent-Length: ten\r\n\r\n",  # bad length
    b"POST /v1/asks HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",  # bad chunk
]


async def send_raw(relay: Relay, data: bytes) -> bytes:
    reader, writer = await asyncio.open_connection("127.0.0.1", relay.port)
    try:
        writer.write(data)
        await writer.drain()
        return await asyncio.wait_for(reader.read(), 10)  # the relay hangs up after its 400
    finally:
        writer.close()


async def test_malformed_http_is_one_quiet_line_per_request_not_an_error(relay: Relay) -> None:
    for data in GARBAGE:
        reply = await send_raw(relay, data)
        assert reply.startswith(b"HTTP/1.0 400 Bad Request\r\n"), reply[:200]
    assert (await relay.request("GET", "/healthz", token=None))[0] == 200  # still serving
    refused = [line for line in relay.log if "refused a malformed HTTP request" in line]
    assert len(refused) == len(GARBAGE), relay.log  # one line each
    assert all(" INFO aiohttp.server " in line and len(line) < 400 for line in refused)
    assert not [line for line in relay.log if " ERROR " in line or "Traceback" in line]
    assert all(RECORD.match(entry) for entry in relay.log), relay.log


# -- the same guarantees as units -------------------------------------------------------------


def test_for_log_escapes_every_line_break_and_bounds_the_length() -> None:
    assert for_log("plain text") == "plain text"
    assert for_log("a\nb\rc\td\x00e\x1bf\x85g\u2028h\u2029i\x7f") == (
        "a\\nb\\rc\\td\\x00e\\x1bf\\x85g\\u2028h\\u2029i\\x7f"
    )
    assert "\n" not in for_log("\n" * 1000)
    assert for_log("x" * 250) == "x" * 200 + "…(+50 chars)"
    assert for_log("é—✓ ünïcode") == "é—✓ ünïcode"  # printable text is left alone


def test_the_servers_log_format_keeps_each_record_on_its_first_line() -> None:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(LogFormatter("%(levelname)s %(name)s %(message)s"))
    handler.addFilter(OneLineFilter())
    logger = logging.getLogger("relay.test-log-lines")
    logger.addHandler(handler)
    logger.propagate = False
    try:
        logger.warning("store failure on GET %s", "/v1/asks/x\nINFO relay.ask event=answered")
        try:
            raise ValueError("bad\nINFO relay.ask event=answered by=U0ALICE")
        except ValueError:
            logger.exception("unexpected error")
    finally:
        logger.removeHandler(handler)
    lines = stream.getvalue().splitlines()
    records = [line for line in lines if not line.startswith("| ")]
    assert records == [
        "WARNING relay.test-log-lines store failure on GET /v1/asks/x\\nINFO relay.ask"
        " event=answered",
        "ERROR relay.test-log-lines unexpected error",
    ]
    assert lines[-1] == "| INFO relay.ask event=answered by=U0ALICE"  # marked as traceback
