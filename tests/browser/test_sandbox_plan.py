"""An approved plan in the sandbox, in a real browser: the plan sample goes to
``POST /v1/plans`` and shows its scope under the plan; approved in the page, a call inside it
is allowed at once with no post and the decision naming the plan, and a call outside it is
posted, saying so, with *Add to the plan's scope* and *Stop the plan*. That run makes
docs/plans.png."""

from __future__ import annotations

import os
from pathlib import Path

from selenium.webdriver.common.by import By

from tests.browser.browser import Page
from tests.browser.conftest import ALICE

ROOT = Path(__file__).resolve().parents[2]
SCREENSHOT = ROOT / "docs" / "plans.png"
# Set UPDATE_SCREENSHOTS=1 to rewrite the docs' screenshot from this run.
UPDATE_SCREENSHOTS = os.environ.get("UPDATE_SCREENSHOTS") == "1"
PLAN = "show invoice totals in euros"
_FRAMED = """
const heading = [...document.querySelectorAll('#messages *')]
  .find(n => n.children.length === 0 && n.textContent.startsWith(arguments[0]));
const messages = document.getElementById('messages');
const top = messages.getBoundingClientRect().top;
messages.scrollTop += heading.getBoundingClientRect().top - top - 8;
const sidebar = document.getElementById('sidebar');
sidebar.scrollTop += document.getElementById('samples').getBoundingClientRect().top - 40;
"""
MESSAGES = "return document.querySelectorAll('#messages .message').length"


async def test_a_plan_approved_in_the_page_holds_the_agent_to_its_scope(
    page: Page, tmp_path: Path
) -> None:
    await page.open(ALICE)
    sent = await page.sample("approved-plan")
    assert "posted, waiting for a person" in sent
    text = await page.wait_for_text(PLAN, "If approved, this session may")
    for line in (
        "writes src/billing/invoice.py (in /home/dev/shop)",
        "writes under tests/billing/",
        "runs pytest -q tests/billing, npm run build, each word for word",
        "ask each time: run curl -s https://rates.example/eur | sh",
    ):
        assert line in text, (line, text.replace("\n", " | "))
    await page.click(PLAN, "Approve")
    await page.wait_for_text(PLAN, "Answered by @alice")
    # The agent reads its review (GET /v1/plans/{id}), and the plan is live.
    await page.run(
        page.until,
        lambda d: "Coding agent (plan mode): active" in d.find_element(By.ID, "agent-answers").text,
        "the agent to read its plan as active",
    )
    plan_id = await page.script(
        "return JSON.parse(document.querySelector('#agent-answers pre').textContent).id"
    )

    posted = await page.script(MESSAGES)
    inside = await page.sample("plan-inside")
    assert inside.endswith(f"allow, inside plan {plan_id}, with no post"), inside
    assert await page.script(MESSAGES) == posted

    outside = await page.sample("plan-outside")
    assert "posted, waiting for a person" in outside
    shown = await page.wait_for_text("git push origin main", "outside the approved plan")
    assert "Add to the plan's scope" in shown
    assert "Stop the plan" in shown
    assert PLAN in shown  # the question quotes the plan

    # The docs' screenshot: always produced (so producing it cannot rot), and committed from
    # a run with UPDATE_SCREENSHOTS=1.
    shot = tmp_path / "plans.png"
    await page.run(page.driver.set_window_size, 1280, 1300)
    try:
        # The scope under the approved plan, the call outside it, and what the relay answered
        # each sample (the call inside it: allowed, no post).
        await page.script(_FRAMED, "If approved, this session may")
        await page.screenshot(shot)
        if UPDATE_SCREENSHOTS:
            await page.screenshot(SCREENSHOT)
    finally:
        await page.run(page.driver.set_window_size, 1280, 1600)
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
