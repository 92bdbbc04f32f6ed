"""A modal in the sandbox page, in a real browser: a click opens it (``views.open`` on the
page's FakeSlack), a person fills it, a refused value comes back as an error under its field
(``response_action: errors``), the fixed value closes it and the app acts on it.

The app here is a small Bolt app standing in for the relay (``tests.sandbox_modal_env``); the
page, the stand-in and FakeSlack are the sandbox's own."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from selenium.webdriver.remote.webdriver import WebDriver

from tests.browser.browser import Page
from tests.browser.conftest import ALICE
from tests.sandbox_modal_env import Standin, post_edit_ask, running_standin

ROOT = Path(__file__).resolve().parents[2]
SCREENSHOT = ROOT / "docs" / "sandbox-edit-modal.png"
# Set UPDATE_SCREENSHOTS=1 to rewrite the docs' screenshot from this run.
UPDATE_SCREENSHOTS = os.environ.get("UPDATE_SCREENSHOTS") == "1"


@pytest.fixture
async def standin() -> AsyncIterator[Standin]:
    async with running_standin() as running:
        yield running


@pytest.fixture
async def modal_page(chromium: WebDriver, standin: Standin) -> AsyncIterator[Page]:
    opened = Page(chromium, standin.url)
    try:
        yield opened
    finally:
        chromium.get("about:blank")


async def test_an_edit_refused_in_the_modal_then_fixed_and_approved(
    standin: Standin, modal_page: Page, tmp_path: Path
) -> None:
    slack = standin.slack
    page = modal_page
    await post_edit_ask(slack)
    await page.open(ALICE)

    await page.click("terraform apply", "Edit…")

    shown = await page.wait_for_modal("Edit the call")
    assert "Command" in shown
    assert "Approve edited" in shown
    assert "Cancel" in shown
    assert await page.chosen("Mode") == ["Apply"]  # its initial_option, as Slack shows it
    assert await page.chosen("Flags") == []
    await page.fill("Timeout (seconds)", "900")
    await page.pick("Mode", "Plan only")
    await page.press("Approve edited")
    error = await page.wait_for_field_error("Command", "Production is off limits")
    assert error == "Production is off limits for this agent."
    assert await page.field_errors() == [error]
    modal = slack.open_modal(ALICE)
    assert modal.errors == {"command": error}
    assert len(standin.submissions) == 1
    assert slack.calls_to("chat.update") == []

    # The docs' screenshot: the modal with its field error, produced on every run (so that
    # producing it cannot rot) and committed from a run with UPDATE_SCREENSHOTS=1.
    shot = tmp_path / "sandbox-edit-modal.png"
    await page.run(page.driver.set_window_size, 1200, 900)
    try:
        await page.screenshot(shot)
        if UPDATE_SCREENSHOTS:
            await page.screenshot(SCREENSHOT)
    finally:
        await page.run(page.driver.set_window_size, 1280, 1600)
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

    await page.fill("Command", "terraform apply -target=module.staging")
    await page.press("Approve edited")

    await page.wait_for_no_modal()
    text = await page.wait_for_text("as edited", "module.staging")
    assert "Plan only, 900s" in text
    assert not modal.is_open


async def test_a_number_the_client_refuses_never_reaches_the_app(
    standin: Standin, modal_page: Page
) -> None:
    slack = standin.slack
    page = modal_page
    await post_edit_ask(slack, "Run it?")
    await page.open(ALICE)
    await page.click("Run it?", "Edit…")
    await page.wait_for_modal("Edit the call")
    await page.fill("Timeout (seconds)", "ten minutes")
    await page.press("Approve edited")

    assert await page.wait_for_field_error("Timeout (seconds)", "number") == "Enter a number."
    assert standin.submissions == []
    await page.escape()
    await page.wait_for_no_modal()
    assert standin.slack.modal_of(ALICE) is None
