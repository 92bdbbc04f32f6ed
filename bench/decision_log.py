"""A generated decision log: thousands of tool approvals, decided and signed as the relay does.

Each approval's question is ``relay.gate.approval.approval_question``'s for the call (an
editable one, as Claude Code's hook asks, with the working directory it names), stored in a
``MemoryStore``, answered there (allowed, denied, denied with a reason, edited), timed out or
aborted, and its receipt signed and chained by the real ``ReceiptWriter``. The files written
are what ``relay audit --receipts``, ``relay audit`` and ``/.well-known/jwks.json`` give an
operator. Shared by ``tests/test_rules_learned.py`` and ``bench/rules_learned.py``.

What is in it (``Plan``): calls people always allowed, by several people (a rule should be
suggested); calls people allowed but once denied, or once edited (none may be); calls allowed
by one person only, or too few times; ordinary asks; approvals shown without an edit (their
call is text only); and timeouts.
"""

from __future__ import annotations

import json
import random
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from relay.audit.trail import audit_json
from relay.canonical.match import fingerprint
from relay.gate.approval import ALLOW_ONCE, ALLOW_SESSION, DENY, ApprovalRequest, approval_question
from relay.receipts import ReceiptWriter, SigningKey
from relay.receipts.at_once import AtOnce
from relay.receipts.payload import digest
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

__all__ = ["CI", "DEV", "Call", "LogFiles", "Plan", "write_log"]

CI = "3f2a9c0d4e5b6a7f8091a2b3c4d5e6f7"  # the CI token's fingerprint
DEV = "0b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e"  # the developers' token's
PEOPLE = ("U0ALICE", "U0BOB", "U0CAROL", "U0DAVE")
START = datetime(2026, 11, 20, 9, 0, tzinfo=UTC)


@dataclass(frozen=True, slots=True)
class Call:
    """A call an agent keeps making, and how people treat it: ``weight`` in the mix,
    ``deny_every``/``edit_every`` how often people deny or edit it, ``people`` who answer."""

    owner: str
    agent: str
    tool: str
    input: dict[str, Any]
    cwd: str = "/srv/app"
    weight: int = 10
    deny_every: int = 0  # every Nth time it is asked, people deny it (0: never)
    edit_every: int = 0  # ... or edit it
    people: tuple[str, ...] = PEOPLE


def _bash(owner: str, agent: str, command: str, **kw: Any) -> Call:
    return Call(owner, agent, "Bash", {"command": command}, **kw)


@dataclass(frozen=True, slots=True)
class Plan:
    """The mix of a log: its calls, how many approvals, and the odds of the rest."""

    approvals: int = 3000
    calls: tuple[Call, ...] = field(
        default_factory=lambda: (
            _bash(CI, "ci-7", "npm test", weight=40),
            _bash(CI, "ci-7", "npm run lint", weight=20),
            _bash(CI, "ci-7", "git status", weight=20),
            _bash(DEV, "dev-2", "pytest -q", cwd="/home/dev/api", weight=30),
            Call(
                DEV,
                "dev-2",
                "Edit",
                {"file_path": "/home/dev/api/src/app.py", "old_string": "a", "new_string": "b"},
                cwd="/home/dev/api",
                weight=15,
            ),
            # Mostly allowed, but people stopped it: never suggested.
            _bash(CI, "ci-7", "rm -rf build", weight=15, deny_every=150),
            _bash(CI, "ci-7", "git push origin main", weight=10, edit_every=40),
            _bash(DEV, "dev-2", "npm publish", weight=5, deny_every=1),
            # Allowed often, by one person only: below --min-people.
            _bash(DEV, "dev-2", "make docs", weight=10, people=("U0ALICE",)),
            # Too many parts to write as one allow rule.
            _bash(CI, "ci-7", "npm ci && npm test", weight=5),
        )
    )
    unique: float = 0.10  # one-off calls (each allowed once: too few for a rule)
    timeouts: float = 0.02
    plain_asks: float = 0.02
    uneditable: float = 0.02
    seed: int = 7
    # After every Nth approval, a call the rules allowed at once, without a person (0: none).
    at_once_every: int = 0


@dataclass(frozen=True, slots=True)
class LogFiles:
    """Where the log was written, and how many receipts it holds."""

    receipts: Path
    asks: Path
    keys: Path
    count: int


async def write_log(folder: Path, plan: Plan | None = None) -> LogFiles:
    """Generate ``plan``'s log, sign every receipt, and write the three files in ``folder``."""
    plan = plan or Plan()
    rng = random.Random(plan.seed)
    key = SigningKey.generate()
    store = MemoryStore()
    writer = ReceiptWriter(store=store, key=key, issuer="relay.example")
    weights = [c.weight for c in plan.calls]
    asks: list[dict[str, Any]] = []
    seen: dict[int, int] = {}
    for n in range(plan.approvals):
        at = START + timedelta(minutes=7 * n + rng.randrange(5))
        roll = rng.random()
        if roll < plan.plain_asks:
            record = _plain(n, at)
        elif roll < plan.plain_asks + plan.unique:
            call = _bash(rng.choice((CI, DEV)), "ci-7", f"cat notes/{n}.txt", weight=1)
            record = _approval(call, n, at, editable=True)
        else:
            call = rng.choices(plan.calls, weights)[0]
            editable = rng.random() >= plan.uneditable
            record = _approval(call, n, at, editable=editable)
        await store.create(record=record)
        asked = call if roll >= plan.plain_asks else None
        if asked is not None:
            seen[id(asked)] = seen.get(id(asked), 0) + 1
        ended = await _decide(store, record, rng, plan, asked, seen.get(id(asked), 0))
        await writer.write(ended)
        asks.append(audit_json(ended))
        if plan.at_once_every and n % plan.at_once_every == 0:
            await writer.write_at_once(_allowed_at_once(n, at))
    tokens: list[str] = []
    while page := await store.receipt_range(start=len(tokens) + 1):
        tokens += page
    folder.mkdir(parents=True, exist_ok=True)  # noqa: ASYNC240 (a test's tmp folder)
    files = LogFiles(folder / "receipts.jsonl", folder / "asks.jsonl", folder / "jwks.json", 0)
    lines = []
    for seq, token in enumerate(tokens, 1):
        claims = _claims(token)
        lines.append({"seq": seq, "id": claims["jti"], "ask": claims.get("ask"), "receipt": token})
    files.receipts.write_text("".join(json.dumps(line) + "\n" for line in lines))
    files.asks.write_text("".join(json.dumps(a, ensure_ascii=False) + "\n" for a in asks))
    files.keys.write_text(json.dumps(writer.published.jwks()))
    return LogFiles(files.receipts, files.asks, files.keys, len(tokens))


def _allowed_at_once(n: int, at: datetime) -> AtOnce:
    """``npm publish`` (which people deny every time) allowed by an operator's rule at once."""
    rule = {"file": "rules.toml", "number": 1, "action": "allow", "pattern": {"tools": ["Bash"]}}
    return AtOnce(
        owner=DEV,
        agent="dev-2",
        tool="Bash",
        call=fingerprint("Bash", {"command": "npm publish"}),
        decision="allow",
        by={"rule": rule},
        at=at + timedelta(seconds=30),
        id=f"once{n:06d}",
    )


def _claims(token: str) -> dict[str, Any]:
    import base64

    part = token.split(".")[1]
    return json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))  # type: ignore[no-any-return]


def _editable(question: AskUserQuestionItem) -> bool:
    return question.intent is not None and question.intent.edit is not None


def _plain(n: int, at: datetime) -> AskRecord:
    request = AskUserQuestionRequest(
        (
            AskUserQuestionItem(
                id="q",
                question=f"Ship build {n}?",
                options=(AskUserQuestionOption("Yes"), AskUserQuestionOption("No")),
            ),
        ),
        agent=AgentRef("deploy-bot"),
    )
    return _record(request, at, owner=CI)


def _approval(call: Call, n: int, at: datetime, *, editable: bool) -> AskRecord:
    request = ApprovalRequest(
        tool=call.tool,
        input=call.input,
        agent=AgentRef(call.agent),
        tool_use_id=f"toolu_{n}",
        context={"Directory": call.cwd},  # (a hosted relay is told no cwd: only shown)
        editable=editable,
    )
    return _record(approval_question(request), at, owner=call.owner)


def _record(request: AskUserQuestionRequest, at: datetime, *, owner: str) -> AskRecord:
    count = len(request.questions)
    return AskRecord(
        id=uuid.uuid4().hex,
        request=request,
        target=Target(channel="C0APPROVALS", timeout=600.0),
        created_at=at,
        deadline=(at + timedelta(minutes=10)).timestamp(),
        messages=(None,) * count,
        responses=(None,) * count,
        owner=owner,
    )


async def _decide(
    store: MemoryStore,
    record: AskRecord,
    rng: random.Random,
    plan: Plan,
    call: Call | None,
    nth: int,
) -> AskRecord:
    at = record.created_at + timedelta(seconds=20 + rng.randrange(200))
    if rng.random() < plan.timeouts:
        _, ended = await store.finish(
            ask_id=record.id, status=AskStatus.TIMED_OUT, error=None, at=at
        )
        assert ended is not None
        return ended
    question = record.request.questions[0]
    who = rng.choice(call.people if call is not None else PEOPLE)
    by = Responder(id=who, team="T0TEAM", request=digest(f"v0:{at.timestamp()}:{who}".encode()))
    custom: str | None = None
    if call is None:
        label = "Yes"
    elif call.deny_every and nth % call.deny_every == 0:
        label = DENY
        if nth % 2:
            custom = "not on a Friday"  # a typed reason denies with it
    elif call.edit_every and nth % call.edit_every == 0 and _editable(question):
        label = ALLOW_ONCE
        edited = {**call.input, "command": str(call.input.get("command", "")) + " --dry-run"}
        custom = edit_custom(Edit(input=edited, choice=ALLOW_ONCE, version=2, edited_by=who))
    else:
        label = rng.choice((ALLOW_ONCE, ALLOW_ONCE, ALLOW_SESSION))
    item = AskUserQuestionAnswerItem(
        id=question.id,
        selected=() if custom is not None and label == DENY else (label,),
        custom=custom,
        answered_by=by,
        answered_at=at,
        votes=(Vote(by=by, label=label, at=at),),
    )
    result = await store.answer(ask_id=record.id, index=0, item=item)
    assert result.record is not None
    assert not result.record.pending
    return result.record
