"""``relay doctor``: check this machine's relay set-up and say, one line each, what is wrong.

It looks at each harness whose hook file runs ``relay hook`` (Claude Code's settings, Codex's
hooks.json and whether Codex has trusted them, Copilot's .github/hooks, Cursor's hooks.json),
the rules files those hooks and RELAY_RULES_FILE name (read with relay's own rules loader),
the relay at RELAY_URL with RELAY_TOKEN (/healthz, then an authenticated call), and, where
SLACK_BOT_TOKEN is set, the Slack app (the token by auth.test, its scopes, the signing
secret). Each line starts ``ok``, ``note`` or ``PROBLEM``; the exit code is 1 when any
PROBLEM was found, else 0.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shlex
import sys
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from relay.cli.common import Commands, plain

__all__ = ["Finding", "add_doctor", "codex_trust_hash", "diagnose"]

OK, NOTE, PROBLEM = "ok", "note", "PROBLEM"
_TIMEOUT = 10.0


@dataclass(frozen=True)
class Finding:
    """One line of the report: its level (ok, note, PROBLEM) and what it says."""

    level: str
    text: str

    def __str__(self) -> str:
        return f"{self.level}: {self.text}"


def add_doctor(commands: Commands) -> None:
    """Register ``relay doctor``."""
    parser = commands.add_parser(
        "doctor",
        help="check the harness hooks, rules files, relay and Slack app set up here",
        description=plain(__doc__),
    )
    parser.add_argument(
        "--project",
        metavar="DIR",
        default=".",
        help="the project whose hook files to check (default: ., the current directory)",
    )
    parser.add_argument(
        "--rules", metavar="FILE", action="append", default=[], help="also check this rules file"
    )
    parser.set_defaults(handler=_run)


def _run(args: argparse.Namespace) -> int:
    findings = diagnose(Path(args.project), rules=args.rules, env=dict(os.environ))
    for finding in findings:
        sys.stdout.write(f"{finding}\n")
    return 1 if any(f.level == PROBLEM for f in findings) else 0


def diagnose(project: Path, *, rules: list[str], env: dict[str, str]) -> list[Finding]:
    """Every check's findings for ``project`` under ``env`` (a user's home from HOME)."""
    home = Path(env.get("HOME") or Path.home())
    hooks = list(_hook_commands(project.resolve(), home, env))
    findings: list[Finding] = []
    seen_harnesses = {h.harness for h in hooks}
    for hook in hooks:
        findings.append(Finding(OK, f"{hook.harness}: {hook.where} runs `relay hook`"))
    if not seen_harnesses:
        findings.append(
            Finding(
                NOTE,
                "no harness hook file here runs `relay hook`: see docs/harnesses/ to add one",
            )
        )
    findings += _codex_trust(project.resolve(), home, env)
    findings += _rules_files(hooks, rules, project.resolve(), env)
    findings += _relay_reachable(env)
    findings += _slack_app(env)
    return findings


# -- harness hook files --------------------------------------------------------------------


@dataclass(frozen=True)
class _Hook:
    harness: str
    where: str  # the file, and the event the hook is set on
    command: str
    base: Path  # what a relative --rules path in the command is relative to


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return None


def _commands_in(value: Any) -> Iterator[tuple[str, str]]:
    """(event, command) for every hook command in a harness's ``hooks`` object: Claude Code
    and Codex nest them in groups, Cursor and Copilot list them per event."""
    if not isinstance(value, dict):
        return
    for event, entries in value.items():
        for entry in entries if isinstance(entries, list) else []:
            if not isinstance(entry, dict):
                continue
            inner = entry.get("hooks")
            for hook in inner if isinstance(inner, list) else [entry]:
                if isinstance(hook, dict):
                    for key in ("command", "bash"):
                        if isinstance(hook.get(key), str):
                            yield str(event), hook[key]


def _hook_commands(project: Path, home: Path, env: dict[str, str]) -> Iterator[_Hook]:
    codex_home = Path(env.get("CODEX_HOME") or home / ".codex")
    files: list[tuple[str, Path, str, Path]] = [
        ("Claude Code", home / ".claude" / "settings.json", "claude-code", home),
        ("Claude Code", project / ".claude" / "settings.json", "claude-code", project),
        ("Claude Code", project / ".claude" / "settings.local.json", "claude-code", project),
        ("Codex", codex_home / "hooks.json", "codex", project),
        ("Codex", project / ".codex" / "hooks.json", "codex", project),
        ("Cursor", home / ".cursor" / "hooks.json", "cursor", project),
        ("Cursor", project / ".cursor" / "hooks.json", "cursor", project),
    ]
    copilot = project / ".github" / "hooks"
    if copilot.is_dir():
        files += [("Copilot", p, "copilot", project) for p in sorted(copilot.glob("*.json"))]
    for harness, path, name, base in files:
        data = _read_json(path)
        if not isinstance(data, dict):
            continue
        for event, command in _commands_in(data.get("hooks")):
            if re.search(rf"\brelay\b.*\bhook\s+{re.escape(name)}\b", command):
                yield _Hook(harness, f"{path} ({event})", command, base)


# -- Codex's review of hooks -----------------------------------------------------------------


def codex_trust_hash(event: str, group: dict[str, Any], hook: dict[str, Any]) -> str:
    """The ``trusted_hash`` Codex records when it trusts ``hook`` (of ``group``) on
    ``event`` (as docs/harnesses/codex.md's script computes it, from Codex 0.169's source)."""
    handler: dict[str, Any] = {
        "type": "command",
        "command": hook.get("command"),
        "timeout": max(1, int(hook.get("timeout", 600))),
        "async": bool(hook.get("async", False)),
    }
    if "statusMessage" in hook:
        handler["statusMessage"] = hook["statusMessage"]
    identity: dict[str, Any] = {"event_name": _snake(event), "hooks": [handler]}
    if group.get("matcher") is not None:
        identity["matcher"] = group["matcher"]
    canonical = json.dumps(identity, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(canonical.encode()).hexdigest()


def _snake(event: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", event).lower()


def _codex_trust(project: Path, home: Path, env: dict[str, str]) -> list[Finding]:
    codex_home = Path(env.get("CODEX_HOME") or home / ".codex").resolve()
    config = codex_home / "config.toml"
    try:
        state = tomllib.loads(config.read_text(encoding="utf-8")).get("hooks", {}).get("state", {})
    except FileNotFoundError:
        state = {}
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        return [Finding(PROBLEM, f"Codex: cannot read {config} ({exc}): fix or remove it")]
    findings: list[Finding] = []
    for hooks_file in (codex_home / "hooks.json", project / ".codex" / "hooks.json"):
        data = _read_json(hooks_file)
        groups_by_event = data.get("hooks") if isinstance(data, dict) else None
        if not isinstance(groups_by_event, dict):
            continue
        for event, groups in groups_by_event.items():
            for g, group in enumerate(groups if isinstance(groups, list) else []):
                inner = group.get("hooks") if isinstance(group, dict) else None
                for h, hook in enumerate(inner if isinstance(inner, list) else []):
                    command = hook.get("command") if isinstance(hook, dict) else None
                    if not isinstance(command, str) or not re.search(r"\bhook\s+codex\b", command):
                        continue
                    key = f"{hooks_file.resolve()}:{_snake(event)}:{g}:{h}"
                    entry = state.get(key) if isinstance(state, dict) else None
                    recorded = entry.get("trusted_hash") if isinstance(entry, dict) else None
                    where = f"{hooks_file} ({event})"
                    if recorded is None:
                        findings.append(
                            Finding(
                                PROBLEM,
                                f"Codex has not trusted relay's hook in {where}: `codex exec`"
                                " skips it and the team is never asked; run `codex` and choose"
                                " Trust all, or the trust script in docs/harnesses/codex.md",
                            )
                        )
                    elif recorded != codex_trust_hash(event, group, hook):
                        findings.append(
                            Finding(
                                PROBLEM,
                                f"Codex trusted relay's hook in {where} before it changed, so"
                                " it skips it now: review it again (`codex` → /hooks, or the"
                                " trust script in docs/harnesses/codex.md after removing its"
                                " old hooks.state entry)",
                            )
                        )
                    else:
                        findings.append(Finding(OK, f"Codex trusts relay's hook in {where}"))
    return findings


# -- rules files -----------------------------------------------------------------------------


def _rules_in(hook: _Hook, project: Path) -> Iterator[Path]:
    try:
        words = shlex.split(hook.command)
    except ValueError:
        return
    for i, word in enumerate(words):
        value = words[i + 1] if word == "--rules" and i + 1 < len(words) else None
        if word.startswith("--rules="):
            value = word.removeprefix("--rules=")
        if value:
            value = value.replace("$CLAUDE_PROJECT_DIR", str(project))
            path = Path(os.path.expanduser(value))
            yield path if path.is_absolute() else hook.base / path


def _rules_files(
    hooks: list[_Hook], extra: list[str], project: Path, env: dict[str, str]
) -> list[Finding]:
    from relay.gate.rules import RulesError, load_rules

    paths: dict[Path, None] = {}
    for hook in hooks:
        paths.update(dict.fromkeys(_rules_in(hook, project)))
    named = [*extra, env.get("RELAY_RULES_FILE", "").strip()]
    paths.update(dict.fromkeys(Path(p) for p in named if p))
    findings = []
    for path in paths:
        try:
            load_rules(str(path))
        except RulesError as exc:
            findings.append(Finding(PROBLEM, f"{exc}: fix it (see docs/rules.md)"))
        else:
            findings.append(Finding(OK, f"the rules file {path} reads"))
    return findings


# -- the relay -------------------------------------------------------------------------------


def _get(url: str, token: str | None = None) -> tuple[int, bytes]:
    import urllib.error
    import urllib.request

    request = urllib.request.Request(url)  # noqa: S310 - the operator's own RELAY_URL
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=_TIMEOUT) as response:  # noqa: S310
            return int(response.status), bytes(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def _relay_reachable(env: dict[str, str]) -> list[Finding]:
    url = env.get("RELAY_URL", "").strip().rstrip("/")
    token = env.get("RELAY_TOKEN", "").strip()
    if not url:
        return [Finding(PROBLEM, "RELAY_URL is not set: set it to the relay's address")]
    if not url.startswith(("http://", "https://")):
        return [Finding(PROBLEM, f"RELAY_URL {url!r} is not an http(s) URL: fix it")]
    try:
        status, _ = _get(f"{url}/healthz")
    except OSError as exc:
        reason = getattr(exc, "reason", exc)
        return [Finding(PROBLEM, f"the relay at {url} does not answer ({reason}): start it")]
    if status != 200:
        return [Finding(PROBLEM, f"the relay at {url} answers /healthz with {status}: see logs")]
    findings = [Finding(OK, f"the relay at {url} is up")]
    if not token:
        findings.append(Finding(PROBLEM, "RELAY_TOKEN is not set: set it to your API token"))
        return findings
    try:
        status, _ = _get(f"{url}/v1/asks?limit=1", token)
    except OSError as exc:
        reason = getattr(exc, "reason", exc)
        findings.append(Finding(PROBLEM, f"the relay at {url} did not answer /v1 ({reason})"))
        return findings
    if status == 401:
        findings.append(
            Finding(
                PROBLEM,
                f"the relay at {url} refuses RELAY_TOKEN: use a token from its RELAY_API_TOKENS",
            )
        )
    elif status != 200:
        findings.append(Finding(PROBLEM, f"the relay at {url} answers /v1/asks with {status}"))
    else:
        findings.append(Finding(OK, "RELAY_TOKEN is accepted"))
    return findings


# -- the Slack app ---------------------------------------------------------------------------


def _slack_app(env: dict[str, str]) -> list[Finding]:
    token = env.get("SLACK_BOT_TOKEN", "").strip()
    if not token:
        # Only the machine that runs `relay serve` needs the Slack app's settings.
        return [Finding(NOTE, "SLACK_BOT_TOKEN is not set: Slack checks skipped (not serving)")]
    from slack_sdk import WebClient
    from slack_sdk.errors import SlackApiError

    from relay.slack.manifest import BOT_SCOPES

    base = env.get("SLACK_API_URL", "").strip()
    client = WebClient(token=token, timeout=int(_TIMEOUT))
    if base:
        client = WebClient(token=token, base_url=base.rstrip("/") + "/", timeout=int(_TIMEOUT))
    findings: list[Finding] = []
    try:
        reply = client.auth_test()
    except SlackApiError as exc:
        error = exc.response.get("error", "unknown")
        return [
            Finding(
                PROBLEM,
                f"Slack refuses SLACK_BOT_TOKEN ({error}): copy the Bot User OAuth Token"
                " (xoxb-…) from the app's OAuth & Permissions page",
            )
        ]
    except OSError as exc:
        return [Finding(PROBLEM, f"cannot reach Slack's Web API ({exc}): check the network")]
    findings.append(Finding(OK, f"SLACK_BOT_TOKEN is the bot {reply.get('user', '?')}"))
    granted = reply.headers.get("x-oauth-scopes") or reply.headers.get("X-OAuth-Scopes")
    if granted is None:
        findings.append(Finding(NOTE, "Slack did not list the token's scopes: not checked"))
    else:
        have = {s.strip() for s in str(granted).split(",")}
        missing = [s for s in BOT_SCOPES if s not in have]
        if missing:
            findings.append(
                Finding(
                    PROBLEM,
                    f"the Slack app lacks the scopes {', '.join(missing)}: add them (or"
                    " `relay manifest`) and reinstall the app",
                )
            )
        else:
            findings.append(Finding(OK, "the Slack app has the scopes relay needs"))
    if env.get("SLACK_APP_TOKEN", "").strip():
        findings.append(Finding(OK, "SLACK_APP_TOKEN is set: Socket Mode"))
    elif env.get("SLACK_SIGNING_SECRET", "").strip():
        findings.append(Finding(OK, "SLACK_SIGNING_SECRET is set"))
    else:
        findings.append(
            Finding(
                PROBLEM,
                "SLACK_SIGNING_SECRET is not set (nor SLACK_APP_TOKEN for Socket Mode): copy"
                " the signing secret from the app's Basic Information page",
            )
        )
    return findings
