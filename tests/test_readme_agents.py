"""The configuration snippets for each harness (README.md and docs/), loaded exactly as
written.

Each snippet follows a ``<!-- snippet: NAME -->`` line. JSON and TOML must parse, every
command they name must be ``relay`` with arguments ``relay``'s own parser accepts, the
rules file must load, and the hook's timeout must leave relay time to decide.
"""

from __future__ import annotations

import json
import re
import shlex
import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml

from relay.cli import build_parser
from relay.gate.rules import parse_rules

ROOT = Path(__file__).resolve().parents[1]
PAGES = {
    str(page.relative_to(ROOT)): page.read_text()
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
}
_SNIPPET = re.compile(r"<!-- snippet: ([\w-]+) -->\n```(\w+)\n(.*?)\n```", re.DOTALL)


def _snippets() -> dict[str, tuple[str, str]]:
    """Every named snippet in README.md and docs/; one shown twice must read the same."""
    found: dict[str, tuple[str, str]] = {}
    for where, text in PAGES.items():
        for name, lang, body in _SNIPPET.findall(text):
            shown = found.setdefault(name, (lang, body))
            assert shown == (lang, body), f"{name} differs in {where}"
    return found


SNIPPETS = _snippets()


def relay_args(command: str, args: list[str]) -> Any:
    """``relay ARGS`` as the relay's own parser reads them (a usage error fails the test)."""
    assert command == "relay"
    try:
        return build_parser().parse_args(args)
    except SystemExit as exc:  # pragma: no cover - the failure is the point
        raise AssertionError(f"relay {' '.join(args)} does not parse") from exc


def test_every_harness_has_its_snippets() -> None:
    assert set(SNIPPETS) == {
        "claude-mcp-json",
        "claude-mcp-http",
        "claude-permission-prompt",
        "claude-hooks",
        "rules-toml",
        "cursor-mcp-json",
        "codex-config-toml",
        "codex-hooks-json",
        "copilot-hooks-json",
        "cursor-hooks-json",
        "ci-exec",
    }


@pytest.mark.parametrize("name", ["claude-mcp-json", "cursor-mcp-json"])
def test_the_stdio_mcp_configs_start_relay_mcp(name: str) -> None:
    lang, body = SNIPPETS[name]
    assert lang == "json"
    server = json.loads(body)["mcpServers"]["relay"]
    args = relay_args(server["command"], server["args"])
    assert args.handler.__module__ == "relay.cli.mcp"
    assert set(server["env"]) == {"RELAY_URL", "RELAY_TOKEN"}


def test_the_http_mcp_config_sends_the_bearer_token_to_slash_mcp() -> None:
    server = json.loads(SNIPPETS["claude-mcp-http"][1])["mcpServers"]["relay"]
    assert server["type"] == "http"
    assert server["url"].endswith("/mcp")
    assert server["headers"]["Authorization"].startswith("Bearer ")


def test_the_permission_prompt_tool_is_the_servers_approve_tool() -> None:
    words = shlex.split(SNIPPETS["claude-permission-prompt"][1].replace("\\\n", " "))
    tool = words[words.index("--permission-prompt-tool") + 1]
    config = words[words.index("--mcp-config") + 1]
    assert config == ".mcp.json"
    # Claude Code names an MCP tool mcp__<server>__<tool>: the server is "relay" above.
    server = next(iter(json.loads(SNIPPETS["claude-mcp-json"][1])["mcpServers"]))
    assert tool == f"mcp__{server}__approve_tool_use"
    timeout_ms = int(words[0].split("=")[1])
    mcp_args = json.loads(SNIPPETS["claude-mcp-json"][1])["mcpServers"]["relay"]["args"]
    assert timeout_ms / 1000 > float(mcp_args[mcp_args.index("--timeout") + 1])


def test_the_hooks_run_relay_hook_claude_code_long_enough_and_fail_closed() -> None:
    settings = json.loads(SNIPPETS["claude-hooks"][1])
    rules = parse_rules(tomllib.loads(SNIPPETS["rules-toml"][1]), source="README")
    longest = max([rules.timeout, *(r.timeout or 0 for r in rules.rules)])
    assert set(settings["hooks"]) == {"PreToolUse", "PermissionRequest"}
    for entries in settings["hooks"].values():
        for entry in entries:
            assert isinstance(entry["matcher"], str)
            for hook in entry["hooks"]:
                assert hook["type"] == "command"
                words = shlex.split(hook["command"])
                args = relay_args(words[0], words[1:])
                assert args.handler.__module__ == "relay.cli.hook"
                # From the project's root, wherever the agent has cd'd to.
                assert args.rules == "$CLAUDE_PROJECT_DIR/.claude/relay-rules.toml"
                assert hook["timeout"] > longest + 15  # the hook's own margin
                assert hook["onFailure"] == "block"


def test_the_rules_file_loads() -> None:
    rules = parse_rules(tomllib.loads(SNIPPETS["rules-toml"][1]), source="README")
    assert rules.default == "ask"
    assert [r.action for r in rules.rules] == ["allow", "deny", "ask", "ask"]


def test_the_codex_config_starts_relay_mcp_with_a_longer_tool_timeout() -> None:
    server = tomllib.loads(SNIPPETS["codex-config-toml"][1])["mcp_servers"]["relay"]
    relay_args(server["command"], server["args"])
    assert server["tool_timeout_sec"] > float(server["args"][server["args"].index("--timeout") + 1])
    assert server["env_vars"] == ["RELAY_TOKEN"]
    assert server["required"] is True  # codex exec waits for relay's tools


def _hook_args(command: str, harness: str) -> Any:
    words = shlex.split(command)
    args = relay_args(words[0], words[1:])
    assert args.handler.__module__ == "relay.cli.hook"
    assert words[1:3] == ["hook", harness]
    return args


def _longest_timeout() -> float:
    rules = parse_rules(tomllib.loads(SNIPPETS["rules-toml"][1]), source="README")
    return max([rules.timeout, *(r.timeout or 0 for r in rules.rules)])


def test_the_codex_hook_answers_permission_requests_long_enough() -> None:
    hooks = json.loads(SNIPPETS["codex-hooks-json"][1])["hooks"]
    assert set(hooks) == {"PermissionRequest"}
    (group,) = hooks["PermissionRequest"]
    (hook,) = group["hooks"]
    assert hook["type"] == "command"
    assert _hook_args(hook["command"], "codex").rules
    assert hook["timeout"] > _longest_timeout() + 15


def test_the_copilot_hook_is_a_version_1_permission_request_hook_long_enough() -> None:
    config = json.loads(SNIPPETS["copilot-hooks-json"][1])
    assert config["version"] == 1
    (hook,) = config["hooks"]["permissionRequest"]
    assert hook["type"] == "command"
    args = _hook_args(hook["bash"], "copilot")
    assert args.event == "permissionRequest"
    assert hook["timeoutSec"] > _longest_timeout() + 15  # Copilot's default is 30 s


def test_the_cursor_hooks_fail_closed_and_wait_long_enough() -> None:
    config = json.loads(SNIPPETS["cursor-hooks-json"][1])
    assert config["version"] == 1
    assert set(config["hooks"]) == {"beforeShellExecution", "beforeMCPExecution"}
    for (hook,) in config["hooks"].values():
        _hook_args(hook["command"], "cursor")
        assert hook["failClosed"] is True
        assert hook["timeout"] > _longest_timeout() + 15


def test_the_ci_step_wraps_the_command_in_relay_exec() -> None:
    (step,) = yaml.safe_load(SNIPPETS["ci-exec"][1])
    assert set(step["env"]) == {"RELAY_URL", "RELAY_TOKEN"}
    words = shlex.split(step["run"])
    args = relay_args(words[0], words[1:])
    assert args.handler.__module__ == "relay.cli.exec_"
    assert args.command == ["--", "./scripts/deploy.sh", "prod"]


def test_the_exit_code_table_is_the_codes_relay_exec_uses() -> None:
    from relay.cli.exec_ import EXIT_DENIED, EXIT_FAILED, EXIT_TIMED_OUT

    (page,) = [text for text in PAGES.values() if "| `relay exec` exit code |" in text]
    table = page.split("| `relay exec` exit code |", 1)[1].split("\n\n", 1)[0]
    for code, word in (
        (EXIT_DENIED, "denied"),
        (EXIT_TIMED_OUT, "in time"),
        (EXIT_FAILED, "failed"),
    ):
        assert re.search(rf"^\| {code} \| [^\n]*{word}", table, re.MULTILINE), (code, word)
