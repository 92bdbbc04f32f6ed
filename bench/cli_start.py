"""How long a ``relay`` process takes when it decides without asking anyone: each harness's
hook (``relay hook claude-code|codex|copilot|cursor``) decided by its rules alone, and
``relay --help``, against the floor (a bare interpreter importing the standard-library
modules the hook and its rules need) and the bare interpreter, in interleaved rounds.

A harness runs the hook before every tool call its matcher takes (``Read``, ``Grep``, every
shell command…): the start-up is paid on each one, by the agent and the person watching it.
The rounds rotate between the commands, so each sees the machine as it is at that moment;
each command is a fresh process started as the ``relay`` console script starts it, its
stdin the harness's hook JSON, its wall time from spawn to exit.

``--compare DIR`` adds Claude Code's hook run from another source tree (a checkout of an
earlier commit, its ``relay`` package importable from ``DIR``) in the same rounds.

    .venv/bin/python -m bench.cli_start [--smoke] [--rounds N] [--compare DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common import ROOT, arguments, latency_ms, print_table, report_targets, write_json

ROUNDS, SMOKE_ROUNDS = 40, 2
RULES = (
    '[[rules]]\naction = "allow"\ntools = ["Read", "Grep", "Glob", "view"]\n\n'
    '[[rules]]\naction = "deny"\ntools = ["Bash"]\ncommands = ["rm -rf *"]\n'
)
# Each harness's hook input for a use its rules decide (an allow, or a deny where the
# harness's hook can only deny), and the word its answer must hold.
EVENTS: dict[str, tuple[dict[str, Any], str]] = {
    "claude-code": (
        {
            "hook_event_name": "PreToolUse",
            "session_id": "bench",
            "cwd": "/repo",
            "tool_name": "Read",
            "tool_input": {"file_path": "/repo/README.md"},
            "tool_use_id": "toolu_bench",
        },
        '"allow"',
    ),
    "codex": (
        {
            "session_id": "bench",
            "turn_id": "turn",
            "transcript_path": None,
            "cwd": "/repo",
            "hook_event_name": "PreToolUse",
            "model": "m",
            "permission_mode": "default",
            "tool_name": "Bash",
            "tool_use_id": "call",
            "tool_input": {"command": "rm -rf /"},
        },
        '"deny"',
    ),
    "copilot": (
        {"sessionId": "bench", "timestamp": 1, "cwd": "/repo", "toolName": "view", "toolArgs": {}},
        '"allow"',
    ),
    "cursor": (
        {
            "hook_event_name": "beforeShellExecution",
            "conversation_id": "bench",
            "generation_id": "g",
            "workspace_roots": ["/repo"],
            "command": "rm -rf /",
            "cwd": "/repo",
        },
        '"deny"',
    ),
}
# The standard library the hook needs to decide by its rules: its arguments, the hook JSON,
# the TOML rules, their patterns and digests, the shell words of a command.
FLOOR_MODULES = (
    "argparse, dataclasses, fnmatch, hashlib, json, os, pathlib, re, shlex, sys, tomllib"
)
FLOOR = "python -c 'import <the stdlib the rules need>'"
# Each hook's p50 at most this many times the floor's (issue 42: "within 2x of that floor").
LIMIT = 2.0
# What the ``relay`` console script runs.
_SCRIPT = "import sys; from relay.cli import main; sys.exit(main())"


def _commands(rules: str, compare: str | None) -> dict[str, tuple[list[str], str | None, str]]:
    """Name -> (argv, PYTHONPATH, stdin) of each command in the rounds."""
    python = sys.executable
    commands: dict[str, tuple[list[str], str | None, str]] = {
        "python -c pass": ([python, "-c", "pass"], None, ""),
        FLOOR: ([python, "-c", f"import {FLOOR_MODULES}"], None, ""),
        "relay --help": ([python, "-c", _SCRIPT, "--help"], str(ROOT), ""),
    }
    for harness, (event, _) in EVENTS.items():
        argv = [python, "-c", _SCRIPT, "hook", harness, "--rules", rules]
        commands[f"relay hook {harness}"] = (argv, str(ROOT), json.dumps(event))
    if compare is not None:
        claude = commands["relay hook claude-code"]
        commands[f"relay hook claude-code, {compare}"] = (claude[0], compare, claude[2])
    return commands


def _run(argv: list[str], path: str | None, stdin: str) -> float:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RELAY_", "SLACK_"))}
    if path is not None:
        env["PYTHONPATH"] = path
    began = time.perf_counter()
    done = subprocess.run(  # noqa: S603 - our interpreter and module
        argv,
        input=stdin,
        capture_output=True,
        text=True,
        env=env,
        cwd=path,  # (``-c`` puts the working directory first on the path)
        timeout=60,
        check=False,
    )
    took = time.perf_counter() - began
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} exited {done.returncode}: {done.stderr.strip()}")
    if "hook" in argv:
        word = EVENTS[argv[argv.index("hook") + 1]][1]
        if word not in done.stdout:
            raise SystemExit(f"{' '.join(argv[3:])} did not answer {word}: {done.stdout!r}")
    return took


def measure(rounds: int, compare: str | None) -> dict[str, Any]:
    """Run the rounds; each command's wall times."""
    with tempfile.TemporaryDirectory() as tmp:
        rules = Path(tmp) / "rules.toml"
        rules.write_text(RULES)
        commands = _commands(str(rules), compare)
        names = list(commands)
        samples: dict[str, list[float]] = {name: [] for name in names}
        for name in names:  # one unmeasured run each: the file cache warm for all
            _run(*commands[name])
        for k in range(rounds):
            shift = k % len(names)
            for name in names[shift:] + names[:shift]:
                samples[name].append(_run(*commands[name]))
    return {name: latency_ms(values) for name, values in samples.items()}


def _options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--rounds", type=int, default=ROUNDS, help="runs of each command")
    parser.add_argument("--compare", metavar="DIR", help="also run the hook from this tree")


def main() -> None:
    """Run the benchmark and write ``bench/results/cli_start.json``."""
    args = arguments(__doc__ or "", extra=_options)
    rounds = SMOKE_ROUNDS if args.smoke else args.rounds
    figures = measure(rounds, args.compare)
    print_table(
        f"Process start to exit ({rounds} runs each, rounds rotating)",
        ["command", "n", "p50 ms", "p90 ms", "max ms"],
        [[name, f["n"], f["p50_ms"], f["p90_ms"], f["max_ms"]] for name, f in figures.items()],
    )
    floor = figures[FLOOR]["p50_ms"]
    checks = {}
    for harness in EVENTS:
        ratio = figures[f"relay hook {harness}"]["p50_ms"] / floor
        checks[f"relay hook {harness} / the floor, p50 <= {LIMIT}"] = (ratio, LIMIT, ratio <= LIMIT)
    targets = report_targets(checks, smoke=args.smoke, measured="ratio")
    name = "cli_start" + ("_smoke" if args.smoke else "")
    result = {"smoke": args.smoke, "rounds": rounds, "figures": figures, "targets": targets}
    write_json(name, result)


if __name__ == "__main__":
    main()
