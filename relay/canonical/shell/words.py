"""Words as bash reads them. Pure.

A word ends only at an unquoted space, tab or newline or at an operator (``; & | ( ) < >``):
a ``\\r``, ``\\v``, ``\\f`` or any other character is part of it. Quotes, backslashes and
backslash-newline are removed as bash removes them. A word is *plain* when bash makes exactly
its text of it: a ``$`` of any kind (``$x``, ``$(…)``, ``$((…))``, ``$'…'``, ``$"…"``), a
backtick, a process substitution, a brace expansion (``{a,b}``, ``{1..3}``) or a hidden
character (a control character, an invisible space or direction mark) makes it not. A plain
word *expands* when it is a glob (``*``, ``?``, ``[…]``) or starts with ``~`` (also after
``=`` or ``:``): one word as written, file names or a home directory when run. The commands
inside substitutions are read too (``inner``), so that deny rules see them.
"""

from __future__ import annotations

__all__ = ["META", "Command", "Word", "WordReader"]

META = frozenset(" \t\n;&|()<>")
_NAME_START = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_")
_NAME = _NAME_START | frozenset("0123456789")
_SPECIAL = frozenset("@*#?-$!0123456789")


def _span(first: str, last: str) -> set[str]:
    return {chr(c) for c in range(ord(first), ord(last) + 1)}


# Kept in a word by bash, but unseen or misread by a person and a terminal: control
# characters, invisible spaces and joiners, direction marks.
_HIDDEN = frozenset(
    _span("\x00", "\x08")
    | _span("\x0b", "\x1f")
    | _span("\x7f", "\x9f")
    | _span("\u2000", "\u200f")
    | _span("\u2028", "\u202f")
    | _span("\u205f", "\u206f")
    | _span("\ufe00", "\ufe0f")
    | _span("\ufff9", "\ufffb")
    | set("\u00a0\u00ad\u061c\u115f\u1160\u1680\u180e\u3000\u3164\ufeff")
)
# Substitutions nest this deep at most; deeper ones are skipped over and leave it uncertain.
_DEPTH = 8


class Word:
    """One word: its text after quote removal (as written where it is not ``plain``)."""

    __slots__ = ("assignment", "expands", "plain", "quoted", "text")

    def __init__(
        self, text: str, plain: bool, expands: bool, assignment: bool, quoted: bool
    ) -> None:
        self.text = text
        self.plain = plain
        self.expands = expands
        self.assignment = assignment
        self.quoted = quoted


class Command:
    """One simple command's words; ``opaque`` when a redirection does more than the words
    say (writes a file, a here-document); ``inner`` when a substitution runs it."""

    __slots__ = ("inner", "opaque", "redirected", "words")

    def __init__(self, *, inner: bool) -> None:
        self.words: list[Word] = []
        self.opaque = False
        self.inner = inner
        self.redirected = False


class WordReader:
    """Reads words from ``text`` at ``i``; ``relay.canonical.shell.script``'s reader (``run``)
    reads commands of them, and reads the commands inside substitutions with itself."""

    def __init__(self, text: str, at: int, depth: int, *, inner: bool, out: list[Command]):
        self.text = text
        self.i = at
        self.depth = depth
        self.inner = inner
        self.out = out
        self.uncertain = False

    def run(self, *, nested: bool = False) -> int:
        """Read commands to the end (``nested``: to the ``)`` closing a substitution)."""
        raise NotImplementedError

    def read_word(self) -> Word:
        text, n = self.text, len(self.text)
        chars: list[str] = []
        bare: list[bool] = []  # whether each character was unquoted
        plain, quoted = True, False
        while self.i < n:
            c = text[self.i]
            if c in "<>" and text.startswith("(", self.i + 1):
                plain = False  # `<(…)`: process substitution, inside a word too
                start = self.i
                self.i = self.substitution(self.i + 2)
                _loose(chars, bare, text[start : self.i])
            elif c in META:
                break
            elif c == "\\":
                quoted = True
                if self.i + 1 >= n:
                    self.uncertain = True  # a trailing backslash escapes what a harness appends
                    _loose(chars, bare, c)
                elif text[self.i + 1] != "\n":
                    _loose(chars, bare, text[self.i + 1])
                self.i += 2
            elif c == "'":
                quoted = True
                end = text.find("'", self.i + 1)
                if end < 0:
                    self.uncertain = True
                    end = n
                _loose(chars, bare, text[self.i + 1 : end])
                self.i = end + 1
            elif c == '"':
                quoted = True
                self.i += 1
                plain = self.quoted(chars, bare) and plain
            elif c == "$":
                plain = False
                self.dollar(chars, bare, in_quotes=False)
            elif c == "`":
                plain = False
                self.backtick(chars, bare)
            else:
                chars.append(c)
                bare.append(True)
                self.i += 1
        word = "".join(chars)
        assignment = _assignment(chars, bare)
        if plain and (not _HIDDEN.isdisjoint(word) or _braces(chars, bare) or assignment == "["):
            plain = False  # `a[i]=…`: the subscript is arithmetic, which can run commands
        return Word(word, plain, _expands(chars, bare), bool(assignment), quoted)

    def quoted(self, chars: list[str], bare: list[bool], closing: str = '"') -> bool:
        """Read a double-quoted string's inside; whether it holds no expansion."""
        text, n = self.text, len(self.text)
        plain = True
        while self.i < n:
            c = text[self.i]
            if closing and c == closing:
                self.i += 1
                return plain
            if c == "\\" and self.i + 1 < n and text[self.i + 1] in '$`"\\\n':
                if text[self.i + 1] != "\n":
                    _loose(chars, bare, text[self.i + 1])
                self.i += 2
            elif c == "$":
                plain = False
                self.dollar(chars, bare, in_quotes=True)
            elif c == "`":
                plain = False
                self.backtick(chars, bare)
            else:
                _loose(chars, bare, c)
                self.i += 1
        if closing:
            self.uncertain = True
        return plain

    def dollar(self, chars: list[str], bare: list[bool], *, in_quotes: bool) -> None:
        """Read an expansion starting with ``$``; its text goes into the word as written."""
        text, n, start = self.text, len(self.text), self.i
        nxt = text[start + 1 : start + 2]
        if text.startswith("$((", start):
            self.i = self.group(start + 3, "(", ")", 2)
        elif nxt == "(":
            self.i = self.substitution(start + 2)
        elif nxt in ("{", "["):
            self.i = self.group(start + 2, nxt, "}" if nxt == "{" else "]", 1)
        elif nxt == "'" and not in_quotes:
            end = start + 2
            while end < n and text[end] != "'":
                end += 2 if text[end] == "\\" else 1
            if end >= n:
                self.uncertain = True
            self.i = min(end + 1, n)
        elif nxt == '"' and not in_quotes:
            self.i = start + 2
            self.quoted(chars, bare)
            return
        elif nxt in _NAME_START:
            end = start + 2
            while end < n and text[end] in _NAME:
                end += 1
            self.i = end
        else:
            self.i = start + (2 if nxt and nxt in _SPECIAL else 1)
        _loose(chars, bare, text[start : self.i])

    def backtick(self, chars: list[str], bare: list[bool]) -> None:
        text, n, start = self.text, len(self.text), self.i
        body: list[str] = []
        end = start + 1
        while end < n and text[end] != "`":
            if text[end] == "\\" and end + 1 < n:
                nxt = text[end + 1]
                body.append(nxt if nxt in "$`\\" else "\\" + nxt)
                end += 2
            else:
                body.append(text[end])
                end += 1
        if end >= n:
            self.uncertain = True
        self.i = min(end + 1, n)
        _loose(chars, bare, text[start : self.i])
        if self.depth >= _DEPTH:
            self.uncertain = True
            return
        inner = type(self)("".join(body), 0, self.depth + 1, inner=True, out=self.out)
        inner.run()
        self.uncertain |= inner.uncertain

    def substitution(self, at: int) -> int:
        """Read ``$(…)`` or ``<(…)`` from just inside its ``(``; the index after its ``)``."""
        if self.depth >= _DEPTH:
            self.uncertain = True
            return _skip(self.text, at, "(", ")", 1)
        inner = type(self)(self.text, at, self.depth + 1, inner=True, out=self.out)
        end = inner.run(nested=True)
        self.uncertain |= inner.uncertain
        return end

    def group(self, at: int, opening: str, closing: str, depth: int) -> int:
        """Skip ``${…}``, ``$[…]`` or ``$((…))`` (reading the substitutions inside)."""
        text, n = self.text, len(self.text)
        if self.depth >= _DEPTH:
            self.uncertain = True
            return _skip(text, at, opening, closing, depth)
        self.depth += 1  # `${a:-${b:-…}}` nests through here, not through a new reader
        sink: list[str] = []
        sunk: list[bool] = []
        self.i = at
        try:
            while self.i < n:
                c = text[self.i]
                if c == "\\":
                    self.i += 2
                elif c == "'":
                    end = text.find("'", self.i + 1)
                    self.i = n if end < 0 else end + 1
                elif c == '"':
                    self.i += 1
                    self.quoted(sink, sunk)
                elif c == "`":
                    self.backtick(sink, sunk)
                elif c == "$":
                    self.dollar(sink, sunk, in_quotes=True)
                else:
                    self.i += 1
                    depth += (c == opening) - (c == closing)
                    if depth == 0:
                        return self.i
            self.uncertain = True
            return n
        finally:
            self.depth -= 1


def _loose(chars: list[str], bare: list[bool], piece: str) -> None:
    chars.extend(piece)
    bare.extend([False] * len(piece))


def _skip(text: str, at: int, opening: str, closing: str, depth: int) -> int:
    """The index just past the group's close, by counting alone (too deep to read)."""
    quote = ""
    while at < len(text):
        c = text[at]
        if c == "\\":
            at += 2
            continue
        if quote:
            quote = "" if c == quote else quote
        elif c in "'\"`":
            quote = c
        else:
            depth += (c == opening) - (c == closing)
            if depth == 0:
                return at + 1
        at += 1
    return len(text)


def _expands(chars: list[str], bare: list[bool]) -> bool:
    """A glob, or a tilde bash replaces with a home directory."""
    last_close = max((k for k, c in enumerate(chars) if c == "]" and bare[k]), default=-1)
    for k, c in enumerate(chars):
        if not bare[k]:
            continue
        if c in "*?" or (c == "[" and k < last_close):
            return True
        if c == "~" and (k == 0 or chars[k - 1] in "=:"):
            return True
    return False


def _braces(chars: list[str], bare: list[bool]) -> bool:
    """Whether bash may brace-expand the word (an unquoted ``{…,…}`` or ``{…..…}``)."""
    opened = next((k for k, c in enumerate(chars) if c == "{" and bare[k]), -1)
    if opened < 0:
        return False
    closed = max((k for k, c in enumerate(chars) if c == "}" and bare[k]), default=-1)
    for k in range(opened + 1, closed):
        if bare[k] and (chars[k] == "," or (chars[k : k + 2] == [".", "."] and bare[k + 1])):
            return True
    return False


def _assignment(chars: list[str], bare: list[bool]) -> str:
    """``=`` for ``NAME=…`` or ``NAME+=…`` (name and ``=`` unquoted), ``[`` for
    ``NAME[…]=…``, else empty."""
    if not chars or chars[0] not in _NAME_START or not bare[0]:
        return ""
    k = 1
    while k < len(chars) and chars[k] in _NAME and bare[k]:
        k += 1
    if k < len(chars) and chars[k] == "[" and bare[k]:
        rest = "".join(chars[k:])
        return "[" if "]=" in rest or "]+=" in rest else ""
    if k < len(chars) and chars[k] == "+" and bare[k]:
        k += 1
    return "=" if k < len(chars) and chars[k] == "=" and bare[k] else ""
