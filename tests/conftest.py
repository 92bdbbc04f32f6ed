"""Shared fixtures: a clean environment for every test."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from redis_server import RedisServer


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Drop SLACK_* and RELAY_* variables so a developer's real tokens never reach a test."""
    for name in list(os.environ):
        if name.startswith(("SLACK_", "RELAY_")) or name in ("REDIS_URL", "PORT"):
            monkeypatch.delenv(name, raising=False)


@pytest.fixture
def redis_server(tmp_path: Path) -> Iterator[RedisServer]:
    """A fresh ``redis-server`` of this test's own, on a free port; stopped afterwards."""
    server = RedisServer(directory=tmp_path / "redis")
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def redis_url(redis_server: RedisServer) -> str:
    """The URL of this test's ``redis-server``."""
    return redis_server.url
