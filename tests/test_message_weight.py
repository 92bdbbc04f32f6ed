"""Issue 52.6: the heaviest question a message can carry stays under the one refusal of a
message Slack judged too long (slackapi/bolt-js#2867: 11,341 characters of block text,
17,693+1 bytes of blocks JSON), pending and once answered.

The heaviest shape: 100 options with labels and descriptions as long as a message takes
(searched over a grid, in ASCII and in scripts UTF-8 spends 2 and 3 bytes on), several to
choose (a menu with Submit), a long detail, the Edit… button, a tally of 100 votes.
"""

from __future__ import annotations

import itertools
from datetime import UTC, datetime

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from relay.errors import UserInteractionError
from relay.seam.intents import AskUserQuestionIntent, ToolEdit
from relay.seam.parties import Vote
from relay.seam.questions import AgentRef, AskUserQuestionItem, AskUserQuestionOption, Responder
from relay.slack.intake.parse import parse_click
from relay.slack.rendering.render import MESSAGE_BYTES, render_outcome, render_question
from relay.slack.rendering.text import block_text_length
from relay.testing import check_blocks
from tests.test_render import questions, text

REFUSED_CHARS = 11_341
REFUSED_BYTES = 17_694  # (17,693 bytes and one more)
ASK = "01JABCDEFGHJKMNPQRSTVWXYZ0"


def shape(label: int, description: int, quorum: int | None, letter: str) -> AskUserQuestionItem:
    options = tuple(
        AskUserQuestionOption(
            label=f"{i:03d}" + letter * (label - 3),
            description=letter * description if description else None,
        )
        for i in range(100)
    )
    edit = ToolEdit(tool="Bash", input={"command": "terraform apply " + letter * 500})
    return AskUserQuestionItem(
        id="heavy",
        question=letter * 2_000,
        detail=letter * 20_000,
        options=options,
        multi_select=True,
        approvals_required=quorum,
        intent=AskUserQuestionIntent(approve=options[0].label, kind="tool-approval", edit=edit),
    )


def votes(question: AskUserQuestionItem) -> tuple[Vote, ...]:
    at = datetime(2026, 1, 1, tzinfo=UTC)
    labels = question.labels
    return tuple(
        Vote(by=Responder(id=f"U{i:09d}", name="x" * 80), label=labels[i % len(labels)], at=at)
        for i in range(100)
    )


def weight(blocks: list[dict[str, object]]) -> tuple[int, int]:
    """Characters of block text, and bytes of compact UTF-8 JSON (as bolt-js sends it)."""
    return block_text_length(blocks), len(orjson.dumps(blocks))


def heaviest() -> list[tuple[int, int, AskUserQuestionItem, list[dict[str, object]]]]:
    found = []
    agent = AgentRef(id="agent", name="A" * 200)
    sizes = (4, 10, 20, 30, 45, 60, 75)
    grid = itertools.product(sizes, (0, *sizes), (None, 2), ("W", "é", "中"))
    for label, description, quorum, letter in grid:
        question = shape(label, description, quorum, letter)
        try:
            pending = render_question(
                question, ask_id=ASK, index=0, agent=agent, deadline=9e9, votes=votes(question)
            )
        except UserInteractionError:
            continue  # refused when asked: never posted
        found.append((*weight(pending.blocks), question, pending.blocks))
    return found


@pytest.fixture(scope="module")
def rendered() -> list[tuple[int, int, AskUserQuestionItem, list[dict[str, object]]]]:
    return heaviest()


def test_the_heaviest_question_stays_under_both_numbers_of_the_refusal(
    rendered: list[tuple[int, int, AskUserQuestionItem, list[dict[str, object]]]],
) -> None:
    assert len(rendered) >= 10  # (the heavier part of the grid is refused when asked)
    chars = max(r[0] for r in rendered)
    size = max(r[1] for r in rendered)
    assert chars < REFUSED_CHARS - 1, chars
    assert size <= MESSAGE_BYTES < REFUSED_BYTES - 1, size
    # Some of them are as heavy as the limits allow: the bound is not vacuous.
    assert size > 15_000, size
    for _, _, _, blocks in rendered:
        assert check_blocks(blocks) is None


def test_their_final_updates_stay_under_both_numbers_too(
    rendered: list[tuple[int, int, AskUserQuestionItem, list[dict[str, object]]]],
) -> None:
    for _, _, question, _ in rendered[::7]:
        final = render_outcome(question, outcome="timed_out")
        chars, size = weight(final.blocks)
        assert chars < REFUSED_CHARS - 1
        assert size < REFUSED_BYTES - 1


def test_an_option_s_value_is_its_index_and_a_click_on_it_reads_back() -> None:
    question = shape(10, 0, None, "W")
    blocks = render_question(question, ask_id=ASK, index=0).blocks
    menu = next(e for b in blocks if b["type"] == "actions" for e in b["elements"])
    assert [o["value"] for o in menu["options"]] == [str(i) for i in range(100)]
    act = next(b for b in blocks if b["type"] == "actions")
    payload = {
        "type": "block_actions",
        "user": {"id": "U0BOB"},
        "actions": [{"action_id": "relay.select", "block_id": act["block_id"],
                     "selected_option": menu["options"][99]}],
    }  # fmt: skip
    click = parse_click(payload)
    assert click is not None
    assert click.option == 99


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(
    question=questions(),
    agent=st.none() | st.builds(AgentRef, st.text(min_size=1, max_size=50), st.none() | text),
)
def test_no_question_asked_weighs_more_than_the_budget(
    question: AskUserQuestionItem, agent: AgentRef | None
) -> None:
    # Whatever path the layout takes (the bound that skips building the inputs, or measuring).
    try:
        pending = render_question(question, ask_id=ASK, index=0, agent=agent, deadline=9e9)
    except UserInteractionError:
        return
    assert weight(pending.blocks)[1] <= MESSAGE_BYTES
    final = render_outcome(question, outcome="timed_out", agent=agent)
    assert weight(final.blocks)[1] <= MESSAGE_BYTES
