"""Every text the relay puts in a message is within its kind's limit, whatever the input.

The limits are Slack's Block Kit reference's, written here rather than read from the fake
Slack, so that these tests hold even where a fake is lenient (relay issue 39: a reminder
after an escalation of 3,780 characters and a context line of 3,107 were accepted by it)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from relay import (
    AgentRef,
    AskUserQuestionAnswerItem,
    AskUserQuestionItem,
    AskUserQuestionOption,
    AskUserQuestionRequest,
    ErrorCode,
    UserInteractionError,
)
from relay.seam.questions import Responder, Vote
from relay.slack.rendering import kit
from relay.slack.rendering.reminders import escalation_note, escalation_text, reminder_text
from relay.slack.rendering.render import MESSAGE_CHARS, render_outcome, render_question
from relay.slack.rendering.team import tally_block
from relay.slack.rendering.text import block_text_length, escape
from relay.store.record import AskRecord, Target

# Slack's documented limits per kind of text (characters as sent, after escaping), counted in
# UTF-16 code units: Slack names no unit, and an emoji counts 2 in them, 1 in code points.
SECTION, FIELD, CONTEXT, HEADER, BUTTON, OPTION, PLACEHOLDER, LABEL = (
    3000,
    2000,
    3000,
    150,
    75,
    75,
    150,
    2000,
)
MARKDOWN = 12_000
MEASURED_REFUSAL = 11_341  # slackapi/bolt-js#2867: the least text Slack was seen to refuse


def units(text: str) -> int:
    """UTF-16 code units, counted here rather than by the relay's own ``units``."""
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def over_limit(blocks: list[dict[str, Any]]) -> list[str]:
    """Every text in ``blocks`` longer than its kind allows, described."""
    bad: list[str] = []

    def check(where: str, text: dict[str, Any] | None, limit: int) -> None:
        if text is not None and units(text["text"]) > limit:
            bad.append(f"{where}: {units(text['text'])} > {limit}")

    for block in blocks:
        kind = block["type"]
        if kind == "section":
            check("section", block.get("text"), SECTION)
            for field in block.get("fields", ()):
                check("field", field, FIELD)
        elif kind == "context":
            for element in block["elements"]:
                check("context", element, CONTEXT)
        elif kind == "header":
            check("header", block["text"], HEADER)
        elif kind == "markdown":
            if units(block["text"]) > MARKDOWN:
                bad.append(f"markdown: {units(block['text'])}")
        elif kind == "input":
            check("label", block["label"], LABEL)
        elif kind == "actions":
            for element in block["elements"]:
                if element["type"] == "button":
                    check("button", element["text"], BUTTON)
                check("placeholder", element.get("placeholder"), PLACEHOLDER)
                for option in element.get("options", ()):
                    check("option", option["text"], OPTION)
                    check("description", option.get("description"), OPTION)
    return bad


def capped_record(*, escalated: bool) -> AskRecord:
    """An ask at the API's own caps: 100 users and 10 groups allowed, as many added by its
    escalation, every id as long as Slack's."""
    users = frozenset(f"U{i:020d}" for i in range(100))
    groups = frozenset(f"S{i:020d}" for i in range(10))
    more = frozenset(f"W{i:020d}" for i in range(100))
    more_groups = frozenset(f"S9{i:019d}" for i in range(10))
    created = datetime.now(UTC) - timedelta(hours=2)
    question = AskUserQuestionItem(id="q", question="Ship it?")
    return AskRecord(
        id="ask",
        request=AskUserQuestionRequest((question,)),
        target=Target(
            channel="C1",
            allowed_users=users,
            allowed_groups=groups,
            reminders=3,
            escalate_after=60.0 if escalated else None,
            escalate_users=more if escalated else None,
            escalate_groups=more_groups if escalated else None,
        ),
        created_at=created,
        deadline=created.timestamp() + 86_400,
    )


def test_a_reminder_after_an_escalation_at_the_caps_fits_a_section() -> None:
    record = capped_record(escalated=True)
    text = reminder_text(record, sent=1, now=datetime.now(UTC).timestamp())
    assert len(text) <= SECTION, len(text)  # 3,780 before: Slack answers invalid_blocks
    assert "others" in text  # the rest counted, not cut off mid-mention
    assert text.count("<") == text.count(">")
    assert over_limit([kit.section(text)]) == []


def test_an_escalation_at_the_caps_fits_a_section() -> None:
    record = capped_record(escalated=True)
    now = datetime.now(UTC).timestamp()
    text = escalation_text(record, now=now, link="https://example.slack.com/archives/C1/p1")
    assert len(text) <= SECTION
    note = escalation_note(record, now=now)
    assert note is not None
    assert len(note) <= 400


def test_a_default_of_600_ampersands_stays_within_its_context_line() -> None:
    label = "&" * 600
    question = AskUserQuestionItem(
        id="q",
        question="Which?",
        options=(AskUserQuestionOption(label), AskUserQuestionOption("Hold")),
        default=label,
    )
    rendered = render_question(
        question, ask_id="A1", index=0, deadline=datetime.now(UTC).timestamp() + 60
    )
    assert over_limit(rendered.blocks) == []  # 3,107 characters before
    listed = "".join(b["text"]["text"] for b in rendered.blocks if b["type"] == "section")
    assert escape(label) in listed  # the full label is listed under the question


def test_a_tally_of_many_votes_fits_and_counts_the_rest() -> None:
    question = AskUserQuestionItem(
        id="q",
        question="Which?",
        options=(AskUserQuestionOption("&" * 300), AskUserQuestionOption("B")),
        approvals_required=500,
        veto=("B",),
    )
    votes = [
        Vote(by=Responder(id=f"U{i:020d}"), label="&" * 300, at=datetime.now(UTC))
        for i in range(400)
    ]
    block = tally_block(question, votes)
    assert over_limit([block]) == []
    assert "others" in block["elements"][0]["text"]


def test_fit_never_breaks_a_token_or_an_escape() -> None:
    text = "a" * 2990 + "<@U0123456789>" + "&amp;" * 10
    cut = kit.fit(text, 3000)
    assert len(cut) <= 3000
    assert cut.endswith("…")
    assert cut.count("<") == cut.count(">")
    cut = kit.fit("b" * 2997 + "&amp;&amp;", 3000)
    assert cut == "b" * 2997 + "…"


@given(
    st.lists(st.sampled_from(["<@U1>", "<!subteam^S1>", "<@" + "W" * 30 + ">"]), max_size=300),
    st.integers(10, 3000),
)
def test_a_mention_list_fits_and_counts_what_it_leaves_out(mentions: list[str], limit: int) -> None:
    shown = kit.mention_list(mentions, limit)
    assert len(shown) <= max(limit, len(f"{len(mentions)} people and groups"))
    assert shown.count("<") == shown.count(">")
    if len(", ".join(mentions)) > limit:
        assert "other" in shown or "people and groups" in shown


_EXTREME = st.sampled_from(["&", "<", ">", "x", "&<>", " ", "é", "<!here>", "*", "😀", "&😀"])


@st.composite
def extreme_questions(draw: st.DrawFn) -> AskUserQuestionItem:
    def long_text(most: int) -> str:
        return draw(_EXTREME) * draw(st.integers(1, most))

    count = draw(st.integers(0, 12))
    options = tuple(
        AskUserQuestionOption(long_text(600), draw(st.none() | st.just(long_text(600))))
        for _ in range(count)
    )
    labels = [o.label for o in options]
    unique = len(set(labels)) == len(labels)
    return AskUserQuestionItem(
        id="q",
        question=long_text(3000),
        header=draw(st.none() | st.just(long_text(400))),
        detail=draw(st.none() | st.just(long_text(20_000))),
        options=options or None,
        multi_select=draw(st.booleans()) if options else False,
        default=draw(st.sampled_from(labels)) if options and unique else None,
    )


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(extreme_questions(), st.text(max_size=400))
def test_every_text_of_every_message_fits_whatever_the_input(
    question: AskUserQuestionItem, agent: str
) -> None:
    try:
        AskUserQuestionRequest((question,))
    except Exception:
        return  # the API refuses it before anything renders
    who = AgentRef(id="agent", name=agent) if agent.strip() else None
    try:
        live = render_question(question, ask_id="A1", index=0, agent=who, deadline=1e9)
    except UserInteractionError as exc:  # too big to show: BAD_REQUEST, said to the agent
        refused = exc
    else:
        refused = None
    if refused is not None:
        assert refused.code == ErrorCode.BAD_REQUEST
        return
    outcomes = [render_outcome(question, outcome="timed_out", agent=who).blocks]
    if question.default is not None:
        taken = AskUserQuestionAnswerItem(id="q", selected=(question.default,), defaulted=True)
        outcomes.append(render_outcome(question, outcome="answered", item=taken, timeout=60).blocks)
    for blocks in (live.blocks, *outcomes):
        assert over_limit(blocks) == []
        assert block_text_length(blocks) <= MESSAGE_CHARS < MEASURED_REFUSAL
        assert sum(units(text) for text in texts_of(blocks)) == block_text_length(blocks)


def texts_of(node: Any) -> list[str]:
    """Every ``text`` string in ``node``, as Slack totals them for ``msg_blocks_too_long``."""
    if isinstance(node, list):
        return [text for item in node for text in texts_of(item)]
    if not isinstance(node, dict):
        return []
    found: list[str] = []
    for key, value in node.items():
        found.extend([value] if key == "text" and isinstance(value, str) else texts_of(value))
    return found
