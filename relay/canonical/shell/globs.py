"""A rule's command glob, and how it matches a simple command. Pure.

Deny and ask rules match any part loosely (``CommandGlob.loose``: by program name whatever
its path, flags in any order or spelling of a cluster, positionals in order with anything
between); allow rules and grants must match every part word for word
(``CommandGlob.strict``) and never an opaque one. A glob is read over the standard library's
``shlex`` (it is the rule author's text, not the agent's).
"""

from __future__ import annotations

import fnmatch
import functools
import posixpath
import shlex
from dataclasses import dataclass

from relay.canonical.shell.parts import Simple, flag_words, is_cluster
from relay.canonical.shell.programs import RUNNERS

__all__ = ["CommandGlob", "glob_error"]

_PUNCTUATION = ";&|()<>\n"
_GLOB_CHARS = frozenset("*?[")


def _tokens(text: str) -> list[str] | None:
    lexer = shlex.shlex(text, posix=True, punctuation_chars=_PUNCTUATION)
    lexer.whitespace = " \t\r"
    lexer.whitespace_split = True
    lexer.commenters = ""
    try:
        return list(lexer)
    except ValueError:  # an unclosed quote or a trailing escape
        return None


def _is_operator(token: str) -> bool:
    return bool(token) and all(c in _PUNCTUATION for c in token)


def glob_error(pattern: str) -> str | None:
    """Why ``pattern`` cannot be a command glob (``None``: it can)."""
    tokens = _tokens(pattern)
    if tokens is None:
        return "has an unclosed quote"
    if any(_is_operator(t) for t in tokens):
        return "must be one command (a compound command is split, and each part matched)"
    if not tokens:
        return "is empty"
    return None


def _word_glob(pattern: str, word: str) -> bool:
    return fnmatch.fnmatchcase(word, pattern)


def _program(pattern: str, word: str) -> bool:
    """A program word against a rule's: a path only against a path, and a ``*`` within one
    folder (``ls*`` is not ``ls/../../bin/sh``)."""
    if "/" not in word:
        return _word_glob(pattern, word)
    want, got = pattern.split("/"), word.split("/")
    return len(want) == len(got) and all(
        w == g if g in (".", "..") else _word_glob(w, g) for w, g in zip(want, got, strict=True)
    )


def _canon_cluster(word: str) -> str:
    # `-rf` and `-fr` are one request: compare clusters with their letters sorted.
    return "-" + "".join(sorted(word[1:])) if is_cluster(word) else word


@dataclass(frozen=True, slots=True)
class CommandGlob:
    """A rule's command glob, read as words: a last word ending in ``*`` (or a lone ``*``)
    leaves the command open to more words."""

    words: tuple[str, ...]
    open: bool
    source: str = ""

    @classmethod
    def of(cls, pattern: str) -> CommandGlob:
        """The glob ``pattern`` as words (a bad one matches nothing: see ``glob_error``)."""
        return _glob_of(pattern)

    def strict(self, part: Simple) -> bool:
        """Whether ``part`` is this command word for word (an allow or a grant): a plain
        command, its glob and tilde words only where the glob is open."""
        if part.opaque or part.env or not part.words:
            return False
        words = [_canon_cluster(w) for w in part.words]
        mine = [_canon_cluster(w) for w in self.words]
        if len(words) < len(mine) or (not self.open and len(words) != len(mine)):
            return False
        if part.expands and (not self.open or min(part.expands) < len(mine)):
            return False  # `cat *.txt` is whatever files there are: only an open tail takes it
        if mine and not _program(mine[0], words[0]):
            return False
        return all(_word_glob(p, w) for p, w in zip(mine[1:], words[1:], strict=False))

    def loose(self, part: Simple) -> bool:
        """Whether ``part`` could be this command (a deny or an ask): the program by name,
        every flag in any order or cluster, the other words in order with any between."""
        if not self.words or (self.source and _word_glob(self.source, part.text())):
            return True  # the glob as text matches too: a deny written for the raw string
        shape = Simple(self.words)
        want_flags = flag_words(self.words[1:])
        have = part.flags()
        for flag in want_flags:
            if _GLOB_CHARS & set(flag):
                if not any(_word_glob(flag, h) for h in have):
                    return False
            elif is_cluster(flag) or len(flag) == 2:
                # Letter case too: `-R` and `-r` are one flag to rm, cp, chmod, chown…
                folded = {h.lower() for h in have}
                if not all(f"-{c.lower()}" in folded for c in flag[1:]):
                    return False
            elif flag not in have:
                return False
        want = shape.positionals()
        got = part.positionals()
        # The program by name; behind `sudo`, `env`, `xargs`… any later word may be it.
        starts = range(len(got)) if part.name in RUNNERS else range(1)
        for start in starts:
            if _word_glob(want[0], posixpath.basename(got[start])) and _in_order(
                want[1:], got[start + 1 :]
            ):
                return True
        return False


# A rule's globs are read again for every use matched (``Pattern.matches``): a replay of the
# decision log matches thousands of uses against the same few rules (``bench.rules_learned``).
@functools.lru_cache(maxsize=4096)
def _glob_of(pattern: str) -> CommandGlob:
    tokens = _tokens(pattern) or []
    if any(_is_operator(t) for t in tokens):
        return CommandGlob(("\x00",), False, pattern)
    is_open = bool(tokens) and tokens[-1].endswith("*")
    if tokens and tokens[-1] == "*":
        tokens = tokens[:-1]
    return CommandGlob(tuple(tokens), is_open, pattern)


def _in_order(want: tuple[str, ...], got: tuple[str, ...]) -> bool:
    position = 0
    for pattern in want:
        while position < len(got) and not _word_glob(pattern, got[position]):
            position += 1
        if position == len(got):
            return False
        position += 1
    return True
