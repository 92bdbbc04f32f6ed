"""Text outside the Basic Multilingual Plane (most emoji) at Slack's limits.

Slack's reference gives its limits in "characters" and names no unit; an emoji like "😀" is one
code point (Python's ``len``, slack_sdk's validators) but two UTF-16 code units. FakeSlack
counts code units, the strict reading, so 1,501 of them in a section are refused although
slack_sdk passes them; the relay counts the same way, so what it renders is never refused.
Each test goes over real HTTP with slack_sdk's client, as an app under test would call it."""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator
from typing import Any

import pytest
from slack_sdk.errors import SlackApiError
from slack_sdk.models.blocks import SectionBlock
from slack_sdk.web.async_client import AsyncWebClient

from relay import AgentRef, AskUserQuestionAnswerItem, AskUserQuestionItem, AskUserQuestionOption
from relay.errors import ErrorCode, UserInteractionError
from relay.seam.intents import ToolEdit
from relay.slack.editing.fields import editable_fields, unavailable
from relay.slack.editing.form import edit_view
from relay.slack.rendering import kit
from relay.slack.rendering.render import (
    MESSAGE_CHARS,
    render_detail_reply,
    render_outcome,
    render_question,
)
from relay.slack.rendering.text import (
    block_text_length,
    chunks,
    cut,
    escape,
    head,
    shorten,
    units,
    within,
)
from relay.testing import FakeSlack
from relay.testing.modal_check import view_errors

TOKEN = "xoxb-astral-test"
WIDE = "😀"  # U+1F600: one code point, two UTF-16 code units
MIXED = "a😀é&<@U1>"  # ASCII, an emoji, BMP, an escape and a token


def code_units(text: str) -> int:
    """UTF-16 code units, counted here independently of the relay's and the fake's own."""
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def no_half_pairs(text: str) -> bool:
    return not any("\ud800" <= char <= "\udfff" for char in text)


@pytest.fixture(autouse=True)
def _no_developer_tokens(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith(("SLACK_", "RELAY_")):
            monkeypatch.delenv(name)


@pytest.fixture
async def slack() -> AsyncIterator[FakeSlack]:
    async with FakeSlack(bot_token=TOKEN, channels={"C0OPS": "ops"}, rate_limits=False) as fake:
        yield fake


@pytest.fixture
def client(slack: FakeSlack) -> AsyncWebClient:
    return AsyncWebClient(token=TOKEN, base_url=slack.base_url)


def plain(text: str) -> dict[str, Any]:
    return {"type": "plain_text", "text": text}


def mrkdwn(text: str) -> dict[str, Any]:
    return {"type": "mrkdwn", "text": text}


def section(text: str) -> dict[str, Any]:
    return {"type": "section", "text": mrkdwn(text)}


def button(text: str) -> dict[str, Any]:
    return {"type": "actions", "elements": [{"type": "button", "text": plain(text), "value": "1"}]}


def header(text: str) -> dict[str, Any]:
    return {"type": "header", "text": plain(text)}


def context(text: str) -> dict[str, Any]:
    return {"type": "context", "elements": [mrkdwn(text)]}


def label(text: str) -> dict[str, Any]:
    element = {"type": "plain_text_input", "action_id": "why"}
    return {"type": "input", "label": plain(text), "element": element}


def option(text: str) -> dict[str, Any]:
    element = {
        "type": "static_select",
        "action_id": "pick",
        "options": [{"text": plain(text), "value": "1"}],
    }
    return {"type": "actions", "elements": [element]}


# Each case: a block builder, Slack's limit, and where the refusal points.
LIMITS = [
    pytest.param(section, 3000, "/blocks/0/text/text", id="section-3000"),
    pytest.param(context, 3000, "/blocks/0/elements/0/text", id="context-3000"),
    pytest.param(header, 150, "/blocks/0/text/text", id="header-150"),
    pytest.param(button, 75, "/blocks/0/elements/0/text/text", id="button-75"),
    pytest.param(option, 75, "/blocks/0/elements/0/options/0/text/text", id="option-75"),
    pytest.param(label, 2000, "/blocks/0/label/text", id="input-label-2000"),
]


@pytest.mark.parametrize(("build", "limit", "pointer"), LIMITS)
async def test_emoji_count_two_against_each_limit(
    slack: FakeSlack, client: AsyncWebClient, build: Any, limit: int, pointer: str
) -> None:
    at_limit = WIDE * (limit // 2)
    await client.chat_postMessage(channel="C0OPS", text="fits", blocks=[build(at_limit)])

    over = at_limit + WIDE  # limit // 2 + 1 code points: slack_sdk's len() passes them
    assert len(over) <= limit
    with pytest.raises(SlackApiError) as raised:
        await client.chat_postMessage(channel="C0OPS", text="over", blocks=[build(over)])
    body = raised.value.response.data
    assert isinstance(body, dict)
    assert body["error"] == "invalid_blocks"
    expected = f"must be less than {limit + 1} characters [json-pointer:{pointer}]"
    assert expected in body["errors"]
    assert f"[ERROR] {expected}" in body["response_metadata"]["messages"]
    assert len(slack.messages) == 1


def test_slack_sdk_alone_counts_code_points() -> None:
    # Why the fake does not leave lengths to slack_sdk: its validators pass this section.
    SectionBlock(text=mrkdwn(WIDE * 1501)).validate_json()


async def test_message_text_of_40000_code_units_is_the_most(
    slack: FakeSlack, client: AsyncWebClient
) -> None:
    await client.chat_postMessage(channel="C0OPS", text=WIDE * 20_000)
    with pytest.raises(SlackApiError) as raised:
        await client.chat_postMessage(channel="C0OPS", text=WIDE * 20_001)
    assert raised.value.response["error"] == "msg_too_long"
    assert len(slack.messages) == 1


async def test_markdown_blocks_hold_12000_code_units_in_all(client: AsyncWebClient) -> None:
    # (Past 11,340 in all, msg_blocks_too_long refuses first: see the next test.)
    most = {"type": "markdown", "text": WIDE * 5670}
    await client.chat_postMessage(channel="C0OPS", text="fits", blocks=[most])
    half, more = (
        {"type": "markdown", "text": WIDE * 3000},
        {"type": "markdown", "text": WIDE * 3001},
    )
    with pytest.raises(SlackApiError) as raised:
        await client.chat_postMessage(channel="C0OPS", text="over", blocks=[half, more])
    assert raised.value.response["error"] == "invalid_blocks"
    assert "markdown blocks hold 12002 characters in total, more than 12000" in str(
        raised.value.response["errors"]
    )


async def test_blocks_text_in_total_counts_code_units(client: AsyncWebClient) -> None:
    # 5,800 code points, 11,600 code units: past the 11,340 the fake takes in one message.
    blocks = [section(WIDE * 1450) for _ in range(4)]
    with pytest.raises(SlackApiError) as raised:
        await client.chat_postMessage(channel="C0OPS", text="over", blocks=blocks)
    assert raised.value.response["error"] == "msg_blocks_too_long"


@pytest.mark.parametrize(
    ("field", "limit"),
    [("title", 24), ("submit", 24), ("close", 24)],
)
def test_a_modals_title_and_buttons_count_code_units(field: str, limit: int) -> None:
    view = {
        "type": "modal",
        "title": plain("Edit"),
        "submit": plain("Go"),
        "close": plain("Cancel"),
        "blocks": [label(WIDE * 1000)],  # an input label at its 2,000
    }
    assert view_errors({**view, field: plain(WIDE * (limit // 2))}) == []
    errors = view_errors({**view, field: plain(WIDE * (limit // 2 + 1))})
    assert errors == [f"must be less than {limit + 1} characters [json-pointer:/view/{field}/text]"]
    errors = view_errors({**view, "blocks": [label(WIDE * 1001)]})
    assert errors == ["must be less than 2001 characters [json-pointer:/view/blocks/0/label/text]"]


# -- the relay's side: it counts the same way, so nothing it sends is refused --------------------


@pytest.mark.parametrize("text", ["x" * 4000, WIDE * 4000, MIXED * 500, "é" * 4000, "&" * 900])
@pytest.mark.parametrize("limit", [1, 2, 3, 75, 150, 3000])
def test_the_relays_cuts_fit_in_code_units_and_never_split_an_emoji(text: str, limit: int) -> None:
    assert within(text, limit) == (code_units(text) <= limit)
    assert units(text) == code_units(text)
    kept = cut(text, limit)
    assert text.startswith(kept)
    assert no_half_pairs(kept)
    assert code_units(kept) <= limit
    if not within(text, limit):  # nothing more would fit
        assert code_units(text[: head(text, limit) + 1]) > limit
    shown = shorten(text, limit) if limit > 1 else None
    if shown is not None:
        assert code_units(shown) <= limit
        assert no_half_pairs(shown)
    fitted = kit.fit(escape(text), limit) if limit > 1 else None
    if fitted is not None:
        assert code_units(fitted) <= limit
        assert fitted.endswith("…")
        assert fitted.count("<") == fitted.count(">")  # no token cut in half
        assert "&" not in fitted.rsplit(";", 1)[-1]  # nor an escape
    assert code_units(kit.plain(text, max(limit, 2))["text"]) <= max(limit, 2)
    pieces = chunks(escape(text), max(limit, 6))
    assert "".join(pieces) == escape(text)
    assert all(code_units(p) <= max(limit, 6) and no_half_pairs(p) for p in pieces)


def test_fit_keeps_a_token_whole_next_to_emoji() -> None:
    text = WIDE * 1495 + "<@U0123456789>"
    fitted = kit.fit(text, 3000)
    assert fitted == WIDE * 1495 + "…"
    assert code_units(kit.fit("b" * 2995 + WIDE + "&amp;", 3000)) <= 3000


def wide_question(**extra: Any) -> AskUserQuestionItem:
    fields: dict[str, Any] = {
        "id": "q",
        "question": WIDE * 3000,  # the reader's limit counts characters: allowed
        "header": WIDE * 150,
        "detail": (WIDE * 99 + "\n") * 300,
        "default": WIDE * 80,
    }
    fields.update(extra)
    return AskUserQuestionItem(**fields)


QUESTIONS = [
    pytest.param(
        wide_question(options=(AskUserQuestionOption(WIDE * 80), AskUserQuestionOption("No"))),
        id="buttons",
    ),
    pytest.param(
        wide_question(
            question=WIDE * 300,
            options=tuple(AskUserQuestionOption(WIDE * 80 + str(i), WIDE * 40) for i in range(12)),
            default=None,
        ),
        id="menu",
    ),
    pytest.param(
        wide_question(
            question=WIDE * 300,
            options=tuple(AskUserQuestionOption(f"{i}" + WIDE * 40, WIDE * 100) for i in range(8)),
            multi_select=True,
            default=None,
        ),
        id="checkboxes",
    ),
    pytest.param(wide_question(options=None, default=None), id="free-text"),
]


@pytest.mark.parametrize("question", QUESTIONS)
async def test_the_fake_accepts_what_the_relay_renders_of_emoji_at_every_limit(
    slack: FakeSlack, client: AsyncWebClient, question: AskUserQuestionItem
) -> None:
    agent = AgentRef("agent", WIDE * 300)
    refused: UserInteractionError | None = None
    try:
        live = render_question(question, ask_id="A1", index=0, agent=agent, deadline=1e9)
    except UserInteractionError as exc:
        refused = exc
    if refused is not None:
        # Too heavy for one message even with its detail in the thread (Slack has refused
        # 17,694 bytes of blocks): refused when asked, with what to do, and nothing posted.
        assert refused.code == ErrorCode.BAD_REQUEST
        assert "one message safely holds" in str(refused)
        assert not slack.messages
        return
    assert code_units(live.text) <= 40_000
    assert block_text_length(live.blocks) <= MESSAGE_CHARS
    posted = await client.chat_postMessage(channel="C0OPS", text=live.text, blocks=live.blocks)
    for part, piece in enumerate(live.detail_overflow, start=1):
        reply = render_detail_reply(piece, part=part, parts=len(live.detail_overflow))
        await client.chat_postMessage(channel="C0OPS", thread_ts=posted["ts"], **reply)
    labels = question.labels
    answer = AskUserQuestionAnswerItem(
        id="q", selected=labels[:1], custom=None if labels else (WIDE * 99 + "\n") * 100
    )
    for ended in (
        render_outcome(question, outcome="answered", item=answer, agent=agent),
        render_outcome(question, outcome="timed_out", agent=agent),
    ):
        await client.chat_update(
            channel="C0OPS", ts=posted["ts"], text=ended.text, blocks=ended.blocks
        )
    sent = [m for m in slack.messages if m.channel == "C0OPS"]
    assert sent
    assert all(no_half_pairs(json.dumps(m.blocks, ensure_ascii=False)) for m in sent)


def test_the_edit_form_fits_emoji_in_code_units() -> None:
    name = WIDE * 1200  # a field name (label, 2,000) and block_id (255) past their limits
    edit = ToolEdit(
        tool="deploy",
        input={name: WIDE * 1500, "mode": WIDE * 100},
        input_schema={
            "properties": {
                name: {"type": "string", "description": WIDE * 1200},
                "mode": {"enum": [WIDE * 100, "b"]},
            }
        },
    )
    # 3,000 code units: the form offers it whole.
    assert [f.name for f in editable_fields(edit)] == [name, "mode"]
    view = edit_view(edit, metadata="m", choices=("Allow once",), who=WIDE * 50)
    assert view_errors(view) == []
    too_long = unavailable(ToolEdit(tool="deploy", input={"text": WIDE * 1501}))
    assert too_long is not None
    assert "3,002 characters long" in too_long
