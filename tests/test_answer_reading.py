"""Answers read as users write them: ``selected`` and ``answers`` equal lists, an answer and
its items equal their wire form (the dicts the JSON shows), a skip is marked."""

from __future__ import annotations

from unittest.mock import ANY

from relay.seam.parties import Responder
from relay.seam.questions import AskUserQuestionAnswer, AskUserQuestionAnswerItem


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


def test_answers_equal_the_list_of_items_or_of_their_wire_forms() -> None:
    go = AskUserQuestionAnswerItem(id="go", selected=["Deploy"], answered_by=Responder("U1"))
    why = AskUserQuestionAnswerItem(id="why", custom="a hotfix")
    answer = AskUserQuestionAnswer([go, why])
    wire = [
        {"id": "go", "selected": ["Deploy"]},
        {"id": "why", "selected": [], "custom": "a hotfix"},
    ]
    assert answer.answers == [go, why]
    assert answer.answers == wire
    assert wire == answer.answers  # the reflected comparison, as a test may write it
    assert answer.answers == [AskUserQuestionAnswerItem(id="go", selected=("Deploy",)), wire[1]]
    assert answer.answers == (go, why)  # still a tuple
    assert answer.answers != [go]
    assert answer.answers != [{"id": "go", "selected": ["Hold"]}, wire[1]]
    assert not (answer.answers != wire)  # noqa: SIM202 - __ne__ itself is under test
    assert answer == {"answers": wire}
    assert answer.to_dict() == {"answers": wire}


def test_an_item_equals_exactly_its_wire_form() -> None:
    item = AskUserQuestionAnswerItem(id="go", selected=["Deploy"])
    assert item == {"id": "go", "selected": ["Deploy"]}
    assert {"id": "go", "selected": ["Deploy"]} == item  # noqa: SIM300 - reflected, on purpose
    assert item != {"id": "go", "selected": ["Deploy"], "custom": None}  # not in the JSON
    assert item != {"id": "go"}
    assert AskUserQuestionAnswerItem(id="d", selected=["Hold"], defaulted=True) == {
        "id": "d",
        "selected": ["Hold"],
        "defaulted": True,
    }
    # Who answered and when are audit metadata: not compared, as before.
    assert item == AskUserQuestionAnswerItem(
        id="go", selected=["Deploy"], answered_by=Responder("U1")
    )
    assert item != AskUserQuestionAnswerItem(id="go", selected=["Deploy"], custom="x")
    assert item != "go"
    assert item == ANY  # another kind of object still decides for itself
    # Hashable as before: equal items hash alike, answers too.
    answer = AskUserQuestionAnswer([item])
    assert hash(answer) == hash(
        AskUserQuestionAnswer((AskUserQuestionAnswerItem("go", ("Deploy",)),))
    )
    assert len({item, AskUserQuestionAnswerItem(id="go", selected=("Deploy",))}) == 1
