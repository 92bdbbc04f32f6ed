"""``RelayApprovals`` against a real ``relay serve``: tickets that outlive the process that
posted them, a relay's timeout, grants, a ticket that no longer matches its call, and a
withdrawal. FakeSlack plays Slack and the reviewers."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from relay import AgentRef
from relay.integrations.core import PendingCall, RelayApprovals
from relay.testing import FakeSlack
from tests.server_env import SECRET, TOKEN, Relay, relay_server

AGENT = AgentRef("ops-bot", "Ops bot")
CALL = PendingCall("c1", "delete_file", {"path": "/srv/a"})
RUN = "run-1"


@pytest.fixture
async def hosted() -> AsyncIterator[tuple[FakeSlack, Relay]]:
    async with FakeSlack(signing_secret=SECRET) as slack:
        slack.add_user("U0ALICE", name="alice")
        async with relay_server(slack) as relay:
            yield slack, relay


async def test_collect_without_waiting_reports_pending_then_the_decision(
    hosted: tuple[FakeSlack, Relay],
) -> None:
    slack, relay = hosted
    async with RelayApprovals(relay.url, TOKEN) as approvals:
        tickets = await approvals.submit([CALL], AGENT, run=RUN)
    assert set(tickets) == {"c1"}
    # Another client (another process) reads the same tickets.
    async with RelayApprovals(relay.url, TOKEN) as later:
        assert await later.collect([CALL], AGENT, tickets, run=RUN, wait=False) is None
        message = await slack.wait_for_message(timeout=15)
        await slack.click(message, "Allow once", user="U0ALICE")
        verdicts = await later.collect([CALL], AGENT, tickets, run=RUN)
    assert verdicts is not None
    verdict = verdicts["c1"]
    assert verdict.allowed
    assert verdict.decision.by is not None
    assert verdict.decision.by.id == "U0ALICE"
    assert verdict.edited_args is None
    assert len(slack.messages) == 1


async def test_the_relays_timeout_denies_and_says_so(hosted: tuple[FakeSlack, Relay]) -> None:
    _, relay = hosted
    async with RelayApprovals(relay.url, TOKEN, timeout=1.0) as approvals:
        tickets = await approvals.submit([CALL], AGENT, run=RUN)
        verdicts = await approvals.collect([CALL], AGENT, tickets, run=RUN)
    assert verdicts is not None
    decision = verdicts["c1"].decision
    assert (decision.behavior, decision.outcome) == ("deny", "timed_out")
    assert decision.message.startswith("No reviewer answered")


async def test_a_grant_answers_the_next_call_at_once(hosted: tuple[FakeSlack, Relay]) -> None:
    slack, relay = hosted
    async with RelayApprovals(relay.url, TOKEN) as approvals:
        tickets = await approvals.submit([CALL], AGENT, run=RUN)
        message = await slack.wait_for_message(timeout=15)
        await slack.click(message, "Allow for 30 minutes", user="U0ALICE")
        first = await approvals.collect([CALL], AGENT, tickets, run=RUN)
        assert first is not None
        assert first["c1"].decision.outcome == "granted"
        again = PendingCall("c2", "delete_file", {"path": "/srv/a"})
        assert await approvals.submit([again], AGENT, run=RUN) == {}  # nothing left to wait for
        verdicts = await approvals.collect([again], AGENT, {}, run=RUN)
    assert verdicts is not None
    assert verdicts["c2"].decision.outcome == "allowed"
    assert len(slack.messages) == 1


async def test_a_ticket_for_other_arguments_is_not_reused(hosted: tuple[FakeSlack, Relay]) -> None:
    slack, relay = hosted
    async with RelayApprovals(relay.url, TOKEN) as approvals:
        tickets = await approvals.submit([CALL], AGENT, run=RUN)
        first = await slack.wait_for_message(timeout=15)
        await slack.click(first, "Allow once", user="U0ALICE")
        # The stored run now holds other arguments under the same call id.
        changed = PendingCall("c1", "delete_file", {"path": "/srv/everything"})
        assert await approvals.collect([changed], AGENT, tickets, run=RUN, wait=False) is None
        assert tickets["c1"]["digest"] == changed.digest  # the new ticket, to store again
        second = await slack.wait_for_message(count=2, timeout=15)
        assert "/srv/everything" in str(second.blocks)
        await slack.click(second, "Deny", user="U0ALICE")
        verdicts = await approvals.collect([changed], AGENT, tickets, run=RUN)
    assert verdicts is not None
    assert verdicts["c1"].decision.message == "alice denied this in Slack"


async def test_withdrawn_approvals_are_denied(hosted: tuple[FakeSlack, Relay]) -> None:
    _, relay = hosted
    async with RelayApprovals(relay.url, TOKEN) as approvals:
        tickets = await approvals.submit([CALL], AGENT, run=RUN)
        await approvals.withdraw(tickets)
        verdicts = await approvals.collect([CALL], AGENT, tickets, run=RUN)
    assert verdicts is not None
    assert verdicts["c1"].decision.outcome == "aborted"


async def test_the_relays_quorum_holds_for_framework_approvals() -> None:
    async with (
        FakeSlack(signing_secret=SECRET) as slack,
        relay_server(slack, RELAY_APPROVALS_REQUIRED="2") as relay,
        RelayApprovals(relay.url, TOKEN) as approvals,
    ):
        slack.add_user("U0ALICE", name="alice")
        slack.add_user("U0BOB", name="bob")
        tickets = await approvals.submit([CALL], AGENT, run=RUN)
        message = await slack.wait_for_message(timeout=15)
        await slack.click(message, "Allow once", user="U0ALICE")
        assert await approvals.collect([CALL], AGENT, tickets, run=RUN, wait=False) is None
        await slack.click(message, "Allow once", user="U0BOB")
        verdicts = await approvals.collect([CALL], AGENT, tickets, run=RUN)
    assert verdicts is not None
    assert verdicts["c1"].decision.message == "alice and bob allowed this in Slack (allow once)"
