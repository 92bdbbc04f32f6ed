"""Shared fixtures: a clean environment for every test."""

from __future__ import annotations

import os

import pytest


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Drop SLACK_* and RELAY_* variables so a developer's real tokens never reach a test."""
    for name in list(os.environ):
        if name.startswith(("SLACK_", "RELAY_")) or name in ("REDIS_URL", "PORT"):
            monkeypatch.delenv(name, raising=False)
