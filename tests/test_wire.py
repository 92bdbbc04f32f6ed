"""The camelCase JSON wire form: exact shapes, round-trips, and errors that name the bad field."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import given, settings
from strategies import (
    agents,
    answer_items,
    answers,
    intents,
    items,
    json_text,
    options,
    requests,
    responders,
)

from relay import (
    AbortController,
    AgentRef,
    AskUserQuestionAnswer,
    AskUserQuestionAnswerItem,
    AskUserQuestionIntent,
    AskUserQuestionItem,
    AskUserQuestionOption,
    AskUserQuestionRequest,
    ErrorCode,
    Responder,
    UserInteractionError,
)

WireType = (
    type[AskUserQuestionOption]
    | type[AskUserQuestionIntent]
    | type[AskUserQuestionItem]
    | type[AgentRef]
    | type[AskUserQuestionRequest]
    | type[Responder]
    | type[AskUserQuestionAnswerItem]
    | type[AskUserQuestionAnswer]
)

# seam.md's two examples of the wire form, with its "…" placeholders filled in.
SEAM_REQUEST = {
    "questions": [
        {
            "id": "env",
            "question": "Deploy where?",
            "header": "Deploy",
            "detail": "…",
            "options": [{"label": "staging", "description": "…"}],
            "multiSelect": False,
            "intent": {"kind": "plan-review", "approve": "staging"},
        }
    ]
}
SEAM_ANSWER = {
    "answers": [
        {"id": "env", "selected": ["staging"]},
        {"id": "note", "selected": [], "custom": "…"},
    ]
}


def bad_request(call: Any, *args: Any, **kwargs: Any) -> str:
    """Run ``call``, expect a BAD_REQUEST ``UserInteractionError``, and return its message."""
    with pytest.raises(UserInteractionError) as info:
        call(*args, **kwargs)
    assert info.value.code == ErrorCode.BAD_REQUEST
    assert info.value.reason is None
    return str(info.value)


def has_none(value: object) -> bool:
    if value is None:
        return True
    if isinstance(value, dict):
        return any(has_none(v) for v in value.values())
    if isinstance(value, list):
        return any(has_none(v) for v in value)
    return False


# --- the shapes seam.md shows -------------------------------------------------------------


def test_seam_request_example_reads_into_the_types() -> None:
    request = AskUserQuestionRequest.from_dict(SEAM_REQUEST, strict=True)

    assert request == AskUserQuestionRequest(
        questions=(
            AskUserQuestionItem(
                id="env",
                question="Deploy where?",
                header="Deploy",
                detail="…",
                options=(AskUserQuestionOption("staging", "…"),),
                multi_select=False,
                intent=AskUserQuestionIntent(approve="staging", kind="plan-review"),
            ),
        )
    )


def test_request_to_dict_keeps_seam_key_order_and_omits_a_false_multi_select() -> None:
    request = AskUserQuestionRequest.from_dict(SEAM_REQUEST)

    wire = request.to_dict()

    # multiSelect is optional on the wire; false is its default, so it is left out like any
    # other unset field.
    assert json.dumps(wire, ensure_ascii=False, separators=(",", ":")) == (
        '{"questions":[{"id":"env","question":"Deploy where?","header":"Deploy","detail":"…",'
        '"options":[{"label":"staging","description":"…"}],'
        '"intent":{"kind":"plan-review","approve":"staging"}}]}'
    )


def test_multi_select_true_is_written_as_camel_case() -> None:
    item = AskUserQuestionItem(id="a", question="Which?", multi_select=True)

    assert item.to_dict() == {"id": "a", "question": "Which?", "multiSelect": True}


def test_seam_answer_example_round_trips_exactly() -> None:
    answer = AskUserQuestionAnswer.from_dict(SEAM_ANSWER, strict=True)

    assert answer == AskUserQuestionAnswer(
        (
            AskUserQuestionAnswerItem("env", ("staging",)),
            AskUserQuestionAnswerItem("note", (), custom="…"),
        )
    )
    assert answer.to_dict() == SEAM_ANSWER
    assert [list(a) for a in answer.to_dict()["answers"]] == [
        ["id", "selected"],
        ["id", "selected", "custom"],
    ]


def test_minimal_question_omits_every_unset_field() -> None:
    assert AskUserQuestionItem(id="q", question="?").to_dict() == {"id": "q", "question": "?"}
    assert AskUserQuestionOption("A").to_dict() == {"label": "A"}
    assert AgentRef("bot").to_dict() == {"id": "bot"}
    assert Responder("U1").to_dict() == {"id": "U1"}
    assert AskUserQuestionRequest(()).to_dict() == {"questions": []}


def test_empty_strings_and_empty_options_are_kept_not_omitted() -> None:
    item = AskUserQuestionItem(id="", question="", detail="", header="", options=())

    assert item.to_dict() == {"id": "", "question": "", "header": "", "detail": "", "options": []}
    assert AskUserQuestionItem.from_dict(item.to_dict()) == item


def test_selected_keeps_labels_exactly_as_offered() -> None:
    labels = ("  padded  ", "Ünïcödé", "e\u0301", "pnpm (Recommended)")

    item = AskUserQuestionAnswerItem("q", labels)

    assert item.to_dict()["selected"] == list(labels)
    assert AskUserQuestionAnswerItem.from_dict(item.to_dict()).selected == labels


def test_audit_metadata_is_left_out_of_the_wire_and_ignored_by_equality() -> None:
    at = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
    audited = AskUserQuestionAnswerItem(
        "q", ("A",), answered_by=Responder("U1", "Ada"), answered_at=at
    )
    plain = AskUserQuestionAnswerItem("q", ("A",))

    assert audited.to_dict() == {"id": "q", "selected": ["A"]}
    assert audited == plain
    assert hash(audited) == hash(plain)
    assert audited.answered_by == Responder("U1", "Ada")
    assert audited.answered_at == at


def test_request_signal_is_not_part_of_the_wire_form_or_equality() -> None:
    controller = AbortController()
    questions = (AskUserQuestionItem("q", "?"),)

    with_signal = AskUserQuestionRequest(questions, signal=controller.signal)

    assert with_signal.to_dict() == {"questions": [{"id": "q", "question": "?"}]}
    assert with_signal == AskUserQuestionRequest(questions)
    read = AskUserQuestionRequest.from_dict(with_signal.to_dict(), signal=controller.signal)
    assert read.signal is controller.signal


def test_sequences_are_normalised_so_lists_and_tuples_compare_equal() -> None:
    option = AskUserQuestionOption("A")

    assert AskUserQuestionItem("q", "?", options=[option]) == AskUserQuestionItem(
        "q", "?", options=(option,)
    )
    assert AskUserQuestionAnswerItem("q", ["A"]) == AskUserQuestionAnswerItem("q", ("A",))
    assert AskUserQuestionRequest([AskUserQuestionItem("q", "?")]).questions == (
        AskUserQuestionItem("q", "?"),
    )
    assert AskUserQuestionAnswer([AskUserQuestionAnswerItem("q")]).answers == (
        AskUserQuestionAnswerItem("q"),
    )


def test_answer_item_defaults_to_a_skip() -> None:
    assert AskUserQuestionAnswerItem("q").to_dict() == {"id": "q", "selected": []}


# --- round-trips ---------------------------------------------------------------------------


@settings(deadline=None)
@given(options())
def test_option_round_trips(x: AskUserQuestionOption) -> None:
    assert AskUserQuestionOption.from_dict(x.to_dict()) == x
    assert AskUserQuestionOption.from_dict(x.to_dict(), strict=True) == x


@settings(deadline=None)
@given(intents())
def test_intent_round_trips(x: AskUserQuestionIntent) -> None:
    assert AskUserQuestionIntent.from_dict(x.to_dict()) == x
    assert AskUserQuestionIntent.from_dict(x.to_dict(), strict=True) == x


@settings(deadline=None)
@given(items())
def test_item_round_trips(x: AskUserQuestionItem) -> None:
    assert AskUserQuestionItem.from_dict(x.to_dict()) == x
    assert AskUserQuestionItem.from_dict(x.to_dict(), strict=True) == x


@settings(deadline=None)
@given(agents())
def test_agent_round_trips(x: AgentRef) -> None:
    assert AgentRef.from_dict(x.to_dict()) == x
    assert AgentRef.from_dict(x.to_dict(), strict=True) == x


@settings(deadline=None)
@given(requests())
def test_request_round_trips(x: AskUserQuestionRequest) -> None:
    assert AskUserQuestionRequest.from_dict(x.to_dict()) == x
    assert AskUserQuestionRequest.from_dict(x.to_dict(), strict=True) == x


@settings(deadline=None)
@given(responders())
def test_responder_round_trips(x: Responder) -> None:
    assert Responder.from_dict(x.to_dict()) == x
    assert Responder.from_dict(x.to_dict(), strict=True) == x


@settings(deadline=None)
@given(answer_items())
def test_answer_item_round_trips(x: AskUserQuestionAnswerItem) -> None:
    assert AskUserQuestionAnswerItem.from_dict(x.to_dict()) == x
    assert AskUserQuestionAnswerItem.from_dict(x.to_dict(), strict=True) == x


@settings(deadline=None)
@given(answers())
def test_answer_round_trips(x: AskUserQuestionAnswer) -> None:
    assert AskUserQuestionAnswer.from_dict(x.to_dict()) == x
    assert AskUserQuestionAnswer.from_dict(x.to_dict(), strict=True) == x


@settings(deadline=None)
@given(requests(json_text))
def test_request_round_trips_through_json_text(x: AskUserQuestionRequest) -> None:
    text = json.dumps(x.to_dict(), ensure_ascii=False)

    assert AskUserQuestionRequest.from_dict(json.loads(text.encode("utf-8"))) == x


@settings(deadline=None)
@given(answers(json_text))
def test_answer_round_trips_through_json_text(x: AskUserQuestionAnswer) -> None:
    text = json.dumps(x.to_dict(), ensure_ascii=False)

    assert AskUserQuestionAnswer.from_dict(json.loads(text.encode("utf-8"))) == x


@settings(deadline=None)
@given(requests())
def test_request_wire_form_never_holds_null(x: AskUserQuestionRequest) -> None:
    assert not has_none(x.to_dict())


@settings(deadline=None)
@given(answers())
def test_answer_wire_form_never_holds_null(x: AskUserQuestionAnswer) -> None:
    assert not has_none(x.to_dict())


# --- malformed input: BAD_REQUEST naming the path -----------------------------------------


def q(**fields: object) -> dict[str, object]:
    """A well-formed wire question, with ``fields`` replacing or adding keys."""
    return {"id": "a", "question": "Which?", **fields}


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (
            {"questions": [q(), q(options=[{"label": 5}])]},
            "questions[1].options[0].label must be a string",
        ),
        ({"questions": [q(options=[{}])]}, "questions[0].options[0].label is required"),
        (
            {"questions": [q(options=[{"label": "A", "description": 1}])]},
            "questions[0].options[0].description must be a string",
        ),
        ({"questions": [q(options=["A"])]}, "questions[0].options[0] must be an object"),
        ({"questions": [q(options={"label": "A"})]}, "questions[0].options must be a list"),
        ({"questions": [{"question": "Which?"}]}, "questions[0].id is required"),
        ({"questions": [q(id=7)]}, "questions[0].id must be a string"),
        ({"questions": [{"id": "a"}]}, "questions[0].question is required"),
        ({"questions": [q(question=["Which?"])]}, "questions[0].question must be a string"),
        ({"questions": [q(detail=1)]}, "questions[0].detail must be a string"),
        ({"questions": [q(header=False)]}, "questions[0].header must be a string"),
        ({"questions": [q(multiSelect="true")]}, "questions[0].multiSelect must be a boolean"),
        ({"questions": [q(multiSelect=1)]}, "questions[0].multiSelect must be a boolean"),
        (
            {"questions": [q(intent={"kind": "approval", "approve": "A"})]},
            'questions[0].intent.kind must be one of "plan-review", "tool-approval",'
            ' not "approval"',
        ),
        ({"questions": [q(intent={"approve": "A"})]}, "questions[0].intent.kind is required"),
        (
            {"questions": [q(intent={"kind": "plan-review"})]},
            "questions[0].intent.approve is required",
        ),
        ({"questions": [q(intent="plan-review")]}, "questions[0].intent must be an object"),
        ({"questions": ["Which?"]}, "questions[0] must be an object"),
        ({"questions": {"id": "a"}}, "questions must be a list"),
        ({}, "questions is required"),
        ({"questions": None}, "questions is required"),
        ({"questions": [], "agent": "bot"}, "agent must be an object"),
        ({"questions": [], "agent": {"name": "Bot"}}, "agent.id is required"),
        ({"questions": [], "agent": {"id": "b", "name": 3}}, "agent.name must be a string"),
        ([], "the body must be an object"),
        ("questions", "the body must be an object"),
    ],
)
def test_malformed_request_names_the_bad_field(data: object, message: str) -> None:
    assert bad_request(AskUserQuestionRequest.from_dict, data) == message


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({}, "answers is required"),
        ({"answers": "a"}, "answers must be a list"),
        ({"answers": [{"selected": []}]}, "answers[0].id is required"),
        ({"answers": [{"id": 1, "selected": []}]}, "answers[0].id must be a string"),
        ({"answers": [{"id": "a", "selected": "A"}]}, "answers[0].selected must be a list"),
        (
            {"answers": [{"id": "a", "selected": []}, {"id": "b", "selected": ["A", 2]}]},
            "answers[1].selected[1] must be a string",
        ),
        (
            {"answers": [{"id": "a", "selected": [], "custom": 5}]},
            "answers[0].custom must be a string",
        ),
        ({"answers": [None]}, "answers[0] must be an object"),
    ],
)
def test_malformed_answer_names_the_bad_field(data: object, message: str) -> None:
    assert bad_request(AskUserQuestionAnswer.from_dict, data) == message


@pytest.mark.parametrize(
    ("cls", "data", "message"),
    [
        (AskUserQuestionOption, {"label": 5}, "label must be a string"),
        (AskUserQuestionIntent, {"kind": "other", "approve": "A"}, "kind must be one of"),
        (AskUserQuestionItem, {"id": "a"}, "question is required"),
        (AgentRef, {}, "id is required"),
        (Responder, {"id": None}, "id is required"),
        (AskUserQuestionAnswerItem, {"id": "a", "selected": [1]}, "selected[0] must be a string"),
    ],
)
def test_each_type_reads_its_own_wire_form_strictly_typed(
    cls: WireType, data: object, message: str
) -> None:
    assert bad_request(cls.from_dict, data).startswith(message)


def test_unknown_keys_are_ignored_by_default() -> None:
    data = {
        "questions": [q(multi_select=True, extra=1, options=[{"label": "A", "value": "a"}])],
        "agent": {"id": "b", "team": "x"},
        "version": 2,
    }

    request = AskUserQuestionRequest.from_dict(data)

    assert request == AskUserQuestionRequest(
        (AskUserQuestionItem("a", "Which?", options=(AskUserQuestionOption("A"),)),),
        agent=AgentRef("b"),
    )
    assert request.questions[0].multi_select is False


@pytest.mark.parametrize(
    ("data", "path"),
    [
        ({"questions": [], "version": 2}, "version"),
        ({"questions": [q(multi_select=True)]}, "questions[0].multi_select"),
        ({"questions": [q(), q(extra=1)]}, "questions[1].extra"),
        (
            {"questions": [q(options=[{"label": "A", "value": "a"}])]},
            "questions[0].options[0].value",
        ),
        (
            {
                "questions": [
                    q(
                        options=[{"label": "A"}],
                        intent={"kind": "plan-review", "approve": "A", "x": 1},
                    )
                ]
            },
            "questions[0].intent.x",
        ),
        ({"questions": [], "agent": {"id": "b", "team": "x"}}, "agent.team"),
    ],
)
def test_strict_reading_names_the_unknown_key(data: object, path: str) -> None:
    message = bad_request(AskUserQuestionRequest.from_dict, data, strict=True)

    assert message.startswith(f"{path} ")


def test_strict_reading_catches_the_snake_case_typo_and_suggests_camel_case() -> None:
    message = bad_request(
        AskUserQuestionRequest.from_dict, {"questions": [q(multi_select=True)]}, strict=True
    )

    assert "questions[0].multi_select" in message
    assert "multiSelect" in message


@pytest.mark.parametrize(
    ("data", "path"),
    [
        ({"answers": [], "extra": True}, "extra"),
        (
            {"answers": [{"id": "a", "selected": [], "answeredBy": {"id": "U1"}}]},
            "answers[0].answeredBy",
        ),
    ],
)
def test_strict_answer_reading_names_the_unknown_key(data: object, path: str) -> None:
    message = bad_request(AskUserQuestionAnswer.from_dict, data, strict=True)

    assert message.startswith(f"{path} ")


def test_a_missing_selected_reads_as_a_skip() -> None:
    assert AskUserQuestionAnswerItem.from_dict({"id": "a"}) == AskUserQuestionAnswerItem("a")


def test_null_optional_fields_read_as_unset() -> None:
    data = q(detail=None, header=None, options=None, multiSelect=None, intent=None)

    assert AskUserQuestionItem.from_dict(data) == AskUserQuestionItem("a", "Which?")
