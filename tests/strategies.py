"""Hypothesis strategies for the seam's types, shared by the wire and tool tests.

Strings are deliberately odd: empty and blank text, JSON look-alikes, control characters,
line and paragraph separators, combining marks, astral characters and, where the test can take
them, lone surrogates (which no UTF-8 text can carry but a Python ``str`` can).
"""

from __future__ import annotations

from datetime import UTC

from hypothesis import strategies as st

from relay import (
    AgentRef,
    AskUserQuestionAnswer,
    AskUserQuestionAnswerItem,
    AskUserQuestionIntent,
    AskUserQuestionItem,
    AskUserQuestionOption,
    AskUserQuestionRequest,
    Responder,
)

ODD_STRINGS = (
    "",
    " ",
    "\t\n ",
    "null",
    "None",
    "true",
    "0",
    "[]",
    "{}",
    "__proto__",
    "constructor",
    "multiSelect",
    "multi_select",
    '"',
    "\\",
    "</script>",
    "\x00",
    "\x1f",
    "\x7f",
    "\u00a0",
    "\u2028",
    "\u2029",
    "\u200b",
    "\ufeff",
    "\u3000",
    "e\u0301",
    "\u202eevil",
    "😀",
    "👩\u200d👩\u200d👧",
    "日本語",
    "Ünïcödé",
    "Approve",
    "pnpm (Recommended)",
    "x" * 500,
)

_LONE_SURROGATES = st.characters(categories=["Cs"])

# Text that survives a trip through UTF-8 JSON text (no surrogate code points).
json_text = st.one_of(st.sampled_from(ODD_STRINGS), st.text(max_size=40))

# Any Python string, including lone surrogates mixed in with other characters.
any_text = st.one_of(
    json_text,
    st.text(st.one_of(st.characters(), _LONE_SURROGATES), max_size=20),
)


def options(text: st.SearchStrategy[str] = any_text) -> st.SearchStrategy[AskUserQuestionOption]:
    """An option with an odd label and maybe a description."""
    return st.builds(AskUserQuestionOption, label=text, description=st.none() | text)


def intents(text: st.SearchStrategy[str] = any_text) -> st.SearchStrategy[AskUserQuestionIntent]:
    """A plan-review intent (not necessarily naming one of its question's options)."""
    return st.builds(AskUserQuestionIntent, approve=text)


def items(text: st.SearchStrategy[str] = any_text) -> st.SearchStrategy[AskUserQuestionItem]:
    """A question with every optional field either unset or set to something odd."""
    return st.builds(
        AskUserQuestionItem,
        id=text,
        question=text,
        detail=st.none() | text,
        header=st.none() | text,
        options=st.none() | st.lists(options(text), max_size=4).map(tuple),
        multi_select=st.booleans(),
        intent=st.none() | intents(text),
        default=st.none() | text,
        approvals_required=st.none() | st.integers(1, 5),
        veto=st.none() | st.lists(text, max_size=2).map(tuple),
    )


def agents(text: st.SearchStrategy[str] = any_text) -> st.SearchStrategy[AgentRef]:
    """Who is asking."""
    return st.builds(AgentRef, id=text, name=st.none() | text)


def requests(text: st.SearchStrategy[str] = any_text) -> st.SearchStrategy[AskUserQuestionRequest]:
    """A request of zero or more questions (the wire form does not require any)."""
    return st.builds(
        AskUserQuestionRequest,
        questions=st.lists(items(text), max_size=4).map(tuple),
        agent=st.none() | agents(text),
    )


def responders(text: st.SearchStrategy[str] = any_text) -> st.SearchStrategy[Responder]:
    """The human who answered."""
    return st.builds(Responder, id=text, name=st.none() | text)


def answer_items(
    text: st.SearchStrategy[str] = any_text,
) -> st.SearchStrategy[AskUserQuestionAnswerItem]:
    """An answer item, with or without the audit metadata the wire form leaves out."""
    return st.builds(
        AskUserQuestionAnswerItem,
        id=text,
        selected=st.lists(text, max_size=4).map(tuple),
        custom=st.none() | text,
        answered_by=st.none() | responders(text),
        answered_at=st.none() | st.datetimes(timezones=st.just(UTC)),
        defaulted=st.booleans(),
    )


def answers(text: st.SearchStrategy[str] = any_text) -> st.SearchStrategy[AskUserQuestionAnswer]:
    """An answer batch."""
    return st.builds(AskUserQuestionAnswer, answers=st.lists(answer_items(text), max_size=4))


@st.composite
def request_with_valid_answer(
    draw: st.DrawFn,
) -> tuple[AskUserQuestionRequest, AskUserQuestionAnswer]:
    """A request and an answer that follows seam.md's answer-shape rules for it."""
    questions: list[AskUserQuestionItem] = []
    for i in range(draw(st.integers(min_value=1, max_value=4))):
        labels = draw(st.lists(json_text, max_size=4, unique=True))
        questions.append(
            AskUserQuestionItem(
                id=f"q{i}",
                question=draw(json_text),
                options=tuple(AskUserQuestionOption(label) for label in labels),
                multi_select=draw(st.booleans()),
            )
        )
    non_blank = json_text.filter(lambda s: s.strip() != "")
    answer: list[AskUserQuestionAnswerItem] = []
    for q in questions:
        labels = list(q.labels)
        if q.multi_select:
            selected = draw(st.lists(st.sampled_from(labels), unique=True)) if labels else []
            custom = draw(st.none() | non_blank)
        else:
            kind = draw(st.sampled_from(["skip", "choose", "custom"]))
            if kind == "choose" and labels:
                selected, custom = [draw(st.sampled_from(labels))], None
            elif kind == "custom":
                selected, custom = [], draw(non_blank)
            else:
                selected, custom = [], None
        answer.append(AskUserQuestionAnswerItem(q.id, tuple(selected), custom))
    return AskUserQuestionRequest(tuple(questions)), AskUserQuestionAnswer(tuple(answer))
