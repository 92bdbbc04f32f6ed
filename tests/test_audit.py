"""The audit trail: ``GET /v1/asks`` (filters, cursor pages) and ``relay audit`` exports."""

from __future__ import annotations

import asyncio
import csv
import io
import json
import sys
import time
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from relay.audit.trail import CSV_COLUMNS, csv_rows, decode_cursor, encode_cursor, spreadsheet_safe
from relay.seam.questions import (
    AgentRef,
    AskUserQuestionAnswerItem,
    AskUserQuestionItem,
    AskUserQuestionOption,
    AskUserQuestionRequest,
    Responder,
)
from relay.store.listing import AskListing
from relay.store.memory import MemoryStore
from relay.store.record import AskRecord, AskStatus, Target
from relay.store.redis import RedisStore
from relay.testing import FakeSlack
from tests.documented import assert_documented
from tests.server_env import OTHER_TOKEN, TOKEN, Relay, relay_server

START = datetime(2026, 5, 1, 9, 0, tzinfo=UTC)


def ask(at: datetime, *, owner: str = "o1", agent: str = "a1", channel: str = "C1") -> AskRecord:
    question = AskUserQuestionItem(id="go", question="Ship?", options=(AskUserQuestionOption("y"),))
    return AskRecord(
        id=uuid.uuid4().hex,
        request=AskUserQuestionRequest((question,), agent=AgentRef(agent)),
        target=Target(channel=channel),
        created_at=at,
        messages=(None,),
        responses=(None,),
        owner=owner,
    )


def test_cells_a_spreadsheet_would_run_get_a_quote() -> None:
    for value in ("=1+1", "+SUM(A1)", "-2", "@cmd", "\tx", "\rx"):
        assert spreadsheet_safe(value) == "'" + value
    assert spreadsheet_safe("ship it") == "ship it"


def test_a_cursor_round_trips_and_a_forged_one_is_refused() -> None:
    assert decode_cursor(encode_cursor((1714554000.123456, "abc"))) == (1714554000.123456, "abc")
    for bad in ("", "not-base64!", encode_cursor((1.0, "x"))[:-3], "WzEsMl0"):
        assert decode_cursor(bad) is None


def test_csv_rows_show_who_answered_what_and_each_vote() -> None:
    item: dict[str, Any] = {
        "id": "A1",
        "status": "answered",
        "created_at": "2026-05-01T09:00:00+00:00",
        "questions": [
            {"id": "go", "question": "=cmd|' /C calc'!A0", "options": [{"label": "yes"}]}
        ],
        "answer": {"answers": [{"id": "go", "selected": ["yes"]}]},
        "responses": [
            {"id": "go", "answered_by": {"id": "U1", "name": "ann"}, "answered_at": "t1"}
        ],
        "agent": {"id": "ci"},
        "channel": "C1",
        "votes": [{"question": "go", "by": {"id": "U2"}, "selected": ["yes"], "at": "t0"}],
    }
    (row,) = list(csv_rows(item))
    assert row[7] == "'=cmd|' /C calc'!A0"
    # The relay's own ids may begin with "-" (token_urlsafe): kept exact, to match the API.
    (row,) = list(csv_rows({**item, "id": "-4oLHESWih4mE3YS"}))
    assert row[0] == "-4oLHESWih4mE3YS"
    assert row[7] == "'=cmd|' /C calc'!A0"
    assert (row[9], row[11], row[12], row[13]) == ("yes", "U1", "ann", "t1")
    assert row[CSV_COLUMNS.index("votes")] == "U2: yes at t0"
    assert row[CSV_COLUMNS.index("escalated_at")] == ""


@pytest.fixture(params=["memory", "redis", "cluster"])
async def listing(request: pytest.FixtureRequest) -> AsyncIterator[tuple[Any, AskListing]]:
    if request.param == "memory":
        store = MemoryStore()
        yield store, store
        return
    if request.param == "cluster":  # a session's cluster: a prefix of this test's own
        cluster = request.getfixturevalue("redis_cluster")
        store_r = RedisStore(url=cluster.url, prefix=f"t{uuid.uuid4().hex}:", retention=0.2)
    else:
        store_r = RedisStore(url=request.getfixturevalue("redis_url"), retention=0.2)
    try:
        yield store_r, store_r
    finally:
        await store_r.aclose()


async def test_listing_is_newest_first_by_owner_in_pages(listing: tuple[Any, AskListing]) -> None:
    store, index = listing
    mine = [ask(START + timedelta(minutes=i)) for i in range(5)]
    for record in [*mine, ask(START, owner="o2")]:
        await store.create(record=record)
    newest = [r.id for r in reversed(mine)]
    assert [r.id for r in await index.list_owned(owner="o1")] == newest
    first = await index.list_owned(owner="o1", limit=2)
    after = (first[-1].created_at.timestamp(), first[-1].id)
    rest = await index.list_owned(owner="o1", after=after, limit=10)
    assert [r.id for r in first + rest] == newest
    window = await index.list_owned(
        owner="o1",
        since=(START + timedelta(minutes=1)).timestamp(),
        until=(START + timedelta(minutes=3)).timestamp(),
    )
    assert [r.id for r in window] == [mine[2].id, mine[1].id]
    assert len(await index.list_owned(owner="o2")) == 1


async def test_an_ask_past_retention_leaves_the_listing(redis_url: str) -> None:
    store = RedisStore(url=redis_url, retention=0.1)
    try:
        record = ask(START)
        await store.create(record=record)
        await store.finish(ask_id=record.id, status=AskStatus.ABORTED, error=None, at=START)
        deadline = time.monotonic() + 5
        while await store.list_owned(owner="o1"):
            assert time.monotonic() < deadline, "the expired ask is still listed"
            await asyncio.sleep(0.02)
        assert await store._redis.zcard(store._owned_key("o1")) == 0  # trimmed, not just hidden
    finally:
        await store.aclose()


async def test_creating_asks_trims_the_owners_index_of_asks_past_retention(
    redis_url: str,
) -> None:
    # Nobody lists: the creates alone keep the index about as long as the asks Redis keeps.
    store = RedisStore(url=redis_url, retention=0.05, prefix=f"t:{uuid.uuid4().hex}:")
    try:
        ended = [ask(START + timedelta(seconds=n)) for n in range(5)]
        for record in ended:
            await store.create(record=record)
            await store.finish(ask_id=record.id, status=AskStatus.ABORTED, error=None, at=START)
        deadline = time.monotonic() + 5
        while await store._redis.exists(*(store._key(r.id) for r in ended)):
            assert time.monotonic() < deadline, "Redis kept the ended asks past retention"
            await asyncio.sleep(0.02)
        index = store._owned_key("o1")
        assert await store._redis.zcard(index) == 5  # expired, still indexed
        later = [ask(START + timedelta(hours=1, seconds=n)) for n in range(3)]
        for record in later:
            await store.create(record=record)
        assert [m.decode() for m in await store._redis.zrange(index, 0, -1)] == [
            r.id for r in later
        ]
    finally:
        await store.aclose()


async def test_memory_listing_forgets_what_retention_dropped() -> None:
    store = MemoryStore(retention_bytes=1)  # every finished ask is dropped at once
    record = ask(START)
    await store.create(record=record)
    assert len(await store.list_owned(owner="o1")) == 1
    item = AskUserQuestionAnswerItem(id="go", selected=("y",), answered_by=Responder("U1"))
    await store.answer(ask_id=record.id, index=0, item=item)
    assert await store.list_owned(owner="o1") == []
    assert store._owned == {}


ASK = {
    "questions": [
        {"id": "go", "question": "Ship it?", "options": [{"label": "yes"}, {"label": "no"}]}
    ],
    "agent": {"id": "ci-1"},
}


@pytest.fixture
async def env() -> AsyncIterator[tuple[FakeSlack, Relay]]:
    async with FakeSlack(signing_secret="server-signing-secret") as slack:
        slack.add_user("U0ALICE", name="alice")
        async with relay_server(slack, RELAY_ALLOWED_CHANNELS="C0B") as relay:
            yield slack, relay


async def make_history(slack: FakeSlack, relay: Relay) -> dict[str, str]:
    """An answered, an aborted and a timed-out ask (oldest first), each by another agent."""
    ids: dict[str, str] = {}
    _, made = await relay.request("POST", "/v1/asks", json=ASK)
    ids["answered"] = made["id"]
    await slack.click(await slack.wait_for_message(), "yes", user="U0ALICE")
    _, record = await relay.request("GET", f"/v1/asks/{made['id']}?wait=10")
    assert record["status"] == "answered"
    _, made = await relay.request(
        "POST", "/v1/asks", json={**ASK, "agent": {"id": "ci-2"}, "slack": {"channel": "C0B"}}
    )
    ids["aborted"] = made["id"]
    await relay.request("DELETE", f"/v1/asks/{made['id']}")
    body = {**ASK, "agent": {"id": "ci-3"}, "slack": {"timeout_s": 0.2}}
    _, made = await relay.request("POST", "/v1/asks", json=body)
    ids["timed_out"] = made["id"]
    _, record = await relay.request("GET", f"/v1/asks/{made['id']}?wait=10")
    assert record["status"] == "timed_out"
    return ids


async def test_get_asks_lists_filters_and_pages(env: tuple[FakeSlack, Relay]) -> None:
    slack, relay = env
    ids = await make_history(slack, relay)
    status, page = await relay.request("GET", "/v1/asks")
    assert status == 200
    assert_documented(page, "AuditPage")
    assert [a["id"] for a in page["asks"]] == [ids["timed_out"], ids["aborted"], ids["answered"]]
    assert page["next_cursor"] is None
    answered = page["asks"][2]
    assert answered["questions"] == ASK["questions"]
    assert (answered["agent"], answered["answered_by"]["id"]) == ({"id": "ci-1"}, "U0ALICE")
    assert answered["finished_at"]

    async def listed(query: str) -> list[str]:
        status, body = await relay.request("GET", f"/v1/asks?{query}")
        assert status == 200, body
        return [a["id"] for a in body["asks"]]

    assert await listed("status=answered,timed_out") == [ids["timed_out"], ids["answered"]]
    assert await listed("status=aborted&status=answered") == [ids["aborted"], ids["answered"]]
    assert await listed("responder=U0ALICE") == [ids["answered"]]
    assert await listed("agent=ci-2") == [ids["aborted"]]
    assert await listed("channel=C0B") == [ids["aborted"]]
    assert await listed("until=2000-01-01T00:00:00Z") == []
    assert len(await listed("since=2000-01-01")) == 3
    # Page by page, one at a time, with the opaque cursor.
    seen: list[str] = []
    cursor = ""
    while True:
        _, body = await relay.request("GET", f"/v1/asks?limit=1{cursor}")
        seen += [a["id"] for a in body["asks"]]
        if body["next_cursor"] is None:
            break
        cursor = f"&cursor={body['next_cursor']}"
    assert seen == [ids["timed_out"], ids["aborted"], ids["answered"]]
    # Another token sees none of them.
    _, theirs = await relay.request("GET", "/v1/asks", token=OTHER_TOKEN)
    assert theirs == {"asks": [], "next_cursor": None}


async def test_bad_list_parameters_are_400s_naming_them(env: tuple[FakeSlack, Relay]) -> None:
    _, relay = env
    for query, word in (
        ("status=done", "status"),
        ("limit=0", "limit"),
        ("limit=201", "limit"),
        ("since=yesterday", "since"),
        ("cursor=zz", "cursor"),
        ("colour=red", "colour"),
    ):
        status, body = await relay.request("GET", f"/v1/asks?{query}")
        assert (status, body["error"]["code"]) == (400, "BAD_REQUEST"), query
        assert word in body["error"]["message"]


async def run_audit(relay: Relay, *args: str) -> tuple[int, str, str]:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "relay.cli",
        "audit",
        *args,
        env={**relay.env, "RELAY_URL": relay.url, "RELAY_TOKEN": TOKEN},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(process.communicate(), 30)
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()


async def test_relay_audit_exports_jsonl_and_safe_csv(
    env: tuple[FakeSlack, Relay], tmp_path: Path
) -> None:
    slack, relay = env
    ids = await make_history(slack, relay)
    formula = {"questions": [{"id": "x", "question": '=HYPERLINK("http://evil")'}]}
    _, made = await relay.request("POST", "/v1/asks", json=formula)
    code, out, err = await run_audit(relay, "--since", "1h", "--format", "jsonl")
    assert code == 0, err
    lines = [json.loads(line) for line in out.splitlines()]
    assert [r["id"] for r in lines] == [
        made["id"],
        ids["timed_out"],
        ids["aborted"],
        ids["answered"],
    ]
    assert "exported 4 asks" in err

    target = tmp_path / "audit.csv"
    code, _, err = await run_audit(
        relay,
        "--since",
        "30d",
        "--format",
        "csv",
        "--output",
        str(target),
        "--status",
        "answered",
        "--status",
        "timed_out",
    )
    assert code == 0, err
    rows = list(csv.DictReader(io.StringIO(target.read_text(encoding="utf-8"))))
    assert [(r["ask_id"], r["status"]) for r in rows] == [
        (ids["timed_out"], "timed_out"),
        (ids["answered"], "answered"),
    ]
    assert rows[0]["error_reason"] == "timed_out"
    assert (rows[1]["answered_by"], rows[1]["selected"], rows[1]["options"]) == (
        "U0ALICE",
        "yes",
        "yes; no",
    )
    _, out, _ = await run_audit(relay, "--format", "csv", "--responder", "U0NOBODY")
    assert out.strip() == ",".join(CSV_COLUMNS)
    _, out, _ = await run_audit(relay, "--format", "csv", "--since", "1d")
    assert '"\'=HYPERLINK(""http://evil"")"' in out


async def test_relay_audit_says_what_is_missing() -> None:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "relay.cli",
        "audit",
        "--relay-url",
        "http://127.0.0.1:9",
        env={"PATH": "/usr/bin:/bin"},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    _, err = await process.communicate()
    assert process.returncode == 2
    assert "RELAY_TOKEN" in err.decode()
    code, _, err = await run_audit_bad_since()
    assert code == 2
    assert "--since" in err


async def run_audit_bad_since() -> tuple[int, str, str]:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "relay.cli",
        "audit",
        "--since",
        "last tuesday",
        env={"PATH": "/usr/bin:/bin", "RELAY_URL": "http://127.0.0.1:9", "RELAY_TOKEN": "x" * 20},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await process.communicate()
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()
