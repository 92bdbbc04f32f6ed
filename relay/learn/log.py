"""The decision log rules are learned from: receipted approvals and the calls they decided. Pure.

A receipt says who decided what on which ask, and binds what was shown by its digest
(``shown_sha256``) without holding the call itself. The call comes from the asks export
(``relay audit``), whose questions are taken only when their digest is the signed one: a
call read here is exactly the call the receipt vouches for, or the log is refused.

The call of a tool approval is its question's ``tool-approval`` intent's ``edit`` (the tool
and its input, as shown); an approval whose question offered no edit shows the call as text
only, so it is counted as *unreadable*, never guessed at. The directory a client names
(``*Directory:*`` in the question) is kept for the evidence only: the hosted relay decides
without a working directory (a path in the input is read as it stands), and so does a replay.

A receipt of a call decided at once, without a person (``relay.receipts.at_once``: the
rules, a grant or an approved plan decided it) is no one's decision: learning a rule from it
would be learning the rules from themselves. It is counted (``DecisionLog.at_once``) and
never read as a call people allowed or denied.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from relay.errors import RelayException
from relay.gate.approval import DENY
from relay.receipts.at_once import is_at_once
from relay.receipts.jcs import canonical
from relay.receipts.jws import BadJWS, parse
from relay.receipts.payload import ERROR_CODE, digest

__all__ = ["DecisionLog", "LogMismatch", "ReceiptedCall", "log_of", "read_log"]

Kind = Literal["allowed", "denied", "edited", "undecided"]
"""What people did with a call: allowed it, denied it (a *Deny*, a typed reason), allowed
an edit of it instead, or nothing (timed out, aborted, failed)."""

# The line `relay.gate.context.who_asks` puts in an approval's detail.
_DIRECTORY = re.compile(r"^\*Directory:\* `([^`\n]+)`$", re.MULTILINE)


class LogMismatch(RelayException, ValueError):
    """The asks export does not match the receipts (a question that is not what was shown)."""


@dataclass(frozen=True, slots=True)
class ReceiptedCall:
    """One receipted approval: its receipt, whose token and agent asked, the call, what
    people did with it, who allowed it and when it ended."""

    receipt: str
    ask: str
    owner: str | None
    agent: str | None
    kind: Kind
    tool: str | None = None
    input: Mapping[str, Any] | None = None
    directory: str | None = None  # as the client named it: shown, never decided on
    people: tuple[str, ...] = ()
    at: datetime | None = None

    @property
    def readable(self) -> bool:
        """Whether the log holds the call itself (else only that it was decided)."""
        return self.tool is not None and self.input is not None

    def describe(self) -> str:
        """The call in one line for an operator: receipt, tool, command or path, agent."""
        what = ""
        if self.input is not None:
            for key in ("command", "file_path", "notebook_path", "path"):
                value = self.input.get(key)
                if isinstance(value, str):
                    what = f" `{_short(value)}`"
                    break
        where = f" in {self.directory}" if self.directory else ""
        agent = f" by agent {self.agent}" if self.agent else ""
        when = f" on {self.at.date().isoformat()}" if self.at else ""
        return f"{self.receipt}: {self.tool}{what}{where}{agent}, {self.kind}{when}"


@dataclass(frozen=True, slots=True)
class DecisionLog:
    """The receipted approvals of a verified export (``calls``), and how many receipts were
    ordinary asks or error receipts (``other``), or calls decided without a person
    (``at_once``: never evidence of what people do)."""

    calls: tuple[ReceiptedCall, ...]
    other: int = 0
    unreadable: tuple[ReceiptedCall, ...] = field(default=())
    at_once: int = 0

    @property
    def readable(self) -> tuple[ReceiptedCall, ...]:
        """The approvals whose call the log holds."""
        return tuple(c for c in self.calls if c.readable)


def read_log(tokens: Iterable[tuple[str, str]], asks: Iterable[Mapping[str, Any]]) -> DecisionLog:
    """The decision log of verified receipts ``tokens`` (``(name, compact JWS)``) and the
    asks export's items ``asks``; ``LogMismatch`` if an ask is not what its receipt says."""
    return log_of((_payload(token) for _, token in tokens), asks)


def log_of(
    payloads: Iterable[Mapping[str, Any] | None], asks: Iterable[Mapping[str, Any]]
) -> DecisionLog:
    """``read_log`` of verified receipts' payloads (``None``: one that cannot be read)."""
    by_id = {str(item.get("id")): item for item in asks}
    calls: list[ReceiptedCall] = []
    other = at_once = 0
    for payload in payloads:
        if payload is None or isinstance(payload.get("error"), Mapping):
            other += 1  # an error receipt (ERROR_CODE) decides nothing anyone can learn from
            continue
        if is_at_once(payload):
            at_once += 1  # the rules' own decision (or a grant's, a plan's): not a person's
            continue
        item = by_id.get(str(payload.get("ask")))
        questions = item.get("questions") if item is not None else None
        if item is not None and digest(canonical(questions)) != payload.get("shown_sha256"):
            raise LogMismatch(
                f"ask {payload.get('ask')} in the asks export is not what its receipt"
                f" {payload.get('jti')} says was shown"
            )
        intent = _intent(questions)
        if item is not None and intent is None:
            other += 1  # an ordinary ask, not a tool approval
            continue
        calls.append(_decided(payload, intent))
    unreadable = tuple(c for c in calls if not c.readable)
    return DecisionLog(calls=tuple(calls), other=other, unreadable=unreadable, at_once=at_once)


def _payload(token: str) -> dict[str, Any] | None:
    try:
        payload = json.loads(parse(token).payload)
    except (BadJWS, UnicodeDecodeError, json.JSONDecodeError):
        return None
    if not isinstance(payload, dict):
        return None
    error = payload.get("error")
    if isinstance(error, Mapping) and error.get("code") != ERROR_CODE:
        return None
    return payload


def _intent(questions: object) -> dict[str, Any] | None:
    """The one question of a tool approval, if ``questions`` are one."""
    if not isinstance(questions, list) or len(questions) != 1:
        return None
    question = questions[0]
    intent = question.get("intent") if isinstance(question, dict) else None
    if not isinstance(intent, dict) or intent.get("kind") != "tool-approval":
        return None
    return question  # type: ignore[no-any-return]


def _decided(payload: Mapping[str, Any], question: Mapping[str, Any] | None) -> ReceiptedCall:
    agent = _table(payload.get("agent"))
    kind, people, at = _outcome(payload)
    tool: str | None = None
    tool_input: Mapping[str, Any] | None = None
    directory: str | None = None
    if question is not None:
        edit = question["intent"].get("edit")
        if isinstance(edit, Mapping) and isinstance(edit.get("input"), Mapping):
            tool, tool_input = str(edit.get("tool")), edit["input"]
        found = _DIRECTORY.search(str(question.get("detail") or ""))
        directory = found.group(1) if found else None
    return ReceiptedCall(
        receipt=str(payload.get("jti")),
        ask=str(payload.get("ask")),
        owner=_text(agent.get("owner")),
        agent=_text(agent.get("name")),
        kind=kind,
        tool=tool,
        input=tool_input,
        directory=directory,
        people=people,
        at=at,
    )


def _outcome(payload: Mapping[str, Any]) -> tuple[Kind, tuple[str, ...], datetime | None]:
    outcome = _table(payload.get("outcome"))
    at = _time(payload.get("ended"))
    decisions = outcome.get("decisions") or [{}]
    first = _table(decisions[0])
    if outcome.get("status") != "answered" or not first.get("answered") or first.get("defaulted"):
        return "undecided", (), at
    if payload.get("edited_sha256") is not None:
        return "edited", (), at
    selected = [str(s) for s in first.get("selected") or ()]
    allowed = selected and all(s.startswith("Allow") for s in selected) and DENY not in selected
    if not allowed or first.get("custom_sha256") is not None:
        return "denied", (), at  # a Deny, or a typed reason (which denies with it)
    votes = first.get("votes") or []
    people = {
        str(v["user"])
        for v in votes
        if isinstance(v, Mapping) and str(v.get("label", "")).startswith("Allow") and v.get("user")
    }
    by = first.get("by")
    if not people and isinstance(by, Mapping) and by.get("user"):
        people = {str(by["user"])}
    return "allowed", tuple(sorted(people)), _time(first.get("at")) or at


def _table(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _time(value: object) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def _short(text: str, limit: int = 80) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"
