"""The Redis store's Lua scripts: files in the package, each saying its keys and arguments."""

from __future__ import annotations

from importlib import resources

import pytest

from relay.store.redis import lua

SCRIPTS = resources.files("relay.store.redis").joinpath("scripts")
NAMES = sorted(p.name.removesuffix(".lua") for p in SCRIPTS.iterdir() if p.name.endswith(".lua"))
# Pieces put into other scripts (``-- include: <name>``), never run on their own.
FRAGMENTS = {"release_owner", "unshown"}


def test_the_scripts_are_files_of_the_package() -> None:
    assert {"answer", "create", "finish", "vote", "settled"} <= set(NAMES)
    assert set(NAMES) >= FRAGMENTS


@pytest.mark.parametrize("name", sorted(set(NAMES) - FRAGMENTS))
def test_each_script_names_its_keys_and_arguments(name: str) -> None:
    header = []
    for line in SCRIPTS.joinpath(f"{name}.lua").read_text().splitlines():
        if not line.startswith("--") or line.startswith("-- include:"):
            break
        header.append(line)
    assert any(line.startswith("-- KEYS:") for line in header), name
    assert any(line.startswith("-- ARGV:") for line in header), name


@pytest.mark.parametrize("name", NAMES)
def test_includes_are_put_in_and_the_text_is_read_once(name: str) -> None:
    text = lua.source(name)
    assert "-- include:" not in text
    assert lua.source(name) is text
