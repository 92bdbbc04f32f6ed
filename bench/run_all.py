"""Run every benchmark in turn, each in a process of its own, and print their tables.

    .venv/bin/python -m bench.run_all [--smoke]

A full run takes about 20 minutes on 2 cores (the rate-limit case alone is 200 s, and
posting 110,000 asks to the fake Slack takes a few minutes); ``--smoke`` takes seconds.
Results land in ``bench/results/<name>.json``.
"""

from __future__ import annotations

import subprocess
import sys
import time

from bench.common import ROOT, arguments

BENCHMARKS = (
    "click_latency",
    "click_pairs",
    "throughput",
    "pending_memory",
    "replicas",
    "slack_economy",
    "api_path",
    "gc_pause",
    "receipts",
    "edit_acks",
    "rules_learned",
    "plan_posts",
    "serve_start",
)


def main() -> None:
    """Run them all; exit non-zero if any failed."""
    args = arguments(__doc__ or "")
    failed = []
    for name in BENCHMARKS:
        command = [sys.executable, "-m", f"bench.{name}", *(["--smoke"] if args.smoke else [])]
        print(f"\n=== bench.{name}", flush=True)
        began = time.perf_counter()
        code = subprocess.run(command, cwd=ROOT, check=False).returncode  # noqa: S603
        print(f"=== bench.{name}: exit {code} after {time.perf_counter() - began:.1f} s")
        if code:
            failed.append(name)
    if failed:
        sys.exit(f"failed: {', '.join(failed)}")


if __name__ == "__main__":
    main()
