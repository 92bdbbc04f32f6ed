"""The documentation holds together: the README stays short, every relative link in it and in
docs/ leads somewhere, and the reference pages name everything the code has.

The reference pages are checked against the code, not the reverse, so that a setting, an
error code or a subcommand added without its documentation fails here: configuration
(``relay.config.settings.ENV_VARS``), errors (``relay.server.openapi.ERROR_CODES``, the seam's codes
and the statuses the API answers them with), the CLI (generated from ``relay``'s parser when
the site is built, by ``scripts/docs_hooks.py``), the HTTP API's routes (the OpenAPI
document) and the sandbox's ids. ``scripts/test``
builds the site with ``mkdocs build --strict``, which checks the navigation and the anchors
inside the site as well.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tomllib
import unicodedata
from pathlib import Path

import pytest
import yaml

from relay.cli import build_parser
from relay.config.settings import ENV_VARS
from relay.errors import ErrorCode
from relay.sandbox.directory import CHANNELS, GROUPS, PEOPLE
from relay.server.errors import status_for
from relay.server.openapi import ERROR_CODES

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
README = ROOT / "README.md"
PAGES = [README, *sorted(DOCS.rglob("*.md"))]
MAX_README_WORDS = 3000

sys.path.insert(0, str(ROOT / "scripts"))
import docs_hooks  # noqa: E402 - scripts/ is not a package


def words(text: str) -> int:
    return len(text.split())


def test_the_readme_fits_in_a_head() -> None:
    assert words(README.read_text(encoding="utf-8")) <= MAX_README_WORDS


_INCLUDE = re.compile(r'^--8<-- "([^"]+)"$', re.MULTILINE)
_FENCE = re.compile(r"^```.*?^```", re.MULTILINE | re.DOTALL)


def source(page: Path) -> str:
    """The page's Markdown as the site renders it: snippet includes (``--8<--``) expanded."""
    text = page.read_text(encoding="utf-8")
    return _INCLUDE.sub(lambda m: (ROOT / m.group(1)).read_text(encoding="utf-8"), text)


def slug(heading: str) -> str:
    """The anchor Python-Markdown's toc (and, for these headings, GitHub) gives a heading."""
    text = re.sub(r"[`*]", "", heading)
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    text = re.sub(r"[^\w\s-]", "", text).strip().lower()
    return re.sub(r"[-\s]+", "-", text)


def anchors(page: Path) -> set[str]:
    prose = _FENCE.sub("", source(page))
    return {slug(m.group(1)) for m in re.finditer(r"^#{1,6} (.+)$", prose, re.MULTILINE)}


def links(page: Path) -> list[str]:
    prose = _FENCE.sub("", source(page))
    prose = re.sub(r"`[^`\n]*`", "", prose)  # code spans show link syntax, they make none
    return re.findall(r"\]\(([^)\s]+)\)", prose)


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves(page: Path) -> None:
    for link in links(page):
        if re.match(r"^[a-z][a-z0-9+.-]*:", link):  # https:, mailto:: not ours to check
            continue
        path, _, anchor = link.partition("#")
        target = (page.parent / path).resolve() if path else page
        assert target.exists(), f"{page.name}: {link} leads nowhere"
        if anchor and target.suffix == ".md":
            assert anchor in anchors(target), f"{page.name}: {link}: no such heading"


def test_every_docs_page_is_in_the_sites_navigation() -> None:
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text())

    def listed(items: object) -> set[str]:
        if isinstance(items, str):
            return {items}
        if isinstance(items, list):
            return set().union(*(listed(item) for item in items))
        if isinstance(items, dict):
            return set().union(*(listed(value) for value in items.values()))
        return set()

    pages = {str(page.relative_to(DOCS)) for page in DOCS.rglob("*.md")}
    assert listed(config["nav"]) == pages


def table_names(page: Path) -> list[str]:
    """The backquoted names in the first column of the page's tables."""
    names = []
    for row in re.findall(r"^\| ([^|]+) \|", source(page), re.MULTILINE):
        names += re.findall(r"`([^`]+)`", row)
    return names


def test_the_configuration_page_documents_every_setting_and_only_those() -> None:
    documented = [n for n in table_names(DOCS / "reference" / "configuration.md") if n.isupper()]
    missing = [name for name in ENV_VARS if name not in documented]
    assert not missing, f"add these to docs/reference/configuration.md: {missing}"
    unknown = sorted(set(documented) - set(ENV_VARS))
    assert not unknown, f"docs/reference/configuration.md names settings not read: {unknown}"


def error_rows() -> dict[str, str]:
    """code -> the page's status (or exit) column, for each row of the errors page."""
    page = source(DOCS / "reference" / "errors.md")
    rows = re.findall(r"^\| `([A-Z_]+)` \| ([^|]+) \|", page, re.MULTILINE)
    return {code: status.strip() for code, status in rows}


def test_the_errors_page_documents_every_code_with_its_status() -> None:
    rows = error_rows()
    codes = [*ERROR_CODES, *ErrorCode, "BAD_CONFIG"]
    missing = [str(code) for code in codes if code not in rows]
    assert not missing, f"add these to docs/reference/errors.md: {missing}"
    for code in ERROR_CODES:
        assert rows[code] == str(status_for(code)), (code, rows[code], status_for(code))


def commands(parser: argparse.ArgumentParser, name: str = "relay") -> dict[str, list[str]]:
    """Every subcommand (``relay hook codex`` too) with its long options."""
    found: dict[str, list[str]] = {}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub, subparser in action.choices.items():
                path = f"{name} {sub}"
                found[path] = [
                    flag
                    for a in subparser._actions
                    for flag in a.option_strings
                    if flag.startswith("--") and flag != "--help" and a.help != argparse.SUPPRESS
                ]
                found.update(commands(subparser, path))
    return found


def test_the_cli_reference_covers_every_subcommand_and_option() -> None:
    page = (DOCS / "reference" / "cli.md").read_text(encoding="utf-8")
    assert docs_hooks.MARKER in page
    reference = docs_hooks.on_page_markdown(page)
    sections = re.split(r"^#+ ", reference, flags=re.MULTILINE)
    every = commands(build_parser())
    assert {"relay serve", "relay ask", "relay hook claude-code", "relay exec"} <= set(every)
    for command, options in every.items():
        (section,) = [s for s in sections if s.startswith(f"`{command}`\n")]
        for option in options:
            assert f"`{option}`" in section, (command, option)
    assert "==SUPPRESS==" not in reference


def test_the_site_generates_the_cli_reference() -> None:
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text())
    assert config["hooks"] == ["scripts/docs_hooks.py"]
    assert config["strict"] is True


def test_the_sandbox_page_lists_every_id_the_sandbox_has() -> None:
    page = source(DOCS / "sandbox.md")
    ids = [person.id for person in PEOPLE] + list(CHANNELS) + list(GROUPS)
    missing = [i for i in ids if f"`{i}`" not in page]
    assert not missing, f"add these to docs/sandbox.md: {missing}"


def test_the_http_api_page_lists_every_route_of_the_openapi_document() -> None:
    from relay.server.openapi import openapi_document

    page = source(DOCS / "reference" / "http-api.md")
    listed = set(re.findall(r"^\| `([A-Z]+)` \| `([^`]+)` \|", page, re.MULTILINE))
    routes = {
        (method.upper(), path)
        for path, operations in openapi_document()["paths"].items()
        for method in operations
        if method != "parameters"
    }
    missing = sorted(routes - listed)
    assert not missing, f"add these routes to docs/reference/http-api.md: {missing}"


_DATA_BLOCK = re.compile(r"^( *)```(json|toml|yaml)\n(.*?)^\1```", re.MULTILINE | re.DOTALL)


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_json_toml_and_yaml_block_parses(page: Path) -> None:
    # The harness snippets are loaded and checked further by test_readme_agents.py; every
    # other configuration shown must at least be what its reader can paste.
    load = {"json": json.loads, "toml": tomllib.loads, "yaml": yaml.safe_load}
    for indent, lang, body in _DATA_BLOCK.findall(source(page)):
        text = "\n".join(line.removeprefix(indent) for line in body.splitlines())
        try:
            load[lang](text)
        except ValueError as exc:  # JSONDecodeError, TOMLDecodeError
            raise AssertionError(f"{page.name}: a {lang} block does not parse: {exc}") from exc
        except yaml.YAMLError as exc:
            raise AssertionError(f"{page.name}: a yaml block does not parse: {exc}") from exc


def test_every_import_the_frameworks_page_names_resolves_from_its_extras() -> None:
    """A class the prose names (a checkpointer, a session service, a capability) comes with
    the import that finds it, and that import works with the framework's extra installed."""
    page = (ROOT / "docs" / "harnesses" / "frameworks.md").read_text()
    named = re.findall(r"`from\s+([\w.]+)\s+import\s+(\w+)`", page)
    assert {name for _, name in named} >= {
        "HandleDeferredToolCalls",
        "RunState",
        "AsyncSqliteSaver",
        "SqliteSaver",
        "SqliteSessionService",
    }
    for module, name in named:
        assert hasattr(__import__(module, fromlist=[name]), name), f"from {module} import {name}"
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    assert any(d.startswith("langgraph-checkpoint-sqlite") for d in extras["langgraph"])


def test_the_claude_code_page_names_the_only_sign_a_headless_run_paused() -> None:
    """A deferred `claude -p` exits 0 with subtype success: the page names the field the flow
    test reads, and says the resumed hook waits at most --defer-after again."""
    page = " ".join((DOCS / "harnesses" / "claude-code.md").read_text().split())
    flow = (ROOT / "tests" / "flows" / "test_claude_code_cli.py").read_text()
    assert 'first.get("stop_reason") == "tool_deferred"' in flow
    assert '`"stop_reason": "tool_deferred"`' in page
    assert '`"subtype": "success"`' in page
    assert "waits at most `--defer-after` again" in page
    assert "keeps running while the run is paused" in page
