"""The adapters cost ``import relay`` nothing and the base install nothing: no framework is
imported until its adapter module is, and none is a dependency outside its own extra."""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
from pathlib import Path

FRAMEWORKS = ("pydantic_ai", "agents", "langgraph", "langchain", "langchain_core", "google.adk")
EXTRAS = {
    "pydantic-ai": "pydantic-ai-slim",
    "openai-agents": "openai-agents",
    "langgraph": "langgraph",
    "google-adk": "google-adk",
}


def loaded_after(code: str) -> list[str]:
    shown = "import json, sys; print(json.dumps(sorted(sys.modules)))"
    out = subprocess.run(  # noqa: S603 - this interpreter, fixed code
        [sys.executable, "-c", f"{code}\n{shown}"],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    ).stdout
    return [m for m in json.loads(out) if m.startswith(FRAMEWORKS)]


def test_import_relay_and_the_shared_core_load_no_framework() -> None:
    assert loaded_after("import relay") == []
    assert loaded_after("import relay.integrations, relay.integrations.core") == []


def test_each_framework_is_only_in_its_own_extra() -> None:
    project = tomllib.loads((Path(__file__).resolve().parents[2] / "pyproject.toml").read_text())
    base = " ".join(project["project"]["dependencies"])
    extras = project["project"]["optional-dependencies"]
    for extra, package in EXTRAS.items():
        assert package not in base
        assert any(req.startswith(package) for req in extras[extra])
