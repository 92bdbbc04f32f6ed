"""The gate's pure core: patterns, the rules file, how a tool use is shown, decisions."""

from __future__ import annotations

import textwrap
import tomllib
from datetime import UTC, datetime
from pathlib import Path

import pytest

from relay.canonical.match import Pattern, fingerprint, subject
from relay.errors import UserInteractionError, ask_timed_out
from relay.gate import rules as rules_module
from relay.gate.approval import (
    ALLOW_ONCE,
    ALLOW_SESSION,
    DENY,
    ApprovalRequest,
    approval_question,
    decide_answer,
    decide_error,
)
from relay.gate.describe import MAX_SHOWN, describe_tool_use
from relay.gate.local import target_for
from relay.gate.remote import approval_body
from relay.gate.rules import Rules, RulesError, load_rules, parse_rules
from relay.seam.questions import AgentRef, AskUserQuestionAnswerItem, Responder
from relay.slack.provider import UNSET

AGENT = AgentRef(id="claude-code:s1", name="Claude Code (dev@box)")


# ---- patterns -----------------------------------------------------------------------------


def test_a_pattern_needs_the_tool_and_one_of_each_named_part() -> None:
    push = Pattern(tools=("Bash",), commands=("git push*",))
    assert push.matches(subject("Bash", {"command": "git push origin main"}))
    assert not push.matches(subject("Bash", {"command": "git status"}))
    assert not push.matches(subject("exec", {"command": "git push"}))
    assert not push.matches(subject("Edit", {"file_path": "/x"}))
    regex = Pattern(command_regex=(r"^rm\s+-rf",))
    assert regex.matches(subject("exec", {"command": "rm  -rf /"}))
    assert regex.kind == "regex"


def test_paths_match_absolute_and_relative_to_the_working_directory() -> None:
    locks = Pattern(tools=("Edit", "Write"), paths=("*.lock", "migrations/*"))
    assert locks.matches(subject("Edit", {"file_path": "/repo/poetry.lock"}))
    assert locks.matches(subject("Write", {"file_path": "/repo/migrations/001.sql"}, cwd="/repo"))
    assert not locks.matches(subject("Write", {"file_path": "/other/migrations/1"}, cwd="/repo"))


def test_an_exact_pattern_matches_only_that_input_in_any_key_order() -> None:
    exact = Pattern.exact("Bash", {"command": "ls", "description": "list"})
    assert exact.matches(subject("Bash", {"description": "list", "command": "ls"}))
    assert not exact.matches(subject("Bash", {"command": "ls"}))
    assert fingerprint("a", {"x": 1}) != fingerprint("b", {"x": 1})
    assert Pattern.from_json(exact.to_json()) == exact


def test_a_bad_pattern_on_the_wire_says_what_is_wrong() -> None:
    with pytest.raises(ValueError, match="tools must be a list"):
        Pattern.from_json({"tools": "Bash"})
    with pytest.raises(ValueError, match="colour is not a known"):
        Pattern.from_json({"colour": []})


# ---- rules ----------------------------------------------------------------------------------


def test_deny_beats_ask_beats_allow_whatever_the_order(tmp_path: Path) -> None:
    path = tmp_path / "r.toml"
    path.write_text(
        'default = "pass"\n'
        '[[rules]]\naction = "allow"\ntools = "Bash"\n'
        '[[rules]]\naction = "ask"\ntools = "Bash"\ncommands = ["git *"]\n'
        '[[rules]]\naction = "deny"\ncommands = ["git push --force*"]\n'
    )
    rules = load_rules(str(path))
    assert rules.verdict(subject("Bash", {"command": "ls"})).action == "allow"
    assert rules.verdict(subject("Bash", {"command": "git push"})).action == "ask"
    force = rules.verdict(subject("Bash", {"command": "git push --force origin"}))
    assert (force.action, force.rule.index if force.rule else None) == ("deny", 2)
    assert rules.verdict(subject("Edit", {"file_path": "/a"})).action == "pass"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('[[rules]]\naction = "maybe"\n', "rules[0].action must be allow, ask or deny"),
        ('colour = "red"\n', "colour is not a known setting"),
        ('[[rules]]\naction = "ask"\nspeed = 1\n', "rules[0].speed is not a known setting"),
        ('[[rules]]\naction = "ask"\ncommand_regex = ["("]\n', "has a bad regex"),
        ('approvers = ["alice"]\n', "must hold Slack ids like U0123ABCD"),
        ("timeout = -1\n", "timeout must be a positive number"),
        ('default = "yes"\n', "default must be ask, allow, deny or pass"),
        ("grant_minutes = 99999\n", "grant_minutes must be a whole number"),
        ("not toml = = 1\n", "is not valid TOML"),
        ("reminders = 11\nremind_after = 60\n", "reminders must be a whole number from 1 to 10"),
        ("reminders = 2\n", "reminders needs remind_after"),
        ("remind_after = 0\n", "remind_after must be a positive number of seconds"),
        ('escalate_to = ["U0LEAD"]\n', "escalate_to needs escalate_after"),
        ('escalate_channel = "C0ONCALL"\n', "escalate_channel needs escalate_after"),
        ("escalate_after = 600\n", "escalate_after needs someone to escalate to"),
        ('escalate_after = 60\nescalate_to = ["C0CHAN"]\n', "user (U…/W…) or user group (S…)"),
        ('escalate_after = 60\nescalate_to = ["bob"]\n', "escalate_to must hold user"),
        ("escalate_after = 60\nescalate_to = []\n", "escalate_to must be a Slack id or a"),
        ('escalate_after = 60\nescalate_channel = "#ops"\n', "escalate_channel must be a"),
        ("approvals = 26\n", "approvals must be a whole number from 1 to 25"),
        ("approvals = true\n", "approvals must be a whole number"),
        ('deny_vetoes = "yes"\n', "deny_vetoes must be true or false"),
        (
            '[[rules]]\naction = "ask"\nescalate_to = ["U0LEAD"]\n',
            "rules[0].escalate_to needs escalate_after",
        ),
        (
            '[[rules]]\naction = "ask"\nescalate_after = 60\n',
            "rules[0].escalate_after needs someone to escalate to",
        ),
        (
            '[[rules]]\naction = "ask"\nreminders = 3\n',
            "rules[0].reminders needs remind_after",
        ),
        (
            'escalate_after = 300\nescalate_to = "U0LEAD"\n',
            "escalate_after leaves no time: escalate_after is 300 s, not before the ask's",
        ),
        (
            'remind_after = 100\n[[rules]]\naction = "ask"\ntimeout = 60\n',
            "rules[0].timeout leaves no time: remind_after is 100 s, not before the ask's",
        ),
        (
            '[[rules]]\naction = "deny"\napprovals = 2\n',
            "rules[0].approvals only applies to ask rules",
        ),
    ],
)
def test_a_bad_rules_file_names_the_setting(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "rules.toml"
    path.write_text(text)
    with pytest.raises(RulesError, match=r"rules\.toml") as info:
        load_rules(str(path))
    assert message in str(info.value)
    assert info.value.code == "BAD_RULES"


def test_a_missing_rules_file_is_an_error_not_an_empty_policy(tmp_path: Path) -> None:
    with pytest.raises(RulesError, match="cannot read the rules file"):
        load_rules(str(tmp_path / "nope.toml"))


def test_an_ask_rule_may_name_its_own_approvers_and_timeout() -> None:
    rules = parse_rules(
        {
            "approvers": ["U0LEAD"],
            "rules": [
                {"action": "ask", "commands": ["deploy*"], "timeout": 60, "approvers": ["U0OPS"]}
            ],
        },
        source="t",
    )
    verdict = rules.verdict(subject("exec", {"command": "deploy prod"}))
    assert rules.timeout_for(verdict) == 60
    assert verdict.rule is not None
    assert verdict.rule.approvers == ("U0OPS",)
    assert rules.timeout_for(rules.verdict(subject("exec", {"command": "ls"}))) == 300


def test_team_decisions_are_read_and_a_rules_value_wins_over_the_top_levels() -> None:
    rules = parse_rules(
        {
            "timeout": 3600,
            "remind_after": 600,
            "reminders": 2,
            "escalate_after": 1800,
            "escalate_to": ["U0LEAD", "S0ONCALL", "W0GRID"],
            "approvals": 2,
            "rules": [
                {
                    "action": "ask",
                    "commands": ["deploy*"],
                    "escalate_to": "S0SRE",
                    "escalate_channel": "C0INCIDENTS",
                    "approvals": 3,
                    "deny_vetoes": False,
                },
                # Its own escalation time, escalating to the top level's people.
                {"action": "ask", "commands": ["migrate*"], "escalate_after": 60},
            ],
        },
        source="t",
    )
    top = rules.team_for(rules.verdict(subject("exec", {"command": "ls"})))
    assert (top.remind_after, top.reminders, top.escalate_after) == (600, 2, 1800)
    assert top.escalate_users == ("U0LEAD", "W0GRID")
    assert top.escalate_groups == ("S0ONCALL",)
    assert (top.escalate_channel, top.approvals, top.veto) == (None, 2, True)
    deploy = rules.team_for(rules.verdict(subject("exec", {"command": "deploy prod"})))
    assert (deploy.escalate_users, deploy.escalate_groups) == (None, ("S0SRE",))
    assert (deploy.escalate_channel, deploy.approvals, deploy.veto) == ("C0INCIDENTS", 3, False)
    assert (deploy.remind_after, deploy.escalate_after) == (600, 1800)
    migrate = rules.team_for(rules.verdict(subject("exec", {"command": "migrate up"})))
    assert (migrate.escalate_after, migrate.escalate_groups) == (60, ("S0ONCALL",))
    assert Rules().team_for(Rules().verdict(subject("exec", {"command": "ls"}))).veto is None


def test_the_relays_quorum_fills_in_where_the_file_sets_none() -> None:
    filled = Rules().filled(channel=None, approvers=None, approver_groups=None, approvals=2)
    assert filled.team.approvals == 2
    own = parse_rules({"approvals": 1}, source="t")
    assert own.filled(channel=None, approvers=None, approver_groups=None, approvals=3).team == (
        own.team
    )


def test_the_modules_example_rules_file_loads() -> None:
    doc = rules_module.__doc__ or ""
    example = textwrap.dedent(doc.split("::\n", 1)[1].split("\nEach rule", 1)[0])
    rules = parse_rules(tomllib.loads(example), source="docstring")
    deploy = rules.team_for(rules.verdict(subject("exec", {"command": "./deploy.sh prod"})))
    assert (deploy.approvals, deploy.veto, deploy.reminders) == (2, True, 2)
    assert deploy.escalate_groups == ("S0ONCALL",)


# ---- describing a tool use --------------------------------------------------------------------


def test_a_command_is_code_shown_as_written_that_cannot_close_its_block() -> None:
    # Shown as written (the markdown block shows "&amp;" in code literally); the renderer,
    # not this, makes "<@U123>" inert (tests/flows/test_mcp_stdio.py checks nobody is pinged).
    view = describe_tool_use("Bash", {"command": "echo <@U123> && ```x```", "description": "hi"})
    assert view.summary == "run a shell command"
    assert "```sh\necho <@U123> && ``\u200b`x``\u200b`\n```" in view.detail
    assert "_hi_" in view.detail


def test_edits_are_diffs_and_other_input_is_still_shown() -> None:
    edit = describe_tool_use(
        "Edit",
        {
            "file_path": "/a.py",
            "old_string": "x = 1\n",
            "new_string": "x = 2\n",
            "replace_all": True,
            "extra": "kept",
        },
    )
    assert "-x = 1\n+x = 2" in edit.detail
    assert "every occurrence" in edit.summary
    assert '"extra": "kept"' in edit.detail
    multi = describe_tool_use(
        "MultiEdit",
        {
            "file_path": "/a.py",
            "edits": [
                {"old_string": "a", "new_string": "b"},
                {"old_string": "c", "new_string": "d"},
            ],
        },
    )
    assert multi.detail.count("+++ /a.py") == 2
    write = describe_tool_use("Write", {"file_path": "/new.txt", "content": "hello\n"})
    assert "--- /dev/null\n+++ /new.txt" in write.detail
    assert "+hello" in write.detail


def test_anything_else_is_pretty_json_and_long_input_says_what_is_cut() -> None:
    view = describe_tool_use("mcp__db__query", {"sql": "select 1"})
    assert '```json\n{\n  "sql": "select 1"\n}\n```' in view.detail
    long = describe_tool_use("Bash", {"command": "x" * (MAX_SHOWN + 500)})
    assert "500 more characters" in long.detail
    broken = describe_tool_use("Edit", {"file_path": "/a"})  # no strings: shown as JSON
    assert '"file_path": "/a"' in broken.detail


# ---- the approval question and decisions -----------------------------------------------------


def request(**kw: object) -> ApprovalRequest:
    return ApprovalRequest(tool="Bash", input={"command": "npm test"}, agent=AGENT, **kw)  # type: ignore[arg-type]


def test_the_question_offers_the_grants_the_rules_allow() -> None:
    item = approval_question(request(grant_minutes=15)).questions[0]
    assert item.labels == (ALLOW_ONCE, ALLOW_SESSION, "Allow for 15 minutes", DENY)
    assert "Claude Code (dev@box) wants to run a shell command" in item.question
    none = approval_question(request(session_grants=False, grant_minutes=0)).questions[0]
    assert none.labels == (ALLOW_ONCE, DENY)


def test_a_quorum_offers_no_grants_and_one_deny_decides_unless_told_otherwise() -> None:
    two = request(approvals=2, grant_minutes=15)
    item = approval_question(two).questions[0]
    assert item.labels == (ALLOW_ONCE, DENY)
    assert (item.approvals_required, item.veto) == (2, (DENY,))
    assert "2 people must allow" in str(item.options)
    offer = two.offer("o")
    assert (offer.session, offer.minutes) == (False, 0)
    # Even an answer naming a grant label makes no grant.
    _, kind = decide_answer(answer((ALLOW_SESSION,)), session=offer.session, minutes=offer.minutes)
    assert kind is None
    strict = approval_question(request(approvals=2, deny_vetoes=False)).questions[0]
    assert strict.veto == ()  # not None: the relay's RELAY_VETO must not add one back
    single = approval_question(request(approvals=1)).questions[0]
    assert (single.approvals_required, single.veto) == (1, None)
    assert single.labels == (ALLOW_ONCE, ALLOW_SESSION, "Allow for 30 minutes", DENY)
    unset = approval_question(request()).questions[0]
    assert (unset.approvals_required, unset.veto) == (None, None)


def test_team_decisions_reach_both_the_slack_target_and_the_relays_body() -> None:
    team = request(
        remind_after=60.0,
        reminders=3,
        escalate_after=120.0,
        escalate_groups=("S0SRE",),
        escalate_channel="C0ONCALL",
        approvals=2,
        deny_vetoes=False,
    )
    target = target_for(team)
    assert (target.remind_after, target.reminders, target.escalate_after) == (60.0, 3, 120.0)
    assert (target.escalate_users, target.escalate_groups) == (None, ("S0SRE",))
    assert target.escalate_channel == "C0ONCALL"
    body = approval_body(team)
    assert body["slack"] == {
        "remind_after_s": 60.0,
        "reminders": 3,
        "escalate_after_s": 120.0,
        "escalate_users": None,
        "escalate_groups": ["S0SRE"],
        "escalate_channel": "C0ONCALL",
    }
    assert (body["approvals_required"], body["deny_vetoes"]) == (2, False)
    # Nothing set: the provider's (or relay's) defaults apply, untouched.
    plain = target_for(request())
    assert plain.remind_after is UNSET
    assert plain.escalate_users is UNSET
    assert "slack" not in approval_body(request())
    assert "approvals_required" not in approval_body(request())


def answer(selected: tuple[str, ...] = (), custom: str | None = None) -> AskUserQuestionAnswerItem:
    return AskUserQuestionAnswerItem(
        id="approval",
        selected=selected,
        custom=custom,
        answered_by=Responder(id="U0ALICE", name="alice"),
        answered_at=datetime(2026, 1, 1, tzinfo=UTC),
    )


def test_answers_become_decisions_and_only_offered_grants_are_made() -> None:
    once, kind = decide_answer(answer((ALLOW_ONCE,)), session=True, minutes=30)
    assert (once.behavior, once.outcome, kind) == ("allow", "approved", None)
    _, kind = decide_answer(answer((ALLOW_SESSION,)), session=True, minutes=30)
    assert kind == "session"
    _, kind = decide_answer(answer(("Allow for 30 minutes",)), session=True, minutes=30)
    assert kind == "minutes"
    # Not offered (or a label of another length): allowed once, no grant.
    allowed, kind = decide_answer(answer(("Allow for 99 minutes",)), session=True, minutes=30)
    assert (allowed.behavior, kind) == ("allow", None)
    denied, _ = decide_answer(answer((DENY,)), session=True, minutes=30)
    assert denied.behavior == "deny"
    typed, _ = decide_answer(answer(custom=" not now "), session=True, minutes=30)
    assert typed.message == "alice denied this in Slack: not now"


def test_no_answer_fails_closed() -> None:
    timed_out = decide_error(ask_timed_out(5), timeout=5)
    assert (timed_out.behavior, timed_out.outcome) == ("deny", "timed_out")
    failed = decide_error(UserInteractionError("PROVIDER_FAILED", "no relay"))
    assert (failed.behavior, failed.outcome) == ("deny", "failed")
    assert "no relay" in failed.message
    assert Rules().default == "ask"
