"""Rules suggested from the decision log, each with its evidence and its replay. Pure.

A candidate is the narrowest allow rule the rules file can write for a call people allowed:
its tool and, for a command, that one command word for word (``commands = ["npm test"]``,
matched strictly, as every allow rule is), for a path that very path. It is written for the
token that asked (``[[tokens.<fingerprint>.rules]]``), since that is the narrowest scope the
file knows; the agents and directories seen are named in its evidence. A compound command,
one relay cannot read (``opaque``), a word with a glob character, or a path without a
canonical absolute form gets no candidate.

The candidates are then added to the operator's rules and the whole file replayed against
every receipted call (``relay.learn.replay``): a candidate that would allow one call people
denied or edited is dropped, and so is one that, after that, allows fewer calls or fewer
people than the thresholds ask; the replay runs again until nothing changes. What is left is
offered as a diff to the rules file, never applied.
"""

from __future__ import annotations

import difflib
import json
import shlex
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from relay.canonical.match import Pattern, subject
from relay.canonical.shell import CommandGlob, Parsed
from relay.gate.policy import Policy, parse_policy
from relay.gate.rules import Rule, RulesError
from relay.learn.log import DecisionLog, ReceiptedCall
from relay.learn.replay import Replay, replay

__all__ = ["Candidate", "Suggestions", "Thresholds", "suggest"]

_GLOB_CHARS = frozenset("*?[]")


@dataclass(frozen=True, slots=True)
class Thresholds:
    """How much evidence a suggestion needs: allowed ``min_count`` times, by at least
    ``min_people`` different people."""

    min_count: int = 5
    min_people: int = 2


@dataclass(frozen=True, slots=True)
class Candidate:
    """An allow rule for ``owner``'s token (``None``: the file's top level)."""

    owner: str | None
    tool: str
    commands: tuple[str, ...] = ()
    paths: tuple[str, ...] = ()

    @property
    def pattern(self) -> Pattern:
        """What the rule matches."""
        return Pattern(tools=(self.tool,), commands=self.commands, paths=self.paths)

    def toml(self) -> str:
        """The rule as the rules file writes it."""
        table = "rules" if self.owner is None else f"tokens.{self.owner}.rules"
        lines = [f"[[{table}]]", 'action = "allow"', f"tools = [{json.dumps(self.tool)}]"]
        if self.commands:
            lines.append(f"commands = [{', '.join(json.dumps(c) for c in self.commands)}]")
        if self.paths:
            lines.append(f"paths = [{', '.join(json.dumps(p) for p in self.paths)}]")
        return "\n".join(lines) + "\n"

    def inline(self) -> str:
        """The rule in one line, as a TOML inline table (for the report's column)."""
        return "{ " + ", ".join(self.toml().splitlines()[1:]) + " }"

    def describe(self) -> str:
        """In words: what it allows, for whom."""
        what = (
            f"`{self.commands[0]}`"
            if self.commands
            else f"{self.tool} on `{self.paths[0]}`"
            if self.paths
            else f"every {self.tool} call"
        )
        who = "every token" if self.owner is None else f"token {self.owner}"
        return f"allow {what} for {who}"


@dataclass(frozen=True, slots=True)
class Offered:
    """A suggestion: the rule, the calls people allowed that it would allow (its evidence),
    and those nobody decided."""

    candidate: Candidate
    allowed: tuple[ReceiptedCall, ...]
    undecided: int

    def evidence(self) -> str:
        """ "approved 41 of 41 times by 3 people over 9 days, never denied", and where."""
        people = sorted({p for c in self.allowed for p in c.people})
        times = [c.at for c in self.allowed if c.at is not None]
        days = (max(times).date() - min(times).date()).days + 1 if times else 0
        n = len(self.allowed)
        who = "person" if len(people) == 1 else "people"
        text = (
            f"approved {n} of {n} times by {len(people)} {who}"
            f" over {days} {'day' if days == 1 else 'days'}, never denied or edited"
        )
        if self.undecided:
            text += f" ({self.undecided} more timed out or were withdrawn)"
        agents = sorted({c.agent for c in self.allowed if c.agent})
        places = sorted({c.directory for c in self.allowed if c.directory})
        if agents:
            text += f"; agents {', '.join(agents[:5])}{' …' if len(agents) > 5 else ''}"
        if places:
            text += f"; in {', '.join(places[:3])}{' …' if len(places) > 3 else ''}"
        return text


@dataclass(slots=True)
class Suggestions:
    """What ``suggest`` found: the rules offered, those dropped and why, the rules file with
    them added, and its replay."""

    offered: list[Offered] = field(default_factory=list)
    dropped: list[tuple[Candidate, str]] = field(default_factory=list)
    text: str = ""
    replay: Replay | None = None

    def diff(self, base: str, *, name: str) -> str:
        """The unified diff from the rules file ``base`` (its text) to ``text``."""
        return "".join(
            difflib.unified_diff(
                base.splitlines(keepends=True),
                self.text.splitlines(keepends=True),
                fromfile=f"a/{name}",
                tofile=f"b/{name}",
            )
        )


def candidate_of(call: ReceiptedCall) -> Candidate | None:
    """The narrowest allow rule for ``call``, if the rules file can write one."""
    if call.tool is None or call.input is None:
        return None
    use = subject(call.tool, call.input)
    if use.shell is not None:
        if len(use.shell.parts) != 1:
            return None
        part = use.shell.parts[0]
        if part.opaque or part.env or part.expands or not part.words:
            return None
        if any(_GLOB_CHARS & set(w) for w in part.words):
            return None
        glob = shlex.join(part.words)
        if not CommandGlob.of(glob).strict(part):
            return None  # (a word the glob reads otherwise: offer nothing)
        return Candidate(call.owner, call.tool, commands=(glob,))
    if use.command is not None:
        return None
    if use.where is not None:
        path = use.where.absolute
        if not path or _GLOB_CHARS & set(path):
            return None
        return Candidate(call.owner, call.tool, paths=(path,))
    if use.path is not None:
        return None
    return Candidate(call.owner, call.tool)


def suggest(
    log: DecisionLog,
    *,
    base: str = "",
    source: str = "rules.toml",
    thresholds: Thresholds | None = None,
) -> Suggestions:
    """The rules ``log`` supports, added to the rules file ``base`` (its text, named
    ``source``; ``RulesError`` if it does not load): each replayed against every call with
    the rest, as the relay would load the file."""
    limits = thresholds or Thresholds()
    counts: dict[Candidate, int] = {}
    seen: dict[tuple[str, ...], Candidate | None] = {}  # (a log repeats its calls)
    for call in log.readable:
        if call.kind == "allowed":
            same = (call.owner or "", call.tool or "", json.dumps(call.input))
            if same not in seen:
                seen[same] = candidate_of(call)
            found = seen[same]
            if found is not None:
                counts[found] = counts.get(found, 0) + 1
    live = [c for c, n in sorted(counts.items(), key=_order) if n >= limits.min_count]
    out = Suggestions()
    # What the operator's file already lets through is its own (``relay rules replay``).
    current = _policy(base, source)
    has_rules = current.rules.rules or current.rules.default != "ask" or current.tokens
    before = {w.call.receipt for w in replay(current, log).wrong} if has_rules else set()
    while True:
        text = _with(base, live)
        policy = _policy(text, source)
        result = replay(policy, log)
        by_rule = _attributed(policy, live)
        losers: dict[Candidate, str] = {
            c: "the rules file does not read it back as written"
            for c in live
            if c not in by_rule.values()
        }
        for wrong in result.wrong:
            if wrong.call.receipt in before:
                continue
            hit = by_rule.get((wrong.owner, wrong.rule.index)) if wrong.rule else None
            # A compound call allowed part by part is reported under its first part's rule:
            # every candidate allowing one of its parts goes (all of them, if none is found).
            suspects = [hit] if hit is not None else _covering(live, wrong.call) or live
            why = f"its replay would allow a call people {wrong.call.kind}: {wrong.call.describe()}"
            for suspect in suspects:
                losers.setdefault(suspect, why)
        offered: list[Offered] = []
        for key, candidate in by_rule.items():
            if candidate in losers:
                continue
            allowed = tuple(result.allowed.get(key, ()))
            people = {p for c in allowed for p in c.people}
            if len(allowed) < limits.min_count or len(people) < limits.min_people:
                losers[candidate] = (
                    f"allowed {len(allowed)} times by {len(people)}"
                    f" {'person' if len(people) == 1 else 'people'}"
                    f" (needs {limits.min_count} times by {limits.min_people})"
                )
                continue
            offered.append(Offered(candidate, allowed, len(result.undecided.get(key, ()))))
        if not losers:
            out.offered = offered
            out.text = _with(base, live, offered)
            out.replay = result
            return out
        out.dropped.extend(losers.items())
        live = [c for c in live if c not in losers]


def _policy(text: str, source: str) -> Policy:
    try:
        return parse_policy(tomllib.loads(text), path=source)
    except tomllib.TOMLDecodeError as exc:
        raise RulesError(f"{source} is not valid TOML with the suggestions added: {exc}") from None


def _covering(live: list[Candidate], call: ReceiptedCall) -> list[Candidate]:
    """The candidates allowing some part of ``call`` on their own (as ``Rules.verdict``
    matches an allow rule against each part)."""
    if call.tool is None or call.input is None:
        return []
    use = subject(call.tool, call.input)
    uses = [replace(use, shell=Parsed((part,))) for part in use.shell.parts] if use.shell else [use]
    return [
        c for c in live if c.owner == call.owner and any(c.pattern.matches(one) for one in uses)
    ]


def _order(item: tuple[Candidate, int]) -> tuple[int, str, str]:
    candidate, n = item
    return (-n, candidate.owner or "", candidate.describe())


def _attributed(policy: Policy, live: list[Candidate]) -> dict[tuple[str | None, int], Candidate]:
    """Each candidate by the (owner, rule index) the replay reports it under."""
    out: dict[tuple[str | None, int], Candidate] = {}
    for candidate in live:
        rules = policy.for_owner(candidate.owner or "local")
        for rule in rules.rules:
            if _is(rule, candidate):
                out[(candidate.owner, rule.index)] = candidate
                break
    return out


def _is(rule: Rule, candidate: Candidate) -> bool:
    return (
        rule.action == "allow"
        and rule.pattern.tools == (candidate.tool,)
        and rule.pattern.commands == candidate.commands
        and rule.pattern.paths == candidate.paths
        and not rule.pattern.command_regex
        and not rule.pattern.path_regex
    )


def _with(base: str, live: list[Candidate], offered: list[Offered] | None = None) -> str:
    """``base`` with ``live`` appended (with their evidence as comments when ``offered``)."""
    if not live:
        return base
    notes: Mapping[Candidate, Offered] = {o.candidate: o for o in offered or ()}
    blocks = []
    for candidate in live:
        lines = ""
        if candidate in notes:
            lines = f"# {candidate.describe()}: {notes[candidate].evidence()}\n"
        blocks.append(lines + candidate.toml())
    head = base if not base or base.endswith("\n") else base + "\n"
    intro = "\n# Suggested by `relay rules suggest`, each replayed against every receipted call\n"
    return head + intro + "\n".join(blocks)
