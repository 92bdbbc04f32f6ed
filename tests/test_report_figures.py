"""The report's figures, on receipt logs signed by the real ``ReceiptWriter``: exact figures
on a small log built by hand, totals on a generated log of thousands, and no figures at all
from a log that does not verify."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta

from relay.gate.approval import ALLOW_ONCE, ALLOW_SESSION, DENY, ApprovalRequest, approval_question
from relay.receipts import ReceiptWriter, SigningKey
from relay.receipts.at_once import AtOnce
from relay.receipts.payload import subject_digest
from relay.report import Ending, figures, read_bundle, verified
from relay.report.figures import percentile
from relay.report.page import render_page
from relay.report.sample import sample_log
from relay.report.suggested import learned_rules
from relay.report.table import render_table
from relay.seam.edits import Edit, edit_custom
from relay.seam.parties import AgentRef, Responder, Vote
from relay.seam.questions import (
    AskUserQuestionAnswerItem,
    AskUserQuestionItem,
    AskUserQuestionOption,
    AskUserQuestionRequest,
)
from relay.store import AskRecord, MemoryStore, Target
from relay.store.record import AskStatus

DAY = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
KEY = SigningKey.generate()


def approval(agent: str, command: str, created: datetime, number: int) -> AskRecord:
    request = ApprovalRequest(
        tool="Bash", input={"command": command}, agent=AgentRef(agent), editable=True
    )
    return AskRecord(
        id=f"ask{number}",
        request=approval_question(request),
        target=Target(channel="C1", timeout=600.0),
        created_at=created,
        deadline=(created + timedelta(minutes=10)).timestamp(),
        messages=(None,),
        responses=(None,),
        owner="fp",
    )


def decided(
    record: AskRecord, label: str, *, by: tuple[str, ...], after: float, edit: bool = False
) -> AskRecord:
    at = record.created_at + timedelta(seconds=after)
    people = [Responder(id=u, team="T1", request="r") for u in by]
    votes = tuple(Vote(by=p, label=label, at=at) for p in people)
    custom = None
    if edit:
        custom = edit_custom(
            Edit(input={"command": "ls"}, choice=ALLOW_ONCE, version=2, edited_by=by[0])
        )
    item = AskUserQuestionAnswerItem(
        id="approve",
        selected=(label,),
        custom=custom,
        answered_by=people[-1],
        answered_at=at,
        votes=votes,
    )
    return record.with_(status=AskStatus.ANSWERED, responses=(item,), finished_at=at)


def timed_out(record: AskRecord) -> AskRecord:
    return record.with_(
        status=AskStatus.TIMED_OUT, finished_at=record.created_at + timedelta(minutes=10)
    )


async def bundle_of(records: list[AskRecord]) -> tuple[str, ReceiptWriter]:
    """The records' receipts as ``relay audit --receipts`` writes them."""
    writer = ReceiptWriter(store=MemoryStore(), key=KEY, issuer="relay.test")
    lines = []
    for seq, record in enumerate(records, 1):
        token = await writer.write(record)
        lines.append(json.dumps({"seq": seq, "ask": record.id, "receipt": token}))
    return "\n".join(lines) + "\n", writer


def small_log() -> list[AskRecord]:
    day2 = DAY + timedelta(days=2)
    ordinary = AskRecord(
        id="plain",
        request=AskUserQuestionRequest(
            (
                AskUserQuestionItem(
                    id="q", question="Ship?", options=(AskUserQuestionOption("Yes"),)
                ),
            )
        ),
        target=Target(channel="C1"),
        created_at=DAY,
        messages=(None,),
        responses=(None,),
    )
    ordinary = ordinary.with_(
        status=AskStatus.ANSWERED,
        responses=(AskUserQuestionAnswerItem(id="q", selected=("Yes",)),),
        finished_at=DAY,
    )
    return [
        decided(approval("ci-7", "npm test", DAY, 1), ALLOW_ONCE, by=("U1",), after=10),
        decided(approval("ci-7", "npm test", DAY, 2), ALLOW_SESSION, by=("U2",), after=20),
        decided(approval("ci-7", "npm test", day2, 3), ALLOW_ONCE, by=("U1",), after=30),
        decided(approval("bot", "rm -rf /", DAY, 4), DENY, by=("U2",), after=40),
        decided(approval("bot", "rm x", day2, 5), ALLOW_ONCE, by=("U1",), after=50, edit=True),
        decided(approval("bot", "deploy", day2, 6), ALLOW_ONCE, by=("U1", "U3"), after=600),
        timed_out(approval("bot", "rm -rf /", day2, 7)),
        ordinary,
    ]


async def test_the_figures_of_a_small_log_are_exact() -> None:
    records = small_log()
    text, writer = await bundle_of(records)
    evidence = verified(*read_bundle(text), writer.published)
    npm = subject_digest(records[0])
    got = figures(evidence.payloads, labels={npm: "Bash: npm test"})
    assert got.approvals == 7
    assert got.other_asks == 1
    assert dict(got.endings) == {
        "allowed": 4,
        "denied": 1,
        "edited": 1,
        "timed out": 1,
        "withdrawn": 0,
        "failed": 0,
    }
    # Decided by people: 10, 20, 30, 40, 50, 600 s; nearest rank p50 = 3rd, p90 = 6th.
    assert (got.decided, got.decide_p50, got.decide_p90) == (6, 30.0, 600.0)
    assert got.without_person == 1
    # Every voter counts: the quorum of two names both.
    people = {p.user: (p.allowed, p.denied, p.edited) for p in got.people}
    assert people == {"U1": (3, 0, 1), "U2": (1, 1, 0), "U3": (1, 0, 0)}
    assert got.people[0].user == "U1"
    # The days run without a gap, a quiet day included.
    assert [d for d, _ in got.days] == [DAY.date() + timedelta(days=i) for i in range(3)]
    assert [sum(c.values()) for _, c in got.days] == [3, 0, 4]
    # The same call shown again and again, by agent and shown digest; once is not repeated.
    repeated = [(c.agent, c.count, c.label, c.always_allowed) for c in got.repeated]
    assert repeated == [("ci-7", 3, "Bash: npm test", True), ("bot", 2, None, False)]
    assert got.repeated[1].endings == {Ending.DENIED: 1, Ending.TIMED_OUT: 1}
    assert got.repeated[0].asks == ("ask1", "ask2", "ask3")


async def test_a_suggested_rule_is_shown_beside_its_call() -> None:
    text, writer = await bundle_of(small_log())
    evidence = verified(*read_bundle(text), writer.published)
    got = figures(
        evidence.payloads,
        rule_for=lambda call: "allow Bash npm test" if call.always_allowed else None,
    )
    assert [c.rule for c in got.repeated] == ["allow Bash npm test", None]
    assert "allow Bash npm test" in render_table(got, source="test")
    assert "<code>allow Bash npm test</code>" in render_page(got, source="test")


async def test_a_generated_log_of_thousands_adds_up() -> None:
    log = await sample_log(days=240, per_day=14, seed=7, end=datetime(2026, 12, 1, tzinfo=UTC))
    receipts, checkpoints = read_bundle(log.bundle)
    assert len(receipts) > 2_000
    got = figures(verified(receipts, checkpoints, log.keys).payloads, labels=log.labels)
    # Every receipt is an approval or a call decided at once (the rules, a grant, a plan).
    assert got.at_once_allowed > 0
    assert got.at_once_denied > 0
    assert got.approvals + got.at_once_allowed + got.at_once_denied == len(receipts)
    assert {t.kind for t in got.at_once} == {"rule", "grant", "plan"}
    assert sum(got.endings.values()) == got.approvals
    assert sum(sum(c.values()) for _, c in got.days) == got.approvals
    assert got.without_person == got.endings[Ending.TIMED_OUT]
    decided = got.approvals - got.without_person
    assert got.decided == decided
    # Each decision names one person (no quorum in the sample).
    assert sum(p.total for p in got.people) == decided
    assert got.decide_p50 is not None
    assert got.decide_p90 is not None
    assert 0 < got.decide_p50 <= got.decide_p90 <= 3000
    top = got.repeated[0]
    assert top.label == "Bash: npm test  (in /srv/app)"
    assert top.always_allowed
    assert sum(c.count for c in got.repeated) == got.approvals  # seven calls, all repeated


async def test_a_log_that_does_not_verify_gives_no_figures() -> None:
    text, writer = await bundle_of(small_log())
    lines = text.splitlines()
    dropped = "\n".join(lines[:3] + lines[4:])
    cut = verified(*read_bundle(dropped), writer.published)
    assert cut.payloads == ()
    assert cut.refusal is not None
    assert "missing in between" in cut.refusal
    other = ReceiptWriter(store=MemoryStore(), key=SigningKey.generate(), issuer="x")
    foreign = verified(*read_bundle(text), other.published)
    assert foreign.payloads == ()
    assert "relay verify --chain" in str(foreign.refusal)
    payload = json.loads(lines[0])
    head, body, _ = payload["receipt"].split(".")
    # Another receipt's signature: well formed, but not over this payload.
    signature = json.loads(lines[1])["receipt"].split(".")[2]
    payload["receipt"] = ".".join((head, body, signature))
    altered = "\n".join([json.dumps(payload), *lines[1:]])
    forged = verified(*read_bundle(altered), writer.published)
    assert forged.payloads == ()
    assert forged.failures[0].name == "line 1"
    assert "line 1: the signature does not verify" in str(forged.refusal)
    assert verified(*read_bundle(text), writer.published).refusal is None


def test_percentiles_are_nearest_rank() -> None:
    assert percentile([], 0.5) is None
    assert percentile([5.0], 0.9) == 5.0
    values = [float(v) for v in range(1, 11)]
    assert (percentile(values, 0.5), percentile(values, 0.9)) == (5.0, 9.0)


async def test_the_page_escapes_what_agents_name_and_needs_no_script() -> None:
    record = decided(approval("<b>x</b>", "npm test", DAY, 1), ALLOW_ONCE, by=("U1",), after=1)
    again = decided(approval("<b>x</b>", "npm test", DAY, 2), ALLOW_ONCE, by=("U1",), after=1)
    text, writer = await bundle_of([record, again])
    got = figures(verified(*read_bundle(text), writer.published).payloads)
    page = render_page(got, source="<script>")
    assert "<b>x</b>" not in page
    assert "&lt;b&gt;x&lt;/b&gt;" in page
    assert "<script" not in page
    assert page.count("<svg") == 4


async def test_a_call_is_named_only_from_an_ask_whose_question_the_receipts_signed() -> None:
    from relay.report.labels import call_label, labels_for

    records = small_log()
    text, writer = await bundle_of(records)
    got = figures(verified(*read_bundle(text), writer.published).payloads)
    kept = {r.id: r for r in records}

    async def lookup(ask_id: str) -> AskRecord | None:
        return kept.get(ask_id)

    named = await labels_for(got.repeated, lookup)
    assert named == {
        subject_digest(records[0]): "Bash: npm test",
        subject_digest(records[3]): "Bash: rm -rf /",
    }
    # A kept ask that no longer shows what was signed names nothing.
    kept = {r.id: approval("ci-7", "npm run other", DAY, 9) for r in records}
    assert await labels_for(got.repeated, lookup) == {}
    shown = approval_question(
        ApprovalRequest(
            tool="Bash", input={"command": "a && b"}, agent=AgentRef("x"), cwd="/srv/app"
        )
    )
    plain = records[0].with_(request=shown)
    assert call_label(plain) == "Bash: a && b"


async def test_time_to_decide_is_spread_over_bands() -> None:
    text, writer = await bundle_of(small_log())
    got = figures(verified(*read_bundle(text), writer.published).payloads)
    # 10, 20 s; 30, 40, 50 s; 600 s.
    assert dict(got.spread) == {
        "under 30 s": 2,
        "30 s to 1 min": 3,
        "1 to 2 min": 0,
        "2 to 5 min": 0,
        "5 to 15 min": 1,
        "15 min to 1 h": 0,
        "over 1 h": 0,
    }
    assert "under 30 s: 2, 30 s to 1 min: 3, 5 to 15 min: 1" in render_table(got, source="t")


async def test_a_chain_trimmed_by_retention_reports_with_its_checkpoint() -> None:
    from relay.receipts.checkpoint import Checkpointer

    store = MemoryStore()
    writer = ReceiptWriter(store=store, key=KEY, issuer="relay.test")
    for record in small_log():
        await writer.write(record)
    checkpointer = Checkpointer(store=store, key=KEY, issuer="relay.test", retention=86400.0)
    # Three days on, what ended on the first day is past retention: trimmed, checkpointed.
    stored = await checkpointer.tick(now=(DAY + timedelta(days=3)).timestamp())
    assert stored is not None
    kept = await store.receipt_range(limit=100)
    assert 0 < len(kept) < len(small_log())
    lines = [json.dumps({"receipt": t}) for t in kept]
    mark = stored.entry()
    evidence = verified(*read_bundle("\n".join([*lines, mark])), writer.published)
    assert evidence.refusal is None
    assert len(evidence.payloads) == len(kept)
    assert evidence.checkpoints == 1
    # Without its checkpoint the kept chain looks cut at its head; its tail cut shows too.
    assert "head is cut" in str(verified(*read_bundle("\n".join(lines)), writer.published).refusal)
    cut = verified(*read_bundle("\n".join([*lines[:-1], mark])), writer.published)
    assert "tail is cut" in str(cut.refusal)


def test_an_asks_export_names_a_call_only_where_its_questions_hash_to_the_digest() -> None:
    from relay.report.labels import labels_from_asks

    record = approval("ci-7", "npm test", DAY, 1)
    questions = [q.to_dict() for q in record.request.questions]
    shown = subject_digest(record)
    item = {"id": record.id, "questions": questions}
    assert labels_from_asks([item], [shown]) == {shown: "Bash: npm test"}
    altered = [{**questions[0], "question": "something else"}]
    assert labels_from_asks([{"id": "x", "questions": altered}], [shown]) == {}
    assert labels_from_asks([{"id": "y", "questions": "no"}, {"id": "z"}], [shown]) == {}


def at_once(decision: str, by: dict[str, object], number: int) -> AtOnce:
    return AtOnce(
        owner="fp",
        agent="ci-7",
        tool="Bash",
        call=f"{number:064x}",
        decision=decision,
        by=by,
        at=DAY + timedelta(minutes=number),
        id=f"now{number}",
    )


RULE_2 = {
    "rule": {
        "file": "rules.toml",
        "number": 2,
        "action": "allow",
        "pattern": {"tools": ["Bash"], "commands": ["npm test"]},
    }
}


async def test_what_the_rules_decided_without_a_person_is_counted_by_rule_grant_and_plan() -> None:
    text, writer = await bundle_of(small_log())
    lines = text.splitlines()
    grant = {"grant": {"id": "g1", "kind": "session", "granted_by": {"team": "T1", "user": "U1"}}}
    default = {"rule": {"file": "rules.toml", "number": None, "action": "deny"}}
    for number, (decision, by) in enumerate(
        [
            ("allow", RULE_2),
            ("allow", RULE_2),
            ("allow", grant),
            ("allow", {"plan": {"id": "plan1"}}),
            ("deny", default),
        ],
        len(lines) + 1,
    ):
        token = await writer.write_at_once(at_once(decision, by, number))
        lines.append(json.dumps({"seq": number, "receipt": token}))
    evidence = verified(*read_bundle("\n".join(lines)), writer.published)
    assert evidence.refusal is None
    got = figures(evidence.payloads)
    # The approvals' figures are those of the asks alone.
    assert (got.approvals, got.other_asks, got.without_person) == (7, 1, 1)
    assert (got.at_once_allowed, got.at_once_denied) == (4, 1)
    assert [(t.kind, t.name, t.allowed, t.denied) for t in got.at_once] == [
        ("rule", "rule 2 of rules.toml: allow Bash `npm test`", 2, 0),
        ("grant", "grant g1 by U1", 1, 0),
        ("plan", "plan plan1", 1, 0),
        ("rule", "the default (deny) of rules.toml", 0, 1),
    ]
    table = render_table(got, source="test")
    assert "What the rules decided without a person" in table
    rows = [re.split(r"\s{2,}", line.strip()) for line in table.splitlines()]
    assert ["rule 2 of rules.toml: allow Bash `npm test`", "2", "0", "2"] in rows
    assert ["all", "4", "1", "5"] in rows
    page = render_page(got, source="test")
    assert 'id="at-once"' in page
    assert "4</b>allowed at once by rules, grants, plans" in page


async def test_a_repeated_call_shows_the_rule_relay_rules_suggest_offers_for_it() -> None:
    log = await sample_log(end=datetime(2026, 12, 1, tzinfo=UTC))
    payloads = verified(*read_bundle(log.bundle), log.keys).payloads
    got = figures(payloads, labels=log.labels, rule_for=learned_rules(payloads, log.asks))
    rules = {c.label: c.rule for c in got.repeated}
    # Allowed every time, by several people: offered, in the rules file's own form.
    assert rules["Bash: npm test  (in /srv/app)"] == (
        '{ action = "allow", tools = ["Bash"], commands = ["npm test"] }'
    )
    # Denied or edited even once: its rule's replay would allow that call, so none is shown.
    for label in (
        "Bash: rm -rf build/",
        "Bash: git push origin main",
        "Edit: /srv/app/src/index.ts",
    ):
        assert rules[label] is None
    # The asks must be what the receipts signed: any other asks teach nothing.
    forged = [{**a, "questions": [{**a["questions"][0], "question": "x"}]} for a in log.asks]
    assert all(
        c.rule is None for c in figures(payloads, rule_for=learned_rules(payloads, forged)).repeated
    )
