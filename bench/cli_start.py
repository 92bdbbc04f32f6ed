"""How long a ``relay`` process takes when it decides without asking anyone: Claude Code's
``PreToolUse`` hook decided by its rules alone, and ``relay --help``, against the bare
interpreter and against importing the seam (``import relay``), in interleaved rounds.

Claude Code runs the hook before every tool call its matcher takes (``Read``, ``Grep``…): the
start-up is paid on each one, by the agent and the person watching it. The rounds rotate
between the commands, so each sees the machine as it is at that moment; each command is a
fresh process, its stdin the hook JSON, its wall time from spawn to exit.

``--compare DIR`` adds the same hook run from another source tree (a checkout of an earlier
commit, its ``relay`` package importable from ``DIR``) in the same rounds.

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
RULES = '[[rules]]\naction = "allow"\ntools = ["Read", "Grep", "Glob"]\n'
EVENT = json.dumps(
    {
        "hook_event_name": "PreToolUse",
        "session_id": "bench",
        "cwd": "/repo",
        "tool_name": "Read",
        "tool_input": {"file_path": "/repo/README.md"},
        "tool_use_id": "toolu_bench",
    }
)
# The hook's p50 at most this many times the seam's import (a process that loads
# ``relay``'s types and asyncio, and nothing else).
LIMIT = 2.5


def _commands(rules: str, compare: str | None) -> dict[str, tuple[list[str], str | None]]:
    """Name -> (argv, PYTHONPATH) of each command in the rounds."""
    python = sys.executable
    hook = [python, "-m", "relay.cli", "hook", "claude-code", "--rules", rules]
    commands: dict[str, tuple[list[str], str | None]] = {
        "python -c pass": ([python, "-c", "pass"], None),
        "python -c 'import relay'": ([python, "-c", "import relay"], str(ROOT)),
        "relay --help": ([python, "-m", "relay.cli", "--help"], str(ROOT)),
        "relay hook (rules decide)": (hook, str(ROOT)),
    }
    if compare is not None:
        commands[f"relay hook, {compare}"] = (hook, compare)
    return commands


def _run(argv: list[str], path: str | None) -> float:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RELAY_", "SLACK_"))}
    if path is not None:
        env["PYTHONPATH"] = path
    began = time.perf_counter()
    done = subprocess.run(  # noqa: S603 - our interpreter and module
        argv,
        input=EVENT,
        capture_output=True,
        text=True,
        env=env,
        cwd=path,  # (``-m`` puts the working directory first on the path)
        timeout=60,
        check=False,
    )
    took = time.perf_counter() - began
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} exited {done.returncode}: {done.stderr.strip()}")
    if "hook" in argv and '"allow"' not in done.stdout:
        raise SystemExit(f"the hook did not allow: {done.stdout!r}")
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
    hook = figures["relay hook (rules decide)"]["p50_ms"]
    seam = figures["python -c 'import relay'"]["p50_ms"]
    ratio = hook / seam
    target = f"hook decided by its rules / import relay, p50 <= {LIMIT}"
    targets = report_targets({target: (ratio, LIMIT, ratio <= LIMIT)}, smoke=args.smoke)
    name = "cli_start" + ("_smoke" if args.smoke else "")
    result = {"smoke": args.smoke, "rounds": rounds, "figures": figures, "targets": targets}
    write_json(name, result)


if __name__ == "__main__":
    main()
