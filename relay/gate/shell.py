"""Shell commands as a shell reads them, so rules match what runs, not what was typed. Pure.

``parse`` splits a command line into its simple commands (on ``;``, ``&&``, ``||``, ``|``,
``&``, newlines and parentheses), drops ``NAME=value`` prefixes and keywords such as
``then``/``do``, and marks a part *opaque* when relay cannot see everything it would run: a
``$(…)``, backtick or ``<(…)`` substitution (whose commands are parsed too, as parts), a
here-document, output redirected to a file, a ``#`` comment, a program named by a variable or
glob, ``eval`` or ``sh -c`` (whose argument is parsed too). Deny and ask rules match any part
(``CommandGlob.loose``: by program name whatever its path, flags in any order or spelling of
a cluster, positionals in order with anything between); allow rules and grants must match
every part word for word (``CommandGlob.strict``) and never an opaque one. Built over the
standard library's ``shlex`` (``punctuation_chars``): bashlex costs ~0.11 s per hook start.
"""

from __future__ import annotations

import fnmatch
import posixpath
import re
import shlex
from dataclasses import dataclass

__all__ = ["CommandGlob", "Parsed", "Simple", "glob_error", "parse"]

_PUNCTUATION = ";&|()<>\n"
_SEPARATOR = frozenset(";&|\n()")
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*\+?=")
_CLUSTER = re.compile(r"^-[A-Za-z0-9]{2,}$")
_SUBSTITUTION = re.compile(r"\$\(|`|<\(|>\(")
_FLATTEN = re.compile(r"\$\(|`|<\(|>\(|\)")
_KEYWORDS = frozenset({"!", "{", "}", "if", "then", "else", "elif", "do", "while", "until", "time"})
_ENDS = frozenset({"fi", "done", "esac"})
_SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh", "mksh", "fish", "busybox"})
# Programs that run another program named in their arguments.
_WRAPPERS = frozenset(
    {"sudo", "doas", "env", "exec", "command", "builtin", "nohup", "nice", "ionice", "time"}
    | {"timeout", "xargs", "stdbuf", "chroot", "setsid", "unbuffer", "watch", "strace"}
)
_SAFE_TARGETS = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr", "-"})
_GLOB_CHARS = frozenset("*?[")
_DEPTH = 4


@dataclass(frozen=True, slots=True)
class Simple:
    """One simple command: its words as written (no ``NAME=value`` prefix), and whether
    relay can see all it runs."""

    words: tuple[str, ...]
    env: tuple[str, ...] = ()
    opaque: bool = False

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
        for word in _flag_words(self.words[1:]):
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
            elif ended or not _is_flag(word):
                rest.append(word)
        return (self.name, *rest)


@dataclass(frozen=True, slots=True)
class Parsed:
    """A command line's simple commands (those of substitutions and ``sh -c`` included)."""

    parts: tuple[Simple, ...]

    @property
    def opaque(self) -> bool:
        """Whether any part hides what it runs."""
        return any(p.opaque for p in self.parts)


def _is_flag(word: str) -> bool:
    return len(word) > 1 and word.startswith("-")


def _flag_words(words: tuple[str, ...]) -> list[str]:
    out = []
    for word in words:
        if word == "--":
            break
        if _is_flag(word):
            out.append(word)
    return out


def _tokens(text: str) -> list[str] | None:
    lexer = shlex.shlex(text, posix=True, punctuation_chars=_PUNCTUATION)
    lexer.whitespace = " \t\r"
    lexer.whitespace_split = True
    lexer.commenters = ""  # a shell's `#` starts a comment only at a word's start: see below
    try:
        return list(lexer)
    except ValueError:  # an unclosed quote or a trailing escape
        return None


def _is_operator(token: str) -> bool:
    return bool(token) and all(c in _PUNCTUATION for c in token)


def parse(command: str, *, _depth: int = 0) -> Parsed:
    """The simple commands of ``command`` (see the module docstring); never raises."""
    text = command.replace("\\\n", "")
    opaque_all = bool(_SUBSTITUTION.search(text))
    extra: list[Simple] = []
    if opaque_all and _depth < _DEPTH:
        # A substitution's commands run too: parse them as parts of their own.
        extra = list(parse(_FLATTEN.sub(" ; ", text), _depth=_depth + 1).parts)
    tokens = _tokens(text)
    if tokens is None:
        # Unreadable: one opaque part of its whitespace-split words, for deny rules to see.
        return Parsed((Simple(tuple(text.split()), opaque=True), *extra))
    parts: list[Simple] = []
    words: list[str] = []
    opaque = False
    index = 0

    def close() -> None:
        nonlocal words, opaque
        part = _simple(words, opaque or opaque_all, _depth, parts)
        if part is not None:
            parts.append(part)
        words, opaque = [], False

    while index < len(tokens):
        token = tokens[index]
        index += 1
        if _is_operator(token) and ("<" in token or ">" in token):
            target = tokens[index] if index < len(tokens) else ""
            index += 1
            if token.startswith("<<") or (">" in token and not _harmless(target)):
                opaque = True  # a here-document, or a file written: more than the words say
            continue
        if _is_operator(token):
            close()
            continue
        if token.startswith("#"):
            opaque = True  # a comment, or a word a shell reads differently than shlex
        words.append(token)
    close()
    return Parsed((*parts, *extra))


def _harmless(target: str) -> bool:
    return target in _SAFE_TARGETS or target.isdigit() or target == "-"


def _simple(words: list[str], opaque: bool, depth: int, parts: list[Simple]) -> Simple | None:
    env: list[str] = []
    rest = list(words)
    while rest and (rest[0] in _KEYWORDS or _ASSIGNMENT.match(rest[0])):
        word = rest.pop(0)
        if word not in _KEYWORDS:
            env.append(word)
    if rest and rest[0] in _ENDS:
        rest.pop(0)
    if not rest:
        return None
    program = rest[0]
    if not program or "$" in program or _GLOB_CHARS & set(program):
        opaque = True
    name = posixpath.basename(program)
    if name in _SHELLS or name in ("eval", "source", "."):
        # What these run comes from their arguments: parse them as commands of their own.
        opaque = True
        if depth < _DEPTH:
            inner = [" ".join(rest[1:])] if name == "eval" else rest[1:]
            for word in inner:
                if not _is_flag(word):
                    parts.extend(parse(word, _depth=depth + 1).parts)
    return Simple(tuple(rest), tuple(env), opaque)


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


def _canon_cluster(word: str) -> str:
    # `-rf` and `-fr` are one request: compare clusters with their letters sorted.
    return "-" + "".join(sorted(word[1:])) if _CLUSTER.match(word) else word


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
        tokens = _tokens(pattern) or []
        if any(_is_operator(t) for t in tokens):
            return cls(("\x00",), False, pattern)
        is_open = bool(tokens) and tokens[-1].endswith("*")
        if tokens and tokens[-1] == "*":
            tokens = tokens[:-1]
        return cls(tuple(tokens), is_open, pattern)

    def strict(self, part: Simple) -> bool:
        """Whether ``part`` is this command word for word (an allow or a grant)."""
        if part.opaque or part.env:
            return False
        words = [_canon_cluster(w) for w in part.words]
        mine = [_canon_cluster(w) for w in self.words]
        if len(words) < len(mine) or (not self.open and len(words) != len(mine)):
            return False
        return all(_word_glob(p, w) for p, w in zip(mine, words, strict=False))

    def loose(self, part: Simple) -> bool:
        """Whether ``part`` could be this command (a deny or an ask): the program by name,
        every flag in any order or cluster, the other words in order with any between."""
        if not self.words or (self.source and _word_glob(self.source, part.text())):
            return True  # the glob as text matches too: a deny written for the raw string
        shape = Simple(self.words)
        want_flags = _flag_words(self.words[1:])
        have = part.flags()
        for flag in want_flags:
            if _GLOB_CHARS & set(flag):
                if not any(_word_glob(flag, h) for h in have):
                    return False
            elif _CLUSTER.match(flag) or len(flag) == 2:
                # Letter case too: `-R` and `-r` are one flag to rm, cp, chmod, chown…
                folded = {h.lower() for h in have}
                if not all(f"-{c.lower()}" in folded for c in flag[1:]):
                    return False
            elif flag not in have:
                return False
        want = shape.positionals()
        got = part.positionals()
        # The program by name; behind `sudo`, `env`, `xargs`… any later word may be it.
        starts = range(len(got)) if part.name in _WRAPPERS else range(1)
        for start in starts:
            if _word_glob(want[0], posixpath.basename(got[start])) and _in_order(
                want[1:], got[start + 1 :]
            ):
                return True
        return False


def _in_order(want: tuple[str, ...], got: tuple[str, ...]) -> bool:
    position = 0
    for pattern in want:
        while position < len(got) and not _word_glob(pattern, got[position]):
            position += 1
        if position == len(got):
            return False
        position += 1
    return True
