"""Headless Chromium (Debian's ``chromium`` + ``chromium-driver``) driven by selenium, and the
sandbox page as a person uses it: pick who you are, click, tick, choose, type, press Enter.

Selenium is synchronous; every page action runs in a worker thread (``asyncio.to_thread``) so
the test's event loop keeps serving the agent's long-poll meanwhile. Waits are selenium's
``WebDriverWait`` on a condition of the DOM, never a fixed sleep.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from selenium import webdriver
from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.remote.webelement import WebElement
from selenium.webdriver.support.select import Select
from selenium.webdriver.support.ui import WebDriverWait

T = TypeVar("T")

CHROMIUM = os.environ.get("CHROMIUM_BINARY", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("CHROMEDRIVER", "/usr/bin/chromedriver")
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--window-size=1280,1600",
)
WAIT = 20.0


def start_chromium() -> tuple[WebDriver, Path]:
    """A headless Chromium with a fresh profile; fails (never skips) when it is missing."""
    for path, package in ((CHROMIUM, "chromium"), (CHROMEDRIVER, "chromium-driver")):
        if not Path(path).exists():
            raise AssertionError(
                f"{path} is missing: install Debian's {package} (bash scripts/test does it"
                " when run as root: apt-get install chromium chromium-driver)"
            )
    profile = Path(tempfile.mkdtemp(prefix="relay-chromium-"))
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={profile}")
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(options=options, service=Service(CHROMEDRIVER))
    return driver, profile


def stop_chromium(driver: WebDriver, profile: Path) -> None:
    """Quit the browser and remove its profile."""
    try:
        driver.quit()
    finally:
        shutil.rmtree(profile, ignore_errors=True)


def _literal(text: str) -> str:
    """``text`` as an XPath string literal (quotes of either kind allowed)."""
    if "'" not in text:
        return f"'{text}'"
    if '"' not in text:
        return f'"{text}"'
    parts = text.split("'")
    return "concat(" + ', "\'", '.join(f"'{p}'" for p in parts) + ")"


class Page:
    """The sandbox page in one browser tab, used by one person at a time."""

    def __init__(self, driver: WebDriver, url: str) -> None:
        self.driver = driver
        self.url = url.rstrip("/")

    # -- running selenium off the event loop ------------------------------------------------

    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        """Run a blocking selenium call in a worker thread."""
        return await asyncio.to_thread(fn, *args)

    def until(self, condition: Callable[[WebDriver], T], what: str) -> T:
        """Wait (blocking) until ``condition`` returns something truthy."""

        def check(driver: WebDriver) -> T | None:
            try:
                return condition(driver)
            except StaleElementReferenceException:
                return None  # re-rendered under us: look again

        wait = WebDriverWait(self.driver, WAIT, poll_frequency=0.05)
        return wait.until(check, message=f"waited {WAIT:g}s for {what}")

    def retrying(self, action: Callable[[], None], what: str) -> None:
        """Do ``action``, again if the element was re-rendered under it (a click either
        lands or raises ``StaleElementReferenceException`` before it dispatches)."""

        def attempt(_: WebDriver) -> bool:
            action()
            return True

        self.until(attempt, what)

    # -- navigation ---------------------------------------------------------------------------

    async def open(self, person: str) -> None:
        """Load the page as ``person`` (an id) and wait until it is live."""
        await self.run(self.driver.get, f"{self.url}/?as={person}")
        await self.run(self._live)

    async def reload(self) -> None:
        """Reload the page (as the browser's reload button does) and wait until it is live."""
        await self.run(self.driver.refresh)
        await self.run(self._live)

    async def become(self, person: str) -> None:
        """Switch who you are with the page's own "You are" menu."""

        def choose() -> None:
            Select(self.driver.find_element(By.ID, "me")).select_by_value(person)
            self.until(
                lambda d: (
                    d.execute_script("return new URL(location.href).searchParams.get('as')")
                    == person
                ),
                f"the page to show {person}",
            )
            self._live()

        await self.run(choose)

    def _live(self) -> None:
        self.until(
            lambda d: d.find_element(By.ID, "status").get_attribute("data-state") == "live",
            "the live feed",
        )

    async def channel(self, label: str) -> None:
        """Open the channel or DM whose sidebar entry reads ``label``."""

        def go() -> None:
            self.driver.find_element(
                By.XPATH,
                f"//button[contains(@class,'nav-link')][normalize-space()={_literal(label)}]",
            ).click()

        await self.run(go)

    # -- finding things ------------------------------------------------------------------------

    def _message(self, containing: str) -> WebElement:
        found = self.driver.find_elements(
            By.XPATH,
            f"//div[@id='messages']/div[contains(@class,'message')]"
            f"[contains(normalize-space(.), {_literal(containing)})]",
        )
        if len(found) != 1:
            raise LookupError(f"{len(found)} messages contain {containing!r}")
        return found[0]

    async def message(self, containing: str) -> WebElement:
        """The one top-level message containing ``containing`` (waits for it)."""
        return await self.run(self._waited, containing)

    def _waited(self, containing: str) -> WebElement:
        return self.until(lambda _: self._find(containing), f"a message with {containing!r}")

    def _find(self, containing: str) -> WebElement | None:
        try:
            return self._message(containing)
        except LookupError:
            return None

    async def text_of(self, containing: str) -> str:
        """The visible text of the message containing ``containing``."""
        return await self.run(lambda: self._message(containing).text)

    async def wait_for_text(self, containing: str, text: str) -> str:
        """Wait until the message containing ``containing`` shows ``text``; its text."""

        def shown(_: WebDriver) -> str | None:
            message = self._find(containing)
            return message.text if message is not None and text in message.text else None

        return await self.run(lambda: self.until(shown, f"{text!r} in the message"))

    async def notices(self) -> list[str]:
        """The private notices this person sees in the open channel."""
        return await self.run(
            lambda: [
                n.text for n in self.driver.find_elements(By.CSS_SELECTOR, "div.msg.ephemeral")
            ]
        )

    async def wait_for_notice(self, text: str) -> str:
        """Wait for a private notice containing ``text``; its text."""

        def found(_: WebDriver) -> str | None:
            for node in self.driver.find_elements(By.CSS_SELECTOR, "div.msg.ephemeral"):
                if text in node.text:
                    return str(node.text)
            return None

        return await self.run(lambda: self.until(found, f"a notice with {text!r}"))

    # -- doing things --------------------------------------------------------------------------

    async def sample(self, name: str) -> str:
        """Send the sidebar's sample ``name`` and wait for what the relay answered it; the
        answer's one-line summary."""

        def go() -> str:
            self.driver.find_element(By.CSS_SELECTOR, f"button[data-sample='{name}']").click()
            return self.until(
                lambda d: (
                    d.find_element(
                        By.CSS_SELECTOR, f"#sample-reply [data-sample='{name}'] summary"
                    ).text
                ),
                f"the relay's answer to the sample {name!r}",
            )

        return await self.run(go)

    async def click(self, containing: str, button: str) -> None:
        """Click the button reading ``button`` in the message containing ``containing``."""

        def go() -> None:
            self._waited(containing).find_element(
                By.XPATH, f".//button[normalize-space()={_literal(button)}]"
            ).click()

        await self.run(self.retrying, go, f"clicking {button!r}")

    async def type(self, containing: str, text: str, *, enter: bool = True) -> None:
        """Type ``text`` into the message's text field, then press Enter (unless told not)."""

        def go() -> None:
            field = self._waited(containing).find_element(By.CSS_SELECTOR, "input.text-input")
            field.click()
            field.send_keys(text)
            if enter:
                field.send_keys(Keys.ENTER)

        await self.run(go)

    async def tick(self, containing: str, option: str) -> None:
        """Tick (or untick) the checkbox ``option`` in the message."""

        def go() -> None:
            self._waited(containing).find_element(
                By.XPATH,
                f".//label[contains(@class,'choice')][.//span[contains(@class,'choice-text')]"
                f"/span[normalize-space()={_literal(option)}]]/input",
            ).click()

        await self.run(self.retrying, go, f"ticking {option!r}")

    async def choose(self, containing: str, option: str, *, nth: int = 0) -> None:
        """Pick ``option`` in the ``nth`` menu (static or multi-select) of the message."""

        def go() -> None:
            menus = self._waited(containing).find_elements(By.CSS_SELECTOR, "select.select")
            Select(menus[nth]).select_by_visible_text(option)

        await self.run(self.retrying, go, f"choosing {option!r}")

    async def wait_for_chips(self, containing: str, count: int) -> list[str]:
        """Wait until the message's multi-select shows ``count`` chosen options; their texts."""

        def chips(_: WebDriver) -> list[str] | None:
            message = self._find(containing)
            if message is None:
                return None
            found = message.find_elements(By.CSS_SELECTOR, ".chip")
            return [c.text.rstrip("×").strip() for c in found] if len(found) == count else None

        return await self.run(lambda: self.until(chips, f"{count} chosen options"))

    async def screenshot(self, path: Path) -> None:
        """Save a PNG of the window."""
        path.parent.mkdir(parents=True, exist_ok=True)
        saved = await self.run(self.driver.save_screenshot, str(path))
        assert saved, f"could not save a screenshot to {path}"

    async def script(self, source: str, *args: Any) -> Any:
        """Run JavaScript in the page and return its result."""
        return await self.run(self.driver.execute_script, source, *args)

    # -- a modal ---------------------------------------------------------------------------------

    def _modal(self) -> WebElement | None:
        found = self.driver.find_elements(By.CSS_SELECTOR, "#modal-layer .modal")
        return found[0] if len(found) == 1 and found[0].is_displayed() else None

    async def wait_for_modal(self, title: str) -> str:
        """Wait until a modal titled ``title`` is open; its visible text."""

        def shown(_: WebDriver) -> str | None:
            modal = self._modal()
            if modal is None:
                return None
            heading = modal.find_element(By.CSS_SELECTOR, ".modal-title").text
            return str(modal.text) if heading == title else None

        return await self.run(lambda: self.until(shown, f"a modal titled {title!r}"))

    async def wait_for_no_modal(self) -> None:
        """Wait until no modal is open."""
        await self.run(lambda: self.until(lambda _: self._modal() is None, "the modal to close"))

    def _field(self, label: str) -> WebElement:
        modal = self._modal()
        if modal is None:
            raise LookupError("no modal is open")
        return modal.find_element(
            By.XPATH,
            f".//div[contains(@class,'blk-input')][label[normalize-space()={_literal(label)}]]",
        )

    async def fill(self, label: str, text: str) -> None:
        """Replace the text of the modal's field labelled ``label`` with ``text``."""

        def go() -> None:
            field = self._field(label).find_element(By.CSS_SELECTOR, ".text-input")
            field.click()
            field.send_keys(Keys.CONTROL, "a")
            field.send_keys(Keys.DELETE)
            field.send_keys(text)

        await self.run(self.retrying, go, f"filling {label!r}")

    async def pick(self, label: str, option: str) -> None:
        """Choose ``option`` in the modal's menu labelled ``label``."""

        def go() -> None:
            menu = self._field(label).find_element(By.CSS_SELECTOR, "select.select")
            Select(menu).select_by_visible_text(option)

        await self.run(self.retrying, go, f"choosing {option!r} in {label!r}")

    async def press(self, button: str) -> None:
        """Click the modal's button reading ``button`` (its submit or close)."""

        def go() -> None:
            modal = self._modal()
            if modal is None:
                raise LookupError("no modal is open")
            modal.find_element(
                By.XPATH,
                f".//div[@class='modal-foot']/button[normalize-space()={_literal(button)}]",
            ).click()

        await self.run(self.retrying, go, f"pressing {button!r}")

    async def wait_for_field_error(self, label: str, text: str) -> str:
        """Wait until the modal shows ``text`` under the field ``label``; the error."""

        def shown(_: WebDriver) -> str | None:
            if self._modal() is None:
                return None
            errors = self._field(label).find_elements(By.CSS_SELECTOR, ".input-error")
            return str(errors[0].text) if errors and text in errors[0].text else None

        return await self.run(lambda: self.until(shown, f"the error {text!r} under {label!r}"))

    async def field_errors(self) -> list[str]:
        """Every field error the open modal shows."""
        return await self.run(
            lambda: [
                e.text
                for e in self.driver.find_elements(By.CSS_SELECTOR, "#modal-layer .input-error")
            ]
        )

    async def escape(self) -> None:
        """Press Escape (closes an open modal, as in Slack)."""

        def go() -> None:
            self.driver.switch_to.active_element.send_keys(Keys.ESCAPE)

        await self.run(go)

    async def chosen(self, label: str) -> list[str]:
        """What the modal's field ``label`` shows chosen: a menu's option, the ticked boxes
        or the selected radio button."""

        def read() -> list[str]:
            field = self._field(label)
            menus = field.find_elements(By.CSS_SELECTOR, "select.select")
            if menus:
                picked = Select(menus[0]).first_selected_option
                return [str(picked.text)] if picked.get_attribute("value") else []
            return [
                str(box.find_element(By.XPATH, "./following-sibling::span").text)
                for box in field.find_elements(By.CSS_SELECTOR, "label.choice input")
                if box.is_selected()
            ]

        return await self.run(read)
