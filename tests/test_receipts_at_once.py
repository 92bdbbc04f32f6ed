"""Receipts of calls decided at once, without a person: through ``relay serve``'s
``/v1/approvals``, an operator's rule (allow and deny), a live grant and an approved plan
each get a receipt in the one chain, naming what decided and never the call's text; the
chain verifies with ``relay verify`` and an independent JOSE library, the report counts
them, and a relay stopped by SIGTERM right after deciding still writes them."""

from __future__ import annotations

import json
import re
import signal
import warnings
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from joserfc import jws as jose_jws
from joserfc.errors import SecurityWarning
from joserfc.jwk import KeySet

from relay.canonical.match import fingerprint
from relay.receipts import ReceiptWriter, SigningKey
from relay.receipts.jcs import canonical
from relay.receipts.verify import verify_all
from relay.store import MemoryStore
from relay.testing import FakeSlack
from tests.mcp_env import http_client, result_text, stdio_client
from tests.server_env import (
    SECRET,
    TOKEN,
    Relay,
    free_port,
    relay_env,
    relay_server,
    start_relay,
)
from tests.test_plans_api import AGENT, approved_plan, bash
from tests.test_receipts_serve import chain_of, key_file, payload_of, relay_verify
from tests.test_report_serve import OPERATOR, cli_env, fetch, relay_cli

RULES = """
[[rules]]
action = "deny"
commands = ["rm -rf *"]

[[rules]]
action = "allow"
tools = ["Bash"]
commands = ["npm test"]
"""


def rules_file(tmp: Path) -> str:
    path = tmp / "operator.toml"
    path.write_text(RULES)
    return str(path)


def allowed_by_client(command: str) -> dict[str, Any]:
    """A call the client's own rules allow (the operator's must too: the stricter holds)."""
    return {**bash(command), "client_verdict": "allow"}


async def decided_at_once(relay: Relay, body: dict[str, Any]) -> dict[str, Any]:
    """``body`` put to ``/v1/approvals``, decided at once (200, no post)."""
    status, answer = await relay.request("POST", "/v1/approvals", json=body)
    assert status == 200, answer
    return answer["decision"]  # type: ignore[no-any-return]


async def granted(relay: Relay, slack: FakeSlack, command: str) -> None:
    """A reviewer allows ``command`` for the session: a grant."""
    posted = len(slack.messages)
    status, approval = await relay.request("POST", "/v1/approvals", json=bash(command))
    assert status == 201, approval
    message = await slack.wait_for_message(count=posted + 1, timeout=15)
    await slack.click(message, "Allow for this session", user="U0ALICE")
    status, got = await relay.request("GET", f"/v1/approvals/{approval['id']}?wait=10")
    assert got["decision"]["outcome"] == "granted", got


async def test_rules_grants_and_plans_deciding_at_once_each_leave_a_receipt(
    tmp_path: Path,
) -> None:
    async with (
        FakeSlack(signing_secret=SECRET) as slack,
        relay_server(
            slack,
            RELAY_RECEIPT_KEY_FILE=key_file(tmp_path),
            RELAY_RULES_FILE=rules_file(tmp_path),
            RELAY_OPERATOR_TOKENS=OPERATOR,
        ) as relay,
    ):
        slack.add_user("U0ALICE", name="alice")
        plan_id = await approved_plan(relay, slack)
        by_plan = await decided_at_once(relay, bash("npm run build"))
        assert by_plan["plan"] == plan_id
        by_rule = await decided_at_once(relay, allowed_by_client("npm test"))
        assert by_rule["behavior"] == "allow"
        denied = await decided_at_once(relay, bash("rm -rf build"))
        assert denied["behavior"] == "deny"
        await granted(relay, slack, "make lint")
        by_grant = await decided_at_once(relay, bash("make lint"))
        assert by_grant["outcome"] == "allowed"
        decisions = [by_plan, by_rule, denied, by_grant]
        # Two asks (the grant's, the plan's review) and four calls decided at once.
        items = await chain_of(relay, 6)
        payloads = [payload_of(i["receipt"]) for i in items]
        at_once = [p for p in payloads if p.get("kind") == "at_once"]
        assert [p["decision"] for p in at_once] == ["allow", "allow", "deny", "allow"]
        # Each answer named its receipt, written after it.
        assert [d["receipt"] for d in decisions] == [p["jti"] for p in at_once]
        assert [p["call"]["digest"] for p in at_once] == [
            fingerprint("Bash", {"command": c})
            for c in ("npm run build", "npm test", "rm -rf build", "make lint")
        ]
        plan, rule, deny, grant = (p["by"] for p in at_once)
        assert rule["rule"]["number"] == 2
        assert rule["rule"]["pattern"] == {"tools": ["Bash"], "commands": ["npm test"]}
        assert (deny["rule"]["number"], deny["rule"]["action"]) == (1, "deny")
        assert rule["rule"]["file"].endswith("operator.toml")
        assert grant["grant"]["id"] == by_grant["grant"]["id"]
        assert grant["grant"]["granted_by"]["user"] == "U0ALICE"
        assert plan["plan"] == {"id": plan_id, "receipt": f"rcpt_{plan_id}"}
        # The plan's own receipt is in the chain: that of its review ask.
        assert f"rcpt_{plan_id}" in [p["jti"] for p in payloads]
        for p in at_once:
            assert p["agent"]["name"] == AGENT["id"]
            assert datetime.fromisoformat(p["at"]) <= datetime.now(UTC)
            # The call as a digest only (an input may hold secrets); a rule names its own.
            text = json.dumps(p)
            assert not any(c in text for c in ("npm run build", "rm -rf build", "make lint"))
        code, said = relay_verify(tmp_path, items, relay.url + "/.well-known/jwks.json")
        assert code == 0, said
        assert "6 receipts verified and they link in order" in said

        # The report counts them, on the page and in the terminal.
        status, _, page = await fetch(relay, {"Authorization": f"Bearer {OPERATOR}"})
        assert status == 200
        assert 'id="at-once"' in page
        assert "3</b>allowed at once by rules, grants, plans" in page
        assert "1</b>denied at once by rules" in page
        code, out, err = await relay_cli(
            "report", env=cli_env(RELAY_URL=relay.url, RELAY_TOKEN=OPERATOR)
        )
        assert code == 0, err
        assert "What the rules decided without a person" in out
        assert f"plan {plan_id}" in out
        rows = [re.split(r"\s{2,}", line.strip()) for line in out.splitlines()]
        assert ["all", "3", "1", "4"] in rows


async def test_a_receipt_of_a_call_decided_at_once_verifies_with_a_jose_library() -> None:
    store = MemoryStore()
    key = SigningKey.generate()
    writer = ReceiptWriter(store=store, key=key, issuer="relay.example")
    writer.decided_at_once(
        owner="fp",
        agent="ci-7",
        tool="Bash",
        call=fingerprint("Bash", {"command": "npm test"}),
        decision="allow",
        by={"plan": {"id": "plan1"}},
        at=datetime(2026, 12, 1, tzinfo=UTC),
    )
    # Written in the background; a stopping relay's drain waits for it (as for asks' ends).
    await writer.aclose()
    [token] = await store.receipt_range()
    key_set = KeySet.import_key_set(writer.published.jwks())  # type: ignore[arg-type]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SecurityWarning)
        verified = jose_jws.deserialize_compact(token, key_set, algorithms=["EdDSA"])
    payload = json.loads(verified.payload)
    assert canonical(payload) == verified.payload  # its own JCS form
    assert payload["kind"] == "at_once"
    assert payload["by"]["plan"] == {"id": "plan1", "receipt": "rcpt_plan1"}
    assert payload["at"] == "2026-12-01T00:00:00.000000Z"
    assert verify_all([("one", token)], writer.published, chain=True) == []
    # Closed, it takes no more (a stopped relay decides nothing).
    writer.decided_at_once(
        owner="fp",
        agent="a",
        tool="Read",
        call="0" * 64,
        decision="allow",
        by={},
        at=datetime.now(UTC),
    )
    await writer.drain()
    assert len(await store.receipt_range()) == 1


async def test_a_relay_stopped_right_after_deciding_at_once_still_writes_the_receipt(
    tmp_path: Path, redis_url: str
) -> None:
    async with FakeSlack(signing_secret=SECRET) as slack:
        key = key_file(tmp_path)
        extra = {
            "RELAY_RECEIPT_KEY_FILE": key,
            "RELAY_RULES_FILE": rules_file(tmp_path),
            "REDIS_URL": redis_url,
        }
        first = await start_relay(relay_env(slack, free_port(), **extra))
        try:
            for _ in range(20):
                assert (await decided_at_once(first, allowed_by_client("npm test")))[
                    "behavior"
                ] == "allow"
        finally:
            assert await first.stop(signal.SIGTERM) == 0
        second = await start_relay(relay_env(slack, free_port(), **extra))
        try:
            items = await chain_of(second, 20, timeout=5)
        finally:
            await second.stop()
        assert len(items) == 20
        assert all(payload_of(i["receipt"])["kind"] == "at_once" for i in items)


async def test_a_call_the_rules_deny_on_mcp_has_its_receipt_too(tmp_path: Path) -> None:
    async with (
        FakeSlack(signing_secret=SECRET) as slack,
        relay_server(
            slack,
            RELAY_RECEIPT_KEY_FILE=key_file(tmp_path),
            RELAY_RULES_FILE=rules_file(tmp_path),
        ) as relay,
        http_client(relay, mode="legacy") as client,
        stdio_client({"RELAY_URL": relay.url, "RELAY_TOKEN": TOKEN}, mode="legacy") as stdio,
    ):
        # On /mcp, and through relay mcp pointed at the relay: the same content, and each
        # names the receipt of its own decision in _meta, which the model does not read.
        use = {"tool_name": "Bash", "input": {"command": "rm -rf build"}}
        results = [await mcp.call_tool("approve_tool_use", use) for mcp in (client, stdio)]
        assert results[0].model_dump(exclude={"meta"}) == results[1].model_dump(exclude={"meta"})
        assert json.loads(result_text(results[0]))["behavior"] == "deny"
        assert slack.messages == []  # nobody asked
        payloads = [payload_of(item["receipt"]) for item in await chain_of(relay, 2)]
        assert sorted(r.meta["relay/receipt"] for r in results if r.meta) == sorted(
            p["jti"] for p in payloads
        )
        for payload in payloads:
            assert (payload["kind"], payload["decision"]) == ("at_once", "deny")
            assert payload["by"]["rule"]["number"] == 1
            assert payload["call"]["digest"] == fingerprint("Bash", {"command": "rm -rf build"})
