"""A sample receipt log: tool approvals as the relay asks them, ended as people end them,
receipted by the real ``ReceiptWriter`` (the sandbox's report, the tests, the docs' picture).

Everything is drawn from a seeded ``random.Random``: the same seed and start give the same
asks, answers and times (the signatures differ with the key).
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from relay.gate.approval import ALLOW_ONCE, ALLOW_SESSION, DENY, ApprovalRequest, approval_question
from relay.receipts import ReceiptWriter, SigningKey
from relay.receipts.at_once import AtOnce
from relay.receipts.jws import parse
from relay.receipts.keys import PublicKeys
from relay.receipts.payload import digest, subject_digest
from relay.seam.edits import Edit, edit_custom
from relay.seam.parties import AgentRef, Responder, Vote
from relay.seam.questions import AskUserQuestionAnswerItem
from relay.store import AskRecord, MemoryStore, Target
from relay.store.record import AskStatus

__all__ = ["sample_log"]

_OWNER = "sample-token-fingerprint"


@dataclass(frozen=True, slots=True)
class SampleCall:
    """A call an agent makes again and again, and how people tend to end it: the weights of
    allowed, denied, edited and timed out."""

    agent: str
    tool: str
    input: dict[str, Any]
    often: int
    ends: tuple[int, int, int, int]

    def request(self) -> ApprovalRequest:
        """The approval the relay would put to people for this call."""
        return ApprovalRequest(
            tool=self.tool, input=dict(self.input), agent=AgentRef(self.agent), editable=True
        )

    @property
    def label(self) -> str:
        """The call as a person reads it: the tool and its command or path."""
        shown = next(
            (str(self.input[k]) for k in ("command", "file_path", "url") if k in self.input), ""
        )
        where = self.input.get("cwd")
        return f"{self.tool}: {shown}" + (f"  (in {where})" if where else "")


SAMPLE_CALLS: tuple[SampleCall, ...] = (
    SampleCall("ci-7", "Bash", {"command": "npm test", "cwd": "/srv/app"}, 30, (1, 0, 0, 0)),
    SampleCall("ci-7", "Bash", {"command": "npm run lint", "cwd": "/srv/app"}, 14, (1, 0, 0, 0)),
    SampleCall("claude-code", "Edit", {"file_path": "/srv/app/src/index.ts"}, 12, (18, 1, 2, 1)),
    SampleCall("claude-code", "Bash", {"command": "git push origin main"}, 9, (5, 3, 0, 1)),
    SampleCall(
        "deploy-bot",
        "Bash",
        {"command": "kubectl rollout restart deploy/api"},
        6,
        (6, 2, 1, 1),
    ),
    SampleCall("claude-code", "Bash", {"command": "rm -rf build/"}, 4, (1, 3, 2, 0)),
    SampleCall("claude-code", "WebFetch", {"url": "https://example.com/"}, 3, (3, 1, 0, 2)),
)
"""The sample's calls (labels in ``SampleLog.labels``)."""

# Calls decided at once, without a person, and what decided them (``relay.receipts.at_once``):
# (agent, tool, decision, by, weight).
_RULES = "relay-rules.toml"
SAMPLE_AT_ONCE: tuple[tuple[str, str, str, dict[str, Any], int], ...] = (
    (
        "claude-code",
        "Read",
        "allow",
        {"rule": {"file": _RULES, "number": 1, "action": "allow", "pattern": {"tools": ["Read"]}}},
        20,
    ),
    (
        "ci-7",
        "Bash",
        "allow",
        {
            "rule": {
                "file": _RULES,
                "number": 2,
                "action": "allow",
                "pattern": {"tools": ["Bash"], "commands": ["git status"]},
            }
        },
        8,
    ),
    (
        "claude-code",
        "Bash",
        "deny",
        {
            "rule": {
                "file": _RULES,
                "number": 3,
                "action": "deny",
                "pattern": {"tools": ["Bash"], "commands": ["rm -rf /*"]},
            }
        },
        1,
    ),
    ("claude-code", "Edit", "allow", {"plan": {"id": "sampleplan01"}}, 6),
    (
        "ci-7",
        "Bash",
        "allow",
        {
            "grant": {
                "id": "grant-sample01",
                "kind": "session",
                "granted_by": {"team": "T0SANDBOX", "user": "U0SBALICE"},
                "scope": {"tools": ["Bash"], "commands": ["npm test"]},
            }
        },
        5,
    ),
)
"""The sample's calls decided without a person."""

_PEOPLE = ("U0SBALICE", "U0SBBOB", "U0SBCAROL")
_PEOPLE_WEIGHTS = (5, 3, 2)


@dataclass(frozen=True, slots=True)
class SampleLog:
    """Receipts as ``relay audit --receipts`` exports them, their keys, and each sample
    call's label by the digest of what was shown."""

    bundle: str
    keys: PublicKeys
    labels: dict[str, str]
    tokens: tuple[str, ...]
    asks: tuple[dict[str, Any], ...] = ()
    """The asks, as ``relay audit`` exports them (id and questions): what was shown."""


def _answer(
    rng: random.Random, ending: int, call: SampleCall, at: datetime
) -> AskUserQuestionAnswerItem:
    user = rng.choices(_PEOPLE, _PEOPLE_WEIGHTS)[0]
    by = Responder(id=user, team="T0SANDBOX", request=digest(f"{user}:{at.isoformat()}".encode()))
    if ending == 0:
        label = rng.choice((ALLOW_ONCE, ALLOW_ONCE, ALLOW_ONCE, ALLOW_SESSION))
        vote = Vote(by=by, label=label, at=at)
        return AskUserQuestionAnswerItem(
            id="approve", selected=(label,), answered_by=by, answered_at=at, votes=(vote,)
        )
    if ending == 1:
        vote = Vote(by=by, label=DENY, at=at)
        return AskUserQuestionAnswerItem(
            id="approve", selected=(DENY,), answered_by=by, answered_at=at, votes=(vote,)
        )
    edited = {**call.input, "command": f"{call.input.get('command', '')} --dry-run"}
    custom = edit_custom(Edit(input=edited, choice=ALLOW_ONCE, version=2, edited_by=user))
    return AskUserQuestionAnswerItem(
        id="approve", selected=(ALLOW_ONCE,), custom=custom, answered_by=by, answered_at=at
    )


def _record(rng: random.Random, call: SampleCall, created: datetime, number: int) -> AskRecord:
    question = approval_question(call.request())
    ending = rng.choices(range(4), call.ends)[0]
    # Most are decided within a minute or two; a few wait for someone back from a meeting.
    wait = rng.lognormvariate(3.6, 1.0)
    record = AskRecord(
        id=f"sample{number:05d}",
        request=question,
        target=Target(channel="C0SBAPPROVALS", timeout=3600.0),
        created_at=created,
        deadline=(created + timedelta(hours=1)).timestamp(),
        messages=(None,),
        responses=(None,),
        owner=_OWNER,
    )
    if ending == 3:
        return record.with_(status=AskStatus.TIMED_OUT, finished_at=created + timedelta(hours=1))
    at = created + timedelta(seconds=min(wait, 3000.0))
    answer = _answer(rng, ending, call, at)
    return record.with_(status=AskStatus.ANSWERED, responses=(answer,), finished_at=at)


async def sample_log(
    *, days: int = 14, per_day: int = 12, seed: int = 55, end: datetime | None = None
) -> SampleLog:
    """``days`` days of about ``per_day`` approvals a day (fewer at weekends) up to ``end``
    (default: today, midnight UTC), each receipted in order into one chain."""
    rng = random.Random(seed)  # noqa: S311 - sample data, not a secret
    last = end or datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    store = MemoryStore()
    key = SigningKey.generate()
    writer = ReceiptWriter(store=store, key=key, issuer="relay.sandbox")
    weights = [c.often for c in SAMPLE_CALLS]
    labels = {subject_digest(_shape(c)): c.label for c in SAMPLE_CALLS}
    tokens: list[str] = []
    asks: list[dict[str, Any]] = []
    number = 0
    for day in range(days, 0, -1):
        start = last - timedelta(days=day)
        quiet = start.weekday() >= 5
        count = max(0, round(rng.gauss(per_day / (4 if quiet else 1), 2)))
        times = sorted(rng.uniform(8 * 3600, 19 * 3600) for _ in range(count))
        for offset in times:
            number += 1
            call = rng.choices(SAMPLE_CALLS, weights)[0]
            record = _record(rng, call, start + timedelta(seconds=offset), number)
            tokens.append(await writer.write(record))
            shown = [q.to_dict() for q in record.request.questions]
            asks.append({"id": record.id, "questions": shown})
            for _ in range(rng.choices((0, 1, 2), (2, 2, 1))[0]):
                tokens.append(await writer.write_at_once(_at_once(rng, record.created_at)))
    lines = [_line(i, t) for i, t in enumerate(tokens, 1)]
    return SampleLog(
        bundle="\n".join(lines) + "\n",
        keys=writer.published,
        labels=labels,
        tokens=tuple(tokens),
        asks=tuple(asks),
    )


def _at_once(rng: random.Random, near: datetime) -> AtOnce:
    """A call decided without a person, a few minutes after ``near``."""
    agent, tool, decision, by, _ = rng.choices(SAMPLE_AT_ONCE, [c[-1] for c in SAMPLE_AT_ONCE])[0]
    return AtOnce(
        owner=_OWNER,
        agent=agent,
        tool=tool,
        call=digest(f"{tool}:{rng.random()}".encode()),
        decision=decision,
        by=by,
        at=near + timedelta(seconds=rng.uniform(1, 300)),
        id=f"sampleonce{rng.getrandbits(40):010x}",
    )


def _line(seq: int, token: str) -> str:
    """``token``'s line of a ``relay audit --receipts`` export, at place ``seq``."""
    payload = json.loads(parse(token).payload)
    item = {"seq": seq, "id": payload["jti"], "ask": payload.get("ask"), "receipt": token}
    return json.dumps(item, separators=(",", ":"))


def _shape(call: SampleCall) -> AskRecord:
    """A record asking ``call``, for its shown digest (the same question every time)."""
    return AskRecord(
        id="shape",
        request=approval_question(call.request()),
        target=Target(channel="C0SBAPPROVALS"),
        created_at=datetime(2026, 1, 1, tzinfo=UTC),
    )
