"""What a program runs besides itself. Pure.

A plain command runs its program with its words. Some programs run more: a shell, ``eval``,
``xargs``, ``find -exec``, ``su``, ``script``, ``parallel``… run text or words relay cannot
pin down; builtins such as ``export``, ``read`` or ``set`` change how later commands run.
These are never plain (``opaque``), and the words they would run are handed back as text to
read as commands of their own, for deny rules. A wrapper whose options relay can read
exactly (``sudo``, ``env``, ``nice``, ``timeout``, ``nohup``…) stays plain, and the command
it runs is handed back as a command of its own: an allow rule must cover both.
"""

from __future__ import annotations

import shlex
from dataclasses import replace

from relay.canonical.shell.parts import Simple, flag_words, is_flag

__all__ = ["RUNNERS", "unwrap"]

_SHELLS = frozenset(
    {"sh", "bash", "rbash", "zsh", "dash", "ash", "ksh", "mksh", "yash", "csh", "tcsh", "fish"}
    | {"busybox", "pwsh"}
)
# Run text or words they are given, now or later, in ways relay does not follow.
_RUNS_TEXT = _SHELLS | frozenset(
    {"eval", "source", ".", "trap", "alias", "fc", "bind", "complete", "enable", "coproc"}
    | {"xargs", "parallel", "watch", "su", "runuser", "sg", "script", "ssh", "at", "batch"}
    | {"unshare", "nsenter", "chroot", "setpriv", "pkexec", "firejail", "bwrap", "fakeroot"}
    | {"strace", "ltrace", "valgrind", "gdb", "perf", "chrt", "taskset", "numactl", "prlimit"}
    | {"setarch", "faketime", "cpulimit", "tmux", "screen", "systemd-run", "dbus-run-session"}
    | {"xvfb-run", "caffeinate", "sandbox-exec"}
)
# Builtins that change what later commands are, or see (variables such as PATH, options).
_SETS_STATE = frozenset(
    {"export", "declare", "typeset", "local", "readonly", "set", "shopt", "unset", "hash"}
    | {"read", "mapfile", "readarray", "getopts", "let"}
)
# ... and those that do with one option: `printf -v PATH …`, `wait -p PATH`.
_SETS_WITH = {"printf": "v", "wait": "p"}
# Wrappers read exactly: (flags, options taking a value, operands before the command), as
# each reads its arguments (getopt stopping at the first operand).
_WRAPPERS: dict[str, tuple[str, str, int]] = {
    "sudo": ("AbEHknPSBN", "ugCprtT", 0),  # not -D (another directory) nor -R (root)
    "doas": ("n", "u", 0),
    "env": ("i0v", "uC", 0),
    "nice": ("0123456789", "n", 0),
    "ionice": ("t", "cn", 0),
    "nohup": ("", "", 0),
    "setsid": ("cfw", "", 0),
    "stdbuf": ("", "ioe", 0),
    "timeout": ("v", "ks", 1),
    "time": ("pqv", "f", 0),
    "exec": ("cl", "", 0),
    "command": ("pvV", "", 0),
    "builtin": ("", "", 0),
    "flock": ("sexnouF", "wE", 1),
    "unbuffer": ("p", "", 0),
}
# Operands of a program that runs text read as command lines (then only the words joined).
_OPERANDS = 8
_FIND_RUNS = frozenset({"-exec", "-execdir", "-ok", "-okdir"})
_FIND_WRITES = frozenset({"-delete", "-fprint", "-fprint0", "-fprintf", "-fls"})
RUNNERS = _RUNS_TEXT | _WRAPPERS.keys() | {"find"}
"""Programs that run another: a deny rule's program may be any later word of theirs."""

Unwrapped = tuple[Simple, Simple | None, tuple[str, ...]]


def unwrap(part: Simple) -> Unwrapped:
    """``part`` (``opaque`` if it runs more than it shows), the command it runs when relay
    can tell exactly, and the texts to read as commands for what it may run otherwise."""
    words, name = part.words, part.name
    if not words:
        return part, None, ()
    if 0 in part.expands:
        return _opaque(part), None, ()  # `*.sh`, `~/x`: the program is whatever file it finds
    if name in _RUNS_TEXT:
        return _opaque(part), None, _texts(name, words)
    letter = _SETS_WITH.get(name, "")
    if name in _SETS_STATE or (letter and any(letter in w for w in _short(words))):
        return _opaque(part), None, ()
    if name == "find":
        return _find(part)
    spec = _WRAPPERS.get(name)
    if spec is None:
        return part, None, ()
    at = _command_at(words, spec)
    if at is None or any(i < at for i in part.expands):
        return _opaque(part), None, _texts(name, words)
    end = at
    if name in ("env", "sudo"):
        while end < len(words) and "=" in words[end]:
            end += 1  # NAME=value: for the command's environment
    if end == len(words) or (name == "command" and any("v" in w.lower() for w in words[1:at])):
        return part, None, ()  # runs nothing else: `env` alone prints, `command -v x` looks
    if words[end].startswith("-"):
        return _opaque(part), None, _texts(name, words)  # `flock f -c …`: options after all
    env = (*(words[1:at] if name == "env" else ()), *words[at:end])
    expands = frozenset(i - end for i in part.expands if i >= end)
    return part, Simple(words[end:], env, part.opaque or bool(env), expands, nested=True), ()


def _opaque(part: Simple) -> Simple:
    return part if part.opaque else replace(part, opaque=True)


def _short(words: tuple[str, ...]) -> list[str]:
    return [w for w in flag_words(words[1:]) if not w.startswith("--")]


def _command_at(words: tuple[str, ...], spec: tuple[str, str, int]) -> int | None:
    """Where the wrapped command starts, or ``None`` for an option relay does not know."""
    flags, valued, operands = spec
    at = 1
    while at < len(words):
        word = words[at]
        if word == "--":
            at += 1
            break
        if not is_flag(word):
            break
        if word.startswith("--"):
            return None
        for index, letter in enumerate(word[1:], start=2):
            if letter in valued:
                if index == len(word):
                    at += 1  # `-u root`: the value is the next word
                break
            if letter not in flags:
                return None
        at += 1
    at += operands
    return at if at <= len(words) else None


def _find(part: Simple) -> Unwrapped:
    words = part.words
    texts: list[str] = []
    opaque = False
    for at, word in enumerate(words):
        if word in _FIND_RUNS:
            end = next((e for e in range(at + 1, len(words)) if words[e] in (";", "+")), None)
            texts.append(shlex.join(words[at + 1 : end]))
            opaque = True
        opaque = opaque or word in _FIND_WRITES
    return (_opaque(part) if opaque else part), None, tuple(texts)


def _texts(name: str, words: tuple[str, ...]) -> tuple[str, ...]:
    """What ``name`` may run, as command lines: each operand (``sh -c '…'``), and the
    operands on (``xargs rm -rf``); ``eval`` its words joined, ``alias`` its values."""
    args = words[1:]
    if name == "eval":
        return (" ".join(args),) if args else ()
    if name == "alias":
        return tuple(w.split("=", 1)[1] for w in args if "=" in w)
    first = next((k for k, w in enumerate(args) if not is_flag(w)), len(args))
    texts = [w for w in args[first:] if not is_flag(w)][:_OPERANDS]
    if len(args) - first > 1:
        texts.append(shlex.join(args[first:]))
    return tuple(texts)
