"""Sum where the test suite's CPU went, from the lines RELAY_TEST_CPU=FILE made.

    RELAY_TEST_CPU=/tmp/cpu.tsv bash scripts/test
    python scripts/test_cpu.py /tmp/cpu.tsv [COUNT]

Prints the total, then the files and the tests that spent the most CPU (the worker's own and
the processes it started and reaped), beside their wall seconds.
"""

from __future__ import annotations

import sys
from collections import defaultdict


def main(path: str, count: int = 25) -> None:
    """Print the heaviest files and tests in the log at ``path``."""
    tests: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0])
    with open(path, encoding="utf-8") as log:
        for line in log:
            node, own, reaped, wall = line.rstrip("\n").rsplit("\t", 3)
            figures = tests[node]
            for i, value in enumerate((own, reaped, wall)):
                figures[i] += float(value)
    files: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0, 0.0])
    for node, (own, reaped, wall) in tests.items():
        figures = files[node.split("::")[0]]
        figures[0] += own
        figures[1] += reaped
        figures[2] += wall
        figures[3] += 1
    own = sum(t[0] for t in tests.values())
    reaped = sum(t[1] for t in tests.values())
    print(f"{len(tests)} tests: {own:.0f} s CPU in the workers + {reaped:.0f} s in their processes")
    print(f"\n{'cpu':>7} {'own':>7} {'reaped':>7} {'wall':>7} {'tests':>5}  file")
    for name, (o, r, w, n) in sorted(files.items(), key=lambda kv: -(kv[1][0] + kv[1][1]))[:count]:
        print(f"{o + r:7.1f} {o:7.1f} {r:7.1f} {w:7.1f} {n:5.0f}  {name}")
    print(f"\n{'cpu':>7} {'own':>7} {'reaped':>7} {'wall':>7}  test")
    for name, (o, r, w) in sorted(tests.items(), key=lambda kv: -(kv[1][0] + kv[1][1]))[:count]:
        print(f"{o + r:7.1f} {o:7.1f} {r:7.1f} {w:7.1f}  {name}")


if __name__ == "__main__":
    main(sys.argv[1], *(int(a) for a in sys.argv[2:3]))
