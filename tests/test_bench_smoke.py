"""Every benchmark's smoke mode runs end to end, so that the benchmarks cannot rot.

Each runs as users run it (``python -m bench.<name> --smoke``) and must exit 0 and write its
JSON; nothing about speed is asserted.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BENCHMARKS = [
    "click_latency",
    "click_pairs",
    "throughput",
    "pending_memory",
    "replicas",
    "slack_economy",
    "api_path",
    "gc_pause",
    "cli_start",
    "receipts",
    "edit_acks",
    "rules_learned",
    "plan_posts",
    "serve_start",
]


def _run_smoke(name: str, *options: str) -> None:
    result = subprocess.run(  # noqa: S603 - our interpreter and module
        [sys.executable, "-m", f"bench.{name}", "--smoke", *options],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, f"stdout:\n{result.stdout}\nstderr:\n{result.stderr}"


@pytest.mark.parametrize("name", BENCHMARKS)
def test_benchmark_smoke_mode_runs(name: str) -> None:
    _run_smoke(name)
    written = json.loads((ROOT / "bench" / "results" / f"{name}_smoke.json").read_text())
    assert written["smoke"] is True
    assert written["targets"], "each benchmark reports its targets"
    assert all(t["met"] is None for t in written["targets"].values()), "smoke judges no speed"


def test_the_throughput_benchmark_counts_each_servers_calls_per_click() -> None:
    # --count-calls: one more round per server under cProfile, and the reference server
    # (bare Bolt updating the message) must have made its updates, or the round times out.
    _run_smoke("throughput", "--store", "memory", "--count-calls")
    written = json.loads((ROOT / "bench" / "results" / "throughput_smoke.json").read_text())
    counted = written["counted"]
    assert set(counted) == {"bolt", "bolt_bot", "relay", "floor"}
    for figures in counted.values():
        assert figures["python_calls_per_click"] > 0
        assert figures["calls_per_click"] >= figures["python_calls_per_click"]
        assert figures["callbacks_per_click"] >= 1
        assert figures["most_called_per_click"]
    assert (ROOT / "bench" / "results" / "calls_relay.pstats").stat().st_size > 0
    assert "bolt_bot" in written["rounds"]
