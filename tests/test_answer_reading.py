"""Answers read as users write them: ``selected`` equals a list, a skip is marked."""

from __future__ import annotations

from relay.questions import AskUserQuestionAnswer, AskUserQuestionAnswerItem


def test_selected_equals_the_list_the_json_shows() -> None:
    item = AskUserQuestionAnswerItem(id="go", selected=["Delete"])
    assert item.selected == ["Delete"]
    assert ["Delete"] == item.selected  # noqa: SIM300 - the reflected comparison, on purpose
    assert item.selected == ("Delete",)
    assert item.selected != ["Keep"]
    assert not (item.selected != ["Delete"])  # noqa: SIM202 - __ne__ itself is under test
    assert item.selected != ["Delete", "Keep"]
    assert item.to_dict()["selected"] == item.selected
    # Still a tuple: hashable, immutable, and the items built either way are equal.
    assert item == AskUserQuestionAnswerItem(id="go", selected=("Delete",))
    assert hash(item) == hash(AskUserQuestionAnswerItem(id="go", selected=("Delete",)))


def test_a_skip_is_marked_and_the_wire_form_stays() -> None:
    skipped = AskUserQuestionAnswerItem(id="a")
    typed = AskUserQuestionAnswerItem(id="b", custom="later")
    defaulted = AskUserQuestionAnswerItem(id="c", selected=["Hold"], defaulted=True)
    chosen = AskUserQuestionAnswerItem(id="d", selected=["Ship"])
    assert [i.skipped for i in (skipped, typed, defaulted, chosen)] == [True, False, False, False]
    assert skipped.to_dict() == {"id": "a", "selected": []}
    assert AskUserQuestionAnswer([skipped, AskUserQuestionAnswerItem(id="e")]).skipped
    assert not AskUserQuestionAnswer([skipped, chosen]).skipped
    assert not AskUserQuestionAnswer([]).skipped
    read = AskUserQuestionAnswer.from_dict({"answers": [{"id": "a", "selected": []}]})
    assert read.skipped
    assert read.answers[0].selected == []
