"""The store's Lua scripts, read from ``scripts/<name>.lua`` (shipped in the package).

Each file opens with a comment naming its ``KEYS`` and ``ARGV`` and what it returns. A line
``-- include: <name>`` stands for the fragment ``scripts/<name>.lua`` (its body, without its
header), so that code two scripts share is written once. A script's text is read and put
together once per process; each store registers it once (``RedisBase._script``).
"""

from __future__ import annotations

import functools
from importlib import resources

__all__ = ["source"]

_INCLUDE = "-- include: "


@functools.cache
def source(name: str) -> str:
    """The text of script ``name`` (``scripts/<name>.lua``), its includes put in."""
    path = resources.files("relay.store.redis").joinpath("scripts", f"{name}.lua")
    text = path.read_text("utf-8")
    lines = []
    for line in text.splitlines():
        if line.startswith(_INCLUDE):
            lines.append(_body(source(line.removeprefix(_INCLUDE).strip())))
        else:
            lines.append(line)
    return "\n".join(lines) + "\n"


def _body(text: str) -> str:
    """``text`` without its header comment."""
    lines = text.splitlines()
    while lines and lines[0].startswith("--"):
        lines.pop(0)
    return "\n".join(lines)
