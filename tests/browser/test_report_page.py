"""The approvals report in a real browser: ``/report`` on a sandbox whose approvals people
decided in the page, opened with the operator's token as the browser's Basic password, and
the sandbox's sample report, reached from the page's link; the charts render (bars of real
size, styled under the page's strict policy, nothing refused in the console). That run makes
docs/report.png."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver

from tests.browser.browser import Page
from tests.browser.conftest import ALICE, BOB, TOKEN
from tests.sandbox_env import running_sandbox
from tests.server_env import Relay

ROOT = Path(__file__).resolve().parents[2]
SCREENSHOT = ROOT / "docs" / "report.png"
# Set UPDATE_SCREENSHOTS=1 to rewrite the docs' screenshot from this run.
UPDATE_SCREENSHOTS = os.environ.get("UPDATE_SCREENSHOTS") == "1"
OPERATOR = "operator-token-for-the-browser-0123456789"

# What the charts measure in the browser: each chart's bars of a count above 0, how many of
# them have a drawn size, and whether the page's one style block applied (one the policy
# blocked would leave the tiles unstyled).
_CHARTS = """
const out = {};
for (const svg of document.querySelectorAll('svg[role=img]')) {
  const counted = [...svg.querySelectorAll('rect')].filter(r => r.dataset.count !== '0');
  const rects = counted.map(r => r.getBoundingClientRect());
  out[svg.id] = {
    title: svg.querySelector('title').textContent,
    bars: rects.length,
    drawn: rects.filter(r => r.width > 0 && r.height > 0).length,
    width: svg.getBoundingClientRect().width,
  };
}
out.styled = getComputedStyle(document.querySelector('.tiles')).display;
return out;
"""


@pytest.fixture
async def sandbox() -> AsyncIterator[Relay]:
    """A sandbox with an operator token (it signs receipts with a key of its own)."""
    async with running_sandbox(RELAY_OPERATOR_TOKENS=OPERATOR) as relay:
        yield relay


async def approve(sandbox: Relay, page: Page, command: str, button: str) -> None:
    """An agent's approval of ``command``, decided in the page with ``button``."""
    body = {"tool": "Bash", "input": {"command": command}, "agent": {"id": "ci-7"}}
    headers = {"Authorization": f"Bearer {TOKEN}"}
    async with aiohttp.ClientSession(headers=headers) as session:
        async with session.post(f"{sandbox.url}/v1/approvals", json=body) as response:
            made = await response.json()
            assert response.status == 201, made
        # Waits on the message in the page, not on a clock: the one still offering the
        # button (an earlier, answered one may show the same command).
        pending = (
            f"//div[@id='messages']/div[contains(@class,'message')]"
            f"[contains(normalize-space(.), '{command}')]//button[normalize-space()='{button}']"
        )

        def press(driver: WebDriver) -> bool:
            found = driver.find_elements(By.XPATH, pending)
            if len(found) != 1:
                return False
            found[0].click()
            return True

        await page.run(page.until, press, f"{button!r} on {command!r}")
        async with session.get(f"{sandbox.url}/v1/approvals/{made['id']}?wait=10") as response:
            assert (await response.json())["status"] == "decided"
        # Reading the receipt writes it there and then, if the writer has not yet.
        async with session.get(f"{sandbox.url}/v1/approvals/{made['id']}/receipt") as response:
            assert response.status == 200


def console_errors(driver: WebDriver) -> list[dict[str, Any]]:
    return [e for e in driver.get_log("browser") if e.get("level") == "SEVERE"]


async def test_report_on_the_relay_draws_the_approvals_people_decided(
    page: Page, sandbox: Relay
) -> None:
    await page.open(ALICE)
    await approve(sandbox, page, "npm test", "Allow once")
    await approve(sandbox, page, "npm test", "Allow once")
    await page.become(BOB)
    await approve(sandbox, page, "rm -rf build", "Deny")
    console_errors(page.driver)  # (the sandbox page's own log, read and dropped)

    # The operator's token as the password a browser asks for (Basic), in the URL here.
    host = sandbox.url.removeprefix("http://")
    await page.run(page.driver.get, f"http://ops:{OPERATOR}@{host}/report")
    heading = await page.run(page.driver.find_element, By.TAG_NAME, "h1")
    assert heading.text == "Approvals report"
    charts = await page.script(_CHARTS)
    assert charts["styled"] == "flex", charts
    assert charts["per-day"]["bars"] == 2  # one day: allowed and denied
    assert charts["per-day"]["drawn"] == 2
    assert "3 in all" in charts["per-day"]["title"]
    assert charts["endings"]["title"].startswith("How approvals ended: allowed 2, denied 1")
    assert charts["people"]["drawn"] == 2
    body = await page.run(lambda: page.driver.find_element(By.TAG_NAME, "body").text)
    assert "Bash: npm test" in body
    assert console_errors(page.driver) == []


async def test_the_sandbox_report_draws_the_sample_and_makes_the_docs_picture(
    page: Page, tmp_path: Path
) -> None:
    await page.open(ALICE)
    link = await page.run(page.driver.find_element, By.ID, "report-link")
    await page.run(link.click)
    await page.run(
        page.until, lambda d: d.current_url.endswith("/sandbox/report"), "the report to open"
    )
    charts = await page.script(_CHARTS)
    assert charts["styled"] == "flex", charts
    assert set(charts) == {"per-day", "endings", "people", "decide-times", "styled"}
    for name in ("per-day", "endings", "people", "decide-times"):
        assert charts[name]["bars"] > 0, charts
        assert charts[name]["drawn"] == charts[name]["bars"], charts
        assert charts[name]["width"] > 300, charts
    assert charts["people"]["title"].startswith("Approvals decided, by person: Alice Moreau")
    rows = await page.script("return document.querySelectorAll('#repeated tbody tr').length")
    assert rows >= 5
    assert console_errors(page.driver) == []
    # The docs' screenshot: produced on every run (so that producing it cannot rot), and
    # committed from a run with UPDATE_SCREENSHOTS=1.
    shot = tmp_path / "report.png"
    await page.run(page.driver.set_window_size, 1200, 2050)
    try:
        await page.screenshot(shot)
        if UPDATE_SCREENSHOTS:
            await page.screenshot(SCREENSHOT)
    finally:
        await page.run(page.driver.set_window_size, 1280, 1600)
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
