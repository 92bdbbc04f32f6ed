"""The operator's policy on a hosted relay: rules the agent cannot write. Pure.

``relay serve`` reads ``RELAY_RULES_FILE`` (the rules file's TOML, ``relay.gate.rules``),
optionally with one section per API token::

    default = "ask"
    [[rules]]
    action = "deny"
    commands = ["rm -rf *"]

    [tokens.3f2a9c0d4e5b6a7f8091a2b3c4d5e6f7]   # the token's fingerprint (see docs/rules.md)
    default = "deny"
    [[tokens.3f2a9c0d4e5b6a7f8091a2b3c4d5e6f7.rules]]
    action = "allow"
    tools = ["Read"]

A token's section adds its rules to the global ones and may set its own ``default``. What a
client says can only make a decision stricter: ``combine`` takes the stricter of the
client's verdict and the operator's, so a rules file the agent can edit never allows what
the relay's rules would ask about or deny.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from relay.gate.rules import Rules, RulesError, RuleVerdict, parse_rules

__all__ = ["Policy", "combine", "load_policy"]

_RANK = {"deny": 0, "ask": 1, "allow": 2, "pass": 3}


@dataclass(frozen=True, slots=True)
class Policy:
    """The operator's global rules and each token's (by owner fingerprint)."""

    rules: Rules
    tokens: Mapping[str, Rules] = field(default_factory=dict)

    def for_owner(self, owner: str) -> Rules:
        """The rules for the token whose fingerprint is ``owner``."""
        return self.tokens.get(owner, self.rules)


def combine(client: str, operator: RuleVerdict) -> str:
    """The stricter of the client's verdict and the operator's (a ``pass`` is no opinion)."""
    if operator.action == "pass":
        return client
    return min(client, operator.action, key=lambda a: _RANK[a])


def load_policy(path: str) -> Policy:
    """Read ``RELAY_RULES_FILE``; ``RulesError`` names the file and the key that is wrong."""
    try:
        data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        reason = (exc.strerror or str(exc)).lower()
        raise RulesError(f"cannot read RELAY_RULES_FILE {path}: {reason}") from None
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise RulesError(f"RELAY_RULES_FILE {path} is not valid UTF-8 TOML: {exc}") from None
    sections = data.pop("tokens", {})
    if not isinstance(sections, Mapping):
        raise RulesError(f"{path}: tokens must be a table of [tokens.<fingerprint>] sections")
    rules = parse_rules(data, source=path)
    tokens: dict[str, Rules] = {}
    for owner, section in sections.items():
        where = f"{path} [tokens.{owner}]"
        if not isinstance(section, Mapping) or set(section) - {"default", "rules"}:
            raise RulesError(f"{where}: a token's section sets only default and [[rules]]")
        own = parse_rules(_section(section), source=where)
        merged = tuple(replace(r, index=i) for i, r in enumerate((*rules.rules, *own.rules)))
        tokens[owner] = replace(
            rules,
            rules=merged,
            default=own.default if "default" in section else rules.default,
        )
    return Policy(rules=rules, tokens=tokens)


def _section(section: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in section.items() if k in ("default", "rules")}
