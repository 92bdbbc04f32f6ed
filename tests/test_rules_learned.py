"""Rules learned from the log: on a generated log of 3,000 approvals, each decided and signed
by the real ``ReceiptWriter`` (``bench.decision_log``), ``relay rules suggest`` proposes only
rules whose replay lets through no call people denied or edited, ``relay rules replay``
refuses a planted rule that would allow a denied call, naming that call, and a log that does
not verify, or asks that are not what their receipts say was shown, are refused."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from bench.decision_log import CI, DEV, Call, LogFiles, Plan, write_log
from relay.gate.approval import ApprovalRequest, Decision
from relay.gate.decider import Proposal
from relay.gate.policy import load_policy
from relay.gate.rulings import Rulings
from relay.learn import DecisionLog, Thresholds, read_log, suggest
from relay.learn.suggest import Candidate, candidate_of
from relay.receipts.bundle import check_bundle, receipt_lines
from relay.receipts.keys import public_keys_from
from relay.seam.parties import AgentRef

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> LogFiles:
    return asyncio.run(write_log(tmp_path_factory.mktemp("log"), Plan(approvals=3000)))


@pytest.fixture(scope="module")
def log(files: LogFiles) -> DecisionLog:
    text = files.receipts.read_text()
    keys = public_keys_from(files.keys.read_bytes())
    failures = check_bundle(text, str(files.receipts), keys).failures
    assert failures == []
    asks = [json.loads(line) for line in files.asks.read_text().splitlines()]
    return read_log(receipt_lines(text), asks)


def rules(*command: str, owner: str = CI) -> str:
    return "".join(
        f'[[tokens.{owner}.rules]]\naction = "allow"\ntools = ["Bash"]\ncommands = ["{c}"]\n'
        for c in command
    )


def relay(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(  # noqa: S603 - our interpreter and module
        [sys.executable, "-m", "relay.cli", "rules", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def log_flags(files: LogFiles) -> list[str]:
    return ["--receipts", str(files.receipts), "--asks", str(files.asks), "--keys", str(files.keys)]


def test_the_log_holds_what_people_allowed_denied_and_edited(
    files: LogFiles, log: DecisionLog
) -> None:
    assert files.count == 3000
    kinds = {kind: sum(c.kind == kind for c in log.calls) for kind in ("denied", "edited")}
    assert kinds["denied"] > 50
    assert kinds["edited"] >= 2
    assert log.unreadable  # approvals shown without an edit: text only
    assert log.other  # ordinary asks


def test_suggestions_replay_with_no_call_people_denied_or_edited(
    log: DecisionLog, tmp_path: Path
) -> None:
    found = suggest(log, thresholds=Thresholds(min_count=5, min_people=2))
    offered = {o.candidate for o in found.offered}
    assert Candidate(CI, "Bash", commands=("npm test",)) in offered
    assert Candidate(DEV, "Edit", paths=("/home/dev/api/src/app.py",)) in offered
    dropped = dict(found.dropped)
    # Allowed hundreds of times, but denied once / edited once: never offered.
    assert "denied" in dropped[Candidate(CI, "Bash", commands=("rm -rf build",))]
    assert "edited" in dropped[Candidate(CI, "Bash", commands=("git push origin main",))]
    assert "by 1 person" in dropped[Candidate(DEV, "Bash", commands=("make docs",))]
    assert all(c.commands != ("npm publish",) for c in offered)
    assert found.replay is not None
    assert found.replay.wrong == []
    assert found.replay.allowed_total > 1500
    # The file as the operator would adopt it, loaded as the relay loads it: every call
    # people denied or edited is still put to a person or denied by the Decider's rules step.
    adopted = tmp_path / "rules.toml"
    adopted.write_text(found.text)
    policy = load_policy(str(adopted))
    rulings = Rulings(rules=policy.for_owner)
    stopped = [c for c in log.readable if c.kind in ("denied", "edited")]
    assert stopped
    for call in stopped:
        assert call.tool is not None
        assert call.input is not None
        request = ApprovalRequest(
            tool=call.tool, input=call.input, agent=AgentRef(call.agent or "x")
        )
        judged = rulings.judge(Proposal(request, owner=call.owner or "local", client="pass"))
        assert not (isinstance(judged, Decision) and judged.allowed), call.describe()
    # Each suggestion's evidence reads as the issue asks.
    npm = next(o for o in found.offered if o.candidate.commands == ("npm test",))
    assert npm.evidence().startswith(f"approved {len(npm.allowed)} of {len(npm.allowed)} times")
    assert "by 4 people" in npm.evidence()
    assert "never denied" in npm.evidence()


def test_the_thresholds_decide_what_counts_as_enough(log: DecisionLog) -> None:
    one = suggest(log, thresholds=Thresholds(min_count=5, min_people=1))
    assert Candidate(DEV, "Bash", commands=("make docs",)) in {o.candidate for o in one.offered}
    many = suggest(log, thresholds=Thresholds(min_count=10_000, min_people=1))
    assert many.offered == []


def test_a_rule_in_the_base_file_keeps_its_place_and_the_replay_counts_it(
    log: DecisionLog,
) -> None:
    base = 'default = "ask"\n\n' + rules("rm -rf build")
    found = suggest(log, base=base, source="ops.toml")
    assert found.text.startswith(base)
    assert found.replay is not None
    # The operator's own rule allows the denied call: reported, never blamed on a suggestion.
    assert [w.call.input for w in found.replay.wrong] == [{"command": "rm -rf build"}]
    assert Candidate(CI, "Bash", commands=("npm test",)) in {o.candidate for o in found.offered}


async def test_a_suggestion_completing_a_denied_compound_call_with_the_files_rule_goes(
    tmp_path: Path,
) -> None:
    # `npm ci && npm test` was denied; the operator's file allows `npm ci`, so a rule for
    # `npm test` (allowed 100+ times alone) would let the compound through: not offered.
    plan = Plan(
        approvals=240,
        calls=(
            Call(CI, "ci-7", "Bash", {"command": "npm test"}, weight=20),
            Call(CI, "ci-7", "Bash", {"command": "npm ci && npm test"}, weight=1, deny_every=1),
        ),
        unique=0.0,
        timeouts=0.0,
        plain_asks=0.0,
        uneditable=0.0,
    )
    files = await write_log(tmp_path, plan)
    text = files.receipts.read_text()
    asks = [json.loads(line) for line in files.asks.read_text().splitlines()]
    log = read_log(receipt_lines(text), asks)
    npm_test = Candidate(CI, "Bash", commands=("npm test",))
    alone = suggest(log)
    assert npm_test in {o.candidate for o in alone.offered}
    with_ci = suggest(log, base=rules("npm ci"))
    assert npm_test not in {o.candidate for o in with_ci.offered}
    assert "`npm ci && npm test`" in dict(with_ci.dropped)[npm_test]
    assert with_ci.replay is not None
    assert with_ci.replay.wrong == []


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("npm test", ("npm test",)),
        ("npm   test", ("npm test",)),
        ("npm ci && npm test", None),  # two commands: no one allow rule is them
        ("echo $(id)", None),  # relay cannot read it: never allowed without a person
        ("ls *.py", None),  # a glob word: whatever files there are
        ("FOO=1 make", None),
        ("git commit -m 'a b'", ("git commit -m 'a b'",)),
    ],
)
def test_a_candidate_is_the_one_command_word_for_word(
    command: str, expected: tuple[str, ...] | None
) -> None:
    from relay.learn.log import ReceiptedCall

    call = ReceiptedCall(
        receipt="r", ask="a", owner=CI, agent="ci-7", kind="allowed", tool="Bash",
        input={"command": command}, directory="/srv/app",
    )  # fmt: skip
    found = candidate_of(call)
    assert (found.commands if found is not None else None) == expected


def test_relay_rules_suggest_prints_a_diff_whose_file_replays_clean(
    files: LogFiles, tmp_path: Path
) -> None:
    base = tmp_path / "ops.toml"
    base.write_text('default = "ask"\n')
    result = relay("suggest", *log_flags(files), "--rules", str(base))
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f"--- a/{base.name}\n+++ b/{base.name}\n")
    assert '+commands = ["npm test"]' in result.stdout
    assert "rm -rf build" not in result.stdout
    assert "not offered: allow `rm -rf build`" in result.stderr
    assert "none they denied or edited" in result.stderr
    assert base.read_text() == 'default = "ask"\n'  # never applied by relay
    # The operator adopts it: the diff only adds to the file; then replay it before it goes live.
    lines = result.stdout.splitlines(keepends=True)[2:]
    assert not [line for line in lines if line.startswith("-")]
    added = "".join(line[1:] for line in lines if line.startswith("+"))
    base.write_text(base.read_text() + added)
    assert '"npm test"' in base.read_text()
    replayed = relay("replay", str(base), *log_flags(files))
    assert replayed.returncode == 0, replayed.stderr
    assert "none they denied or edited" in replayed.stderr


def test_relay_rules_replay_refuses_a_rule_that_would_allow_a_denied_call(
    files: LogFiles, log: DecisionLog, tmp_path: Path
) -> None:
    planted = tmp_path / "planted.toml"
    planted.write_text('default = "ask"\n' + rules("npm test", "rm -rf *"))
    result = relay("replay", str(planted), *log_flags(files))
    assert result.returncode == 1, result.stderr
    assert "relay: error: RULE_ALLOWS_DENIED:" in result.stderr
    assert f"[tokens.{CI}] rule 2 of {planted}" in result.stderr
    denied = [c for c in log.calls if c.kind == "denied" and c.input == {"command": "rm -rf build"}]
    assert len(denied) == 1
    # The call is named: its receipt, its command, who asked.
    assert f"[tokens.{CI}] rule 2 would allow {denied[0].receipt}: Bash `rm -rf build`" in (
        result.stdout
    )
    assert "rule 1" not in result.stdout  # `npm test` stopped nothing


def test_receipts_that_do_not_verify_are_refused(files: LogFiles, tmp_path: Path) -> None:
    lines = files.receipts.read_text().splitlines(keepends=True)
    cut = tmp_path / "cut.jsonl"
    cut.write_text("".join(lines[:100] + lines[101:]))  # one receipt dropped
    result = relay("suggest", "--receipts", str(cut), "--asks", str(files.asks), "--keys",
                   str(files.keys))  # fmt: skip
    assert result.returncode == 2
    assert "relay: error: RECEIPTS_UNVERIFIED:" in result.stderr
    assert "relay verify --chain" in result.stderr
    assert result.stdout == ""


def test_asks_that_are_not_what_was_shown_are_refused(files: LogFiles, tmp_path: Path) -> None:
    forged = tmp_path / "asks.jsonl"
    # An export altered to turn a denied `npm publish` into something harmless-looking.
    text = files.asks.read_text().replace('"npm publish"', '"npm test"', 1)
    assert text != files.asks.read_text()
    forged.write_text(text)
    result = relay("replay", "/dev/null", "--receipts", str(files.receipts), "--asks",
                   str(forged), "--keys", str(files.keys))  # fmt: skip
    assert result.returncode == 2
    assert "relay: error: RECEIPTS_UNVERIFIED:" in result.stderr
    assert "is not what its receipt" in result.stderr


async def test_from_a_running_relay_export_to_a_suggestion_and_a_refused_replay(
    tmp_path: Path,
) -> None:
    """The exports as ``relay serve`` gives them (the receipts with an operator token, the asks
    with the agent's): the asks' questions hash to what the receipts signed."""
    from relay.testing import FakeSlack
    from tests.server_env import SECRET, TOKEN, relay_server
    from tests.test_approvals_api import decided
    from tests.test_receipts_bundle import run_cli
    from tests.test_receipts_owner import OPERATOR
    from tests.test_receipts_serve import key_file

    def approval(command: str) -> dict[str, object]:
        return {
            "tool": "Bash",
            "input": {"command": command},
            "agent": {"id": "ci-7"},
            "context": {"Directory": "/srv/app"},
            "editable": True,
        }

    plays = [("npm test", "Allow once", "U0ALICE"), ("npm test", "Allow once", "U0BOB")]
    plays += [("rm -rf build", "Allow once", "U0BOB"), ("rm -rf build", "Deny", "U0ALICE")]
    env_extra = {"RELAY_RECEIPT_KEY_FILE": key_file(tmp_path), "RELAY_OPERATOR_TOKENS": OPERATOR}
    async with (
        FakeSlack(signing_secret=SECRET) as slack,
        relay_server(slack, **env_extra) as served,
    ):
        for user in ("U0ALICE", "U0BOB"):
            slack.add_user(user, name=user.lower())
        for n, (command, label, user) in enumerate(plays, 1):
            status, created = await served.request("POST", "/v1/approvals", json=approval(command))
            assert status == 201, created
            await slack.click(await slack.wait_for_message(count=n, timeout=15), label, user=user)
            await decided(served, created["id"])
            # Read once decided, the receipt is written there and then if it is not yet.
            status, _ = await served.request("GET", f"/v1/approvals/{created['id']}/receipt")
            assert status == 200
        status, jwks = await served.request("GET", "/.well-known/jwks.json", token=None)
        assert status == 200
        base = {"PATH": "/usr/bin:/bin", "RELAY_URL": served.url}
        exported = tmp_path / "receipts.jsonl"
        asks = tmp_path / "asks.jsonl"
        code, out = await run_cli({**base, "RELAY_TOKEN": OPERATOR}, "audit", "--receipts",
                                  "-O", str(exported))  # fmt: skip
        assert code == 0, out
        code, out = await run_cli({**base, "RELAY_TOKEN": TOKEN}, "audit", "-O", str(asks))
        assert code == 0, out
    keys = tmp_path / "jwks.json"
    keys.write_text(json.dumps(jwks))
    flags = ["--receipts", str(exported), "--asks", str(asks), "--keys", str(keys)]
    suggested = relay("suggest", *flags, "--min-count", "2")
    assert suggested.returncode == 0, suggested.stderr
    assert '+commands = ["npm test"]' in suggested.stdout
    assert "approved 2 of 2 times by 2 people over 1 day" in suggested.stderr
    assert "rm -rf build" not in suggested.stdout
    planted = tmp_path / "planted.toml"
    planted.write_text('[[rules]]\naction = "allow"\ntools = ["Bash"]\ncommands = ["rm *"]\n')
    refused = relay("replay", str(planted), *flags)
    assert refused.returncode == 1, refused.stderr
    assert "rule 1 would allow rcpt_" in refused.stdout
    assert "Bash `rm -rf build` in /srv/app by agent ci-7, denied" in refused.stdout


async def test_calls_the_rules_decided_without_a_person_are_never_read_as_peoples(
    tmp_path: Path,
) -> None:
    # The same log, with and without receipts of `npm publish` allowed at once by a rule
    # (people deny it every time): a rule learned from the rules' own decisions would be
    # circular, so they are counted apart and change nothing that is learned or replayed.
    plan = Plan(approvals=400)
    plain = await write_log(tmp_path / "plain", plan)
    mixed = await write_log(tmp_path / "mixed", replace(plan, at_once_every=4))

    def read(files: LogFiles) -> DecisionLog:
        text = files.receipts.read_text()
        keys = public_keys_from(files.keys.read_bytes())
        assert check_bundle(text, str(files.receipts), keys).failures == []
        asks = [json.loads(line) for line in files.asks.read_text().splitlines()]
        return read_log(receipt_lines(text), asks)

    without, with_them = read(plain), read(mixed)
    assert (without.at_once, with_them.at_once) == (0, 100)
    assert mixed.count == plain.count + 100
    assert [(c.kind, c.tool, c.input, c.people) for c in with_them.calls] == [
        (c.kind, c.tool, c.input, c.people) for c in without.calls
    ]
    assert len(with_them.unreadable) == len(without.unreadable)
    assert with_them.other == without.other
    learned = suggest(with_them, thresholds=Thresholds(min_count=5, min_people=1))
    alone = suggest(without, thresholds=Thresholds(min_count=5, min_people=1))
    assert [o.candidate for o in learned.offered] == [o.candidate for o in alone.offered]
    assert all(o.candidate.commands != ("npm publish",) for o in learned.offered)
    # The command line says so.
    done = relay("suggest", *log_flags(mixed))
    assert done.returncode == 0, done.stderr
    assert "100 calls decided at once by the rules, a grant or a plan (no person)" in done.stderr
