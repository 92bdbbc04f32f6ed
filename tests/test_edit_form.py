"""The "Edit…" form, pure: submitted untouched it gives back exactly the input it showed
(issue 49.6), typed values JSON cannot carry exactly are refused under their field, every
view is one Slack accepts (issue 52.3), and *Edit…* is offered only where a field can be
edited (issue 52.4).

Submissions are simulated as FakeSlack sends them: ``state.values`` from the view's initial
values (``relay.testing.elements.state_values``), with what the test types on top.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from relay.seam.edits import Edit, edit_custom, read_edit
from relay.seam.intents import AskUserQuestionIntent, ToolEdit
from relay.seam.questions import AskUserQuestionItem, AskUserQuestionOption
from relay.slack.editing.fields import editable_fields, form_fields, unavailable
from relay.slack.editing.form import edit_view, first_block, read_edit_view
from relay.slack.rendering import render
from relay.slack.rendering.inputs import EDIT_NOTE_CHARS, input_blocks
from relay.slack.rendering.text import block_text_length, units
from relay.testing.elements import ViewerState, iter_elements, state_values
from relay.testing.modal_check import view_errors

CHOICES = ("Allow once", "Allow for this session")
ENUM_150 = [f"v{i}" for i in range(150)]
SCHEMA = {
    "type": "object",
    "properties": {
        "path": {"type": "string"},
        "encoding": {"type": "string", "description": "The file's encoding."},
        "follow": {"type": "boolean"},
        "mode": {"enum": ENUM_150},
        "limit": {"type": "integer"},
        "ratio": {"type": "number"},
        "note": {"type": ["string", "null"]},
        "labels": {"type": "object"},
    },
}


def view_of(edit: ToolEdit, who: str = "Claude Code") -> dict[str, Any]:
    view = edit_view(edit, metadata='{"a":"A1","i":0}', choices=CHOICES, who=who)
    assert view_errors(view) == [], view_errors(view)
    return view


def block_of(view: dict[str, Any], label: str) -> str:
    (found,) = [
        located.block_id
        for located in iter_elements(view["blocks"])
        if located.block.get("type") == "input" and located.block["label"]["text"] == label
    ]
    return found


def submit(edit: ToolEdit, **typed: dict[str, Any]) -> tuple[dict[str, Any], str] | dict[str, str]:
    """Submit ``edit``'s form with each label in ``typed`` set to its state entry."""
    view = view_of(edit)
    state: ViewerState = {(block_of(view, label), "v"): entry for label, entry in typed.items()}
    return read_edit_view(edit, state_values(view["blocks"], state), CHOICES)


def text(value: str) -> dict[str, Any]:
    return {"type": "plain_text_input", "value": value}


def same_json(a: object, b: object) -> bool:
    return json.dumps(a) == json.dumps(b)


UNTOUCHED = {
    # Keys only the schema names are not added; null stays null; an enum value past the
    # menu's 100 options is kept; a number longer than a text field is kept whole.
    "schema-only keys, null, enum past 100": ToolEdit(
        "read", {"path": "a.txt", "note": None, "mode": "v120", "limit": 10**3500}, SCHEMA
    ),
    "null where the schema says string": ToolEdit(
        "read", {"path": None, "encoding": "", "follow": False}, SCHEMA
    ),
    # A key "" is a field like any other, never the whole input.
    'a key ""': ToolEdit("t", {"": "x", "b": {"": [1, 2.5, None, True]}}),
    'more than 40 keys and a key ""': ToolEdit("t", {"": 1, **{f"k{i}": i for i in range(45)}}),
    "numbers": ToolEdit(
        "t", {"big": 2**70, "tiny": 5e-324, "neg": -0.0, "e": 1e300, "f": 0.1, "w": 5.0}
    ),
    "numbers under a schema": ToolEdit("t", {"limit": 5.0, "ratio": 2**60}, SCHEMA),
    "text Slack may change": ToolEdit(
        "t",
        {
            "crlf": "a\r\nb",
            "nul": "a\x00b",
            "c1": "a\x85b",
            "surrogate": "a\ud800b",
            "blank": "   ",
            "decomposed": "e\u0301",
            "padded": "  x\n",
            "astral": "😀" * 1500,
        },
    ),
    "nested": ToolEdit("t", {"json": {"z": [{"é": "\x85\u2028"}], "a": {}}, "l": []}),
    "a command with a carriage return": ToolEdit("Bash", {"command": "ls\r\n", "x": 1}),
    "a long Write": ToolEdit("Write", {"file_path": "/a", "content": "&" * 5000}),
    "NaN": ToolEdit("t", {"n": float("nan"), "s": "ok"}),
    "empty": ToolEdit("t", {}),
}


@pytest.mark.parametrize("edit", UNTOUCHED.values(), ids=UNTOUCHED.keys())
def test_an_untouched_form_gives_back_exactly_the_input(edit: ToolEdit) -> None:
    read = submit(edit)
    assert isinstance(read, tuple), read
    edited, choice = read
    assert json.dumps(edited) == json.dumps(dict(edit.input))  # same keys, order, types
    assert choice == CHOICES[0]


def test_what_a_field_cannot_give_back_exactly_is_shown_read_only_and_says_why() -> None:
    edit = ToolEdit(
        "read", {"path": None, "mode": "v120", "labels": {"k": "&" * 4000}, "limit": 3}, SCHEMA
    )
    view = view_of(edit)
    shown = [b["text"]["text"] for b in view["blocks"] if b["type"] == "section"]
    assert "*path* is null, which a text field cannot hold" in shown[1]
    assert "*mode* is option 121 of 150, past the 100 a Slack menu lists" in shown[2]
    assert "*labels* is 4,009 characters long, more than the 3,000" in shown[3]
    assert shown[3].endswith("…```")  # cut, with a mark
    assert all(units(s) <= 3000 for s in shown)
    assert "cannot be edited here" in shown[0]
    offered = [f.name for f in editable_fields(edit)]
    assert offered == ["encoding", "follow", "limit", "ratio", "note"]
    read = submit(edit, limit=text("4"))
    assert isinstance(read, tuple)
    assert same_json(read[0], {**edit.input, "limit": 4})


def test_a_key_only_the_schema_names_is_added_only_when_filled_in() -> None:
    edit = ToolEdit("read", {"path": "a.txt"}, SCHEMA)
    filled = submit(
        edit,
        encoding=text("utf-8"),
        follow={"type": "checkboxes", "selected_options": [{"value": "true"}]},
        mode={"type": "static_select", "selected_option": {"value": "3"}},
        labels=text('{"team": "ops"}'),
    )
    assert isinstance(filled, tuple)
    assert same_json(
        filled[0],
        {
            "path": "a.txt",
            "encoding": "utf-8",
            "follow": True,
            "mode": "v3",
            "labels": {"team": "ops"},
        },
    )


def test_only_the_fields_offered_change_and_no_whole_input_field_overrides_them() -> None:
    # A key "" once also opened a field for the whole input, read last: the edit was lost
    # and the original allowed.
    edit = ToolEdit("t", {"": "keep", "command": "rm -rf /tmp/x"})
    read = submit(edit, command=text("rm -rf /tmp/y"))
    assert isinstance(read, tuple)
    assert same_json(read[0], {"": "keep", "command": "rm -rf /tmp/y"})
    # Past 40 fields the whole input is one JSON field, the form's only one.
    many = ToolEdit("t", {"": 0, **{f"k{i}": i for i in range(45)}})
    view = view_of(many)
    inputs = [b for b in view["blocks"] if b["type"] == "input"]
    assert [b["label"]["text"] for b in inputs] == ["Input (JSON)", "Then"]
    read = submit(many, **{"Input (JSON)": text('{"": 1}')})
    assert isinstance(read, tuple)
    assert same_json(read[0], {"": 1})


REFUSED = [
    ("limit", "NaN", "NaN is not a JSON number"),
    ("limit", "Infinity", "Infinity is not a JSON number"),
    ("limit", "-Infinity", "-Infinity is not a JSON number"),
    ("ratio", "1e400", "past the largest number JSON carries"),
    ("limit", "9007199254740993", "is past 2**53"),
    ("ratio", "1.00000000000000000001", "would reach the agent as 1.0"),
    ("limit", "5.5", "Enter a whole number"),
    ("limit", "three", "Enter a number (a whole one)"),
    ("labels", '{"a": NaN}', "NaN is not a JSON number"),
    ("labels", '{"a": [1e400]}', "past the largest number"),
    ("labels", '{"a": "\\ud800"}', "not valid Unicode"),
    ("labels", '{"a": {"\\udfff": 1}}', "not valid Unicode"),
    ("labels", '{"a": 1, "a": 2}', 'The key "a" appears twice'),
    ("labels", "[" * 100 + "]" * 100, "deeper than an edited input may (100 levels)"),
    ("labels", "[" * 2000 + "]" * 2000, "deeper than an edited input may"),
    ("labels", "{not json", "This is not valid JSON"),
]


@pytest.mark.parametrize(("label", "typed", "why"), REFUSED)
def test_a_typed_value_json_cannot_carry_exactly_is_refused_under_its_field(
    label: str, typed: str, why: str
) -> None:
    edit = ToolEdit("deploy", {"limit": 3, "ratio": 0.5, "labels": {"a": "b"}}, SCHEMA)
    refused = submit(edit, **{label: text(typed)})
    assert refused == {block_of(view_of(edit), label): refused[block_of(view_of(edit), label)]}
    message = refused[block_of(view_of(edit), label)]
    assert why in message
    assert message.endswith(".")


def test_an_integer_past_2_53_is_taken_only_where_a_double_holds_it() -> None:
    # 10**18 is a double's own digits (it enters every door); 10**18 + 1 is not.
    edit = ToolEdit("t", {"ids": [10**18], "n": 7})
    read = submit(edit, ids=text(f"[{10**18}, 7]"))
    assert isinstance(read, tuple)
    assert json.dumps(read[0]) == f'{{"ids": [{10**18}, 7], "n": 7}}'
    assert isinstance(submit(edit, ids=text(f"[{10**18 + 1}]")), dict)
    assert isinstance(submit(edit, n=text(str(2**60 + 1))), dict)


def test_a_form_that_no_longer_matches_the_call_is_refused() -> None:
    old = ToolEdit("t", {"a": "x", "b": "y"})
    view = view_of(old)
    values = state_values(view["blocks"], {})
    # The same places now hold other keys: nothing of the old form is applied.
    errors = read_edit_view(ToolEdit("t", {"b": "y", "a": "x"}), values, CHOICES)
    assert isinstance(errors, dict)
    assert all("no longer matches the call" in e for e in errors.values())


def test_block_ids_are_unique_and_every_text_is_bounded_whatever_the_keys_and_names() -> None:
    # Two keys sharing a 253-character prefix; 600 "&" in the agent's name (3,000 escaped).
    long = "k" * 253
    edit = ToolEdit("&" * 600, {long + "ab": "1", long + "ac": "2", "😀" * 1200: "3"})
    view = view_of(edit, who="&" * 600)
    ids = [b["block_id"] for b in view["blocks"] if "block_id" in b]
    assert len(ids) == len(set(ids))
    assert all(len(i) <= 255 for i in ids)
    intro = view["blocks"][0]["text"]["text"]
    assert units(intro) <= 3000
    assert intro.startswith("*" + "&amp;" * 39)  # escaped, and cut with a mark
    assert first_block(edit) == ids[0]


def test_edit_is_offered_only_where_a_field_can_be_edited() -> None:
    def question(edit: ToolEdit) -> AskUserQuestionItem:
        return AskUserQuestionItem(
            id="approval",
            question="Run it?",
            options=(AskUserQuestionOption("Allow once"), AskUserQuestionOption("Deny")),
            intent=AskUserQuestionIntent("Allow once", "tool-approval", edit),
        )

    def shown(edit: ToolEdit) -> str:
        return json.dumps(input_blocks(question(edit), "A1", 0, False), ensure_ascii=False)

    assert '"text": "Edit…"' in shown(ToolEdit("Bash", {"command": "ls"}))
    for edit, why in (
        (ToolEdit("Bash", {"command": "x" * 3001}), "`command` is 3,001 characters long"),
        (ToolEdit("t", {"a": "x" * 3001, "b": [0] * 2000}), "every field of this call's"),
        (ToolEdit("t", {"n": float("inf")}), "this call's input holds NaN or an infinity"),
        # What no door lets in (issue 51) is not offered for edit either.
        (ToolEdit("t", {"n": 2**60 + 1}), "this call's input holds the integer"),
        (ToolEdit("t", {"s": "a\ud800"}), "this call's input holds a lone surrogate"),
        (ToolEdit("t", {}), "this call's input has no fields to edit"),
    ):
        assert unavailable(edit) is not None
        assert editable_fields(edit) == []
        assert '"text": "Edit…"' not in shown(edit)
        assert f"Edit… is not offered: {why}" in shown(edit)
    # The line fits the room render keeps for it, whatever the key.
    worst = ToolEdit("Bash", {"command": "&" * 5000, "&" * 300: 1})
    (line,) = [b for b in input_blocks(question(worst), "A1", 0, True) if b["type"] == "context"]
    assert units(line["elements"][0]["text"]) <= EDIT_NOTE_CHARS
    blocks = input_blocks(question(ToolEdit("t", {"&" * 3000: "x" * 3001})), "A1", 0, True)
    assert block_text_length(blocks) <= render._inputs_bound(2)


def test_form_fields_are_one_judgement_for_the_message_the_form_and_the_reading() -> None:
    edit = ToolEdit("read", {"path": "a", "mode": "v120"}, SCHEMA)
    fields = form_fields(edit)
    view = view_of(edit)
    inputs = [b for b in view["blocks"] if b["type"] == "input"][:-1]
    assert [b["label"]["text"] for b in inputs] == [f.name for f in fields if f.editable]
    assert [f.name for f in editable_fields(edit)] == [f.name for f in fields if f.editable]


def test_an_edit_is_strict_json_or_no_edit() -> None:
    def custom(input_text: str) -> str:
        return (
            '{"relay":"edit","choice":"Allow once","version":2,"input":'
            + input_text
            + ',"edited_by":"U0BOB"}'
        )

    assert read_edit(custom('{"a": 1}')) is not None
    for bad in ('{"a": NaN}', '{"a": Infinity}', '{"a": -Infinity}', '{"a": 1e400}'):
        assert read_edit(custom(bad)) is None, bad
    assert read_edit(custom('{"a": ' + "[" * 100 + "]" * 100 + "}")) is None
    assert read_edit(custom('{"a": ' + "[" * 5000 + "]" * 5000 + "}")) is None
    assert read_edit(custom('{"a": ' + "[" * 99 + "]" * 99 + "}")) is not None
    with pytest.raises(ValueError, match="NaN"):
        edit_custom(Edit({"a": float("nan")}, "Allow once", 2, "U0BOB"))
    # A lone surrogate has no UTF-8 form and no receipt can carry it: no edit holds one.
    with pytest.raises(ValueError, match="lone surrogate"):
        edit_custom(Edit({"a": "\ud800"}, "Allow once", 2, "U0BOB"))
    assert read_edit(custom('{"a": "\\ud800"}')) is None
