"""A command line's simple commands as bash reads them. Pure.

``read`` follows bash's own reader (bash 5) over the words of ``relay.canonical.shell.words``:
commands end at ``;``, ``&``, ``&&``, ``||``, ``|``, ``|&``, a newline or a parenthesis;
reserved words count only where a command starts (``!`` and ``time`` only where a pipeline
starts); ``#`` starts a comment only at a word's start; a here-document's body is skipped;
a digit or ``{name}`` before ``<``/``>`` is a redirection's, not a word. A redirection that
writes a file or feeds a here-document makes its command ``opaque``. What relay does not
follow as bash would (``case``, ``for``, ``[[``, ``((``, functions, ``coproc``, an unclosed
quote, a comment…) marks the script ``uncertain``; its words are still read as far as they
go, for deny rules to see.
"""

from __future__ import annotations

from relay.canonical.shell.words import META, Command, Word, WordReader

__all__ = ["read"]

# By first character, longest first: the reader takes the first that matches.
_OPERATORS = {
    ";": (";;&", ";;", ";&", ";"),
    "&": ("&&", "&>>", "&>", "&"),
    "|": ("||", "|&", "|"),
    ">": (">>", ">&", ">|", ">"),
    "<": ("<<<", "<<-", "<<", "<&", "<>", "<"),
    "(": ("(",),
    ")": (")",),
}
_REDIRECTS = frozenset({"&>>", "&>", ">>", ">&", ">|", "<<<", "<<-", "<<", "<&", "<>", "<", ">"})
_RESERVED = frozenset(
    {"!", "time", "{", "}", "if", "then", "else", "elif", "fi", "while", "until", "do", "done"}
    | {"case", "esac", "for", "select", "in", "function", "coproc", "[[", "]]"}
)
_OPENERS = frozenset({"{", "if", "then", "else", "elif", "while", "until", "do"})
_CLOSERS = frozenset({"}", "fi", "done", "esac"})
_SINKS = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr"})
_DIGITS = frozenset("0123456789")
_NAME = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_0123456789")


def read(text: str) -> tuple[list[Command], bool]:
    """The simple commands of ``text`` as bash reads them (see the module docstring), and
    whether relay is unsure it read all of it as bash does."""
    out: list[Command] = []
    reader = _Reader(text, 0, 0, inner=False, out=out)
    reader.run()
    return out, reader.uncertain or "\x00" in text


def _is_fd(text: str) -> bool:
    body = text.removesuffix("-")
    return text == "-" or (bool(body) and all(c in _DIGITS for c in body))


class _Reader(WordReader):
    def __init__(self, text: str, at: int, depth: int, *, inner: bool, out: list[Command]):
        super().__init__(text, at, depth, inner=inner, out=out)
        self.command = Command(inner=inner)
        self.start = True  # where a command starts: reserved words are keywords here
        self.pipeline = True  # where a pipeline starts: `!` and `time` are keywords here
        self.closed = False  # after `)`, `}`, `fi`…: only a redirection or an operator
        self.timed = 0  # just after `time` (1) or `time -p` (2)
        self.parens = 0
        self.heredocs: list[tuple[str, bool, bool]] = []

    # ---- commands and operators ----------------------------------------------------------

    def run(self, *, nested: bool = False) -> int:
        """Read to the end (``nested``: to the ``)`` closing a substitution); its index."""
        text, n = self.text, len(self.text)
        while self.i < n:
            c = text[self.i]
            if c in " \t":
                self.i += 1
            elif c == "\\" and text.startswith("\n", self.i + 1):
                self.i += 2
            elif c == "#":
                # Bash skips it; relay asks about a line with one, as it always has.
                end = text.find("\n", self.i)
                self.i = n if end < 0 else end
                self.uncertain = True
            elif c == "\n":
                self.i += 1
                self.separator("\n")
                self.bodies()
            elif c in "<>" and text.startswith("(", self.i + 1):
                self.word(self.read_word())
            elif c in META:
                if self.operator(nested):
                    return self.i
            else:
                self.word_or_fd()
        if nested:
            self.uncertain = True  # `$(` never closed
        self.finish()
        if self.parens or self.heredocs:
            self.uncertain = True
        return self.i

    def operator(self, nested: bool) -> bool:
        op = next(o for o in _OPERATORS[self.text[self.i]] if self.text.startswith(o, self.i))
        self.i += len(op)
        if op == ")":
            self.finish()
            if self.parens:
                self.parens -= 1
                self.closed, self.start = True, False
            elif nested:
                return True
            else:
                self.uncertain = True
                self.start = True  # `f() {…}`: read the body on, for deny rules
        elif op == "(":
            if self.start and not self.command.words and not self.command.redirected:
                if self.text.startswith("(", self.i):
                    self.uncertain = True  # `((…))`: arithmetic
                self.parens += 1
                self.pipeline = True
            else:
                self.uncertain = True  # a function, an array, an extended glob
                self.finish()
        elif op in _REDIRECTS:
            self.redirect(op)
        else:
            self.separator(op)
        return False

    def separator(self, op: str) -> None:
        if op in (";;", ";&", ";;&"):
            self.uncertain = True  # only `case` has these
        self.finish()
        self.start, self.closed, self.timed = True, False, 0
        self.pipeline = op not in ("|", "|&")

    def finish(self) -> None:
        if self.command.words or self.command.opaque:
            self.out.append(self.command)
        self.command = Command(inner=self.inner)

    def word_or_fd(self) -> None:
        text, at = self.text, self.i
        end = at
        while end < len(text) and text[end] in _DIGITS:
            end += 1
        if end > at and text.startswith(("<", ">"), end):
            self.i = end  # `2>`: the number names the redirection's file descriptor
            return
        if text.startswith("{", at):
            end = at + 1
            while end < len(text) and text[end] in _NAME:
                end += 1
            if end > at + 1 and text.startswith(("}<", "}>"), end) and text[at + 1] not in _DIGITS:
                self.i = end + 1  # `{fd}>`: bash assigns a variable
                self.uncertain = True
                return
        self.word(self.read_word())

    def word(self, word: Word) -> None:
        if self.closed:
            self.uncertain = True  # `) x`, `fi x`: bash refuses it
            self.closed = False
        keyword = not word.quoted and word.plain and not self.command.words
        if self.timed and keyword and word.text in ("-p", "--"):
            self.timed = 2 if word.text == "-p" else 0
            return
        if self.timed and word.text.startswith("-"):
            self.uncertain = True  # `time -x`: bash versions differ
        self.timed = 0
        if self.start and keyword and word.text in _RESERVED and self.keyword(word.text):
            return
        self.command.words.append(word)
        self.start = self.pipeline = False

    def keyword(self, name: str) -> bool:
        """Handle a reserved word where a command starts; whether it was one."""
        if self.command.redirected:
            self.uncertain = True  # `>x if`: read as a name or refused, not as a keyword
        if name == "time" and not self.pipeline:
            return False  # `a | time b`: the program `time`
        if name in ("!", "time"):
            if not self.pipeline:
                self.uncertain = True  # `a | ! b` is refused
            self.timed = 1 if name == "time" else 0
            return True
        if name in _OPENERS:
            self.pipeline = True
            return True
        if name in _CLOSERS:
            self.finish()
            self.closed, self.start = True, False
            return True
        self.uncertain = True  # case, for, select, function, coproc, [[: not followed here
        return False

    def redirect(self, op: str) -> None:
        text, n = self.text, len(self.text)
        if not self.closed:
            self.command.redirected = True
        while self.i < n and (text[self.i] in " \t" or text.startswith("\\\n", self.i)):
            self.i += 2 if text[self.i] == "\\" else 1
        if self.i >= n or (text[self.i] in META and not text.startswith("(", self.i + 1)):
            self.uncertain = True  # no file named
            return
        target = self.read_word()
        fixed = target.plain and not target.expands
        if op in ("<<", "<<-"):
            self.heredocs.append((target.text, target.quoted or not target.plain, op == "<<-"))
            harmless = False
        elif op == "<":
            harmless = fixed  # reads a file
        elif op in (">&", "<&") and fixed and _is_fd(target.text):
            harmless = True  # duplicates or closes a descriptor
        elif op in ("<<<", "<&", "<>"):
            harmless = False
        else:
            harmless = fixed and target.text in _SINKS  # else writes a file
        if not harmless:
            if self.closed:
                self.uncertain = True  # a compound command's redirection: no one part holds it
            self.command.opaque = True

    def bodies(self) -> None:
        """Skip the here-documents started on the line just read (their expansions run)."""
        text, n = self.text, len(self.text)
        for delimiter, quoted, tabs in self.heredocs:
            while self.i < n:
                end = text.find("\n", self.i)
                end = n if end < 0 else end
                line = text[self.i : end]
                self.i = min(end + 1, n)
                if (line.lstrip("\t") if tabs else line) == delimiter:
                    break
                if not quoted and ("$" in line or "`" in line):
                    body = _Reader(line, 0, self.depth + 1, inner=True, out=self.out)
                    body.quoted([], [], closing="")
                    self.uncertain |= body.uncertain
            else:
                self.uncertain = True  # bash warns and takes the rest as the body
        self.heredocs.clear()
