"""Rendering questions to Block Kit: every payload the relay sends is one Slack accepts."""

from __future__ import annotations

import re
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
from relay.slack.rendering import notices
from relay.slack.rendering.render import (
    MESSAGE_CHARS,
    render_detail_reply,
    render_outcome,
    render_question,
)
from relay.slack.rendering.text import block_text_length, escape, inert_markdown
from relay.testing.blocks import check_blocks
from relay.testing.mentions import links_in, mentions_in

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
    option_text = sum(len(o.label) + len(o.description or "") for o in question.options or ())
    if option_text > 4000:
        # Refused only as a question whose options hold more text than a message takes.
        try:
            render_question(question, ask_id=ASK, index=0, count=count, agent=agent)
        except UserInteractionError as refused:
            error = str(refused)
        else:
            error = ""
        if error:
            assert "characters of Slack text" in error
            return
    rendered = render_question(
        question, ask_id=ASK, index=count - 1, count=count, agent=agent, deadline=deadline
    )
    assert_valid(rendered.blocks, rendered.text)
    assert block_text_length(rendered.blocks) <= MESSAGE_CHARS
    markdown = [b["text"] for b in rendered.blocks if b["type"] == "markdown"]
    if question.detail and question.detail.strip():
        # Nothing is ever silently cut: the message plus the thread replies hold it all.
        shown = "".join(markdown) + "".join(rendered.detail_overflow)
        assert shown == inert_markdown(question.detail)
        for part, piece in enumerate(rendered.detail_overflow, start=1):
            reply = render_detail_reply(piece, part=part, parts=len(rendered.detail_overflow))
            assert_valid(reply["blocks"], reply["text"])
    for outcome in ("timed_out", "aborted", "closed", "failed"):
        final = render_outcome(question, outcome=outcome, agent=agent, index=count - 1, count=count)
        assert_valid(final.blocks, final.text)
        assert not [b for b in final.blocks if b["type"] in ("actions", "input")]
        # The update shows the same first piece of the detail: the thread continues it.
        assert [b for b in final.blocks if b["type"] == "markdown"] == [
            b for b in rendered.blocks if b["type"] == "markdown"
        ]


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
    assert block_text_length(final.blocks) <= MESSAGE_CHARS
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
    assert button["text"]["text"] == "1. " + "L" * 26 + "…"  # what Slack shows: 30
    assert button["value"] == "0"
    listed = [b["text"]["text"] for b in blocks if b["type"] == "section"]
    assert f"1. *{label}*" in listed[-1]


def test_buttons_are_numbered_and_listed_once_any_label_would_be_cut() -> None:
    labels = ("Deploy the payments service to staging", "Deploy the payments service to prod")
    q = AskUserQuestionItem(
        id="x", question="Where?", options=tuple(AskUserQuestionOption(x) for x in labels)
    )
    blocks = render_question(q, ask_id=ASK, index=0).blocks
    shown = [b["text"]["text"] for b in elements(blocks)]
    assert shown == ["1. Deploy the payments servic…", "2. Deploy the payments servic…"]
    assert all(len(text) <= 30 for text in shown)
    listing = [b["text"]["text"] for b in blocks if b["type"] == "section"][-1]
    assert listing == f"1. *{labels[0]}*\n2. *{labels[1]}*"
    short = AskUserQuestionItem(id="x", question="Where?", options=opts(2, 30))
    assert [
        b["text"]["text"] for b in elements(render_question(short, ask_id=ASK, index=0).blocks)
    ] == [o.label for o in opts(2, 30)]
    # Menus show 75: they number their options only past that.
    menu = AskUserQuestionItem(id="x", question="Which?", options=opts(6, 70))
    (select,) = elements(render_question(menu, ask_id=ASK, index=0).blocks)
    assert select["options"][0]["text"]["text"] == opts(6, 70)[0].label


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
    assert rendered.text == "Deploy gate: Deploy &lt;now&gt; &amp; then?"


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
    # The message holds what its question, inputs and final update leave of 10,000 (the
    # budget below Slack's lowest measured refusal); each reply 10,000.
    assert 6_000 < len(markdown) < 7_000
    assert [len(piece) > 9_000 for piece in rendered.detail_overflow] == [True, True, False]
    assert markdown + "".join(rendered.detail_overflow) == detail
    assert "continues in 3 thread replies" in str(rendered.blocks)


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
            "characters of Slack text",
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


def test_a_question_the_reader_sees_as_3000_characters_is_shown_whole() -> None:
    # Escaping makes it 3,015 characters: over a section's 3,000, so it takes two.
    question = "a & b " * 5 + "x" * (2_995 - 30)
    assert len(question) == 2_995
    q = AskUserQuestionItem(id="x", question=question)
    rendered = render_question(q, ask_id=ASK, index=0)
    assert_valid(rendered.blocks, rendered.text)
    shown = [b["text"]["text"] for b in rendered.blocks if b["type"] == "section"]
    assert len(shown) == 2
    assert "".join(shown) == question.replace("&", "&amp;")
    assert all(len(piece) <= 3_000 for piece in shown)


def test_an_escape_is_never_cut_in_two() -> None:
    for shift in range(6):
        question = "x" * shift + "&<>" * 400
        q = AskUserQuestionItem(id="x", question=question)
        rendered = render_question(q, ask_id=ASK, index=0)
        assert_valid(rendered.blocks, rendered.text)
        shown = [b["text"]["text"] for b in rendered.blocks if b["type"] == "section"]
        assert len(shown) == 2
        assert not re.search(r"&[a-z]*$", shown[0])
        assert "".join(shown) == escape(question)


def test_a_question_of_nothing_but_ampersands_is_shown_as_plain_text() -> None:
    q = AskUserQuestionItem(id="x", question="&" * 3_000)  # 15,000 characters escaped
    rendered = render_question(q, ask_id=ASK, index=0)
    assert_valid(rendered.blocks, rendered.text)
    (question,) = [b["text"] for b in rendered.blocks if b["type"] == "section"]
    assert question == {"type": "plain_text", "text": "&" * 3_000, "emoji": True}


def test_a_large_plan_review_fits_one_message_and_so_does_its_outcome() -> None:
    # 12,000 characters of plan + a 3,000-character question: ~15,000 before (bolt-js#2509).
    q = AskUserQuestionItem(
        id="plan",
        question="Q" * 3_000,
        header="Review the plan",
        detail="# Plan\n" + "- a step of the plan\n" * 570,
        options=plan_review_question("# x").options,
        intent=plan_review_question("# x").intent,
    )
    rendered = render_question(q, ask_id=ASK, index=0, deadline=1_800_000_000)
    assert_valid(rendered.blocks, rendered.text)
    assert block_text_length(rendered.blocks) <= MESSAGE_CHARS
    assert rendered.detail_overflow
    item = AskUserQuestionAnswerItem(
        id="plan", custom="no, " * 800, answered_by=Responder("U1", "al")
    )
    final = render_outcome(q, outcome="answered", item=item)
    assert_valid(final.blocks, final.text)
    assert block_text_length(final.blocks) <= MESSAGE_CHARS
    assert "the agent has the whole answer" in str(final.blocks)


INJECTED = (
    "<!channel> <!here|here> <!everyone> <!subteam^S0OPS> <@U0VICTIM>"
    " <https://evil.example|Approve here>"
)


def test_someone_elses_text_cannot_mention_or_link_anywhere() -> None:
    q = AskUserQuestionItem(
        id="x",
        question=f"Ship? {INJECTED}",
        header=f"Gate {INJECTED}"[:140],
        detail=(
            f"# Plan\n{INJECTED}\nand @here, [Approve here](https://evil.example/x)\n**bold** stays"
        ),
        options=(AskUserQuestionOption(f"yes {INJECTED}", f"desc {INJECTED}"),),
    )
    rendered = render_question(q, ask_id=ASK, index=0, agent=AgentRef("a", INJECTED))
    item = AskUserQuestionAnswerItem(
        id="x", selected=(q.labels[0],), custom=INJECTED, answered_by=Responder("U1", "al")
    )
    final = render_outcome(q, outcome="answered", item=item)
    for message in (rendered, final):
        args = {"text": message.text, "blocks": message.blocks}
        assert [m.target for m in mentions_in(args, method="x")] == (
            [] if message is rendered else ["U1"]  # only the answerer, named by the relay
        )
        # Only the detail's markdown link is a link, and its host is written after it.
        assert [link.url for link in links_in(args, method="x")] == ["https://evil.example/x"]
        assert "&lt;!channel&gt;" in message.text
    (markdown,) = [b["text"] for b in rendered.blocks if b["type"] == "markdown"]
    assert "[Approve here](https://evil.example/x) (evil.example)" in markdown
    assert "**bold** stays" in markdown
    for token in ("<!", "<@", "<https", "@here"):
        assert token not in markdown
    assert markdown.replace("\u2060", "") == q.detail.replace(
        "(https://evil.example/x)", "(https://evil.example/x) (evil.example)"
    )


def test_ordinary_markdown_and_code_are_left_alone() -> None:
    plain = "# Title\n\n- **a** _b_ ~~c~~ `d < e && f`\n\n```\nif a < b and c > d: pass\n```\n[docs.example.com](https://docs.example.com/x)"
    assert inert_markdown(plain) == plain


@pytest.mark.parametrize(
    ("text", "noted"),
    [
        # A label that mentions a host is not the address it goes to.
        (
            "[see docs.example.com, not evil.example](https://evil.example/x)",
            "[see docs.example.com, not evil.example](https://evil.example/x) (evil.example)",
        ),
        ("[Approve](HTTPS://evil.example/x)", "[Approve](HTTPS://evil.example/x) (evil.example)"),
        ("[Approve](Https://Evil.Example)", "[Approve](Https://Evil.Example) (evil.example)"),
        (
            "[[Approve](https://docs.example.com)](https://evil.example)",
            "[[Approve](https://docs.example.com) (docs.example.com)](https://evil.example)"
            " (evil.example)",
        ),
        (
            "[a [nested] label](https://evil.example)",
            "[a [nested] label](https://evil.example) (evil.example)",
        ),
        (
            "[Approve\nhere](https://evil.example)",
            "[Approve\nhere](https://evil.example) (evil.example)",
        ),
        (
            "[Approve here][1]\n\n[1]: https://evil.example/x",
            "[Approve here][1] (evil.example)\n\n[1]: https://evil.example/x",
        ),
        (
            "[Approve][]\n\n[approve]: HTTPS://evil.example",
            "[Approve][] (evil.example)\n\n[approve]: HTTPS://evil.example",
        ),
        (
            "Click [Approve  Here].\n\n[approve here]:\n  https://evil.example 'x'",
            "Click [Approve  Here] (evil.example).\n\n[approve here]:\n  https://evil.example 'x'",
        ),
    ],
)
def test_every_link_form_shows_its_host(text: str, noted: str) -> None:
    assert inert_markdown(text) == noted


def test_private_notices_quote_labels_and_ids_inert() -> None:
    assert notices.not_recorded(f"'{INJECTED}' is not an option") == (
        f"That answer was not recorded: '{escape(INJECTED)}' is not an option"
    )
    forged = AskUserQuestionAnswerItem(id="x", answered_by=Responder("U1><!channel", None))
    assert "<!channel" not in notices.already_answered(forged)
    real = AskUserQuestionAnswerItem(id="x", answered_by=Responder("U0ALICE", None))
    assert notices.already_answered(real).startswith("<@U0ALICE> already answered")


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(
    question=questions(),
    index=st.integers(0, 3),
    count=st.integers(1, 4),
    agent=st.none() | st.builds(AgentRef, st.text(min_size=1, max_size=50), st.none() | text),
)
def test_the_quick_layout_is_the_measured_one(
    question: AskUserQuestionItem, index: int, count: int, agent: AgentRef | None
) -> None:
    # _layout skips building the inputs when a bound on their text says everything fits;
    # what it decides must be exactly what measuring them decides (or refuses the same way).
    from relay.slack.rendering import render

    def layout(measured: bool) -> object:
        try:
            if not measured:
                return render._text_layout(question, agent, index, count)
            heading, listing = render._heading_blocks(question), render.option_listing(question)
            asked = render._asked_by(agent, index, count, render._LAST_DEADLINE, question.default)
            fixed = block_text_length([*heading, *listing, asked])
            fixed += render._team_chars(question)
            return render._measured_layout(question, index, count, heading, listing, fixed)
        except UserInteractionError as refused:
            return refused.code

    quick = layout(measured=False)
    assert quick == layout(measured=True)
    asked = render._asked_by(agent, index, count, render._LAST_DEADLINE, question.default)
    fixed = [*render._heading_blocks(question), *render.option_listing(question), asked]
    # (the bound that lets a layout without detail count no text)
    assert render._text_bound(question, agent) >= block_text_length(fixed)
    if isinstance(quick, render._Layout):  # (what render_outcome counts on to skip a walk)
        kept = block_text_length([*quick.heading, *quick.detail, *quick.listing, asked])
        assert kept + render.OUTCOME_LINE_CHARS <= render.MESSAGE_CHARS


def test_the_text_bound_holds_for_text_that_escaping_lengthens_most() -> None:
    from relay.slack.rendering import render

    for header in (None, "&" * 150, "<" * 400):
        question = AskUserQuestionItem(
            id="q",
            header=header,
            question="&" * 3000,
            options=tuple(
                AskUserQuestionOption(label="&" * 200 + str(i), description="<" * 300)
                for i in range(12)
            ),
            default="&" * 200 + "0",
        )
        agent = AgentRef("&" * 500)
        for index, count in ((0, 1), (9998, 9999)):
            asked = render._asked_by(agent, index, count, render._LAST_DEADLINE, question.default)
            shown = [*render._heading_blocks(question), *render.option_listing(question), asked]
            assert render._text_bound(question, agent) >= block_text_length(shown)


def test_a_question_without_room_for_its_outcome_line_is_refused_by_either_path() -> None:
    # ~8,100 characters of text once escaped: the inputs would fit beside it in 10,000, the
    # final "Answered by ..." line would not. The bound (~9,100) must not let it through.
    from relay.slack.rendering import render

    question = AskUserQuestionItem(
        id="q",
        header="x" * 150,
        question="&" * 1000,
        options=(
            AskUserQuestionOption(label="Yes", description="&" * 290),
            AskUserQuestionOption(label="No", description="&" * 290),
        ),
    )
    assert render._text_bound(question, None) + 500 <= render.MESSAGE_CHARS  # (inputs: 500)
    with pytest.raises(UserInteractionError) as refused:
        render_question(question, ask_id=ASK, index=0)
    assert refused.value.code == ErrorCode.BAD_REQUEST


@settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow])
@given(question=questions(), custom=st.text(max_size=4000), count=st.integers(1, 3))
def test_an_outcome_fits_one_message_without_counting_its_text(
    question: AskUserQuestionItem, custom: str, count: int
) -> None:
    # render_outcome trusts the room its layout kept for the outcome line: whatever it sends
    # must still be within Slack's limits, for the longest line an answer can have.
    from relay.slack.rendering import render

    item = AskUserQuestionAnswerItem(
        id=question.id,
        custom=custom,
        answered_by=Responder("U0ALICE", None),
        answered_at=datetime.now(UTC),
    )
    for outcome in ("answered", "timed_out"):
        final = render_outcome(question, outcome=outcome, item=item, index=0, count=count)
        assert len(final.blocks) <= render.MAX_BLOCKS
        assert block_text_length(final.blocks) <= render.MESSAGE_CHARS


def test_the_inputs_bound_holds_for_the_longest_labels_and_descriptions() -> None:
    from relay.slack.rendering import render
    from relay.slack.rendering.inputs import input_blocks

    for count in (1, 2, 5, 6, 10, 11, 100):
        for multi in (False, True):
            question = AskUserQuestionItem(
                id="q",
                question="Pick",
                options=tuple(
                    AskUserQuestionOption(label="&<>" * 100 + str(i), description="&" * 500)
                    for i in range(count)
                ),
                multi_select=multi,
                intent=AskUserQuestionIntent(approve="&<>" * 100 + "0") if not multi else None,
            )
            inputs = block_text_length(input_blocks(question, ASK, 0, True))
            assert inputs <= render._inputs_bound(count), (count, multi, inputs)


def test_block_text_length_counts_every_text_string_at_any_depth_in_any_mapping_or_list() -> None:
    # The count takes a quick path for plain dicts, lists and strings; subclasses of them
    # (a caller's own blocks) count the same, and nothing but ``text`` strings counts.
    from collections import OrderedDict, UserString

    class Text(str):
        pass

    blocks = [
        {"type": "header", "text": {"type": "plain_text", "text": "abc"}},
        OrderedDict(type="section", text={"type": "mrkdwn", "text": Text("defg")}),
        {"type": "actions", "elements": [{"text": {"text": "hi"}, "value": "not counted"}]},
        {"type": "context", "elements": type("L", (list,), {})([{"text": "12345"}])},
        {"type": "section", "text": UserString("not a str"), "fields": [{"text": "x"}]},
    ]
    assert block_text_length(blocks) == 3 + 4 + 2 + 5 + 1
    assert block_text_length([]) == 0
