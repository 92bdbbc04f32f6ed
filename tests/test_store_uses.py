"""The store's ``uses`` part (``relay.store.uses``): an approval's allow is used once, the same
use sent again is that use, and a use is forgotten after its ttl; on the memory store, on one
Redis and on a Redis Cluster, where two stores stand for two replicas."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator

import pytest

from relay.store import MemoryStore
from relay.store.redis import RedisStore
from relay.store.uses import ApprovalUses


@pytest.fixture(params=["memory", "redis", "cluster"])
async def replicas(request: pytest.FixtureRequest) -> AsyncIterator[tuple[ApprovalUses, ...]]:
    """Two views of one store: the same memory store twice, or two Redis stores."""
    if request.param == "memory":
        store = MemoryStore()
        yield store, store
        await store.aclose()
        return
    if request.param == "redis":
        url = request.getfixturevalue("redis_url")
    else:
        url = request.getfixturevalue("redis_cluster").url
    prefix = f"test:{uuid.uuid4().hex}:"
    stores = (RedisStore(url=url, prefix=prefix), RedisStore(url=url, prefix=prefix))
    yield stores
    for store in stores:
        await store.aclose()


async def test_the_first_use_wins_and_is_the_same_use_again(
    replicas: tuple[ApprovalUses, ...],
) -> None:
    a, b = replicas
    assert isinstance(a, ApprovalUses)
    assert await a.use_once(ask_id="ask-1", key="k1", ttl=60)
    assert await b.use_once(ask_id="ask-1", key="k1", ttl=60)  # its reply was lost
    assert not await b.use_once(ask_id="ask-1", key="k2", ttl=60)
    assert not await a.use_once(ask_id="ask-1", key="k3", ttl=60)
    assert await b.use_once(ask_id="ask-2", key="k2", ttl=60)  # another approval


async def test_uses_racing_on_two_replicas_have_one_winner(
    replicas: tuple[ApprovalUses, ...],
) -> None:
    a, b = replicas
    for n in range(20):
        won = await asyncio.gather(
            *(s.use_once(ask_id=f"race-{n}", key=f"k{i}", ttl=60) for i, s in enumerate((a, b) * 3))
        )
        assert sorted(won) == [False] * 5 + [True]


async def test_a_use_is_forgotten_after_its_ttl(replicas: tuple[ApprovalUses, ...]) -> None:
    a, b = replicas
    # Long enough that a loaded machine reaches the next line first (a cluster round trip).
    assert await a.use_once(ask_id="brief", key="k1", ttl=2.0)
    assert not await b.use_once(ask_id="brief", key="k2", ttl=2.0)
    deadline = time.monotonic() + 10
    # Expiry is the clock's, with no event to await: try until it is forgotten.
    while not await b.use_once(ask_id="brief", key="k2", ttl=60):
        assert time.monotonic() < deadline, "the use outlived its ttl by 8 s"
        await asyncio.sleep(0.05)
    assert not await a.use_once(ask_id="brief", key="k1", ttl=60)
