"""The workspace FakeSlack's own tests run in: two people, alice and bob."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from relay.testing import FakeSlack


@asynccontextmanager
async def with_alice_and_bob(slack: FakeSlack) -> AsyncIterator[FakeSlack]:
    """``slack`` running, with alice (``U0ALICE``) and bob (``U0BOB``) in its workspace."""
    async with slack:
        slack.add_user("U0ALICE", name="alice")
        slack.add_user("U0BOB", name="bob")
        yield slack
