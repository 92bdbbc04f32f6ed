"""Shared fixtures: a clean environment for every test; each test marked with its kinds."""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings
from kinds import ProcessWatch, kinds_of
from redis_server import RedisServer
from redis_topologies import (
    Certificates,
    RedisClusterServers,
    SentinelServers,
    TLSRedis,
    make_certificates,
)

# Property tests check what is generated, never how fast: a loaded machine (xdist workers on
# 2 cores) runs an example late, and a deadline would fail a test for the machine's sake.
settings.register_profile("relay", deadline=None)
settings.load_profile("relay")

_PROCESSES = ProcessWatch()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark each test with the kinds ``--quick`` leaves out (tests/kinds.py reads them from
    its code)."""
    for item in items:
        for kind in sorted(kinds_of(item)):
            item.add_marker(kind)


# Tests that share one worker under ``--dist loadgroup``, by where they are: the browser tests
# (one Chromium, not one per worker). Not xdist's own loadgroup: it marks a group in the node
# id, which pytest 9.2 no longer lets a plugin change, and it schedules by node id, which runs
# only one of the tests schemathesis generates under one id (tests/hardening/test_api_fuzz.py).
_GROUPS = ("tests/browser/",)


def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """``--dist loadgroup``: xdist's ``load`` (by index: every collected test runs), with the
    tests under ``_GROUPS`` sent to the first worker together."""
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScheduling

    class Grouped(LoadScheduling):
        grouped = False

        def _send_tests(self, node: Any, num: int) -> None:
            if not self.grouped:  # the first batch of the run: the group goes first, whole
                self.grouped = True
                collection = self.collection or []
                group = [i for i in self.pending if collection[i].startswith(_GROUPS)]
                if group:
                    grouped = frozenset(group)
                    self.pending[:] = [i for i in self.pending if i not in grouped]
                    self.node2pending[node].extend(group)
                    node.send_runtest_some(group)
            super()._send_tests(node, num)

    return Grouped(config, log)


@pytest.fixture(autouse=True)
def _marked_as_what_it_does(request: pytest.FixtureRequest) -> Iterator[None]:
    """Fail a test that starts a process without the ``subprocess`` marker (say it with
    ``@pytest.mark.subprocess`` when relay's own code starts it): --quick would run it."""
    _PROCESSES.started.clear()
    _PROCESSES.watching = True
    try:
        yield
    finally:
        _PROCESSES.watching = False
    kinds = kinds_of(request.node, request.fixturenames)
    if _PROCESSES.started:
        kinds |= {"subprocess"}
    missing = sorted(k for k in kinds if request.node.get_closest_marker(k) is None)
    if missing:
        pytest.fail(
            f"this test is {' and '.join(missing)} but not marked so (it started"
            f" {_PROCESSES.started[:1] or 'a fixture of that kind'}): add"
            f" @pytest.mark.{missing[0]} so that scripts/test --quick leaves it out",
            pytrace=False,
        )


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


# Redis as operators run it: started once per test session (tests use prefixes of their own).


@pytest.fixture(scope="session")
def redis_certificates(tmp_path_factory: pytest.TempPathFactory) -> Certificates:
    """A CA, a server certificate and a client certificate, made for this session."""
    return make_certificates(tmp_path_factory.mktemp("redis-tls"))


@pytest.fixture(scope="session")
def redis_tls(
    tmp_path_factory: pytest.TempPathFactory, redis_certificates: Certificates
) -> Iterator[TLSRedis]:
    """A ``redis-server`` on TLS alone that requires a client certificate."""
    server = TLSRedis(
        directory=tmp_path_factory.mktemp("redis-tls-server"), certificates=redis_certificates
    )
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def redis_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisClusterServers]:
    """A three-master Redis Cluster."""
    cluster = RedisClusterServers(directory=tmp_path_factory.mktemp("redis-cluster"))
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture(scope="session")
def redis_sentinel(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SentinelServers]:
    """A master watched by two Sentinels."""
    servers = SentinelServers(directory=tmp_path_factory.mktemp("redis-sentinel"))
    try:
        servers.start()
        yield servers
    finally:
        servers.stop()


@pytest.fixture(params=["memory", "redis", "cluster"])
async def replica_stores(request: pytest.FixtureRequest) -> AsyncIterator[list[Any]]:
    """A store seen by two replicas: one ``MemoryStore`` twice, or two ``RedisStore``s on one
    Redis (or on the session's cluster, under a prefix of this test's own)."""
    from relay.store.memory import MemoryStore
    from relay.store.redis import RedisStore

    if request.param == "memory":
        store = MemoryStore()
        yield [store, store]
        return
    url, prefix = request.getfixturevalue("redis_url"), "relay:"
    if request.param == "cluster":
        url, prefix = request.getfixturevalue("redis_cluster").url, f"t{uuid.uuid4().hex}:"
    a, b = RedisStore(url=url, prefix=prefix), RedisStore(url=url, prefix=prefix)
    try:
        yield [a, b]
    finally:
        await a.aclose()
        await b.aclose()


# Where the suite's CPU goes: with RELAY_TEST_CPU=FILE, each worker appends one line per test
# (node id, then seconds of CPU spent by the worker and by the processes it reaped during the
# test, then wall seconds), and scripts/test_cpu.py sums them. The suite is CPU-bound on two
# cores, so its wall time follows CPU, not --durations' wall seconds.
_CPU_LOG = os.environ.get("RELAY_TEST_CPU")


if _CPU_LOG:
    import resource
    import time

    def _cpu() -> tuple[float, float]:
        own = resource.getrusage(resource.RUSAGE_SELF)
        reaped = resource.getrusage(resource.RUSAGE_CHILDREN)
        return own.ru_utime + own.ru_stime, reaped.ru_utime + reaped.ru_stime

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Any:
        (own, reaped), wall = _cpu(), time.monotonic()
        try:
            return (yield)
        finally:
            (own2, reaped2), wall2 = _cpu(), time.monotonic()
            with open(_CPU_LOG, "a", encoding="utf-8") as log:
                log.write(
                    f"{item.nodeid}\t{own2 - own:.3f}\t{reaped2 - reaped:.3f}\t{wall2 - wall:.3f}\n"
                )
