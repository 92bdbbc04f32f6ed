"""Every picture on the docs site is a screenshot a browser test makes (as the README's are,
tests/test_readme.py): real pages, no mock-ups, and none left behind by a page that changed."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
PAGES = sorted(DOCS.rglob("*.md"))


def _pictures() -> list[tuple[str, str, Path]]:
    found = []
    for page in PAGES:
        for alt, target in re.findall(r"!\[([^\]]*)\]\(([^)\s]+\.png)\)", page.read_text()):
            found.append((page.relative_to(ROOT).as_posix(), alt, page.parent / target))
    return found


@pytest.mark.parametrize(("page", "alt", "path"), _pictures())
def test_each_picture_is_a_screenshot_a_browser_test_makes(page: str, alt: str, path: Path) -> None:
    assert alt.strip(), f"{page}: {path.name} needs alt text"
    png = path.read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n", path
    assert len(png) > 20_000, path  # a real page, not a blank one
    makers = [t.read_text(encoding="utf-8") for t in (ROOT / "tests" / "browser").glob("*.py")]
    name = f'"{path.name}"'
    assert any(name in m and "UPDATE_SCREENSHOTS" in m for m in makers), (
        f"{page}: no test under tests/browser/ makes {path.name}"
    )


def test_the_report_page_shows_its_picture() -> None:
    assert any(p.name == "report.png" for _, _, p in _pictures())
