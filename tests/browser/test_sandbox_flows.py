"""The sandbox in a real browser: an agent asks through the API, people answer in the page,
and the test checks what the agent receives and what the page then shows."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from relay import (
    AgentRef,
    AskUserQuestionItem,
    AskUserQuestionOption,
    AskUserQuestionRequest,
    review_plan,
)
from tests.browser.browser import Page
from tests.browser.conftest import ALICE, BOB, CAROL, DAVE, TOKEN, Agent
from tests.server_env import Relay

ROOT = Path(__file__).resolve().parents[2]
SCREENSHOT = ROOT / "docs" / "sandbox-plan-review.png"
# Set UPDATE_SCREENSHOTS=1 to rewrite the README's screenshot from this run.
UPDATE_SCREENSHOTS = os.environ.get("UPDATE_SCREENSHOTS") == "1"

PLAN = """# Plan: add rate limiting to the public API

1. Add a **token bucket** per API key (`100 req/min`), stored in Redis.
2. Answer `429` with `Retry-After` when a bucket is empty.
3. Roll out in *shadow mode* for a day, then enforce.

> Rollback: set `ratelimit.enforce=false`."""


def ask(agent: Agent, *questions: AskUserQuestionItem) -> asyncio.Task[object]:
    request = AskUserQuestionRequest(
        questions=questions, agent=AgentRef(id="test-agent", name="Test agent")
    )
    return agent.spawn(agent.service.ask(request))


async def test_a_plan_review_approved_in_the_page_reaches_the_agent(
    page: Page, agent: Agent, tmp_path: Path
) -> None:
    await page.open(ALICE)
    coder = AgentRef(id="coder", name="Coding agent")
    verdict_task = agent.spawn(review_plan(agent.service, PLAN, agent=coder))
    text = await page.wait_for_text("rate limiting", "Approve this plan")
    assert "Plan review" in text
    assert "token bucket" in text
    assert "Keep planning" in text
    await page.click("rate limiting", "Approve")
    verdict = await asyncio.wait_for(verdict_task, 10)
    assert verdict.approved
    shown = await page.wait_for_text("rate limiting", "Answered by @alice")
    assert "Approve" in shown
    buttons = await page.script(
        "return document.querySelectorAll('#messages .message button.btn').length"
    )
    assert buttons == 0, "the answered message keeps no buttons"
    # The README's screenshot: always produced (so producing it cannot rot), and committed
    # from a run with UPDATE_SCREENSHOTS=1.
    shot = tmp_path / "sandbox-plan-review.png"
    await page.run(page.driver.set_window_size, 1200, 900)
    try:
        await page.script("document.getElementById('messages').scrollTop = 0")
        await page.screenshot(shot)
        if UPDATE_SCREENSHOTS:
            await page.screenshot(SCREENSHOT)
    finally:
        await page.run(page.driver.set_window_size, 1280, 1600)
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


async def test_feedback_typed_and_sent_with_enter_keeps_the_agent_planning(
    page: Page, agent: Agent
) -> None:
    await page.open(BOB)
    verdict_task = agent.spawn(review_plan(agent.service, PLAN))
    await page.wait_for_text("rate limiting", "Approve this plan")
    await page.type("rate limiting", "Shadow mode for a week, not a day")
    verdict = await asyncio.wait_for(verdict_task, 10)
    assert not verdict.approved
    assert verdict.feedback == "Shadow mode for a week, not a day"
    shown = await page.wait_for_text("rate limiting", "Answered by @bob")
    assert "Shadow mode for a week, not a day" in shown


async def test_someone_not_allowed_is_told_privately_and_the_ask_stays_open(
    page: Page, agent: Agent
) -> None:
    question = AskUserQuestionItem(
        id="env",
        question="Deploy release 2.0 where?",
        options=(AskUserQuestionOption("staging"), AskUserQuestionOption("prod")),
    )
    answer_task = ask(agent, question)
    await page.open(DAVE)
    await page.wait_for_text("release 2.0", "staging")
    await page.click("release 2.0", "prod")
    notice = await page.wait_for_notice("not allowed to answer")
    assert "Only visible to you" in notice
    assert not answer_task.done()
    # Carol does not see Dave's notice, and her click answers.
    await page.become(CAROL)
    await page.wait_for_text("release 2.0", "staging")
    assert await page.notices() == []
    await page.click("release 2.0", "staging")
    answer = await asyncio.wait_for(answer_task, 10)
    assert answer.to_dict() == {"answers": [{"id": "env", "selected": ["staging"]}]}
    assert answer.answers[0].answered_by is not None
    assert answer.answers[0].answered_by.id == CAROL
    await page.wait_for_text("release 2.0", "Answered by @carol")


async def test_text_typed_then_a_button_clicked_answers_nothing_and_says_why(
    page: Page, agent: Agent
) -> None:
    question = AskUserQuestionItem(
        id="db",
        question="Which database for the audit log?",
        options=(AskUserQuestionOption("Postgres"), AskUserQuestionOption("SQLite")),
    )
    answer_task = ask(agent, question)
    await page.open(ALICE)
    await page.wait_for_text("audit log", "Postgres")
    await page.type("audit log", "ClickHouse", enter=False)
    await page.click("audit log", "Postgres")
    await page.wait_for_notice("typed text")
    assert not answer_task.done()
    await page.type("audit log", "", enter=True)  # Enter sends the text already typed
    answer = await asyncio.wait_for(answer_task, 10)
    assert answer.to_dict() == {"answers": [{"id": "db", "selected": [], "custom": "ClickHouse"}]}


async def test_a_batch_with_checkboxes_a_multi_select_menu_a_menu_and_skip(
    page: Page, agent: Agent
) -> None:
    checks = AskUserQuestionItem(
        id="checks",
        question="Which checks must pass?",
        multi_select=True,
        options=tuple(AskUserQuestionOption(x) for x in ("Unit", "Integration", "Load")),
    )
    regions = AskUserQuestionItem(
        id="regions",
        question="Which regions first?",
        multi_select=True,
        options=tuple(AskUserQuestionOption(f"region-{i:02d}") for i in range(12)),
    )
    window = AskUserQuestionItem(
        id="window",
        question="Start when?",
        options=tuple(AskUserQuestionOption(x) for x in ("now", "1h", "2h", "3h", "4h", "5h")),
    )
    note = AskUserQuestionItem(id="note", question="Anything else to tell the release bot?")
    answer_task = ask(agent, checks, regions, window, note)
    await page.open(ALICE)
    await page.wait_for_text("Which checks must pass?", "Submit")
    await page.tick("Which checks must pass?", "Unit")
    await page.tick("Which checks must pass?", "Load")
    await page.click("Which checks must pass?", "Submit")
    await page.wait_for_text("Which checks must pass?", "Answered by @alice")
    await page.choose("Which regions first?", "region-03")
    assert await page.wait_for_chips("Which regions first?", 1) == ["region-03"]
    await page.choose("Which regions first?", "region-07")
    assert await page.wait_for_chips("Which regions first?", 2) == ["region-03", "region-07"]
    await page.click("Which regions first?", "Submit")
    await page.wait_for_text("Which regions first?", "Answered by @alice")
    await page.choose("Start when?", "2h")
    await page.wait_for_text("Start when?", "Answered by @alice")
    await page.click("Anything else", "Skip")
    answer = await asyncio.wait_for(answer_task, 10)
    assert answer.to_dict() == {
        "answers": [
            {"id": "checks", "selected": ["Unit", "Load"]},
            {"id": "regions", "selected": ["region-03", "region-07"]},
            {"id": "window", "selected": ["2h"]},
            {"id": "note", "selected": []},
        ]
    }
    assert "Skipped by @alice" in await page.wait_for_text("Anything else", "Skipped")


async def test_another_persons_answer_updates_an_open_page_in_place_without_reload(
    page: Page, agent: Agent
) -> None:
    question = AskUserQuestionItem(
        id="go",
        question="Rotate the signing keys tonight?",
        options=(AskUserQuestionOption("Rotate"), AskUserQuestionOption("Wait")),
    )
    answer_task = ask(agent, question)
    await page.open(ALICE)
    await page.wait_for_text("signing keys", "Rotate")
    await page.script("window.__notReloaded = true")
    first = await page.run(lambda: page.driver.current_window_handle)
    await page.run(lambda: page.driver.switch_to.new_window("tab"))
    await page.open(BOB)
    await page.click("signing keys", "Wait")
    await asyncio.wait_for(answer_task, 10)
    await page.run(lambda: page.driver.switch_to.window(first))
    await page.wait_for_text("signing keys", "Answered by @bob")
    assert await page.script("return window.__notReloaded === true")


async def test_the_sample_controls_ask_through_the_api_and_self_approval_is_refused(
    page: Page, sandbox: Relay
) -> None:
    await page.open(BOB)
    await page.run(
        lambda: page.driver.find_element(
            "css selector", "button[data-sample='deploy-gate']"
        ).click()
    )
    await page.wait_for_text("release 1.4.0", "Canary only")
    await page.click("release 1.4.0", "Deploy")
    await page.wait_for_notice("someone else has to answer")
    await page.become(CAROL)
    await page.click("release 1.4.0", "Canary only")
    await page.wait_for_text("release 1.4.0", "Answered by @carol")
    # The relay's own log: the sample was an ask like any agent's, answered by Carol.
    assert "U0SBCAROL" in await sandbox.wait_for_log("event=answered")


async def test_a_detail_too_long_for_one_message_continues_in_thread_replies(
    page: Page,
) -> None:
    await page.open(ALICE)
    await page.run(
        lambda: page.driver.find_element(
            "css selector", "button[data-sample='long-detail']"
        ).click()
    )
    text = await page.wait_for_text("Capacity review", "1 reply")
    assert "Region 16" not in text
    await page.run(lambda: page.driver.find_element("css selector", "button.thread-toggle").click())
    text = await page.wait_for_text("Capacity review", "Region 16")
    assert "check 16.15" in text


async def test_a_question_asked_of_one_person_opens_a_dm_only_they_see(
    page: Page, sandbox: Relay
) -> None:
    body = {
        "questions": [
            {
                "id": "ok",
                "question": "Carol, may I page you tonight?",
                "options": [{"label": "Yes"}, {"label": "No"}],
            }
        ],
        "slack": {"channel": CAROL},
    }
    status, record = await sandbox.request("POST", "/v1/asks", json=body, token=TOKEN)
    assert status == 201, record
    await page.open(ALICE)
    assert await page.script("return document.querySelectorAll('#dms .nav-link').length") == 0
    await page.become(CAROL)
    await page.run(
        lambda: page.until(
            lambda d: d.execute_script("return document.querySelectorAll('#dms .nav-link').length"),
            "a DM in the sidebar",
        )
    )
    await page.channel("relay (app)")
    await page.click("page you tonight", "Yes")
    await page.wait_for_text("page you tonight", "Answered by @carol")
    status, record = await sandbox.request("GET", f"/v1/asks/{record['id']}", token=TOKEN)
    assert record["status"] == "answered"
    assert record["answer"] == {"answers": [{"id": "ok", "selected": ["Yes"]}]}
