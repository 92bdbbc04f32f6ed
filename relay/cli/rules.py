"""``relay rules``: rules learned from the signed decision log, and a rules file replayed on it.

Both read the receipts (``relay audit --receipts`` with an operator token: the chain and its
checkpoints), verified first as ``relay verify --chain`` does (a file that does not verify is
refused), and the asks they decided (``relay audit`` with each agent token, JSON lines; an
ask is used only when it is exactly what its receipt says was shown).

``relay rules suggest`` proposes allow rules in the rules file's own format, each with its
evidence and its replay (every receipted call decided again under the rules file with the
suggestions added): a suggestion that would allow one call people denied or edited is not
offered. It prints a diff to the rules file (``--rules``), which relay never applies.

``relay rules replay RULES_FILE`` decides every receipted call again under RULES_FILE and
exits 1 (RULE_ALLOWS_DENIED), naming each rule and call, if a rule would allow without a
person a call people denied or edited.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import TYPE_CHECKING, Any

from relay.cli.common import USAGE, CommandError, Commands, error_line, plain, read_text
from relay.errors import ErrorCode

if TYPE_CHECKING:
    from relay.gate.policy import Policy
    from relay.gate.rules import Rule
    from relay.learn import DecisionLog, Replay

__all__ = ["add_rules"]


# Its codes, RECEIPTS_UNVERIFIED (exit 2) and RULE_ALLOWS_DENIED (exit 1), are the enum's.


def add_rules(commands: Commands) -> None:
    """Register ``relay rules suggest`` and ``relay rules replay``."""
    parser = commands.add_parser(
        "rules",
        help="suggest rules from the signed decision log, or replay a rules file on it",
        description=plain(__doc__),
    )
    actions = parser.add_subparsers(title="commands", metavar="COMMAND")
    parser.set_defaults(handler=lambda _: _usage(parser))
    suggest = actions.add_parser(
        "suggest",
        help="propose allow rules from what people allowed, each replayed on the log",
        description="Propose allow rules from the receipted decisions, as a diff to the"
        " rules file, each with its evidence and its replay; relay never applies them.",
    )
    _log_flags(suggest)
    suggest.add_argument(
        "--rules",
        metavar="FILE",
        help="the operator's rules file the diff adds to, replayed with the suggestions"
        " (default: none, an empty file)",
    )
    suggest.add_argument(
        "--min-count",
        type=_positive,
        default=5,
        metavar="N",
        help="suggest a rule only for a call allowed at least N times (default: 5)",
    )
    suggest.add_argument(
        "--min-people",
        type=_positive,
        default=2,
        metavar="N",
        help="... by at least N different people (default: 2)",
    )
    suggest.set_defaults(handler=_run_suggest)
    replay = actions.add_parser(
        "replay",
        help="decide every receipted call again under a rules file",
        description="Decide every receipted call again under RULES_FILE; exit 1"
        " (RULE_ALLOWS_DENIED) naming each rule that would allow a call people denied or"
        " edited.",
    )
    replay.add_argument("rules_file", metavar="RULES_FILE", help="the rules file to try")
    _log_flags(replay)
    replay.set_defaults(handler=_run_replay)


def _usage(parser: argparse.ArgumentParser) -> int:
    parser.print_help(sys.stderr)
    return 2


def _log_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--receipts",
        required=True,
        metavar="FILE",
        help="the receipts and checkpoints, as relay audit --receipts exports them",
    )
    parser.add_argument(
        "--asks",
        action="append",
        required=True,
        metavar="FILE",
        help="the asks they decided, as relay audit exports them (repeat for each token)",
    )
    parser.add_argument(
        "--keys",
        metavar="FILE|URL",
        help="the relay's JWK Set, or PEM public keys (default: $RELAY_URL/.well-known/jwks.json)",
    )
    parser.add_argument(
        "--checkpoint",
        action="append",
        default=[],
        metavar="FILE|URL",
        help="a signed checkpoint the chain must match (repeat for older ones kept)",
    )


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a whole number of at least 1, not {text!r}")
    return value


def _run_suggest(args: argparse.Namespace) -> int:
    from relay.gate.policy import load_policy
    from relay.learn import Thresholds, suggest

    log = _read_log(args)
    base = ""
    name = "rules.toml"
    if args.rules:
        load_policy(args.rules)  # a broken file is refused (BAD_RULES), never read as empty
        base = read_text(args.rules)
        name = os.path.basename(args.rules)
    found = suggest(
        log,
        base=base,
        source=args.rules or name,
        thresholds=Thresholds(min_count=args.min_count, min_people=args.min_people),
    )
    sys.stdout.write(found.diff(base, name=name))
    err = sys.stderr
    for offered in found.offered:
        err.write(f"relay: suggested: {offered.candidate.describe()}: {offered.evidence()}\n")
    for candidate, why in found.dropped:
        err.write(f"relay: not offered: {candidate.describe()}: {why}\n")
    result = found.replay
    assert result is not None
    err.write(f"relay: {_count(len(found.offered), 'rule')} suggested; {_summary(log, result)}\n")
    if result.wrong:
        err.write(
            f"relay: note: the rules file as it stands already allows"
            f" {_count(len(result.wrong), 'call')} people denied or edited:"
            f" run relay rules replay on it\n"
        )
    return 0


def _run_replay(args: argparse.Namespace) -> int:
    from relay.gate.policy import load_policy
    from relay.learn import replay

    policy = load_policy(args.rules_file)
    log = _read_log(args)
    result = replay(policy, log)
    for wrong in result.wrong:
        where = _rule_name(policy, wrong.owner, wrong.rule)
        sys.stdout.write(f"{where} would allow {wrong.call.describe()}\n")
    if result.wrong:
        rules = sorted({_rule_name(policy, w.owner, w.rule) for w in result.wrong})
        # Exit 1 (the code's own), not a usage error's 2: the file loads, and fails its replay.
        sys.stderr.write(
            error_line(
                ErrorCode.RULE_ALLOWS_DENIED,
                f"{', '.join(rules)} of {args.rules_file} would allow"
                f" {_count(len(result.wrong), 'call')} people denied or edited (listed above):"
                " narrow or drop those rules before the file goes live",
            )
        )
        return 1
    sys.stderr.write(f"relay: {args.rules_file}: {_summary(log, result)}\n")
    return 0


def _read_log(args: argparse.Namespace) -> DecisionLog:
    from relay.cli.verify import read_keys
    from relay.learn import LogMismatch, read_log
    from relay.receipts.bundle import check_bundle, receipt_lines
    from relay.receipts.keys import ReceiptKeyError, public_keys_from

    source = args.keys or _default_keys()
    try:
        keys = public_keys_from(read_keys(source))
    except ReceiptKeyError as exc:
        raise CommandError(USAGE, f"--keys {source}: {exc}") from None
    text = read_text(args.receipts)
    tokens = receipt_lines(text)
    if not tokens:
        raise CommandError(USAGE, f"{args.receipts} holds no receipt")
    stored = [(f"checkpoint {c}", read_keys(c).decode("utf-8", "replace")) for c in args.checkpoint]
    failures = check_bundle(text, args.receipts, keys, chain=True, stored=stored).failures
    if failures:
        raise CommandError(
            ErrorCode.RECEIPTS_UNVERIFIED,
            f"{args.receipts} does not verify ({_count(len(failures), 'problem')}; the first:"
            f" {failures[0]}): rules are learned only from receipts that verify; see"
            " relay verify --chain",
        )
    asks: list[dict[str, Any]] = []
    for file in args.asks:
        asks.extend(_ask_lines(read_text(file), file))
    try:
        return read_log(tokens, asks)
    except LogMismatch as exc:
        raise CommandError(
            ErrorCode.RECEIPTS_UNVERIFIED,
            f"{exc}: export the asks and the receipts again from the same relay",
        ) from None


def _ask_lines(text: str, file: str) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except json.JSONDecodeError:
            item = None
        if not isinstance(item, dict):
            raise CommandError(
                ErrorCode.BAD_REQUEST,
                f"{file} line {number} is not an ask as relay audit exports it (a JSON object)",
            )
        out.append(item)
    return out


def _default_keys() -> str:
    url = os.environ.get("RELAY_URL", "").strip()
    if not url:
        raise CommandError(USAGE, "say which keys: --keys FILE|URL (or set RELAY_URL)")
    return url.rstrip("/") + "/.well-known/jwks.json"


def _rule_name(policy: Policy, owner: str | None, rule: Rule | None) -> str:
    if rule is None:
        return "the default"
    shared = len(policy.rules.rules)
    if owner is not None and owner in policy.tokens and rule.index >= shared:
        return f"[tokens.{owner}] rule {rule.index - shared + 1}"
    return f"rule {rule.index + 1}"


def _summary(log: DecisionLog, result: Replay) -> str:
    readable = len(log.calls) - len(log.unreadable)
    text = (
        f"replayed on {_count(readable, 'receipted approval')}, the rules would allow"
        f" {_count(result.allowed_total, 'call')} people allowed and"
        f" {'none' if not result.wrong else len(result.wrong)} they denied or edited"
    )
    if result.denied_allowed:
        text += f" (and deny {_count(result.denied_allowed, 'call')} people allowed)"
    if log.unreadable:
        stopped = sum(c.kind in ("denied", "edited") for c in log.unreadable)
        text += (
            f"; {_count(len(log.unreadable), 'approval')} ({stopped} of them denied or edited)"
            " showed the call as text only (no edit offered) or are missing from the asks,"
            " so the replay cannot speak for them"
        )
    if log.at_once:
        # The rules' own decisions: a rule learned from them would be learned from itself.
        text += (
            f"; {_count(log.at_once, 'call')} decided at once by the rules, a grant or a plan"
            " (no person) are not counted"
        )
    return text


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"
