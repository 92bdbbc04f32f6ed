"""Turning clicks into answers: the pure rules, tested without a server."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from relay import AskUserQuestionAnswerItem, AskUserQuestionItem, AskUserQuestionOption
from relay.seam.plan_review import plan_review_question
from relay.slack.intake.parse import Click, ClickKind, Notice, decide, parse_click

AT = datetime(2026, 11, 29, tzinfo=UTC)
ASK = "ask123"
SINGLE = AskUserQuestionItem(
    id="env",
    question="Where?",
    options=(AskUserQuestionOption("staging"), AskUserQuestionOption("prod")),
)
MULTI = AskUserQuestionItem(
    id="pkgs",
    question="Which?",
    options=tuple(AskUserQuestionOption(x) for x in "abc"),
    multi_select=True,
)
PLAN = plan_review_question("# Plan\n1. ship")


def payload(
    action: dict[str, Any],
    *,
    text: str | None = None,
    ticked: list[int] | None = None,
    index: int = 0,
) -> dict[str, Any]:
    values: dict[str, Any] = {
        f"relay:{ASK}:{index}:text": {"relay.text": {"type": "plain_text_input", "value": text}}
    }
    if ticked is not None:
        values[f"relay:{ASK}:{index}:act"] = {
            "relay.checks": {
                "type": "checkboxes",
                "selected_options": [{"value": str(i)} for i in ticked],
            }
        }
    return {
        "type": "block_actions",
        "user": {"id": "U1", "username": "alice", "name": "alice", "team_id": "T1"},
        "team": {"id": "T1"},
        "api_app_id": "A1",
        "container": {"type": "message", "message_ts": "1.1", "channel_id": "C1"},
        "channel": {"id": "C1"},
        "state": {"values": values},
        "actions": [{"block_id": f"relay:{ASK}:{index}:act", **action}],
    }


def button(i: int) -> dict[str, Any]:
    return {"type": "button", "action_id": f"relay.option.{i}", "value": str(i)}


def click(action: dict[str, Any], **kw: Any) -> Click:
    parsed = parse_click(payload(action, **kw))
    assert parsed is not None
    return parsed


def answer(
    selected: tuple[str, ...] = (), custom: str | None = None, id: str = "env"
) -> AskUserQuestionAnswerItem:
    return AskUserQuestionAnswerItem(id=id, selected=selected, custom=custom)


def test_a_button_click_answers_with_the_exact_label_and_records_who_and_when() -> None:
    result = decide(SINGLE, click(button(1)), at=AT)
    assert result == answer(("prod",))
    assert isinstance(result, AskUserQuestionAnswerItem)
    assert result.answered_by is not None
    assert result.answered_by.id == "U1"
    assert result.answered_at == AT


def test_a_menu_pick_answers_with_that_option() -> None:
    action = {
        "type": "static_select",
        "action_id": "relay.select",
        "selected_option": {"value": "0"},
    }
    assert decide(SINGLE, click(action), at=AT) == answer(("staging",))


def test_enter_sends_custom_text_and_single_select_leaves_selected_empty() -> None:
    action = {"type": "plain_text_input", "action_id": "relay.text", "value": "canary please"}
    assert decide(SINGLE, click(action, text="stale"), at=AT) == answer(custom="canary please")


def test_blank_enter_answers_nothing() -> None:
    action = {"type": "plain_text_input", "action_id": "relay.text", "value": "   "}
    assert decide(SINGLE, click(action), at=AT) is Notice.BLANK_TEXT


def test_a_click_with_text_typed_answers_nothing_and_asks_to_send_or_clear() -> None:
    assert decide(SINGLE, click(button(0), text="hmm"), at=AT) is Notice.TEXT_PENDING


def test_declining_a_plan_with_feedback_typed_sends_the_feedback() -> None:
    keep = decide(PLAN, click(button(1), text="add tests"), at=AT)
    assert keep == answer(custom="add tests", id="plan-review")
    assert decide(PLAN, click(button(0), text="add tests"), at=AT) is Notice.TEXT_PENDING
    assert decide(PLAN, click(button(0)), at=AT) == answer(("Approve",), id="plan-review")


def test_submit_sends_ticked_options_in_option_order_with_the_text() -> None:
    submit = {"type": "button", "action_id": "relay.submit", "value": "submit"}
    assert decide(MULTI, click(submit, ticked=[2, 0], text="and d"), at=AT) == answer(
        ("a", "c"), "and d", id="pkgs"
    )
    assert decide(MULTI, click(submit, ticked=[1]), at=AT) == answer(("b",), id="pkgs")
    assert decide(MULTI, click(submit, ticked=[]), at=AT) is Notice.NOTHING_CHOSEN


def test_enter_on_multi_select_sends_the_ticked_options_too() -> None:
    enter = {"type": "plain_text_input", "action_id": "relay.text", "value": "also e"}
    assert decide(MULTI, click(enter, ticked=[1]), at=AT) == answer(("b",), "also e", id="pkgs")


def test_skip_answers_empty_unless_text_is_typed() -> None:
    skip = {"type": "button", "action_id": "relay.skip", "value": "skip"}
    assert decide(SINGLE, click(skip), at=AT) == answer()
    assert decide(SINGLE, click(skip, text="wait"), at=AT) is Notice.TEXT_PENDING


def test_ticking_a_box_only_changes_state() -> None:
    toggle = {"type": "checkboxes", "action_id": "relay.checks", "selected_options": []}
    assert click(toggle).kind is ClickKind.TOGGLE
    assert decide(MULTI, click(toggle), at=AT) is None


def test_out_of_range_indices_are_stale_not_crashes() -> None:
    assert decide(SINGLE, click(button(7)), at=AT) is Notice.STALE
    submit = {"type": "button", "action_id": "relay.submit", "value": "submit"}
    assert decide(MULTI, click(submit, ticked=[9]), at=AT) is Notice.STALE


@pytest.mark.parametrize(
    "bad",
    [
        None,
        "payload",
        {},
        {"type": "view_submission"},
        {**payload(button(0)), "actions": []},
        {**payload(button(0)), "actions": [button(0), button(1)]},
        {**payload(button(0)), "user": "U1"},
        {**payload(button(0)), "actions": [{"block_id": "other:x:0:act", **button(0)}]},
        {**payload(button(0)), "actions": [{"block_id": f"relay:{ASK}:x:act", **button(0)}]},
        {
            **payload(button(0)),
            "actions": [{"block_id": f"relay:{ASK}:0:act", "action_id": "relay.nope"}],
        },
        {
            **payload(button(0)),
            "actions": [
                {"block_id": f"relay:{ASK}:0:act", "action_id": "relay.option.0", "value": "-1"}
            ],
        },
    ],
)
def test_payloads_that_are_not_relay_clicks_are_ignored(bad: object) -> None:
    assert parse_click(bad) is None


@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(),
        lambda c: st.lists(c) | st.dictionaries(st.text(), c),
    )
)
def test_parse_never_raises_on_arbitrary_json(data: object) -> None:
    parse_click(data)
    if isinstance(data, dict):
        parse_click({**payload(button(0)), **data})
