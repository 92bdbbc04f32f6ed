"""A command line's simple commands, as rules look at them. Pure."""

from __future__ import annotations

import posixpath
import re
import shlex
from dataclasses import dataclass

__all__ = ["Parsed", "Simple", "flag_words", "is_cluster", "is_flag"]

_CLUSTER = re.compile(r"^-[A-Za-z0-9]{2,}$")


@dataclass(frozen=True, slots=True)
class Simple:
    """One simple command: its words as bash passes them (no ``NAME=value`` prefix, which is
    ``env``), and whether it is more than a plain command with plain arguments (``opaque``).

    ``expands`` holds the indices of glob and tilde words (one word as written, file names or
    a home directory when run); ``nested`` is a command another one runs (a wrapper's, a
    substitution's, ``sh -c``'s)."""

    words: tuple[str, ...]
    env: tuple[str, ...] = ()
    opaque: bool = False
    expands: frozenset[int] = frozenset()
    nested: bool = False

    @property
    def name(self) -> str:
        """The program's name whatever its path (``/bin/rm`` is ``rm``)."""
        return posixpath.basename(self.words[0]) if self.words else ""

    def text(self) -> str:
        """The words joined as a shell would read them back."""
        return shlex.join(self.words)

    def flags(self) -> frozenset[str]:
        """Every flag word, with clusters also split (``-rf``: ``-rf``, ``-r``, ``-f``) and
        ``--opt=value`` also as ``--opt``."""
        out: set[str] = set()
        for word in flag_words(self.words[1:]):
            out.add(word)
            if _CLUSTER.match(word):
                out.update(f"-{c}" for c in word[1:])
            elif word.startswith("--") and "=" in word:
                out.add(word.split("=", 1)[0])
        return frozenset(out)

    def positionals(self) -> tuple[str, ...]:
        """The program's name, then every word that is not a flag, in order."""
        rest: list[str] = []
        ended = False
        for word in self.words[1:]:
            if not ended and word == "--":
                ended = True
            elif ended or not is_flag(word):
                rest.append(word)
        return (self.name, *rest)


@dataclass(frozen=True, slots=True)
class Parsed:
    """A command line's simple commands (those that substitutions, wrappers and ``sh -c`` run
    included)."""

    parts: tuple[Simple, ...]

    @property
    def opaque(self) -> bool:
        """Whether any part is more than a plain command (never allowed without a person)."""
        return any(p.opaque for p in self.parts)


def is_flag(word: str) -> bool:
    """Whether ``word`` reads as an option (``-x``, ``--x``), not ``-`` alone."""
    return len(word) > 1 and word.startswith("-")


def flag_words(words: tuple[str, ...]) -> list[str]:
    """The option words before a ``--``."""
    out = []
    for word in words:
        if word == "--":
            break
        if is_flag(word):
            out.append(word)
    return out


def is_cluster(word: str) -> bool:
    """Whether ``word`` is a cluster of one-letter flags (``-rf``)."""
    return bool(_CLUSTER.match(word))
