"""``validate_answer``: seam.md's answer-shape rules, each broken rule named in the error."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import request_with_valid_answer

from relay import (
    AskUserQuestionAnswer,
    AskUserQuestionAnswerItem,
    AskUserQuestionItem,
    AskUserQuestionOption,
    AskUserQuestionRequest,
    ErrorCode,
    Responder,
    UserInteractionError,
    validate_answer,
)

REQUEST = AskUserQuestionRequest(
    (
        AskUserQuestionItem(
            "pkg",
            "Which package manager?",
            options=(
                AskUserQuestionOption("pnpm (Recommended)"),
                AskUserQuestionOption("npm"),
                AskUserQuestionOption("yarn"),
            ),
        ),
        AskUserQuestionItem(
            "features",
            "Which features?",
            options=(
                AskUserQuestionOption("auth"),
                AskUserQuestionOption("Ünïcödé"),
                AskUserQuestionOption("billing"),
            ),
            multi_select=True,
        ),
        AskUserQuestionItem("note", "Anything else?"),
    )
)


def answer(*items: tuple[str, tuple[str, ...], str | None]) -> AskUserQuestionAnswer:
    return AskUserQuestionAnswer(tuple(AskUserQuestionAnswerItem(i, s, c) for i, s, c in items))


def full(
    pkg: tuple[tuple[str, ...], str | None] = ((), None),
    features: tuple[tuple[str, ...], str | None] = ((), None),
    note: tuple[tuple[str, ...], str | None] = ((), None),
) -> AskUserQuestionAnswer:
    """An answer to ``REQUEST``; every question skipped unless given."""
    return answer(("pkg", *pkg), ("features", *features), ("note", *note))


def broken(ans: AskUserQuestionAnswer, req: AskUserQuestionRequest = REQUEST) -> str:
    with pytest.raises(UserInteractionError) as info:
        validate_answer(req, ans)
    assert info.value.code == ErrorCode.BAD_REQUEST
    return str(info.value)


# --- answers that follow the rules ---------------------------------------------------------


@pytest.mark.parametrize(
    "ans",
    [
        pytest.param(full(), id="all-skipped"),
        pytest.param(
            full((("pnpm (Recommended)",), None), (("auth", "Ünïcödé"), None), ((), "thanks")),
            id="all-answered",
        ),
        pytest.param(full(pkg=((), "bun")), id="single-select-custom-overrides"),
        pytest.param(
            full(features=(("billing",), "and SSO")), id="multi-select-custom-supplements"
        ),
        pytest.param(full(features=((), "just SSO")), id="multi-select-custom-only"),
        pytest.param(
            full(features=(("billing", "auth", "Ünïcödé"), None)), id="multi-select-any-order"
        ),
        pytest.param(full(note=((), "  padded text  ")), id="custom-with-surrounding-space"),
    ],
)
def test_answers_that_follow_the_rules_pass(ans: AskUserQuestionAnswer) -> None:
    assert validate_answer(REQUEST, ans) is None


def test_audit_metadata_does_not_matter() -> None:
    items = tuple(
        AskUserQuestionAnswerItem(
            a.id,
            a.selected,
            a.custom,
            answered_by=Responder("U1"),
            answered_at=datetime(2024, 1, 1, tzinfo=UTC),
        )
        for a in full().answers
    )

    validate_answer(REQUEST, AskUserQuestionAnswer(items))


@settings(deadline=None)
@given(request_with_valid_answer())
def test_any_answer_built_by_the_rules_passes(
    case: tuple[AskUserQuestionRequest, AskUserQuestionAnswer],
) -> None:
    req, ans = case

    validate_answer(req, ans)


# --- one item per question, in order, with the question's id -------------------------------


@pytest.mark.parametrize(
    "ans",
    [
        pytest.param(answer(), id="none"),
        pytest.param(answer(("pkg", (), None), ("features", (), None)), id="too-few"),
        pytest.param(
            AskUserQuestionAnswer((*full().answers, AskUserQuestionAnswerItem("extra"))),
            id="too-many",
        ),
    ],
)
def test_one_answer_item_per_question(ans: AskUserQuestionAnswer) -> None:
    message = broken(ans)

    assert str(len(ans.answers)) in message
    assert "3" in message


def test_answers_come_in_the_question_order() -> None:
    swapped = answer(("features", (), None), ("pkg", (), None), ("note", (), None))

    message = broken(swapped)

    assert "answers[0].id" in message
    assert '"features"' in message
    assert '"pkg"' in message


def test_each_answer_carries_its_questions_id() -> None:
    message = broken(answer(("pkg", (), None), ("feature", (), None), ("note", (), None)))

    assert "answers[1].id" in message
    assert '"feature"' in message


# --- single-select -------------------------------------------------------------------------


def test_single_select_takes_at_most_one_label() -> None:
    message = broken(full(pkg=(("npm", "yarn"), None)))

    assert "answers[0].selected" in message
    assert "pkg" in message


def test_single_select_custom_overrides_the_choice_so_selected_must_be_empty() -> None:
    message = broken(full(pkg=(("npm",), "bun")))

    assert "answers[0]" in message
    assert "custom" in message
    assert "selected" in message


# --- labels --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "label",
    ["pnpm", "PNPM (RECOMMENDED)", "pnpm (Recommended) ", " npm", "Yarn", ""],
)
def test_selected_labels_must_match_an_option_exactly(label: str) -> None:
    message = broken(full(pkg=((label,), None)))

    assert "answers[0].selected" in message
    assert f'"{label}"' in message


def test_a_label_from_another_question_is_not_an_option() -> None:
    message = broken(full(features=(("npm",), None)))

    assert "answers[1].selected" in message
    assert '"npm"' in message


def test_a_question_without_options_takes_no_labels() -> None:
    message = broken(full(note=(("anything",), None)))

    assert "answers[2].selected" in message


def test_non_ascii_labels_must_match_exactly() -> None:
    decomposed = "U\u0308ni\u0308co\u0308de\u0301"  # the same text as "Ünïcödé", decomposed

    validate_answer(REQUEST, full(features=(("Ünïcödé",), None)))
    assert "answers[1].selected" in broken(full(features=((decomposed,), None)))


def test_multi_select_labels_are_distinct() -> None:
    message = broken(full(features=(("auth", "billing", "auth"), None)))

    assert "answers[1].selected" in message
    assert '"auth"' in message


# --- custom --------------------------------------------------------------------------------


@pytest.mark.parametrize("blank", ["", " ", "\t\n", "\u3000", "\u00a0 "])
@pytest.mark.parametrize("where", ["pkg", "features", "note"])
def test_custom_when_present_is_not_blank(blank: str, where: str) -> None:
    index = ["pkg", "features", "note"].index(where)
    ans = full(**{where: ((), blank)})

    message = broken(ans)

    assert f"answers[{index}].custom" in message


@settings(deadline=None)
@given(st.sampled_from(["pkg", "features", "note"]), st.text().filter(lambda s: s.strip() != ""))
def test_any_non_blank_custom_alone_passes(where: str, text: str) -> None:
    validate_answer(REQUEST, full(**{where: ((), text)}))


def test_the_first_broken_rule_is_reported() -> None:
    ans = full(pkg=(("npm", "yarn"), None), note=((), " "))

    assert "answers[0]" in broken(ans)
