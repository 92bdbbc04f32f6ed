"""The grants store contract, for the in-memory store and Redis alike (one Redis of the test's
own, and the session's Redis Cluster, Sentinel-watched master and TLS server)."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from relay.canonical.match import Pattern, subject
from relay.grants import Grant, GrantStore, MemoryGrants, Offer
from relay.grants.redis import RedisGrants
from relay.plans.record import Plan
from relay.plans.scope import derive_scope
from relay.seam.questions import Responder
from relay.store.base import StoreUnavailable

# Real time: Redis expires a grant's key at its wall-clock end.
NOW = datetime.now(UTC).replace(microsecond=0)
ALICE = Responder(id="U0ALICE", name="alice")
NPM = Pattern(tools=("Bash",), commands=("npm *",))


def offer(owner: str = "o1", agent: str = "a1") -> Offer:
    return Offer(owner=owner, agent=agent, pattern=NPM, session=True, minutes=30)


@pytest.fixture(params=["memory", "redis", "cluster", "sentinel", "tls"])
async def store(request: pytest.FixtureRequest) -> AsyncIterator[GrantStore]:
    prefix = f"test:{uuid.uuid4().hex}:"  # the shared servers hold other tests' grants too
    grants: GrantStore
    if request.param == "memory":
        grants = MemoryGrants()
    elif request.param == "redis":
        grants = RedisGrants(url=request.getfixturevalue("redis_url"))
    elif request.param == "tls":
        server = request.getfixturevalue("redis_tls")
        grants = RedisGrants(url=server.url, tls=server.certificates.client(), prefix=prefix)
    else:
        topology = request.getfixturevalue(f"redis_{request.param}")
        grants = RedisGrants(url=topology.url, prefix=prefix)
    try:
        yield grants
    finally:
        await grants.aclose()


async def test_a_grant_covers_its_owner_agent_and_pattern_until_it_expires(
    store: GrantStore,
) -> None:
    grant = offer().grant(ask_id="ask1", kind="minutes", by=ALICE, at=NOW)
    assert grant.expires_at == NOW + timedelta(minutes=30)
    assert await store.add(grant=grant)
    npm = subject("Bash", {"command": "npm test"})
    assert await store.find(owner="o1", agent="a1", use=npm, now=NOW) == grant
    assert await store.find(owner="o2", agent="a1", use=npm, now=NOW) is None
    assert await store.find(owner="o1", agent="a2", use=npm, now=NOW) is None
    ls = subject("Bash", {"command": "ls"})
    assert await store.find(owner="o1", agent="a1", use=ls, now=NOW) is None
    assert await store.list(owner="o1", now=NOW) == [grant]
    later = NOW + timedelta(minutes=31)
    assert await store.list(owner="o1", now=later) == []
    assert await store.find(owner="o1", agent="a1", use=npm, now=later) is None


async def test_recording_the_same_grant_twice_keeps_the_first(store: GrantStore) -> None:
    first = offer().grant(ask_id="ask1", kind="session", by=ALICE, at=NOW)
    second = offer().grant(
        ask_id="ask1", kind="minutes", by=Responder(id="U0EVE"), at=NOW + timedelta(seconds=1)
    )
    assert await store.add(grant=first)
    assert not await store.add(grant=second)
    assert await store.list(owner="o1", now=NOW) == [first]


async def test_offers_are_kept_for_their_time(store: GrantStore) -> None:
    await store.put_offer(ask_id="ask1", offer=offer(), ttl=60)
    assert await store.get_offer(ask_id="ask1") == offer()
    assert await store.get_offer(ask_id="other") is None
    await store.put_offer(ask_id="ask2", offer=offer(), ttl=0.001)
    await asyncio.sleep(0.05)  # a TTL under test: nothing to await but the clock
    assert await store.get_offer(ask_id="ask2") is None


def test_grants_round_trip_through_json() -> None:
    grant = offer().grant(ask_id="x", kind="session", by=ALICE, at=NOW)
    assert Grant.from_json(grant.to_json()) == grant
    assert Offer.from_json(offer().to_json()) == offer()


async def test_an_unreachable_redis_is_store_unavailable(unused_tcp_port: int) -> None:
    grants = RedisGrants(url=f"redis://127.0.0.1:{unused_tcp_port}/0")
    with pytest.raises(StoreUnavailable, match="Redis is unreachable"):
        await grants.find(owner="o", agent="a", use=subject("Bash", {}), now=NOW)
    await grants.aclose()


def _plan(owner: str = "o1", agent: str = "a1", plan_id: str = "plan1") -> Plan:
    scope = derive_scope("# Plan\nRun `npm test`.", root="/p")
    return Plan(
        id=plan_id,
        owner=owner,
        agent=agent,
        text="# Plan\nRun `npm test`.",
        scope=scope,
        status="pending",
        submitted_at=NOW,
        expires_at=NOW + timedelta(minutes=30),
    )


async def test_a_plan_is_kept_for_its_owner_and_changes_only_from_what_was_read(
    store: GrantStore,
) -> None:
    pending = _plan()
    assert await store.add_plan(plan=pending)
    assert not await store.add_plan(plan=pending)
    assert await store.get_plan(owner="o1", plan_id="plan1") == pending
    assert await store.get_plan(owner="o2", plan_id="plan1") is None
    # Pending plans cover nothing, and are not listed as live.
    assert await store.plans(owner="o1", agent="a1", now=NOW) == ()
    active = replace(pending, status="active", approved_by=ALICE, approved_at=NOW)
    assert await store.replace_plan(old=pending, new=active)
    # A second reader of the same pending plan changes nothing.
    assert not await store.replace_plan(old=pending, new=pending.ended("rejected", "bob"))
    assert await store.plans(owner="o1", agent="a1", now=NOW) == (active,)
    assert await store.plans(owner="o1", agent="a2", now=NOW) == ()
    assert await store.plans(owner="o2", agent="a1", now=NOW) == ()
    stopped = active.ended("stopped", "alice")
    assert await store.replace_plan(old=active, new=stopped)
    assert await store.plans(owner="o1", agent="a1", now=NOW) == ()
    assert await store.get_plan(owner="o1", plan_id="plan1") == stopped


async def test_an_expired_plan_is_not_live(store: GrantStore) -> None:
    pending = _plan(plan_id="plan2")
    await store.add_plan(plan=pending)
    active = replace(pending, status="active")
    await store.replace_plan(old=pending, new=active)
    later = NOW + timedelta(minutes=31)
    assert await store.plans(owner="o1", agent="a1", now=later) == ()
