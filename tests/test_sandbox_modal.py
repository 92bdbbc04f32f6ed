"""The sandbox page's modal over HTTP: the live feed shows each viewer only their own open
modal, ``/sandbox/act`` submits or closes it through FakeSlack, and a bad request changes
nothing. (The browser test drives the same page in Chromium.)"""

from __future__ import annotations

from typing import Any

import aiohttp

from relay.sandbox.directory import DEFAULT_CHANNEL
from tests.sandbox_env import ALICE, BOB
from tests.sandbox_feed import Feed, act, feed
from tests.sandbox_modal_env import Standin, post_edit_ask, running_standin


async def open_edit(session: aiohttp.ClientSession, standin: Standin, alice: Feed) -> Any:
    """Alice clicks Edit… on the page; the modal her feed then shows."""
    message = await post_edit_ask(standin.slack)
    edit = message.blocks[1]
    status, _ = await act(
        session,
        standin.url,
        {
            "as": ALICE,
            "channel": DEFAULT_CHANNEL,
            "ts": message.ts,
            "version": 0,
            "kind": "button",
            "text": "Edit…",
            "block_id": edit["block_id"],
            "action_id": edit["elements"][1]["action_id"],
        },
    )
    assert status == 200
    return (await alice.next("modal"))["modal"]


async def test_the_feed_shows_a_viewer_their_modal_and_its_field_errors() -> None:
    async with (
        running_standin() as standin,
        aiohttp.ClientSession() as session,
        feed(session, standin.url, ALICE) as alice,
        feed(session, standin.url, BOB) as bob,
    ):
        assert (await alice.next("snapshot"))["modal"] is None
        assert (await bob.next("snapshot"))["modal"] is None
        modal = await open_edit(session, standin, alice)
        assert modal["title"]["text"] == "Edit the call"
        assert modal["submit"]["text"] == "Approve edited"
        assert [b["block_id"] for b in modal["blocks"] if b["type"] == "input"] == [
            "command",
            "timeout",
            "mode",
            "flags",
        ]
        assert modal["errors"] == {}

        status, answer = await act(
            session,
            standin.url,
            {
                "as": ALICE,
                "kind": "view_submit",
                "view_id": modal["id"],
                "values": [{"block_id": "mode", "option": "Plan only"}],
            },
        )

        assert status == 200
        assert answer["outcome"] == "errors"
        assert answer["errors"] == {"command": "Production is off limits for this agent."}
        shown = (await alice.next("modal"))["modal"]
        assert shown["errors"] == answer["errors"]
        chosen = {(e["block_id"], e["action_id"]): e for e in shown["state"]}
        assert chosen["mode", "value"]["selected_option"]["text"]["text"] == "Plan only"
        assert len(standin.submissions) == 1

        status, answer = await act(
            session,
            standin.url,
            {
                "as": ALICE,
                "kind": "view_submit",
                "view_id": modal["id"],
                "values": [{"block_id": "command", "value": "terraform plan"}],
            },
        )
        assert answer["outcome"] == "closed"
        await alice.modal_closed()
        assert standin.slack.modal_of(BOB) is None


async def test_a_bad_submission_changes_nothing() -> None:
    async with (
        running_standin() as standin,
        aiohttp.ClientSession() as session,
        feed(session, standin.url, ALICE) as alice,
    ):
        await alice.next("snapshot")
        modal = await open_edit(session, standin, alice)
        base = {"as": ALICE, "kind": "view_submit", "view_id": modal["id"]}
        opened = standin.slack.open_modal(ALICE)

        refusals = [
            ({**base, "values": [{"block_id": "timeout", "value": "5"}, {"block_id": "x"}]}, 400),
            (
                {
                    **base,
                    "values": [
                        {"block_id": "timeout", "value": "5"},
                        {"block_id": "nope", "value": "1"},
                    ],
                },
                409,
            ),
            ({**base, "values": [{"block_id": "mode", "option": "Destroy"}]}, 409),
            ({**base, "values": "command=ls"}, 400),
            ({**base, "view_id": "V0STALE"}, 409),
            ({**base, "as": BOB}, 409),
            ({**base, "as": "U0NOBODY"}, 400),
        ]
        for body, expected in refusals:
            status, answer = await act(session, standin.url, body)
            assert (status, body) == (expected, body), answer
            assert answer["error"]["code"] in ("BAD_REQUEST", "GONE")

        assert opened.value("Timeout (seconds)")["value"] == "600"
        assert opened.is_open
        assert standin.submissions == []


async def test_closing_the_modal_from_the_page() -> None:
    async with (
        running_standin() as standin,
        aiohttp.ClientSession() as session,
        feed(session, standin.url, ALICE) as alice,
    ):
        await alice.next("snapshot")
        modal = await open_edit(session, standin, alice)
        status, answer = await act(
            session, standin.url, {"as": ALICE, "kind": "view_close", "view_id": modal["id"]}
        )
        assert status == 200
        assert answer["outcome"] == "closed"
        assert answer["dispatched"] is False  # no notify_on_close: the app is not told
        await alice.modal_closed()


async def test_a_modal_replaced_by_another_never_comes_back() -> None:
    # "Edit…" clicked twice opens two modals; Slack's client shows the last one only, so
    # once that one is closed, neither the live page nor a reloaded one shows the first.
    async with (
        running_standin() as standin,
        aiohttp.ClientSession() as session,
        feed(session, standin.url, ALICE) as alice,
    ):
        await alice.next("snapshot")
        message = await post_edit_ask(standin.slack)
        edit = message.blocks[1]
        click = {"as": ALICE, "channel": DEFAULT_CHANNEL, "ts": message.ts, "version": 0,
                 "kind": "button", "text": "Edit…", "block_id": edit["block_id"],
                 "action_id": edit["elements"][1]["action_id"]}  # fmt: skip
        for _ in range(2):
            assert (await act(session, standin.url, click))[0] == 200
        # The click is answered before the relay opens its modal (Slack wants the ack first).
        await standin.slack.wait_for_call("views.open", count=2, timeout=15)
        first, second = [m.top.id for m in standin.slack.modals]
        while (await alice.next("modal"))["modal"]["id"] != second:
            pass
        closing = {"as": ALICE, "kind": "view_close", "view_id": first}
        status, answer = await act(session, standin.url, closing)
        assert (status, answer["error"]["code"]) == (409, "GONE")  # not on her screen
        status, _ = await act(session, standin.url, {**closing, "view_id": second})
        assert status == 200
        await alice.modal_closed()
        async with feed(session, standin.url, ALICE) as reloaded:
            assert (await reloaded.next("snapshot"))["modal"] is None
