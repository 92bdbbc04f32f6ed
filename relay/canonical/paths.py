"""Paths in canonical form, and the globs rules write for them. Pure.

A path is matched as the file it names, not as the agent spelled it: ``.``, ``..`` and
repeated ``/`` are resolved (``/tmp/../etc/x`` is ``/etc/x``, ``//etc`` is ``/etc``) and a
relative path is taken against the working directory. Symlinks are not followed (the file
may not exist yet). In a glob ``*`` and ``?`` stay within one folder, ``**`` crosses any
number; a glob without ``/`` matches a file's name at any depth (like ``.gitignore``); one
starting with ``/`` matches the absolute path, any other the path relative to the working
directory (never one outside it). A deny or ask glob (``loose``) also matches everything
under a folder it matches; an allow glob or a grant (``strict``) only the very path.
"""

from __future__ import annotations

import functools
import posixpath
import re
from dataclasses import dataclass

__all__ = ["PathGlob", "Place", "canonical", "place"]


def canonical(path: str, cwd: str | None = None) -> str:
    """``path`` with ``.``, ``..`` and repeated ``/`` resolved, against ``cwd`` if relative."""
    if not path.startswith("/") and cwd and cwd.startswith("/"):
        path = f"{cwd}/{path}"
    absolute = path.startswith("/")
    # normpath keeps a leading `//` (POSIX leaves it implementation-defined; Linux and macOS
    # read it as `/`), so collapse it first.
    text = posixpath.normpath(re.sub(r"^/+", "/", path)) if path else "."
    if absolute:
        # `..` above the root is the root.
        text = re.sub(r"^(/\.\.)+(?=/|$)", "", text) or "/"
    return text


@dataclass(frozen=True, slots=True)
class Place:
    """Where a path points: absolute if it can be known, and relative to ``cwd`` if inside."""

    absolute: str | None
    relative: str | None

    @property
    def name(self) -> str:
        """The last part of the path."""
        return posixpath.basename(self.absolute or self.relative or "")


def place(path: str, cwd: str | None) -> Place:
    """The canonical ``Place`` of ``path`` under ``cwd``."""
    full = canonical(path, cwd)
    if full.startswith("/"):
        relative = None
        if cwd and cwd.startswith("/"):
            root = canonical(cwd)
            if full == root:
                relative = "."
            elif full.startswith(root.rstrip("/") + "/"):
                relative = full[len(root.rstrip("/")) + 1 :]
        return Place(full, relative)
    # Relative with no directory to resolve it against: known only while it stays inside.
    return Place(None, None if full == ".." or full.startswith("../") else full)


@functools.lru_cache(maxsize=512)
def _compile(pattern: str) -> re.Pattern[str]:
    out = []
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
            continue
        if pattern.startswith("**", i):
            out.append(".*")
            i += 2
            continue
        if c == "*":
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "[" and (end := pattern.find("]", i + 2)) != -1:
            body = pattern[i + 1 : end].replace("\\", "\\\\")
            if body.startswith("!"):
                body = "^" + body[1:]
            out.append(f"(?!/)[{body}]")
            i = end + 1
            continue
        else:
            out.append(re.escape(c))
        i += 1
    return re.compile("".join(out), re.DOTALL)


@dataclass(frozen=True, slots=True)
class PathGlob:
    """One path glob of a rule or grant (see the module docstring)."""

    pattern: str

    def _form(self) -> str:
        text = self.pattern
        if "/" not in text.rstrip("/"):
            return text.rstrip("/") or text
        if text.startswith("/"):
            return canonical(text)
        return posixpath.normpath(text)

    def _targets(self, where: Place) -> list[str]:
        form = self._form()
        if "/" not in form:
            return [where.name] if where.name else []
        if form.startswith("/"):
            return [where.absolute] if where.absolute else []
        return [where.relative] if where.relative else []

    def strict(self, where: Place) -> bool:
        """Whether the glob names exactly this path (an allow or a grant)."""
        regex = _compile(self._form())
        return any(regex.fullmatch(t) for t in self._targets(where))

    def loose(self, where: Place) -> bool:
        """Whether the glob names this path or a folder it is in (a deny or an ask)."""
        form = self._form()
        regex = _compile(form)
        if "/" not in form:
            parts = (where.absolute or where.relative or "").split("/")
            return any(regex.fullmatch(p) for p in parts if p)
        for target in self._targets(where):
            pieces = target.split("/")
            for end in range(len(pieces), 0, -1):
                if regex.fullmatch("/".join(pieces[:end]) or "/"):
                    return True
        return False
