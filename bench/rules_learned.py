"""Rules learned from the log: ``relay rules suggest`` and ``relay rules replay`` on a generated
log of a few thousand receipted approvals, beside ``relay verify --chain`` on the same export
(the check an auditor already runs, and the first step of both) in the same rounds.

The log (``bench.decision_log``) is decided and signed by the real ``ReceiptWriter``. Each
command is a fresh process, as an operator runs it, timed from spawn to exit; the rounds
rotate between them. Then, in this process, what each step costs: verifying the export,
reading the calls, suggesting (every replay it runs included), and one replay.

    .venv/bin/python -m bench.rules_learned [--smoke] [--approvals N] [--rounds N]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common import ROOT, arguments, latency_ms, print_table, report_targets, write_json
from bench.decision_log import LogFiles, Plan, write_log

APPROVALS, SMOKE_APPROVALS = 3000, 300
ROUNDS, SMOKE_ROUNDS = 5, 1
# "The run stays within seconds" (issue 55): suggest, every replay included, on the log.
LIMIT_S = 10.0
VERIFY = "relay verify --chain"
SUGGEST = "relay rules suggest"
REPLAY = "relay rules replay"


def _commands(files: LogFiles, rules: Path) -> dict[str, list[str]]:
    relay = [sys.executable, "-m", "relay.cli"]
    log = ["--receipts", str(files.receipts), "--asks", str(files.asks), "--keys", str(files.keys)]
    return {
        VERIFY: [*relay, "verify", "--chain", "--keys", str(files.keys), str(files.receipts)],
        SUGGEST: [*relay, "rules", "suggest", *log, "--min-count", "3"],
        REPLAY: [*relay, "rules", "replay", str(rules), *log],
    }


def _run(argv: list[str]) -> tuple[float, str]:
    began = time.perf_counter()
    done = subprocess.run(  # noqa: S603 - our interpreter and module
        argv, capture_output=True, text=True, cwd=ROOT, timeout=300, check=False
    )
    took = time.perf_counter() - began
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv[2:5])} exited {done.returncode}: {done.stderr}")
    return took, done.stdout


def _adopted(diff: str, folder: Path) -> Path:
    """The rules file the suggestion's diff makes (it only adds to an empty file)."""
    lines = diff.splitlines(keepends=True)[2:]
    path = folder / "suggested.toml"
    path.write_text("".join(line[1:] for line in lines if line.startswith("+")))
    return path


def steps(files: LogFiles, rules: Path) -> dict[str, float]:
    """Each step once, in this process: seconds."""
    from relay.gate.policy import load_policy
    from relay.learn import Thresholds, read_log, replay, suggest
    from relay.receipts.bundle import check_bundle, receipt_lines
    from relay.receipts.keys import public_keys_from

    out: dict[str, float] = {}
    began = time.perf_counter()
    text = files.receipts.read_text()
    failures = check_bundle(
        text, str(files.receipts), public_keys_from(files.keys.read_bytes())
    ).failures
    assert not failures
    out["verify the export"] = time.perf_counter() - began
    began = time.perf_counter()
    asks = [json.loads(line) for line in files.asks.read_text().splitlines()]
    log = read_log(receipt_lines(text), asks)
    out["read the calls"] = time.perf_counter() - began
    began = time.perf_counter()
    found = suggest(log, thresholds=Thresholds(min_count=3))
    out["suggest (its replays included)"] = time.perf_counter() - began
    assert found.replay is not None
    assert not found.replay.wrong
    began = time.perf_counter()
    result = replay(load_policy(str(rules)), log)
    out["replay the suggested file"] = time.perf_counter() - began
    assert not result.wrong
    return out


def _options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--approvals", type=int, default=APPROVALS, help="approvals in the log")
    parser.add_argument("--rounds", type=int, default=ROUNDS, help="runs of each command")


def main() -> None:
    """Run the benchmark and write ``bench/results/rules_learned.json``."""
    args = arguments(__doc__ or "", extra=_options)
    approvals = SMOKE_APPROVALS if args.smoke else args.approvals
    rounds = SMOKE_ROUNDS if args.smoke else args.rounds
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        files = asyncio.run(write_log(folder, Plan(approvals=approvals)))
        placeholder = folder / "empty.toml"
        placeholder.write_text("")
        _, diff = _run(_commands(files, placeholder)[SUGGEST])
        rules = _adopted(diff, folder)
        commands = _commands(files, rules)
        names = list(commands)
        samples: dict[str, list[float]] = {name: [] for name in names}
        for k in range(rounds):
            shift = k % len(names)
            for name in names[shift:] + names[:shift]:
                samples[name].append(_run(commands[name])[0])
        inside = steps(files, rules)
    figures = {name: latency_ms(values) for name, values in samples.items()}
    print_table(
        f"Process start to exit on {files.count:,} receipts ({rounds} runs each, rounds rotating)",
        ["command", "n", "p50 ms", "max ms", "x verify"],
        [
            [name, f["n"], f["p50_ms"], f["max_ms"], f["p50_ms"] / figures[VERIFY]["p50_ms"]]
            for name, f in figures.items()
        ],
    )
    print_table(
        "In one process, each step once",
        ["step", "ms"],
        [[name, seconds * 1e3] for name, seconds in inside.items()],
    )
    took = figures[SUGGEST]["p50_ms"] / 1e3
    targets = report_targets(
        {
            f"{SUGGEST} on {files.count:,} receipts, p50 s <= {LIMIT_S}": (
                took,
                LIMIT_S,
                took <= LIMIT_S,
            )
        },
        smoke=args.smoke,
    )
    name = "rules_learned" + ("_smoke" if args.smoke else "")
    result: dict[str, Any] = {
        "smoke": args.smoke,
        "receipts": files.count,
        "rounds": rounds,
        "figures": figures,
        "steps_ms": {k: v * 1e3 for k, v in inside.items()},
        "targets": targets,
    }
    write_json(name, result)


if __name__ == "__main__":
    main()
