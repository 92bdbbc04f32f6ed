"""The "Edit…" form over generated tool inputs (issue 52.3, 49.6): every view is one Slack
accepts, and submitted untouched it gives back exactly the input.

Inputs: any keys (``""``, blank, long, astral, 253-character shared prefixes, ``&``), any
nesting, huge strings and numbers, ``NaN``, lone surrogates; schemas with types, nullable
types, descriptions and enums of up to 150 values. Each view is checked by FakeSlack's
modal rules with slack_sdk's ``View`` validators behind them, by ``View(...).validate_json()``
itself, and against Slack's documented view limits, counted in UTF-16 code units.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from slack_sdk.models.views import View

from relay.seam.intents import ToolEdit
from relay.seam.safejson import refusal
from relay.slack.editing.fields import editable_fields, unavailable
from relay.slack.editing.form import edit_view, read_edit_view
from relay.slack.rendering.text import units
from relay.testing.elements import iter_elements, state_values
from relay.testing.modal_check import view_errors, view_too_large

CHOICES = ("Allow once", "Allow for this session", "&" * 300)
METADATA = json.dumps({"a": "A" * 40, "i": 3, "c": "C0123456789", "t": "1700000000.123456"})
_CHARS = ["x", "&", "<", "😀", "é", "e\u0301", "\r", "\n", "\x00", "\x85", "\ud800", " "]

long_text = st.builds(
    lambda char, count: char * count, st.sampled_from(_CHARS), st.integers(0, 3200)
)
short_text = st.text(st.characters(codec=None), max_size=12)  # any code point, surrogates too
keys = st.one_of(
    st.just(""),
    short_text,
    st.builds(lambda tail: "k" * 253 + tail, st.sampled_from(["ab", "ac", "", "😀"])),
    st.builds(lambda char, count: char * count, st.sampled_from(_CHARS), st.integers(1, 1300)),
)
numbers = st.one_of(
    st.integers(-(10**20), 10**20),
    st.sampled_from([2**53, 2**53 + 1, 2**70, -(2**64) - 1, 10**3100, 0]),
    st.floats(allow_nan=True, allow_infinity=True),
)
leaves = st.one_of(st.none(), st.booleans(), numbers, short_text, long_text)
values = st.recursive(
    leaves,
    lambda children: st.one_of(
        st.lists(children, max_size=4), st.dictionaries(keys, children, max_size=4)
    ),
    max_leaves=12,
)
kinds = st.sampled_from(["string", "integer", "number", "boolean", "object", "array"])
field_schemas = st.one_of(
    st.builds(lambda kind: {"type": kind}, kinds),
    st.builds(lambda kind: {"type": [kind, "null"]}, kinds),
    st.builds(lambda options: {"enum": options}, st.lists(leaves, min_size=1, max_size=5)),
    st.builds(
        lambda count, prefix: {"enum": [f"{prefix}{i}" for i in range(count)]},
        st.sampled_from([1, 100, 150]),
        short_text,
    ),
    st.builds(lambda text: {"type": "string", "description": text}, long_text),
    st.just({}),
)


@st.composite
def tool_edits(draw: st.DrawFn) -> ToolEdit:
    """A tool, its input, and sometimes a schema naming some of its keys and some others;
    an enum sometimes holds the value itself, past its first 100 options or among them."""
    tool = draw(st.sampled_from(["Bash", "Write", "Edit", "exec", "mcp__db__query", "&" * 700]))
    size = draw(st.sampled_from([0, 1, 3, 8, 45]))
    if size > 40:  # past MAX_FIELDS: the whole input as one JSON field
        small = st.one_of(st.none(), st.booleans(), st.integers(-99, 99), short_text)
        tool_input = {f"k{i}": draw(small if i else leaves) for i in range(size)}
        tool_input.update(draw(st.dictionaries(keys, values, max_size=2)))
    else:
        tool_input = draw(st.dictionaries(keys, values, min_size=min(size, 1), max_size=size))
    if tool in ("Bash", "exec") and draw(st.booleans()):
        tool_input["command"] = draw(st.one_of(short_text, long_text))
    if not draw(st.booleans()):
        return ToolEdit(tool, tool_input)
    names = list(tool_input) + draw(st.lists(keys, max_size=3))
    properties: dict[str, Any] = {}
    for name in names:
        if draw(st.booleans()):
            schema = dict(draw(field_schemas))
            if "enum" in schema and name in tool_input and draw(st.booleans()):
                at = min(draw(st.sampled_from([0, 99, 100, 120])), len(schema["enum"]))
                schema["enum"] = [*schema["enum"][:at], tool_input[name], *schema["enum"][at:]]
            properties[name] = schema
    return ToolEdit(tool, tool_input, {"type": "object", "properties": properties})


def text_limits(view: dict[str, Any]) -> list[str]:
    """Slack's documented view limits, in UTF-16 code units, beyond what FakeSlack checks."""
    problems = []
    for name in ("title", "submit", "close"):
        if units(view[name]["text"]) > 24:
            problems.append(name)
    if units(view["private_metadata"]) > 3000 or len(view["blocks"]) > 100:
        problems.append("private_metadata or blocks")
    ids = [b["block_id"] for b in view["blocks"] if "block_id" in b]
    if len(ids) != len(set(ids)) or any(units(i) > 255 for i in ids):
        problems.append("block_ids")
    for block in view["blocks"]:
        if block["type"] == "section" and units(block["text"]["text"]) > 3000:
            problems.append("section text")
        if block["type"] == "context":
            problems += ["context"] * sum(units(e["text"]) > 3000 for e in block["elements"])
        if block["type"] == "input":
            texts = [block["label"]["text"], block.get("hint", {}).get("text", "")]
            problems += ["label or hint"] * sum(units(t) > 2000 for t in texts)
    for located in iter_elements(view["blocks"]):
        element = located.element
        if units(located.action_id) > 255:
            problems.append("action_id")
        options = element.get("options", [])
        limit = 10 if element["type"] in ("radio_buttons", "checkboxes") else 100
        if len(options) > limit:
            problems.append("options")
        for option in options:
            if units(option["text"]["text"]) > 75 or units(option["value"]) > 150:
                problems.append("option")
        initial = element.get("initial_value", "")
        if units(initial) > 3000 or element.get("max_length", 0) > 3000:
            problems.append("initial_value")
    return problems


@settings(
    max_examples=250,
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(edit=tool_edits(), who=st.one_of(short_text, long_text, st.just("&" * 600)))
def test_every_view_is_one_slack_accepts_and_untouched_gives_back_the_input(
    edit: ToolEdit, who: str
) -> None:
    view = edit_view(edit, metadata=METADATA, choices=CHOICES, who=who)
    assert view_errors(view) == []
    View(**view).validate_json()
    assert text_limits(view) == []
    assert not view_too_large(view)
    json.dumps(view, ensure_ascii=False).encode()  # no lone surrogate: UTF-8 carries it all
    # The message's judgement and the form's agree: an input block besides "Then" exactly
    # when Edit… is offered.
    inputs = [b for b in view["blocks"] if b["type"] == "input"]
    assert (len(inputs) > 1) == (unavailable(edit) is None) == bool(editable_fields(edit))
    read = read_edit_view(edit, state_values(view["blocks"], {}), CHOICES)
    assert isinstance(read, tuple), read
    assert json.dumps(read[0]) == json.dumps(dict(edit.input))
    assert read[1] == CHOICES[0]


@settings(max_examples=150, derandomize=True, deadline=None)
@given(edit=tool_edits(), typed=st.text(st.characters(codec="utf-8"), max_size=40))
def test_typing_into_one_text_field_changes_that_field_alone(edit: ToolEdit, typed: str) -> None:
    # An input no door lets in (a lone surrogate elsewhere in it: JSON_LONE_SURROGATE at the
    # boundary) is refused as a whole when submitted, whichever field was typed into. And
    # Slack's text is UTF-8: no lone surrogate is typed (Hypothesis can draw one from the
    # constants it collects out of loaded modules, despite the codec).
    assume(refusal(dict(edit.input)) is None and refusal(typed) is None)
    view = edit_view(edit, metadata=METADATA, choices=CHOICES, who="Claude")
    fields = editable_fields(edit)
    inputs = [b for b in view["blocks"] if b["type"] == "input"]  # one a field, then "Then"
    texts = [i for i, f in enumerate(fields) if f.kind == "string"]
    if not texts:
        return
    field, block = fields[texts[0]], inputs[texts[0]]
    typed = f"edited: {typed}"  # never the text it opened with
    state = {(block["block_id"], "v"): {"type": "plain_text_input", "value": typed}}
    read = read_edit_view(edit, state_values(view["blocks"], state), CHOICES)
    assert isinstance(read, tuple), read
    assert json.dumps(read[0]) == json.dumps({**edit.input, field.name: typed})
