"""Rendering questions to Block Kit: every payload the relay sends is one Slack accepts."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from relay import (
    AgentRef,
    AskUserQuestionAnswerItem,
    AskUserQuestionIntent,
    AskUserQuestionItem,
    AskUserQuestionOption,
    ErrorCode,
    Responder,
    UserInteractionError,
    plan_review_question,
)
from relay.slack.render import (
    render_detail_reply,
    render_outcome,
    render_question,
)
from relay.testing.blocks import check_blocks

ASK = "AbCdEfGhIjKlMnOp"
text = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=300)


@st.composite
def questions(draw: st.DrawFn) -> AskUserQuestionItem:
    count = draw(st.one_of(st.integers(0, 6), st.integers(7, 100)))
    options = tuple(
        AskUserQuestionOption(
            label=draw(text),
            description=draw(st.none() | st.text(max_size=120)),
        )
        for _ in range(count)
    )
    detail = draw(
        st.none()
        | st.text(max_size=200)
        | st.builds(
            lambda n, s: s * n, st.integers(1, 3000), st.sampled_from(["ab\n", "word ", "x"])
        )
    )
    intent = None
    if options and detail is not None and draw(st.booleans()):
        intent = AskUserQuestionIntent(approve=draw(st.sampled_from(options)).label)
    return AskUserQuestionItem(
        id=draw(st.text(min_size=1, max_size=40)),
        question=draw(st.text(max_size=500)),
        header=draw(st.none() | st.text(max_size=200)),
        detail=detail,
        options=options if count or draw(st.booleans()) else None,
        multi_select=draw(st.booleans()),
        intent=intent,
    )


def assert_valid(blocks: list[dict[str, Any]], fallback: str) -> None:
    rejected = check_blocks(blocks)
    assert rejected is None, rejected.errors
    assert fallback.strip(), "fallback text must always be set"
    assert len(fallback) <= 4000
    for block in blocks:
        assert len(block.get("block_id", "")) <= 255
        for element in block.get("elements", []):
            assert len(element.get("action_id", "")) <= 255


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(
    question=questions(),
    count=st.integers(1, 4),
    agent=st.none() | st.builds(AgentRef, st.text(min_size=1, max_size=50), st.none() | text),
    deadline=st.none() | st.floats(1e9, 2e9),
)
def test_every_pending_message_is_valid_block_kit(
    question: AskUserQuestionItem, count: int, agent: AgentRef | None, deadline: float | None
) -> None:
    rendered = render_question(
        question, ask_id=ASK, index=count - 1, count=count, agent=agent, deadline=deadline
    )
    assert_valid(rendered.blocks, rendered.text)
    markdown = [b["text"] for b in rendered.blocks if b["type"] == "markdown"]
    if question.detail and question.detail.strip():
        # Nothing is ever silently cut: the message plus the thread replies hold it all.
        assert "".join(markdown) + "".join(rendered.detail_overflow) == question.detail
        for part, piece in enumerate(rendered.detail_overflow, start=1):
            reply = render_detail_reply(piece, part=part, parts=len(rendered.detail_overflow))
            assert_valid(reply["blocks"], reply["text"])
    for outcome in ("timed_out", "aborted", "closed", "failed"):
        final = render_outcome(question, outcome=outcome, agent=agent)
        assert_valid(final.blocks, final.text)
        assert not [b for b in final.blocks if b["type"] in ("actions", "input")]


@settings(max_examples=200)
@given(question=questions(), custom=st.none() | st.text(min_size=1, max_size=2500))
def test_every_answered_message_is_valid_and_has_no_inputs(
    question: AskUserQuestionItem, custom: str | None
) -> None:
    item = AskUserQuestionAnswerItem(
        id=question.id,
        selected=question.labels[:1],
        custom=custom,
        answered_by=Responder("U123", "alice"),
        answered_at=datetime(2026, 11, 29, 12, 0, tzinfo=UTC),
    )
    final = render_outcome(question, outcome="answered", item=item)
    assert_valid(final.blocks, final.text)
    assert not [b for b in final.blocks if b["type"] in ("actions", "input")]
    assert "<@U123>" in str(final.blocks)


def elements(blocks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e for b in blocks if b["type"] == "actions" for e in b["elements"]]


def opts(n: int, size: int = 5) -> tuple[AskUserQuestionOption, ...]:
    return tuple(AskUserQuestionOption(f"option {i}".ljust(size, "x")) for i in range(n))


def test_up_to_five_options_are_buttons_in_order_with_index_values() -> None:
    q = AskUserQuestionItem(id="env", question="Deploy where?", options=opts(5))
    buttons = elements(render_question(q, ask_id=ASK, index=0).blocks)
    assert [b["text"]["text"] for b in buttons] == [o.label for o in opts(5)]
    assert [b["value"] for b in buttons] == ["0", "1", "2", "3", "4"]
    assert len({b["action_id"] for b in buttons}) == 5


def test_six_to_a_hundred_options_are_a_static_select() -> None:
    for n in (6, 100):
        q = AskUserQuestionItem(id="x", question="Pick", options=opts(n))
        (menu,) = elements(render_question(q, ask_id=ASK, index=0).blocks)
        assert menu["type"] == "static_select"
        assert [o["value"] for o in menu["options"]] == [str(i) for i in range(n)]


def test_multi_select_uses_checkboxes_then_a_menu_with_a_submit_button() -> None:
    small = AskUserQuestionItem(id="x", question="Pick", options=opts(10), multi_select=True)
    big = AskUserQuestionItem(id="x", question="Pick", options=opts(11), multi_select=True)
    assert [e["type"] for e in elements(render_question(small, ask_id=ASK, index=0).blocks)] == [
        "checkboxes",
        "button",
    ]
    kinds = list(elements(render_question(big, ask_id=ASK, index=0).blocks))
    assert [e["type"] for e in kinds] == ["multi_static_select", "button"]
    assert kinds[1]["text"]["text"] == "Submit"


def test_batch_questions_have_a_skip_button_and_single_ones_do_not() -> None:
    q = AskUserQuestionItem(id="x", question="Pick", options=opts(2))
    single = [e["text"]["text"] for e in elements(render_question(q, ask_id=ASK, index=0).blocks)]
    batch = elements(render_question(q, ask_id=ASK, index=0, count=2).blocks)
    assert "Skip" not in single
    assert batch[-1]["text"]["text"] == "Skip"


def test_every_question_has_an_enter_dispatching_text_field() -> None:
    q = AskUserQuestionItem(id="x", question="Anything?")
    (field,) = [b for b in render_question(q, ask_id=ASK, index=3).blocks if b["type"] == "input"]
    assert field["dispatch_action"] is True
    assert field["block_id"] == f"relay:{ASK}:3:text"
    assert field["element"]["dispatch_action_config"] == {
        "trigger_actions_on": ["on_enter_pressed"]
    }


def test_long_labels_are_shortened_on_buttons_but_listed_in_full() -> None:
    label = "L" * 200
    q = AskUserQuestionItem(id="x", question="Pick", options=(AskUserQuestionOption(label),))
    blocks = render_question(q, ask_id=ASK, index=0).blocks
    (button,) = elements(blocks)
    assert len(button["text"]["text"]) == 75
    assert button["text"]["text"].endswith("…")
    assert button["value"] == "0"
    assert any(label in b.get("text", {}).get("text", "") for b in blocks if b["type"] == "section")


def test_header_question_descriptions_agent_and_deadline_are_shown() -> None:
    q = AskUserQuestionItem(
        id="x",
        question="Deploy <now> & then?",
        header="Deploy gate",
        options=(AskUserQuestionOption("prod", "the real one"),),
    )
    rendered = render_question(
        q, ask_id=ASK, index=0, agent=AgentRef("ci-7", "Release bot"), deadline=1_800_000_000
    )
    flat = str(rendered.blocks)
    assert rendered.blocks[0] == {
        "type": "header",
        "text": {"type": "plain_text", "text": "Deploy gate", "emoji": True},
    }
    assert "Deploy &lt;now&gt; &amp; then?" in flat  # escaped: no mentions or links by accident
    assert "the real one" in flat
    assert "Release bot" in flat
    assert "<!date^1800000000^" in flat
    assert rendered.text == "Deploy gate: Deploy <now> & then?"


def test_plan_review_marks_the_plan_and_the_approve_button() -> None:
    q = plan_review_question("# Plan\n\n1. do it")
    blocks = render_question(q, ask_id=ASK, index=0).blocks
    approve, keep = elements(blocks)
    assert approve["style"] == "primary"
    assert "style" not in keep
    assert {"type": "markdown", "text": "# Plan\n\n1. do it"} in blocks
    assert "Plan under review" in str(blocks)
    (field,) = [b for b in blocks if b["type"] == "input"]
    assert "Feedback" in field["label"]["text"]


def test_without_intent_the_same_question_is_a_generic_option_list() -> None:
    q = plan_review_question("# Plan")
    generic = AskUserQuestionItem(q.id, q.question, q.detail, q.header, q.options)
    buttons = elements(render_question(generic, ask_id=ASK, index=0).blocks)
    assert [b["text"]["text"] for b in buttons] == ["Approve", "Keep planning"]
    assert all("style" not in b for b in buttons)


def test_detail_past_the_markdown_limit_continues_in_the_thread() -> None:
    detail = "# Plan\n" + "line of the plan\n" * 2000  # 34k characters
    q = AskUserQuestionItem(id="x", question="Ok?", detail=detail)
    rendered = render_question(q, ask_id=ASK, index=0)
    (markdown,) = [b["text"] for b in rendered.blocks if b["type"] == "markdown"]
    assert len(rendered.detail_overflow) == 2
    assert markdown + "".join(rendered.detail_overflow) == detail
    assert "continues in 2 thread replies" in str(rendered.blocks)


@pytest.mark.parametrize(
    ("question", "fragment"),
    [
        (AskUserQuestionItem(id="x", question="Pick", options=opts(101)), "has 101 options"),
        (AskUserQuestionItem(id="x", question="q" * 3001), "3001 characters"),
        (
            AskUserQuestionItem(
                id="x",
                question="Pick",
                options=tuple(AskUserQuestionOption(f"o{i}", "d" * 2000) for i in range(100)),
            ),
            "Slack blocks",
        ),
    ],
)
def test_what_slack_cannot_show_is_refused_before_posting(
    question: AskUserQuestionItem, fragment: str
) -> None:
    with pytest.raises(UserInteractionError) as info:
        render_question(question, ask_id=ASK, index=0)
    assert info.value.code == ErrorCode.BAD_REQUEST
    assert fragment in str(info.value)
