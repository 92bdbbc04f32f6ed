"""The sandbox explains itself: the ids to use are in the page (and work in an ask as shown),
the page shows the JSON each agent got back, and a stopped relay reads as one."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from selenium.webdriver.common.by import By

from relay import AgentRef, AskUserQuestionItem, AskUserQuestionOption, AskUserQuestionRequest
from relay.client import RelayProvider
from relay.sandbox.directory import CHANNELS, GROUPS, PEOPLE
from tests.browser.browser import Page
from tests.browser.conftest import BOB, TOKEN
from tests.server_env import Relay


async def shown_ids(page: Page) -> dict[str, str]:
    """The page's "Ids to use" list: label -> id, as a visitor reads them."""

    def read() -> dict[str, str]:
        # In one script: the list is re-rendered when the feed (re)connects.
        rows: list[list[str]] = page.driver.execute_script(
            "return [...document.querySelectorAll('#ids .ids-row')]"
            ".map((row) => [row.querySelector('span').textContent,"
            " row.querySelector('code').textContent])"
        )
        return dict(rows)

    return await page.run(lambda: page.until(lambda _: read(), "the ids in the sidebar"))


def open_deploys(page: Page) -> None:
    page.driver.find_element(By.CSS_SELECTOR, "button.nav-link[data-channel='C0SBDEPLOYS']").click()


async def test_the_page_lists_every_id_and_an_ask_naming_them_runs_as_shown(
    page: Page, sandbox: Relay
) -> None:
    await page.open(BOB)
    ids = await shown_ids(page)
    assert set(ids.values()) == {
        *(p.id for p in PEOPLE),
        *CHANNELS,
        *GROUPS,
    }
    assert ids["Dave Ito (not allowed)"] == "U0SBDAVE"
    assert ids["#deploys"] == "C0SBDEPLOYS"
    assert ids["@oncall (group)"] == "S0SBONCALL"
    # One click selects the whole id, ready to copy.
    assert await page.script(
        "return getComputedStyle(document.querySelector('#ids code')).userSelect"
    ) in ("all", "text all")

    # An agent uses the ids as the page shows them: in #deploys, for the on-call group.
    provider = RelayProvider(
        sandbox.url,
        TOKEN,
        channel=ids["#deploys"],
        allowed_groups=(ids["@oncall (group)"],),
        poll=5.0,
    )
    question = AskUserQuestionItem(
        id="go",
        question="Deploy 1.4 to prod?",
        options=(AskUserQuestionOption("Deploy"), AskUserQuestionOption("Hold")),
    )
    request = AskUserQuestionRequest((question,), agent=AgentRef(id="ci", name="CI agent"))
    try:
        asking = asyncio.create_task(provider.ask(request))
        # The sidebar re-renders as the message arrives (unread): click again if it did.
        await page.run(page.retrying, lambda: open_deploys(page), "opening #deploys")
        await page.click("Deploy 1.4 to prod?", "Deploy")
        answer = await asyncio.wait_for(asking, 15)
    finally:
        await provider.aclose()
    assert answer.answers[0].selected == ["Deploy"]

    # The sidebar shows what the agent got back: the ask's record, answered.
    def panel() -> Any:
        texts: list[str] = page.driver.execute_script(
            "return [...document.querySelectorAll('#agent-answers pre')]"
            ".map((pre) => pre.textContent)"
        )
        answered = [r for r in map(json.loads, texts) if r.get("status") == "answered"]
        return answered[0] if answered else None

    record = await page.run(lambda: page.until(lambda _: panel(), "the answer in the panel"))
    assert record["answer"] == {"answers": [{"id": "go", "selected": ["Deploy"]}]}
    summary = await page.script(
        "return document.querySelector('#agent-answers summary').textContent"
    )
    assert summary == "CI agent: answered"


async def test_a_stopped_relay_reads_as_not_running_not_as_a_script_error(
    page: Page, sandbox: Relay
) -> None:
    await page.open(BOB)
    assert await sandbox.stop() == 0

    def status(_: object) -> str | None:
        node = page.driver.find_element(By.ID, "status")
        return node.text if node.get_attribute("data-state") == "down" else None

    said = await page.run(lambda: page.until(status, "the page to say the relay stopped"))
    assert said.startswith("the relay is not running: start it with bash scripts/serve")
    # A click with the relay gone says so in plain words, not "TypeError: Failed to fetch".
    await page.run(lambda: page.driver.find_element(By.CSS_SELECTOR, "#samples button").click())

    def toast(_: object) -> str | None:
        node = page.driver.find_element(By.ID, "toast")
        return node.text if node.is_displayed() and node.text else None

    told = await page.run(lambda: page.until(toast, "the toast"))
    assert told.startswith("The relay is not running, so nothing was sent.")
    assert "TypeError" not in told
    # Leave no refused connections in the browser's log, which the session's later tests
    # read for errors of their own: off the page first (its feed retries), then drain it.
    await page.run(page.driver.get, "about:blank")
    await page.run(page.driver.get_log, "browser")
