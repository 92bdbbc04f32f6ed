"""What the page shows, and that agent-supplied text can never run in it.

Two ways in: questions asked through the relay (the text the relay really posts), and Block
Kit handed straight to the page's renderer (``window.BlockKit``), for markup the relay itself
would never produce, such as a ``javascript:`` link in mrkdwn."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import aiohttp

from relay import AgentRef, AskUserQuestionItem, AskUserQuestionOption, AskUserQuestionRequest
from relay.sandbox import CONTENT_SECURITY_POLICY
from tests.browser.browser import Page
from tests.browser.conftest import ALICE, Agent
from tests.server_env import Relay

MARK = "window.__xss = (window.__xss || 0) + 1"
PAYLOADS = (
    f"<script>{MARK}</script>",
    f'<img src=x onerror="{MARK}">',
    f"<svg onload={MARK}>",
    f'"><iframe src="javascript:{MARK}"></iframe>',
    f"[click me](javascript:{MARK})",
    f"<javascript:{MARK}|click me>",
    f"<data:text/html,<script>{MARK}</script>|data link>",
    f"`</code><b onmouseover={MARK}>x</b>`",
    "&lt;script&gt;&amp;lt;",
    f"*bold <a href=javascript:{MARK}>x</a>*",
)
HOSTILE = "  ".join(PAYLOADS)

# Everything the page made must be inert: no script or frame elements, no event-handler
# attributes, no link other than http(s) or mailto, and no marker set by a payload.
AUDIT = """
const root = arguments[0] ? document.querySelector(arguments[0]) : document.body;
const bad = [];
for (const node of root.querySelectorAll("*")) {
  const tag = node.tagName.toLowerCase();
  if (["script", "iframe", "object", "embed", "img", "svg", "form", "style", "link"].includes(tag))
    bad.push("element " + tag);
  for (const attr of node.attributes) {
    if (attr.name.startsWith("on")) bad.push("attribute " + attr.name + " on " + tag);
    if (["href", "src", "action", "formaction", "xlink:href"].includes(attr.name)
        && !/^(https?:\\/\\/|mailto:)/i.test(attr.value)) bad.push(attr.name + "=" + attr.value);
  }
}
return {bad, marker: window.__xss || 0};
"""


def hostile_question(qid: str, *, multi: bool = False, count: int = 3) -> AskUserQuestionItem:
    options = tuple(
        AskUserQuestionOption(f"{PAYLOADS[i % len(PAYLOADS)]} #{i}", HOSTILE[:200])
        for i in range(count)
    )
    return AskUserQuestionItem(
        id=qid,
        header=PAYLOADS[1][:100],
        question=f"Q-{qid} {HOSTILE}"[:2500],
        detail=f"# Plan {HOSTILE}\n\n" + "\n".join(f"- {p}" for p in PAYLOADS),
        options=options,
        multi_select=multi,
    )


async def audit(page: Page, selector: str | None = "#messages") -> None:
    result = await page.script(AUDIT, selector)
    assert result == {"bad": [], "marker": 0}


async def test_hostile_text_in_every_field_of_an_ask_is_shown_as_text(
    page: Page, agent: Agent
) -> None:
    request = AskUserQuestionRequest(
        questions=(
            hostile_question("buttons"),
            hostile_question("menu", count=7),
            hostile_question("checks", multi=True),
            hostile_question("multi", multi=True, count=12),
        ),
        agent=AgentRef(id="x", name=PAYLOADS[0] + PAYLOADS[1]),
    )
    task = agent.spawn(agent.service.ask(request))
    await page.open(ALICE)
    for qid in ("buttons", "menu", "checks", "multi"):
        await page.message(f"Q-{qid}")
    await audit(page)
    text = await page.text_of("Q-buttons")
    assert "<script>" in text
    assert "onerror" in text
    # The answer typed back (shown in the outcome) is hostile too.
    for qid in ("buttons", "menu", "checks", "multi"):
        await page.type(f"Q-{qid}", PAYLOADS[1] + PAYLOADS[5])
        await page.wait_for_text(f"Q-{qid}", "Answered by @alice")
    answer = await asyncio.wait_for(task, 10)
    assert {a.custom for a in answer.answers} == {PAYLOADS[1] + PAYLOADS[5]}
    await audit(page)
    assert await page.script("return document.title") == "relay sandbox"


async def test_the_renderer_never_turns_block_kit_text_into_markup_or_a_live_link(
    page: Page,
) -> None:
    await page.open(ALICE)
    text = {"type": "mrkdwn", "text": HOSTILE}
    plain = {"type": "plain_text", "text": HOSTILE}
    option = {"text": plain, "value": "0", "description": plain}
    blocks: list[dict[str, Any]] = [
        {"type": "header", "text": plain},
        {"type": "section", "text": text, "fields": [text, plain]},
        {"type": "section", "text": text, "accessory": {"type": "button", "text": plain}},
        {"type": "markdown", "text": HOSTILE + "\n\n" + "\n".join(f"* {p}" for p in PAYLOADS)},
        {
            "type": "context",
            "elements": [
                text,
                plain,
                {"type": "image", "alt_text": HOSTILE, "image_url": f"javascript:{MARK}"},
            ],
        },
        {"type": "image", "alt_text": HOSTILE, "image_url": "https://example.com/x.png"},
        {
            "type": "actions",
            "block_id": HOSTILE,
            "elements": [
                {
                    "type": "button",
                    "text": plain,
                    "action_id": HOSTILE,
                    "url": f"javascript:{MARK}",
                },
                {"type": "static_select", "placeholder": plain, "options": [option]},
                {"type": "multi_static_select", "placeholder": plain, "options": [option]},
                {"type": "checkboxes", "options": [{**option, "text": text}]},
                {"type": "radio_buttons", "options": [option]},
                {"type": HOSTILE},
            ],
        },
        {
            "type": "input",
            "label": plain,
            "hint": plain,
            "element": {"type": "plain_text_input", "placeholder": plain, "initial_value": HOSTILE},
        },
        {"type": HOSTILE, "text": text},
    ]
    await page.script(
        """
        const target = document.createElement("div");
        target.id = "render-test";
        document.body.append(target);
        const ctx = {userName: () => null, channelName: () => null, groupHandle: () => null,
                     interactive: false};
        target.append(window.BlockKit.renderBlocks(JSON.parse(arguments[0]), ctx));
        """,
        json.dumps(blocks),
    )
    await audit(page, "#render-test")
    shown = await page.script("return document.getElementById('render-test').textContent")
    assert "<script>" in shown
    assert "javascript:" in shown


async def test_slack_formatting_is_rendered_as_slack_shows_it(page: Page) -> None:
    await page.open(ALICE)
    blocks = [
        {"type": "header", "text": {"type": "plain_text", "text": "Deploy gate :rocket:"}},
        {
            "type": "section",
            "text": {
                "type": "mrkdwn",
                "text": "*bold* _italic_ ~gone~ `code` <https://example.com|a link>"
                " <@U0SBALICE> <!subteam^S0SBONCALL> <#C0SBDEPLOYS> <!here> 5 &lt; 6 &amp; x\n"
                "> quoted line\n• a bullet\n```a code\nblock```",
            },
        },
        {"type": "divider"},
        {
            "type": "markdown",
            "text": "## Steps\n1. **first** step\n2. second with [docs](https://example.com/d)\n"
            "   - nested _item_\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n> a quote",
        },
        {"type": "context", "elements": [{"type": "mrkdwn", "text": "Asked by *CI*"}]},
        {
            "type": "actions",
            "block_id": "b1",
            "elements": [
                {
                    "type": "button",
                    "text": {"type": "plain_text", "text": "Go"},
                    "style": "primary",
                },
                {
                    "type": "button",
                    "text": {"type": "plain_text", "text": "Stop"},
                    "style": "danger",
                },
            ],
        },
    ]
    result = await page.script(
        """
        const target = document.createElement("div");
        target.id = "render-test";
        document.body.append(target);
        const names = {U0SBALICE: "alice"}, groups = {S0SBONCALL: "oncall"};
        const ctx = {userName: (id) => names[id], channelName: (id) => id === "C0SBDEPLOYS" ?
                     "deploys" : null, groupHandle: (id) => groups[id], interactive: false};
        target.append(window.BlockKit.renderBlocks(JSON.parse(arguments[0]), ctx));
        const q = (s) => [...target.querySelectorAll(s)].map((n) => n.textContent);
        return {
          header: q(".blk-header"), strong: q(".blk-section .mrkdwn strong"), em: q(".mrkdwn em"),
          s: q(".mrkdwn s"), code: q(".mrkdwn code"), pre: q(".mrkdwn pre"),
          links: [...target.querySelectorAll("a")].map((a) => [a.textContent, a.href]),
          mentions: q(".mention"), quote: q(".mrkdwn blockquote"),
          mdHeadings: q(".md-h2"), ol: q(".markdown ol > li").length,
          nested: q(".markdown ol ul > li"), cells: q(".md-table td"),
          mdQuote: q(".markdown blockquote"),
          hr: target.querySelectorAll("hr").length, context: q(".blk-context"),
          primary: q("button.primary"), danger: q("button.danger"),
          text: target.querySelector(".mrkdwn").textContent,
        };
        """,
        json.dumps(blocks),
    )
    assert result["header"] == ["Deploy gate 🚀"]
    assert result["strong"] == ["bold"]
    assert result["em"] == ["italic"]
    assert result["s"] == ["gone"]
    assert result["code"] == ["code"]
    assert result["pre"] == ["a code\nblock"]
    assert result["links"] == [
        ["a link", "https://example.com/"],
        ["docs", "https://example.com/d"],
    ]
    assert result["mentions"] == ["@alice", "@oncall", "#deploys", "@here"]
    assert result["quote"] == ["quoted line"]
    assert "5 < 6 & x" in result["text"]
    assert "• a bullet" in result["text"]
    assert result["mdHeadings"] == ["Steps"]
    assert result["ol"] == 2
    assert result["nested"] == ["nested item"]
    assert result["cells"] == ["1", "2"]
    assert result["mdQuote"] == ["a quote"]
    assert result["hr"] == 1
    assert result["context"] == ["Asked by CI"]
    assert (result["primary"], result["danger"]) == (["Go"], ["Stop"])


async def test_emoji_shortcodes_read_as_the_emoji_slack_shows(page: Page) -> None:
    # The shortcodes relay's own messages use, common ones, and what stays text as in
    # Slack: an unknown name, a name every JavaScript object has, one inside `code`.
    await page.open(ALICE)
    blocks = [
        {"type": "header", "text": {"type": "plain_text", "text": ":rocket: Ship"}},
        {
            "type": "section",
            "text": {
                "type": "mrkdwn",
                "text": ":pencil2: Edited by <@U0SBALICE> :white_check_mark: :no_entry:"
                " :rotating_light: :alarm_clock: :hourglass: :next_track_button: :warning:"
                " :+1: :tada: :not_an_emoji_here: :constructor: `:x:`",
            },
        },
        {"type": "markdown", "text": "**Done** :sparkles:"},
        {"type": "context", "elements": [{"type": "plain_text", "text": ":eyes:", "emoji": False}]},
    ]
    shown = await page.script(
        """
        const target = document.createElement("div");
        target.id = "emoji-test";
        document.body.append(target);
        target.append(window.BlockKit.renderBlocks(JSON.parse(arguments[0]),
                      {userName: (id) => id === "U0SBALICE" ? "alice" : null}));
        return [...target.children[0].children].map((n) => n.textContent);
        """,
        json.dumps(blocks),
    )
    assert shown == [
        "\U0001f680 Ship",
        "\u270f\ufe0f Edited by @alice \u2705 \u26d4 \U0001f6a8 \u23f0 \u231b"
        " \u23ed\ufe0f \u26a0\ufe0f \U0001f44d \U0001f389 :not_an_emoji_here: :constructor: :x:",
        "Done \u2728",
        ":eyes:",
    ]


async def test_every_sample_renders_without_a_policy_violation_or_script_error(
    page: Page, sandbox: Relay
) -> None:
    await page.open(ALICE)
    for name in ("plan-review", "deploy-gate", "multi-select", "long-detail"):
        await page.run(
            lambda n=name: page.driver.find_element(
                "css selector", f"button[data-sample='{n}']"
            ).click()
        )
    await page.message("Approve this plan")
    await page.message("release 1.4.0")
    await page.message("When should it start?")
    await page.message("Is this capacity review complete")
    await page.click("Approve this plan", "Approve")
    await page.wait_for_text("Approve this plan", "Answered by @alice")
    logs = await page.run(page.driver.get_log, "browser")
    assert [entry for entry in logs if entry["level"] == "SEVERE"] == []
    await audit(page)


async def test_the_page_and_its_assets_carry_a_strict_content_security_policy(
    sandbox: Relay,
) -> None:
    async with aiohttp.ClientSession() as session:
        for path in ("/", *(f"/sandbox/assets/{n}.js" for n in ("emoji", "blockkit", "sandbox"))):
            async with session.get(sandbox.url + path) as response:
                assert response.status == 200
                assert response.headers["Content-Security-Policy"] == CONTENT_SECURITY_POLICY
                assert response.headers["X-Content-Type-Options"] == "nosniff"
        async with session.get(sandbox.url + "/sandbox/assets/..%2Fpage.py") as response:
            assert response.status == 404
    for rule in ("script-src 'self'", "require-trusted-types-for 'script'", "default-src 'none'"):
        assert rule in CONTENT_SECURITY_POLICY
    assert "unsafe" not in CONTENT_SECURITY_POLICY
