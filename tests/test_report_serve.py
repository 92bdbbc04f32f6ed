"""The approvals report through a real ``relay serve``: ``GET /report`` for an operator only
(no token and an agent's token refused with ``UNAUTHORIZED``), the page's figures from the
chain, and ``relay report`` as a subprocess, from the running relay and from an export, with
a tampered export refused."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import sys
from pathlib import Path

import aiohttp

from relay.testing import FakeSlack
from tests.replica_env import ASK
from tests.server_env import OTHER_TOKEN, SECRET, TOKEN, Relay, relay_server
from tests.test_receipts_serve import key_file

OPERATOR = "operator-token-for-the-report-0123456789"


def basic(token: str) -> dict[str, str]:
    """HTTP Basic with ``token`` as the password, as a browser sends it."""
    return {"Authorization": "Basic " + base64.b64encode(f"ops:{token}".encode()).decode()}


async def fetch(relay: Relay, headers: dict[str, str]) -> tuple[int, dict[str, str], str]:
    async with (
        aiohttp.ClientSession() as session,
        session.get(relay.url + "/report", headers=headers) as response,
    ):
        return response.status, dict(response.headers), await response.text()


async def decide(relay: Relay, slack: FakeSlack, command: str, label: str, user: str) -> str:
    """An approval of ``command`` that ``user`` ends with ``label``; its receipt written."""
    body = {"tool": "Bash", "input": {"command": command}, "agent": {"id": "ci-7"}}
    posted = len(slack.messages)
    status, approval = await relay.request("POST", "/v1/approvals", json=body)
    assert status == 201, approval
    message = await slack.wait_for_message(count=posted + 1, timeout=15)
    await slack.click(message, label, user=user)
    status, got = await relay.request("GET", f"/v1/approvals/{approval['id']}?wait=10")
    assert got["status"] == "decided", got
    # Reading the receipt writes it there and then if the writer has not yet.
    status, _ = await relay.request("GET", f"/v1/approvals/{approval['id']}/receipt")
    assert status == 200
    return str(approval["id"])


async def relay_cli(*args: str, env: dict[str, str]) -> tuple[int, str, str]:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "relay.cli",
        *args,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(process.communicate(), 60)
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()


def cli_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RELAY_", "SLACK_"))}
    return {**env, **extra}


async def test_the_report_is_an_operators_page_made_from_the_chain(tmp_path: Path) -> None:
    async with (
        FakeSlack(signing_secret=SECRET) as slack,
        relay_server(
            slack, RELAY_RECEIPT_KEY_FILE=key_file(tmp_path), RELAY_OPERATOR_TOKENS=OPERATOR
        ) as relay,
    ):
        await decide(relay, slack, "npm test", "Allow once", "U0ALICE")
        # Another token's ask in between (withdrawn): in the chain, not an approval.
        status, other = await relay.request("POST", "/v1/asks", json=ASK, token=OTHER_TOKEN)
        assert status == 201, other
        await relay.request("DELETE", f"/v1/asks/{other['id']}", token=OTHER_TOKEN)
        status, _ = await relay.request("GET", f"/v1/asks/{other['id']}/receipt", token=OTHER_TOKEN)
        assert status == 200
        await decide(relay, slack, "npm test", "Allow once", "U0BOB")
        await decide(relay, slack, "rm -rf /", "Deny", "U0BOB")

        # No credential: refused, and a browser is asked for one.
        status, headers, text = await fetch(relay, {})
        assert status == 401
        assert json.loads(text)["error"]["code"] == "UNAUTHORIZED"
        assert headers["WWW-Authenticate"].startswith("Basic ")
        # An agent's token, either way it is sent, and a wrong one: refused, said why.
        for sent in (relay.headers(TOKEN), basic(TOKEN), basic("not-a-token")):
            status, _, text = await fetch(relay, sent)
            assert status == 401, sent
            assert json.loads(text)["error"]["code"] == "UNAUTHORIZED"
        status, _, text = await fetch(relay, relay.headers(TOKEN))
        assert "operator token" in json.loads(text)["error"]["message"]

        # The operator, as a bearer token or a browser's Basic password: the page.
        for sent in (relay.headers(OPERATOR), basic(OPERATOR)):
            status, headers, page = await fetch(relay, sent)
            assert status == 200, page
            assert headers["Content-Type"].startswith("text/html")
            assert "default-src 'none'" in headers["Content-Security-Policy"]
            assert headers["Cache-Control"] == "no-store"
        assert "<b>3</b>approvals" in page
        assert 'data-ending="allowed" data-count="2"' in page
        assert 'data-ending="denied" data-count="1"' in page
        # The repeated call named from the kept ask whose question the receipts signed.
        assert "<code>Bash: npm test</code>" in page, page[page.index("h-repeated") :]
        assert "<td>ci-7</td>" in page
        assert OPERATOR not in "".join(relay.log)

        # The CLI from the running relay: the operator's token reads the whole chain.
        env = cli_env(RELAY_URL=relay.url, RELAY_TOKEN=OPERATOR)
        code, out, err = await relay_cli("report", env=env)
        assert code == 0, err
        assert "allowed        2" in out
        assert "denied         1" in out
        assert "Bash: npm test" not in out  # (names come from the relay's records: the page)
        assert "U0BOB" in out
        assert "1 other asks (not tool approvals)" in out
        # An agent's token reads its own receipts only, which is no whole chain.
        code, _, err = await relay_cli("report", env={**env, "RELAY_TOKEN": TOKEN})
        assert code == 2
        assert "RECEIPTS_UNVERIFIED" in err
        assert "use an operator token" in err

        # From an export, checked against the published keys; as the page, offline.
        bundle = tmp_path / "receipts.jsonl"
        code, _, err = await relay_cli("audit", "--receipts", "-O", str(bundle), env=env)
        assert code == 0, err
        code, out, err = await relay_cli("report", "--receipts", str(bundle), env=env)
        assert code == 0, err
        assert "p50" in out
        # The calls named from the agent's own asks export, where the digests match.
        asks = tmp_path / "asks.jsonl"
        agent = {**env, "RELAY_TOKEN": TOKEN}
        code, _, err = await relay_cli("audit", "-O", str(asks), env=agent)
        assert code == 0, err
        code, out, err = await relay_cli(
            "report", "--receipts", str(bundle), "--asks", str(asks), env=env
        )
        assert code == 0, err
        assert "Bash: npm test" in out
        html = tmp_path / "report.html"
        code, _, err = await relay_cli(
            "report", "--receipts", str(bundle), "--format", "html", "-O", str(html), env=env
        )
        assert code == 0, err
        assert html.read_text().count("<svg") == 4

        # An export with a receipt dropped: no report at all.
        lines = bundle.read_text().splitlines()
        cut = tmp_path / "cut.jsonl"
        cut.write_text("\n".join(lines[:1] + lines[2:]) + "\n")
        code, out, err = await relay_cli("report", "--receipts", str(cut), env=env)
        assert code == 2
        assert "RECEIPTS_UNVERIFIED" in err
        assert "missing" in err
        assert out == ""


async def test_a_relay_that_signs_no_receipts_has_no_report() -> None:
    async with (
        FakeSlack(signing_secret=SECRET) as slack,
        relay_server(slack, RELAY_OPERATOR_TOKENS=OPERATOR) as relay,
    ):
        status, _, text = await fetch(relay, relay.headers(OPERATOR))
        assert status == 404
        error = json.loads(text)["error"]
        assert error["code"] == "NOT_FOUND"
        assert "RELAY_RECEIPT_KEY_FILE" in error["message"]


async def test_the_page_suggests_the_rule_relay_rules_suggest_offers(tmp_path: Path) -> None:
    def approval(command: str) -> dict[str, object]:
        return {
            "tool": "Bash",
            "input": {"command": command},
            "agent": {"id": "ci-7"},
            "editable": True,  # the call itself is shown (and kept), not text only
        }

    plays = [("npm test", "Allow once", u) for u in ("U0ALICE", "U0BOB") * 3]
    plays += [("rm -rf build", "Allow once", "U0BOB"), ("rm -rf build", "Deny", "U0ALICE")]
    async with (
        FakeSlack(signing_secret=SECRET) as slack,
        relay_server(
            slack, RELAY_RECEIPT_KEY_FILE=key_file(tmp_path), RELAY_OPERATOR_TOKENS=OPERATOR
        ) as relay,
    ):
        for n, (command, label, user) in enumerate(plays, 1):
            status, created = await relay.request("POST", "/v1/approvals", json=approval(command))
            assert status == 201, created
            await slack.click(await slack.wait_for_message(count=n, timeout=15), label, user=user)
            status, got = await relay.request("GET", f"/v1/approvals/{created['id']}?wait=10")
            assert got["status"] == "decided", got
            status, _ = await relay.request("GET", f"/v1/approvals/{created['id']}/receipt")
            assert status == 200
        status, _, page = await fetch(relay, relay.headers(OPERATOR))
        assert status == 200, page
        table = page[
            page.index('id="repeated"') : page.index("</table>", page.index('id="repeated"'))
        ]
        npm, rm = (next(r for r in table.split("<tr>") if c in r) for c in ("npm test", "rm -rf"))
        # Allowed six times by two people, never denied: relay rules suggest offers it.
        assert "commands = [&quot;npm test&quot;]" in npm
        # Denied once: its rule's replay would allow that call, so no rule is shown.
        assert "none yet" in rm
