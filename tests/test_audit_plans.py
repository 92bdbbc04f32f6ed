"""``relay audit --plans``: each plan reviewed, who approved it, when, its scope in plain
words, and the calls it covered, as JSON lines and as safe CSV, from a real ``relay serve``."""

from __future__ import annotations

import csv
import io
import json

from relay.audit.plans import PLAN_CSV_COLUMNS, plan_csv_rows
from relay.testing import FakeSlack
from tests.server_env import SECRET, relay_server
from tests.test_audit import run_audit
from tests.test_plans_api import AGENT, PLAN, ROOT, approved_plan, bash, call, reviewed


def test_a_plans_csv_rows_are_the_plan_then_each_call_it_covered() -> None:
    plan = {
        "id": "p1",
        "status": "active",
        "agent": "=cmd|' /C calc'!A0",
        "approved_by": {"id": "U0ALICE", "name": "alice"},
        "approved_at": "2026-05-01T09:00:00+00:00",
        "expires_at": "2026-05-01T13:00:00+00:00",
        "scope_words": ["- runs `npm run build`, each word for word", "- no file writes"],
        "covered": [{"tool": "Bash", "call": "sha256:ab", "at": "2026-05-01T09:01:00+00:00"}],
        "covered_count": 1,
    }
    rows = [dict(zip(PLAN_CSV_COLUMNS, row, strict=True)) for row in plan_csv_rows(plan)]
    assert [(r["plan_id"], r["row"]) for r in rows] == [("p1", "plan"), ("p1", "covered")]
    assert (rows[0]["approved_by_name"], rows[0]["covered_count"]) == ("alice", "1")
    assert rows[0]["scope"].splitlines()[1] == "- no file writes"
    assert rows[0]["agent"].startswith("'=")  # a spreadsheet would run it
    assert (rows[1]["tool"], rows[1]["call"], rows[1]["status"]) == ("Bash", "sha256:ab", "")


async def test_relay_audit_shows_each_plan_with_the_calls_it_covered() -> None:
    async with FakeSlack(signing_secret=SECRET) as slack, relay_server(slack) as relay:
        slack.add_user("U0ALICE", name="alice")
        plan_id = await approved_plan(relay, slack)
        for body in (
            bash("npm run build"),
            call("Write", file_path=f"{ROOT}/tests/billing/test_eur.py", content="x"),
        ):
            status, answer = await relay.request("POST", "/v1/approvals", json=body)
            assert (status, answer["decision"]["plan"]) == (200, plan_id)
        # A second plan, sent back: listed too, with nothing covered.
        status, created = await relay.request(
            "POST", "/v1/plans", json={"plan": PLAN, "agent": AGENT, "cwd": ROOT}
        )
        assert status == 201, created
        rejected = created["id"]
        message = await slack.wait_for_message(count=2, timeout=15)
        await slack.click(message, "Keep planning", user="U0ALICE")
        assert (await reviewed(relay, rejected))["status"] == "rejected"
        # An ordinary ask is no plan.
        status, _ = await relay.request("POST", "/v1/approvals", json=bash("git push"))
        assert status == 201

        code, out, err = await run_audit(relay, "--plans")
        assert code == 0, err
        assert "exported 2 plans" in err
        plans = [json.loads(line) for line in out.splitlines()]
        assert [(p["id"], p["status"]) for p in plans] == [
            (rejected, "rejected"),
            (plan_id, "active"),
        ]
        active = plans[1]
        assert active["agent"] == AGENT["id"]
        assert active["approved_by"]["id"] == "U0ALICE"
        assert active["approved_at"]
        assert "- writes under `tests/billing/` (in `/home/dev/shop`)" in active["scope_words"]
        assert [c["tool"] for c in active["covered"]] == ["Bash", "Write"]
        assert active["covered_count"] == 2
        assert "npm" not in json.dumps(active["covered"])  # digests, never the input

        code, out, err = await run_audit(relay, "--plans", "--format", "csv", "--since", "1h")
        assert code == 0, err
        rows = list(csv.DictReader(io.StringIO(out)))
        assert [(r["plan_id"], r["row"], r["tool"]) for r in rows] == [
            (rejected, "plan", ""),
            (plan_id, "plan", ""),
            (plan_id, "covered", "Bash"),
            (plan_id, "covered", "Write"),
        ]
        assert (rows[1]["approved_by_name"], rows[1]["status"]) == ("alice", "active")
        assert "runs `pytest -q tests/billing`" in rows[1]["scope"]
        assert rows[2]["at"]
        assert rows[2]["call"]

        code, out, err = await run_audit(relay, "--plans", "--receipts")
        assert code == 2
        assert "not allowed with" in err
