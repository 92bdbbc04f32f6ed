"""Who reads which receipts, through a real ``relay serve``: an agent token its own asks'
and approvals' (listing, single reads, the export), an operator token
(``RELAY_OPERATOR_TOKENS``) every one of them and nothing but receipts, and a token listed as
both stops the relay."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import aiohttp

from relay.testing import FakeSlack
from tests.replica_env import ASK
from tests.server_env import (
    OTHER_TOKEN,
    SECRET,
    TOKEN,
    Relay,
    free_port,
    relay_env,
    relay_server,
    run_to_exit,
)
from tests.test_receipts_serve import key_file, payload_of

OPERATOR = "operator-token-for-audit-0123456789"
APPROVAL = {"tool": "Bash", "input": {"command": "make deploy"}, "agent": {"id": "a"}}


async def read(relay: Relay, path: str, token: str) -> tuple[int, str]:
    """GET ``path`` with ``token``: status and body text."""
    async with (
        aiohttp.ClientSession() as session,
        session.get(relay.url + path, headers=relay.headers(token)) as response,
    ):
        return response.status, await response.text()


async def listing(relay: Relay, token: str, limit: int = 1000) -> list[dict[str, Any]]:
    """Every receipt ``token`` lists, page by page (as ``relay audit --receipts`` reads)."""
    items: list[dict[str, Any]] = []
    after = 0
    while True:
        status, page = await relay.request(
            "GET", f"/v1/receipts?after={after}&limit={limit}", token=token
        )
        assert status == 200, page
        items.extend(page["receipts"])
        if page["next_after"] is None:
            return items
        assert page["next_after"] > after
        after = page["next_after"]


async def ended_ask(relay: Relay, token: str) -> str:
    status, made = await relay.request("POST", "/v1/asks", json=ASK, token=token)
    assert status == 201, made
    status, _ = await relay.request("DELETE", f"/v1/asks/{made['id']}", token=token)
    assert status == 200
    return str(made["id"])


async def test_a_token_reads_only_its_own_receipts_and_the_operator_all(tmp_path: Path) -> None:
    async with (
        FakeSlack(signing_secret=SECRET) as slack,
        relay_server(
            slack, RELAY_RECEIPT_KEY_FILE=key_file(tmp_path), RELAY_OPERATOR_TOKENS=OPERATOR
        ) as relay,
    ):
        a_ask = await ended_ask(relay, TOKEN)
        status, approval = await relay.request("POST", "/v1/approvals", json=APPROVAL, token=TOKEN)
        assert status == 201, approval
        a_approval = str(approval["id"])
        message = await slack.wait_for_message(count=2, timeout=15)
        await slack.click(message, "Deny", user="U0BOB")
        await relay.request("GET", f"/v1/approvals/{a_approval}?wait=10", token=TOKEN)
        b_ask = await ended_ask(relay, OTHER_TOKEN)
        a_routes = [f"/v1/asks/{a_ask}/receipt", f"/v1/approvals/{a_approval}/receipt"]

        # Each owner's own reads write the receipts (so the listings below are complete).
        for path in a_routes:
            assert (await read(relay, path, TOKEN))[0] == 200, path
        status, b_receipt = await read(relay, f"/v1/asks/{b_ask}/receipt", OTHER_TOKEN)
        assert status == 200

        # B: none of A's, on every route; its own in the listing, and nothing of A's in it.
        for path in a_routes:
            status, body = await read(relay, path, OTHER_TOKEN)
            assert status == 404, (path, body)
            assert "belongs to another token" in body
        for limit in (1, 1000):
            b_listed = await listing(relay, OTHER_TOKEN, limit)
            assert [i["ask"] for i in b_listed] == [b_ask]
        assert b_listed[0]["receipt"] == b_receipt
        assert TOKEN not in str(b_listed)
        owners = {payload_of(i["receipt"])["agent"]["owner"] for i in b_listed}
        assert len(owners) == 1

        # A: its two, in chain order.
        a_listed = await listing(relay, TOKEN, limit=1)
        assert sorted(i["ask"] for i in a_listed) == sorted([a_ask, a_approval])
        assert [i["seq"] for i in a_listed] == sorted(i["seq"] for i in a_listed)

        # The operator: every receipt, every single read, the whole chain in order.
        everything = await listing(relay, OPERATOR)
        assert sorted(i["ask"] for i in everything) == sorted([a_ask, a_approval, b_ask])
        assert [i["seq"] for i in everything] == [1, 2, 3]
        for path in [*a_routes, f"/v1/asks/{b_ask}/receipt"]:
            assert (await read(relay, path, OPERATOR))[0] == 200, path
        # An approval route still serves approvals only.
        assert (await read(relay, f"/v1/approvals/{b_ask}/receipt", OPERATOR))[0] == 404

        # And nothing but receipts: no asks, no listing of asks, no approvals.
        status, body = await relay.request("POST", "/v1/asks", json=ASK, token=OPERATOR)
        assert status == 401
        assert body["error"]["code"] == "UNAUTHORIZED"
        assert "receipts only" in body["error"]["message"]
        for path in ["/v1/asks", f"/v1/asks/{a_ask}", f"/v1/approvals/{a_approval}"]:
            assert (await read(relay, path, OPERATOR))[0] == 401, path
        status, _ = await relay.request("DELETE", f"/v1/asks/{a_ask}", token=OPERATOR)
        assert status == 401
        assert OPERATOR not in "".join(relay.log)


async def test_a_token_listed_as_agent_and_operator_stops_the_relay() -> None:
    async with FakeSlack(signing_secret=SECRET) as slack:
        env = relay_env(slack, free_port(), RELAY_OPERATOR_TOKENS=f"{OPERATOR},{OTHER_TOKEN}")
        code, lines = await run_to_exit(env)
    text = "\n".join(lines)
    assert code != 0
    assert "RELAY_OPERATOR_TOKENS" in text
    assert "RELAY_API_TOKENS lists too" in text
    assert OTHER_TOKEN not in text
