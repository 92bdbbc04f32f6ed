"""Process settings for a relay that holds many pending asks.

CPython's cycle collector starts a young-generation pass every 700 net container allocations
and, every so often, a full pass over every tracked object in the process. A relay holds
tens of objects per pending ask, so with tens of thousands pending each full pass takes
hundreds of milliseconds, and at the default threshold one ran every few thousand clicks:
in the throughput benchmark the collector cost more CPU than Slack's ``chat.update``.
Almost nothing a click allocates is cyclic garbage, so a larger first threshold loses
nothing; it keeps short-lived request objects from being promoted to the old generation,
which is what made the full passes come round. ``relay serve`` calls ``tune_gc`` at start.
"""

from __future__ import annotations

import gc

__all__ = ["DEFAULT_GC_THRESHOLD", "MAX_GC_THRESHOLD", "freeze_startup", "tune_gc"]

DEFAULT_GC_THRESHOLD = 50_000
MAX_GC_THRESHOLD = 2**31 - 1  # what gc.set_threshold takes (a C int)


def tune_gc(threshold: int = DEFAULT_GC_THRESHOLD) -> tuple[int, int, int]:
    """Raise the collector's first-generation threshold to ``threshold`` and move what exists
    now (the modules and classes loaded so far) out of its reach for good (``gc.freeze``).

    Process-wide: call it from the program's entry point, after start-up, not from a
    library. Returns the thresholds that were in force before.
    """
    if (
        isinstance(threshold, bool)
        or not isinstance(threshold, int)
        or not 1 <= threshold <= MAX_GC_THRESHOLD
    ):
        raise ValueError(
            f"threshold must be a whole number from 1 to {MAX_GC_THRESHOLD}, got {threshold!r}"
        )
    before = gc.get_threshold()
    gc.set_threshold(threshold, before[1], before[2])
    gc.collect()
    gc.freeze()
    return before


def freeze_startup() -> None:
    """Move what exists now out of the collector's reach for good (``gc.freeze``): call it
    once start-up has built everything that lives as long as the process (the server, its
    app, the Slack and store clients), so no collection walks them again. Process-wide,
    like ``tune_gc``.
    """
    gc.collect()
    gc.freeze()
