"""An ask's own allowlist holds in ``relay serve --sandbox`` as in production: the page's
clicks reach the relay's ``/slack/events`` and its judgement, and the stand-in's
``usergroups.users.list`` answers with the sandbox's user group."""

from __future__ import annotations

from typing import Any

import aiohttp

from tests.sandbox_env import ALICE, BOB, CAROL, TOKEN, running_sandbox
from tests.sandbox_feed import Feed, act, feed
from tests.server_env import Relay

QUESTION = [{"id": "go", "question": "Ship?", "options": [{"label": "Ship"}, {"label": "Hold"}]}]


def ship(message: dict[str, Any], viewer: str) -> dict[str, Any]:
    """``viewer``'s click on the message's Ship button, as the page posts it."""
    for block in message["blocks"]:
        for element in block.get("elements") or []:
            if element.get("type") == "button" and element["text"]["text"] == "Ship":
                where = {"block_id": block["block_id"], "action_id": element["action_id"]}
                shown = {"channel": message["channel"], "ts": message["ts"]}
                return {"as": viewer, **shown, "version": message["version"], "kind": "button",
                        "text": "Ship", **where}  # fmt: skip
    raise LookupError("Ship")


async def refused_then_answered(
    relay: Relay, session: aiohttp.ClientSession, feeds: dict[str, Feed], slack: dict[str, Any]
) -> None:
    """Ask with ``slack``; the wrong person's click (``feeds``' first) is refused and told
    privately, the ask stays pending; the right person's (the second) answers it."""
    (wrong, wrong_feed), (right, right_feed) = feeds.items()
    status, created = await relay.request(
        "POST", "/v1/asks", json={"questions": QUESTION, "slack": slack}, token=TOKEN
    )
    assert status == 201, created
    message = await wrong_feed.next("message")
    assert message == await right_feed.next("message")
    status, result = await act(session, relay.url, ship(message, wrong))
    assert (status, result["dispatched"]) == (200, True), result
    notice = await wrong_feed.next("ephemeral")
    assert "not allowed to answer" in notice["text"]
    _, record = await relay.request("GET", f"/v1/asks/{created['id']}", token=TOKEN)
    assert record["status"] == "pending", record
    status, result = await act(session, relay.url, ship(message, right))
    assert (status, result["dispatched"]) == (200, True), result
    _, record = await relay.request("GET", f"/v1/asks/{created['id']}?wait=10", token=TOKEN)
    assert (record["status"], record["answered_by"]["id"]) == ("answered", right), record
    answered = await right_feed.next("message")
    assert f"Answered by <@{right}>" in str(answered["blocks"])
    assert not [e for e, _ in right_feed.events if e == "ephemeral"]


async def test_an_asks_allowed_users_and_groups_hold_for_the_pages_clicks() -> None:
    # The sandbox's defaults admit Alice, Bob, Carol and @oncall (Bob, Carol): an ask that
    # names only some of them is answered by them alone, whichever half of the list it names.
    async with running_sandbox() as relay, aiohttp.ClientSession() as session:
        async with feed(session, relay.url, BOB) as bob, feed(session, relay.url, ALICE) as alice:
            await bob.next("snapshot")
            await alice.next("snapshot")
            # The docs' example (reference/http-api.md): Bob is in @oncall, not in the ask.
            feeds = {BOB: bob, ALICE: alice}
            await refused_then_answered(relay, session, feeds, {"allowed_users": [ALICE]})
        async with feed(session, relay.url, ALICE) as alice, feed(session, relay.url, CAROL) as c:
            await alice.next("snapshot")
            await c.next("snapshot")
            # Alice may answer by default, but is not in @oncall.
            feeds = {ALICE: alice, CAROL: c}
            await refused_then_answered(relay, session, feeds, {"allowed_groups": ["S0SBONCALL"]})
