"""The batch message, pure: ids, which calls the batch buttons cover, pages that never move,
and every page within what Slack takes (checked as FakeSlack checks a message)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from relay.asks.batches import MAX_BATCH, batch_of, new_batch
from relay.config.settings import Settings
from relay.errors import RelayConfigError
from relay.gate.approval import ApprovalRequest, approval_question
from relay.seam.questions import AgentRef, AskUserQuestionAnswerItem, Responder
from relay.slack.intake.parse import ClickKind, parse_click
from relay.slack.rendering.batch_view import CALL_CHARS, batchable, covered, pages, render_batch
from relay.store import AskRecord, AskStatus, Target
from relay.store.record import utcnow
from relay.testing.blocks import check_blocks
from tests.test_config import GOOD

ALICE = frozenset({"U0ALICE", "U0BOB"})
BOSS = frozenset({"U0BOSS"})


def calls(
    count: int, size: int = 10, approvers: list[frozenset[str] | None] | None = None
) -> list[AskRecord]:
    ids = new_batch(count)
    made = []
    for n, ask_id in enumerate(ids):
        request = ApprovalRequest(
            tool="Bash",
            input={"command": f"echo {n:02d} " + "x" * size},
            agent=AgentRef(id="claude-code:s1", name="Claude Code"),
            editable=True,
        )
        users = approvers[n] if approvers is not None else ALICE
        made.append(
            AskRecord(
                id=ask_id,
                request=approval_question(request),
                target=Target(channel="C0APPROVALS", allowed_users=users),
                created_at=utcnow(),
                messages=(None,),
                responses=(None,),
            )
        )
    return made


def answered(record: AskRecord, label: str, reason: str | None = None) -> AskRecord:
    item = AskUserQuestionAnswerItem(
        id="approval",
        selected=() if reason else (label,),
        custom=reason,
        answered_by=Responder(id="U0ALICE", name="alice"),
        answered_at=utcnow(),
    )
    return replace(record, status=AskStatus.ANSWERED, responses=(item,))


def test_a_batchs_ids_name_it_and_nothing_else_does() -> None:
    ids = new_batch(3)
    refs = [batch_of(i) for i in ids]
    assert [r.call for r in refs if r] == [1, 2, 3]
    assert len({r.batch for r in refs if r}) == 1
    assert refs[0] is not None
    assert refs[0].members == ids
    for other in (
        "abc",
        "AAAAAAAAAAAAAAAA",
        "AAAAAAAAAAAAAAAA.3.2",
        "AAAAAAAAAAAAAAAA.0.2",
        f"AAAAAAAAAAAAAAAA.1.{MAX_BATCH + 1}",
        "AAAAAAAAAAAAAAA.1.2",
        "a:b.1.2",
    ):
        assert batch_of(other) is None, other
    with pytest.raises(ValueError, match="2 to"):
        new_batch(1)


def test_a_call_needing_other_approvers_is_never_covered() -> None:
    records = calls(3, approvers=[ALICE, BOSS, ALICE])
    assert covered(records) == {0, 2}
    # Whichever arrives first: the batch's approvers are the ones most of its calls have.
    assert covered(calls(3, approvers=[BOSS, ALICE, ALICE])) == {1, 2}
    # On a tie, the wider set (anyone is widest), never the narrower one.
    assert covered(calls(2, approvers=[BOSS, None])) == {1}
    assert covered(calls(2, approvers=[BOSS, ALICE])) == {1}
    shown = str(render_batch(records, batch_of(records[0].id)).blocks)  # type: ignore[arg-type]
    assert "Allow all shown (2)" in shown
    assert "needs approval by <@U0BOSS>" in shown
    assert f"relay:{records[1].id}:0:act" in shown  # its own buttons, from the start
    assert f"relay:{records[0].id}:0:act" not in shown


@pytest.mark.parametrize(("count", "size"), [(60, 5), (12, 900), (5, CALL_CHARS - 20)])
def test_every_page_fits_slack_whatever_the_calls_say(count: int, size: int) -> None:
    records = calls(count, size, approvers=[BOSS if n % 5 == 0 else ALICE for n in range(count)])
    ref = batch_of(records[0].id)
    assert ref is not None
    before = pages(records)
    assert sum(len(p) for p in before) == count
    # Decided, with the longest reasons: the pages stay where they were.
    ended = [
        answered(r, "Deny", "no, because " + "&<>" * 1000) if n % 2 else answered(r, "Allow once")
        for n, r in enumerate(records)
    ]
    assert pages(ended) == before
    for shown in (records, ended):
        for mode in ("list", "review"):
            for page in range(len(before)):
                message = render_batch(shown, ref, mode=mode, page=page)  # type: ignore[arg-type]
                assert check_blocks(message.blocks) is None, (mode, page)


def test_a_long_input_or_a_quorum_is_never_batched() -> None:
    (record,) = calls(2, CALL_CHARS + 50)[:1]
    assert not batchable(record.request.questions[0])
    (short,) = calls(2)[:1]
    assert batchable(short.request.questions[0])
    several = replace(short.request.questions[0], approvals_required=2)
    assert not batchable(several)


def test_a_batch_button_is_read_as_one_and_nothing_else_is() -> None:
    def payload(action_id: str, value: str) -> dict[str, object]:
        action = {"action_id": action_id, "block_id": "relay:AAAAAAAAAAAAAAAA.1.3:0:batch"}
        return {
            "type": "block_actions",
            "user": {"id": "U0ALICE"},
            "actions": [{**action, "value": value}],
        }

    click = parse_click(payload("relay.batch.allow", "2"))
    assert click is not None
    assert (click.kind, click.batch_action, click.option) == (ClickKind.BATCH, "allow", 2)
    assert parse_click(payload("relay.batch.everything", "0")) is None
    assert parse_click(payload("relay.batch.deny", "x")) is None


def test_the_window_is_a_relay_setting() -> None:
    assert Settings.from_env(GOOD).batch_window == 0.25
    assert Settings.from_env({**GOOD, "RELAY_BATCH_WINDOW": "0"}).batch_window == 0
    assert Settings.from_env({**GOOD, "RELAY_BATCH_WINDOW": "1.5"}).batch_window == 1.5
    for bad in ("-1", "11", "soon", "nan"):
        with pytest.raises(RelayConfigError, match="RELAY_BATCH_WINDOW must be"):
            Settings.from_env({**GOOD, "RELAY_BATCH_WINDOW": bad})
