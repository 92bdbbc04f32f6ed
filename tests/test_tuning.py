"""relay.config.tuning: the garbage-collector settings ``relay serve`` starts with."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from relay.config.settings import Settings
from relay.config.tuning import DEFAULT_GC_THRESHOLD, tune_gc
from relay.server import main
from relay.slack.serving import slack_channel

GOOD = {
    "SLACK_BOT_TOKEN": "xoxb-1-x",
    "SLACK_SIGNING_SECRET": "shh",
    "RELAY_API_TOKENS": "a-token-of-16-chars-or-more",
}


@pytest.fixture(autouse=True)
def restore_gc() -> Iterator[None]:
    """These tests change process-wide state: put it back."""
    thresholds = gc.get_threshold()
    yield
    gc.unfreeze()
    gc.set_threshold(*thresholds)


def test_tune_gc_raises_the_first_threshold_and_freezes_what_exists() -> None:
    before = gc.get_threshold()
    assert tune_gc(20_000) == before
    assert gc.get_threshold() == (20_000, before[1], before[2])
    assert gc.get_freeze_count() > 1000  # the modules and classes loaded so far


@pytest.mark.parametrize("bad", [0, -5, 1.5, True, "50000", 2**31])
def test_tune_gc_refuses_a_threshold_that_is_not_a_positive_whole_number(bad: object) -> None:
    before = gc.get_threshold()
    with pytest.raises(ValueError, match="whole number from 1"):
        tune_gc(bad)  # type: ignore[arg-type]
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == 0


def test_relay_serve_tunes_the_collector_unless_told_to_keep_pythons(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    served: list[Settings] = []

    async def serve(settings: Settings, *, channel: object) -> None:
        served.append(settings)

    monkeypatch.setattr(main, "serve", serve)
    monkeypatch.setattr(main, "configure_logging", lambda settings: None)
    before = gc.get_threshold()
    main.run(Settings.from_env({**GOOD, "RELAY_GC_THRESHOLD": "python"}), channel=slack_channel)
    assert gc.get_threshold() == before
    main.run(Settings.from_env(GOOD), channel=slack_channel)
    assert gc.get_threshold()[0] == DEFAULT_GC_THRESHOLD
    assert len(served) == 2
