"""The team's rules file: which tool uses need a human, which are allowed or denied outright.

A TOML file (read with ``tomllib``)::

    timeout = 300                 # seconds a reviewer has; then the use is denied
    channel = "C0123ABCD"         # where to ask (else RELAY_CHANNEL / the relay's default)
    approvers = ["U0123ABCD"]     # who may approve (Slack user ids) ...
    approver_groups = ["S0123ABCD"]  # ... or members of these user groups
    default = "ask"               # when no rule matches: ask, allow, deny, or pass
    session_grants = true         # offer "Allow for this session"
    grant_minutes = 30            # offer "Allow for 30 minutes" (0: don't)
    remind_after = 120            # remind who may answer, every 120 s ...
    reminders = 2                 # ... at most twice (1 to 10; needs remind_after)

    [[rules]]
    action = "deny"
    tools = ["Bash", "exec"]
    commands = ["rm -rf *", "* --force*"]
    reason = "force pushes and recursive deletes are never allowed"

    [[rules]]
    action = "ask"
    commands = ["./deploy.sh prod*"]
    approvals = 2                 # two different people must allow (1 to 25)
    deny_vetoes = true            # one Deny decides at once (the default when approvals > 1)
    escalate_after = 240          # unanswered after 240 s: escalate ...
    escalate_to = ["U0LEAD", "S0ONCALL"]  # ... these users (U…/W…) and groups (S…) may answer
    escalate_channel = "C0INCIDENTS"      # ... and are mentioned here (else in the thread)

Each rule has an ``action`` and any of ``tools`` (globs on the tool name), ``commands``
(globs) or ``command_regex``, ``paths`` (globs) or ``path_regex``; an ``ask`` rule may
set its own ``approvers``, ``approver_groups`` and ``timeout``, and the team decisions
(``remind_after``, ``reminders``, ``escalate_after``, ``escalate_to``, ``escalate_channel``,
``approvals``, ``deny_vetoes``; ``relay.gate.team``), each of which wins over the top
level's, key by key (``escalate_to`` as a whole list). ``escalate_to`` or
``escalate_channel`` without ``escalate_after`` (at either level) is an error, and so is the
reverse; so is a reminder or escalation not before the ask's timeout. With ``approvals`` of
2 or more no grant is offered: only *Allow once* (needing that many people) and *Deny*.
Of the rules that match a use, ``deny`` wins over ``ask``, and ``ask`` over ``allow``,
whatever their order. Matching is on canonical forms (``relay.canonical.match``): deny and ask
rules loosely (any part of a compound command, a folder of the path), allow rules strictly
(every part, the very path), and what relay cannot read is never allowed without a person.
``pass`` (only as ``default``) lets the harness decide as it would
without relay.
"""

from __future__ import annotations

import math
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from relay.canonical.match import Pattern, Subject
from relay.canonical.shell import Parsed, glob_error
from relay.errors import ErrorCode, RelayException
from relay.gate.team import TEAM_KEYS, TeamRules, check_team, read_team

__all__ = ["BAD_RULES", "Action", "Rule", "RuleVerdict", "Rules", "RulesError", "load_rules"]

BAD_RULES = ErrorCode.BAD_RULES
Action = Literal["allow", "ask", "deny", "pass"]
_ACTIONS = ("allow", "ask", "deny")
_RANK = {"deny": 0, "ask": 1, "allow": 2}
_TOP_KEYS = TEAM_KEYS | frozenset(
    {
        "timeout",
        "channel",
        "approvers",
        "approver_groups",
        "default",
        "session_grants",
        "grant_minutes",
        "rules",
    }
)
_RULE_KEYS = TEAM_KEYS | frozenset(
    {
        "action",
        "tools",
        "commands",
        "command_regex",
        "paths",
        "path_regex",
        "reason",
        "approvers",
        "approver_groups",
        "timeout",
    }
)
_ID = re.compile(r"^[A-Z][A-Z0-9]+$")


class RulesError(RelayException):
    """The rules file is missing or wrong; the message names the file and the key."""

    code = BAD_RULES


@dataclass(frozen=True, slots=True)
class Rule:
    """One ``[[rules]]`` entry."""

    index: int
    action: Literal["allow", "ask", "deny"]
    pattern: Pattern
    reason: str | None = None
    approvers: tuple[str, ...] | None = None
    approver_groups: tuple[str, ...] | None = None
    timeout: float | None = None
    team: TeamRules = field(default_factory=TeamRules)

    @property
    def narrow(self) -> bool:
        """Whether the rule names commands or paths (a grant then covers the same ones)."""
        p = self.pattern
        return bool(p.commands or p.command_regex or p.paths or p.path_regex)


@dataclass(frozen=True, slots=True)
class RuleVerdict:
    """What the rules say about one use, and which rule said it (``None``: the default)."""

    action: Action
    rule: Rule | None = None

    def reason(self, source: str) -> str:
        """Why, in a sentence for the agent."""
        if self.rule is not None and self.rule.reason:
            return self.rule.reason
        where = f"rule {self.rule.index + 1}" if self.rule is not None else "the default"
        verb = {"allow": "allowed", "deny": "denied", "ask": "sent to a reviewer"}.get(
            self.action, "left to the harness"
        )
        return f"{verb} by {where} of {source}"


@dataclass(frozen=True, slots=True)
class Rules:
    """A parsed rules file; ``Rules()`` asks about everything, with the defaults."""

    source: str = "the built-in defaults"
    timeout: float = 300.0
    # Whether the file sets ``timeout`` (else 300 is only the client's default wait).
    timeout_given: bool = False
    channel: str | None = None
    approvers: tuple[str, ...] | None = None
    approver_groups: tuple[str, ...] | None = None
    default: Action = "ask"
    session_grants: bool = True
    grant_minutes: int = 30
    rules: tuple[Rule, ...] = field(default=())
    team: TeamRules = field(default_factory=TeamRules)

    def verdict(self, use: Subject) -> RuleVerdict:
        """The strictest action of the rules matching ``use`` (deny > ask > allow).

        Deny and ask rules match loosely (any part of a compound command, a folder of the
        path); an allow rule only strictly, and a compound command is allowed only if every
        part is. What relay cannot read (``opaque``) is never allowed without a person."""
        for action in ("deny", "ask"):
            hits = [
                r for r in self.rules if r.action == action and r.pattern.matches(use, strict=False)
            ]
            if hits:
                return RuleVerdict(action, hits[0])
        allows = [r for r in self.rules if r.action == "allow"]
        opaque = use.shell is not None and use.shell.opaque
        if use.shell is not None and len(use.shell.parts) > 1:
            # Every part on its own must be allowed by some rule.
            covering = []
            for part in use.shell.parts:
                one = replace(use, shell=Parsed((part,)))
                rule = next((r for r in allows if r.pattern.matches(one)), None)
                if rule is None:
                    break
                covering.append(rule)
            else:
                return RuleVerdict("allow", covering[0])
        else:
            rule = next((r for r in allows if r.pattern.matches(use)), None)
            if rule is not None:
                return RuleVerdict("allow", rule)
        if opaque and self.default == "allow":
            return RuleVerdict("ask")
        return RuleVerdict(self.default)

    def filled(
        self,
        *,
        channel: str | None,
        approvers: tuple[str, ...] | None,
        approver_groups: tuple[str, ...] | None,
        approvals: int | None = None,
    ) -> Rules:
        """These rules with the command line's defaults where the file sets nothing
        (``approvals``: the top level's, from ``RELAY_APPROVALS_REQUIRED`` asking directly)."""
        team = self.team
        if team.approvals is None and approvals is not None:
            team = replace(team, approvals=approvals)
        return replace(
            self,
            team=team,
            channel=self.channel if self.channel is not None else channel,
            approvers=self.approvers if self.approvers is not None else approvers,
            approver_groups=(
                self.approver_groups if self.approver_groups is not None else approver_groups
            ),
        )

    def timeout_for(self, verdict: RuleVerdict) -> float:
        """The reviewer's time for an ask under ``verdict``."""
        if verdict.rule is not None and verdict.rule.timeout is not None:
            return verdict.rule.timeout
        return self.timeout

    def given_timeout_for(self, verdict: RuleVerdict) -> float | None:
        """The reviewer's time the file itself sets for ``verdict``, if it sets one."""
        if verdict.rule is not None and verdict.rule.timeout is not None:
            return verdict.rule.timeout
        return self.timeout if self.timeout_given else None

    def team_for(self, verdict: RuleVerdict) -> TeamRules:
        """The team decisions for an ask under ``verdict``: its rule's, else the top level's."""
        if verdict.rule is not None:
            return verdict.rule.team.over(self.team)
        return self.team


def load_rules(path: str) -> Rules:
    """Read and check the rules file at ``path``; ``RulesError`` says what is wrong where."""
    try:
        data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        reason = (exc.strerror or str(exc)).lower()
        raise RulesError(f"cannot read the rules file {path}: {reason}") from None
    except UnicodeDecodeError:
        raise RulesError(f"the rules file {path} is not UTF-8 text") from None
    except tomllib.TOMLDecodeError as exc:
        raise RulesError(f"the rules file {path} is not valid TOML: {exc}") from None
    return parse_rules(data, source=path)


def parse_rules(data: Mapping[str, Any], *, source: str) -> Rules:
    """Check a decoded rules document (see the module docstring for its shape)."""
    reader = _Reader(source)
    reader.known(data, _TOP_KEYS, "")
    raw_rules = data.get("rules", [])
    if not isinstance(raw_rules, list):
        raise reader.error("rules", "must be an array of tables ([[rules]])")
    default = data.get("default", "ask")
    if default not in (*_ACTIONS, "pass"):
        raise reader.error("default", "must be ask, allow, deny or pass")
    minutes = data.get("grant_minutes", 30)
    if isinstance(minutes, bool) or not isinstance(minutes, int) or not 0 <= minutes <= 24 * 60:
        raise reader.error("grant_minutes", "must be a whole number of minutes, 0 to 1440")
    session = data.get("session_grants", True)
    if not isinstance(session, bool):
        raise reader.error("session_grants", "must be true or false")
    channel = data.get("channel")
    if channel is not None and (not isinstance(channel, str) or not channel.strip()):
        raise reader.error("channel", "must be a channel id like C0123ABCD")
    timeout = reader.seconds(data, "timeout", "") or 300.0
    team = read_team(data, "", reader.error)
    check_team(team, TeamRules(), "", reader.error, timeout=timeout)
    rules = tuple(reader.rule(i, r, team, timeout) for i, r in enumerate(raw_rules))
    return Rules(
        source=source,
        timeout=timeout,
        timeout_given="timeout" in data,
        channel=channel,
        approvers=reader.ids(data, "approvers", ""),
        approver_groups=reader.ids(data, "approver_groups", ""),
        default=default,
        session_grants=session,
        grant_minutes=minutes,
        rules=rules,
        team=team,
    )


class _Reader:
    def __init__(self, source: str) -> None:
        self.source = source

    def error(self, key: str, problem: str) -> RulesError:
        return RulesError(f"{self.source}: {key} {problem}")

    def known(self, data: Mapping[str, Any], keys: frozenset[str], where: str) -> None:
        for key in data:
            if key not in keys:
                raise self.error(
                    f"{where}{key}",
                    f"is not a known setting (use one of {', '.join(sorted(keys))})",
                )

    def strings(self, data: Mapping[str, Any], key: str, where: str) -> tuple[str, ...]:
        value = data.get(key, [])
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
            raise self.error(f"{where}{key}", "must be a string or a list of non-empty strings")
        return tuple(value)

    def ids(self, data: Mapping[str, Any], key: str, where: str) -> tuple[str, ...] | None:
        if key not in data:
            return None
        values = self.strings(data, key, where)
        bad = [v for v in values if not _ID.match(v)]
        if bad:
            raise self.error(
                f"{where}{key}", f"must hold Slack ids like U0123ABCD (not names): {bad[0]!r}"
            )
        return values

    def seconds(self, data: Mapping[str, Any], key: str, where: str) -> float | None:
        if key not in data:
            return None
        value = data[key]
        if (
            isinstance(value, bool)
            or not isinstance(value, int | float)
            or not math.isfinite(value)
            or value <= 0
        ):
            raise self.error(f"{where}{key}", "must be a positive number of seconds")
        return float(value)

    def rule(self, index: int, data: object, top: TeamRules, timeout: float) -> Rule:
        where = f"rules[{index}]."
        if not isinstance(data, Mapping):
            raise self.error(where.rstrip("."), "must be a table")
        self.known(data, _RULE_KEYS, where)
        action = data.get("action")
        if action not in _ACTIONS:
            raise self.error(f"{where}action", "must be allow, ask or deny")
        lists = {
            name: self.strings(data, name, where)
            for name in ("tools", "commands", "command_regex", "paths", "path_regex")
        }
        for expression in lists["commands"]:
            problem = glob_error(expression)
            if problem is not None:
                raise self.error(f"{where}commands", f"{expression!r} {problem}")
        for name in ("command_regex", "path_regex"):
            for expression in lists[name]:
                try:
                    re.compile(expression)
                except re.error as exc:
                    raise self.error(
                        f"{where}{name}", f"has a bad regex {expression!r}: {exc}"
                    ) from None
        reason = data.get("reason")
        if reason is not None and (not isinstance(reason, str) or not reason.strip()):
            raise self.error(f"{where}reason", "must be a sentence")
        team = read_team(data, where, self.error)
        if action != "ask":
            named = sorted(TEAM_KEYS & set(data))
            if named:
                raise self.error(f"{where}{named[0]}", "only applies to ask rules (a human asked)")
        else:
            own = self.seconds(data, "timeout", where)
            check_team(team, top, where, self.error, timeout=own or timeout)
        return Rule(
            index=index,
            action=action,
            pattern=Pattern(
                tools=lists["tools"],
                commands=lists["commands"],
                command_regex=lists["command_regex"],
                paths=lists["paths"],
                path_regex=lists["path_regex"],
            ),
            reason=reason,
            approvers=self.ids(data, "approvers", where),
            approver_groups=self.ids(data, "approver_groups", where),
            timeout=self.seconds(data, "timeout", where),
            team=team,
        )
