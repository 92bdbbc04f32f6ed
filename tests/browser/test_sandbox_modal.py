"""A modal in the sandbox page, in a real browser: a click opens it (``views.open`` on the
page's FakeSlack), a person fills it, a refused value comes back as an error under its field
(``response_action: errors``), the fixed value closes it and the app acts on it.

Two apps: a small Bolt app standing in for the relay (``tests.sandbox_modal_env``), for the
page's own behaviour, and the real relay (``relay serve --sandbox``), whose "Edit…" form on a
tool approval a person fills in the page; that run makes docs/sandbox-edit-modal.png."""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest
from selenium.common.exceptions import (
    ElementClickInterceptedException,
    ElementNotInteractableException,
)
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.remote.webelement import WebElement

from tests.browser.browser import Page
from tests.browser.conftest import ALICE, BOB, TOKEN
from tests.sandbox_feed import act
from tests.sandbox_modal_env import Standin, post_edit_ask, running_standin
from tests.server_env import Relay

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
    standin: Standin, modal_page: Page
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


async def test_the_relays_edit_form_refuses_a_bad_value_then_allows_the_edit(
    page: Page, sandbox: Relay, tmp_path: Path
) -> None:
    # The real relay (relay serve --sandbox): an agent asks to approve a tool call it may
    # edit, a reviewer opens the relay's "Edit…" form in the page, types a value the relay
    # refuses, sees why under the field, fixes it and allows the edited call.
    schema = {
        "type": "object",
        "properties": {
            "target": {"type": "string", "description": "The Terraform module to apply."},
            "replicas": {"type": "integer"},
        },
    }
    ask = {
        "tool": "terraform_apply",
        "input": {"target": "module.prod", "replicas": 3},
        "input_schema": schema,
        "agent": {"id": "coder", "name": "Coding agent"},
        "editable": True,
    }
    status, created = await sandbox.request("POST", "/v1/approvals", json=ask, token=TOKEN)
    assert status == 201, created
    await page.open(ALICE)
    await page.click("Coding agent", "Edit…")
    shown = await page.wait_for_modal("Edit, then allow")
    assert "Allow edited call" in shown
    assert await page.chosen("Then") == ["Allow once"]
    await page.fill("replicas", "three")
    await page.fill("target", "module.staging")
    await page.press("Allow edited call")

    await page.wait_for_field_error("replicas", "Enter a number")
    status, pending = await sandbox.request("GET", f"/v1/approvals/{created['id']}", token=TOKEN)
    assert pending["status"] == "pending"
    # The docs' screenshot: the relay's form with a field error, produced on every run (so
    # that producing it cannot rot) and committed from a run with UPDATE_SCREENSHOTS=1.
    shot = tmp_path / "sandbox-edit-modal.png"
    await page.run(page.driver.set_window_size, 1200, 900)
    try:
        await page.screenshot(shot)
        if UPDATE_SCREENSHOTS:
            await page.screenshot(SCREENSHOT)
    finally:
        await page.run(page.driver.set_window_size, 1280, 1600)
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

    await page.fill("replicas", "5")
    await page.press("Allow edited call")

    await page.wait_for_no_modal()
    for _ in range(20):
        status, record = await sandbox.request(
            "GET", f"/v1/approvals/{created['id']}?wait=5", token=TOKEN
        )
        if record["status"] == "decided":
            break
    decision = record["decision"]
    assert decision["behavior"] == "allow"
    assert decision["updated_input"] == {"target": "module.staging", "replicas": 5}
    shown = await page.wait_for_text("Coding agent", "module.staging")
    # The message's ":pencil2:" reads as the pencil Slack shows, not as its name.
    assert "\u270f\ufe0f Edited by @alice" in shown, shown
    assert ":pencil2:" not in shown


async def test_the_message_behind_an_open_modal_takes_no_click_key_or_focus(
    standin: Standin, modal_page: Page
) -> None:
    # In Slack a modal is modal: the person who opened it cannot use the messages behind it
    # until it is closed or submitted. Another person (the "You are" switch) still can.
    slack = standin.slack
    page = modal_page
    await post_edit_ask(slack, "Deploy it?")
    await page.open(ALICE)
    await page.click("Deploy it?", "Edit…")
    await page.wait_for_modal("Edit the call")
    in_modal = "return document.activeElement.closest('#modal-layer .modal') !== null"
    # Behind the modal: the messages, or the sidebar but for the sandbox's "You are" switch.
    behind = (
        "const a = document.activeElement;"
        " return !!a.closest('#main') || (!!a.closest('#sidebar') && !a.closest('.who'))"
    )
    assert await page.script(in_modal)  # the first field, not the Edit… button behind

    def approve() -> WebElement:
        message = page.driver.find_element(By.XPATH, "//div[@data-ts][contains(., 'Deploy it?')]")
        return message.find_element(By.XPATH, ".//button[normalize-space()='Approve']")

    with pytest.raises(ElementClickInterceptedException):  # the overlay takes the click
        await page.run(lambda: approve().click())
    with contextlib.suppress(ElementNotInteractableException):  # nor a key: no focus there
        await page.run(lambda: approve().send_keys(Keys.ENTER))
    for _ in range(12):  # Tab goes round the modal (and the "You are" switch), never behind
        await page.run(lambda: ActionChains(page.driver).send_keys(Keys.TAB).perform())
        assert not await page.script(behind)

    await page.become(BOB)  # someone else: no modal of theirs, the message works
    await page.click("Deploy it?", "Approve")
    await standin.clicks.reach(1)
    assert [c["user"]["id"] for c in standin.clicks] == [BOB]  # nothing from Alice reached it
    assert slack.modal_of(ALICE) is not None

    await page.become(ALICE)  # her modal is still open, the message still out of reach
    await page.wait_for_modal("Edit the call")
    with pytest.raises(ElementClickInterceptedException):
        await page.run(lambda: approve().click())
    await page.escape()
    await page.wait_for_no_modal()
    await page.click("Deploy it?", "Approve")
    await standin.clicks.reach(2)
    assert [c["user"]["id"] for c in standin.clicks] == [BOB, ALICE]


async def test_a_closed_modal_stays_closed_after_a_reload(
    standin: Standin, modal_page: Page
) -> None:
    # "Edit…" clicked twice (here through the page's own endpoint, so that both clicks land
    # before the first modal shows) opens two modals; the page shows the last one, and once
    # it is cancelled, no modal comes back, live or after a reload.
    slack = standin.slack
    page = modal_page
    message = await post_edit_ask(slack, "Roll back?")
    edit = message.blocks[1]
    click = {"as": ALICE, "channel": message.channel, "ts": message.ts, "version": 0,
             "kind": "button", "text": "Edit…", "block_id": edit["block_id"],
             "action_id": edit["elements"][1]["action_id"]}  # fmt: skip
    async with aiohttp.ClientSession() as session:
        for _ in range(2):
            assert (await act(session, standin.url, click))[0] == 200
    assert [m.user for m in slack.modals] == [ALICE, ALICE]
    await page.open(ALICE)
    await page.wait_for_modal("Edit the call")
    await page.press("Cancel")
    await page.wait_for_no_modal()
    await page.reload()
    assert await page.script("return document.querySelector('#modal-layer .modal') === null")
    await page.click("Roll back?", "Approve")  # and the message takes clicks again
    await standin.clicks.reach(1)
