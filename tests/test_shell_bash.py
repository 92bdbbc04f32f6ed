# ruff: noqa: S603 - bash and a script of ours, on cases the test wrote
"""Issue 49, point 4: relay reads a command line's words as bash does.

Each case relay reads as plain commands (no part opaque) is run by bash itself, with every
program and builtin replaced by a recorder of the words it got: every command bash ran must
be a part relay read, word for word (and, for a straight line of commands, all of them). A
corpus of tricky cases and generated ones (hypothesis), batched into one bash process per
batch. Then the same through the rules: an allow rule never allows a command relay cannot
prove plain, whatever its first word.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from relay.canonical.match import subject
from relay.canonical.shell import Parsed, glob_error, parse
from relay.gate.rules import Rules, load_rules, parse_rules

# Every case is checked against a real bash process.
pytestmark = pytest.mark.subprocess

BASH = shutil.which("bash") or "/bin/bash"
# Every program is a function recording its words (builtins too: functions come first); a
# name with no function comes to command_not_found_handle, as PATH finds nothing. `set -f`
# and HOME='~' keep globs and `~` as written (relay marks them: they expand when run). A
# case's recorder says "stop" (fails) after 40 calls, so that `while a; do b; done` ends.
DRIVER = r"""
set -f
HOME='~'
PATH=/nonexistent
__cases=() __names=()
while IFS= builtin read -r -d '' __c; do __cases+=("$__c"); done < "$2"
while IFS= builtin read -r -d '' __c; do __names+=("$__c"); done < "$3"
exec 9>"$1"
__rec() { builtin printf '%s\0' "$__case" "$#" "$@" >&9; (( ++__calls < 40 )); }
command_not_found_handle() { __rec "$@"; }
for __b in $(compgen -b) "${__names[@]}"; do
    [[ $__b == builtin ]] || builtin eval "function $__b { __rec \"\$FUNCNAME\" \"\$@\"; }"
done
__case=0
for __c in "${__cases[@]}"; do
    __calls=0
    builtin eval -- "$__c" </dev/null >/dev/null 2>&1
    builtin printf '%s\0' "$__case" -1 "$?" "$__calls" >&9
    builtin wait
    (( ++__case ))
done
"""
# Names bash can take as a function's (no quoting needed).
_FUNCTION_NAME = re.compile(r"^[A-Za-z0-9_./:+,@%^-]+$")
# Cases where bash may run fewer commands than relay read: a condition, `||`, a negation,
# an input file that is not there.
_PARTIAL = re.compile(r"\|\||!|<|\b(?:if|elif|else|while|until)\b")
# `~user`, `~+`, `~-`: a home or a directory that `HOME='~'` does not keep as written.
_OTHER_TILDE = re.compile(r"(?:^|[=:])~(?![/:]|$)")


@dataclass
class Ran:
    """What bash ran for one case: each command's words, its status, whether it looped."""

    commands: list[tuple[str, ...]]
    status: int = 0
    looped: bool = False


def run_bash(cases: list[str], tmp: Path) -> list[Ran]:
    """Run ``cases`` in one bash with the recorder; what each ran."""
    names = sorted(
        {
            p.words[0]
            for case in cases
            for p in parse(case).parts
            if p.words and not p.nested and _FUNCTION_NAME.match(p.words[0])
        }
        - {"__rec", "builtin"}
    )
    (tmp / "driver.sh").write_text(DRIVER)
    (tmp / "cases").write_bytes(b"".join(c.encode() + b"\0" for c in cases))
    (tmp / "names").write_bytes(b"".join(n.encode() + b"\0" for n in names))
    work = tmp / "work"
    work.mkdir(exist_ok=True)
    done = subprocess.run(
        [BASH, str(tmp / "driver.sh"), str(tmp / "out"), str(tmp / "cases"), str(tmp / "names")],
        cwd=work,
        env={"LANG": "C.UTF-8", "PATH": "/nonexistent"},
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    fields = (tmp / "out").read_bytes().split(b"\0")
    ran = [Ran([]) for _ in cases]
    at = 0
    while at < len(fields) - 1:
        case, count = int(fields[at]), int(fields[at + 1])
        if count < 0:
            ran[case].status = int(fields[at + 2])
            ran[case].looped = int(fields[at + 3]) >= 40
            at += 4
        else:
            words = fields[at + 2 : at + 2 + count]
            ran[case].commands.append(tuple(w.decode("utf-8", "surrogateescape") for w in words))
            at += 2 + count
    return ran


def runnable(parsed: Parsed) -> bool:
    """Plain, and safe to hand to the recorder (`builtin x` would run the real builtin)."""
    return not parsed.opaque and not any(
        p.name == "builtin" or any(_OTHER_TILDE.search(w) for w in p.words) for p in parsed.parts
    )


def agree(cases: list[str], tmp: Path) -> int:
    """Assert bash ran only commands relay read, word for word; how many cases bash ran."""
    plain = [c for c in cases if runnable(parse(c))]
    for case, ran in zip(plain, run_bash(plain, tmp), strict=True):
        read = [p.words for p in parse(case).parts if not p.nested]
        unseen = set(ran.commands) - set(read)
        assert not unseen, f"bash ran {sorted(unseen)} from {case!r}; relay read {read}"
        if ran.status == 0 and not ran.looped and not _PARTIAL.search(case):
            assert Counter(ran.commands) == Counter(read), f"{case!r}: {ran.commands} != {read}"
    return len(plain)


# ---- the corpus -------------------------------------------------------------------------

ATTACK = ["mkdir 'ls\r'", "ls\r/../../../bin/sh -c 'id > PWNED'"]
# Read by relay as plain commands: bash must agree on every word.
PLAIN = [
    "ls -la",
    "git status -s",
    "echo 'a b' \"c d\" e\\ f",
    "echo a\\\nb",
    "echo \\\\\nls -la",
    "echo 'a\\\nb'",
    'echo "a\\\nb"',
    "ec\\\nho x",
    "ls\\\n -la",
    "echo 'it'\\''s'",
    'echo "\\$HOME \\` \\" \\\\ \\x"',
    "echo \\#x a#b",
    "echo x;ls",
    "echo x&&ls||pwd",
    "echo x & ls",
    "echo a|cat|wc -l",
    "echo a |& cat",
    "ls 2>&1",
    "ls 2>/dev/null >/dev/null",
    "ls &>/dev/null",
    "ls >&2",
    "ls 2>&-",
    "ls 2&>/dev/null",
    "ls a2>/dev/null",
    "ls < /etc/hostname",
    ">/dev/null ls",
    "(cd src && ls)",
    "( (ls) )",
    "{ ls; pwd; }",
    "if true; then ls; elif pwd; then cat; else echo; fi",
    "while false; do ls; done",
    "until true; do ls; done",
    "! ls",
    "time ls | cat",
    "time -p ls",
    "time -p -- ls",
    "ls | time cat",
    "echo {a} x{}y {a\\,b} '{a,b}' a{b\\,c}",
    "git show stash@{0}",
    "echo a=b c:d --e=f",
    "echo [ ] [a ]a",
    "echo !x x! '!'",
    "echo -- - --x",
    "echo ''",
    'echo "" "" x',
    "echo é ü 日本",
    "echo 'tab\there' 'new\nline'",
    "ls\t-la",
    "echo ]] x",
    "echo if then fi done",
    "echo a; if true; then echo b; fi",
    "nice -n 5 ls -l",
    "sudo -u root apt update",
    "env ls",
    "timeout 5 make test",
    "nohup make &",
    "command -v ls",
    "./deploy.sh prod",
    "/usr/bin/env",
    "echo }",
    "echo {",
    "echo a=~/x x:~/y",
]
# Read by relay as more than plain commands (asked): every construct issue 49 names, and
# every character bash reads differently from a naive split.
OPAQUE = [
    *ATTACK,
    "ls\v-la",
    "ls\f-la",
    "ls\x00; rm -rf x",
    "ls\u00a0-la",
    "ls\u2003-la",
    "ls\u200b",
    "ls \u202eexe.txt",
    "echo $'\\x41'",
    'echo $"hi"',
    "echo $HOME",
    'echo "$HOME"',
    "echo ${HOME}",
    "echo $(id)",
    "echo `id`",
    "echo $((1+2))",
    "echo $[1+2]",
    "cat <(id)",
    "echo a<(id)b",
    "tee >(id)",
    "ls # x",
    "# x\nls",
    "case x in x) ls;; esac",
    "ls;;",
    "cat <<EOF\nx\nEOF",
    "cat <<'EOF'\n$(x)\nEOF",
    "cat <<< x",
    "ls > out",
    "ls >> out",
    "ls >| out",
    "ls &> out",
    "ls >& out",
    "ls <> out",
    "exec {fd}>x",
    "(ls) > out",
    "{ ls; } > out",
    "((x=1))",
    "[[ -f x ]]",
    "for i in a; do ls; done",
    "select x in a; do ls; done",
    "f() { ls; }",
    "function f { ls; }",
    "coproc ls",
    "{rm,-rf,x}",
    "echo {a,b}",
    "echo {1..3}",
    "echo a{b,c}d",
    "a=(1 2)",
    "a[0]=1",
    "PATH=/tmp/x",
    "PATH=/tmp/x; ls",
    "A=1 ls",
    "ls | ! cat",
    "'ls",
    'ls "a',
    "ls \\",
    "echo $(",
    "ls )",
    "ls (",
    "eval ls",
    "eval 'rm -rf x'",
    "bash -c ls",
    "sh -c 'ls'",
    "zsh -c ls",
    "dash -c ls",
    "sudo sh -c 'ls'",
    "sudo -s",
    "sudo -i ls",
    "sudo --user=root ls",
    "su -c ls",
    "su root",
    "script -c ls",
    "script out",
    "env -S 'sh -c ls'",
    "env --split-string='sh -c ls'",
    "env -i sh -c ls",
    "find . -exec rm {} ;",
    "find . -execdir rm {} +",
    "find . -ok rm {} ;",
    "find . -okdir rm {} ;",
    "find . -delete",
    "find . -fprint out",
    "xargs rm",
    "xargs -0 sh -c ls",
    "parallel rm ::: a",
    "flock /tmp/l -c ls",
    "flock -c ls /tmp/l",
    "unshare -r ls",
    "chroot / ls",
    "watch ls",
    "source x.sh",
    ". x.sh",
    "trap 'rm -rf x' EXIT",
    "alias ls='rm -rf x'",
    "export PATH=/tmp/x",
    "declare PATH=/tmp/x",
    "read PATH < f",
    "printf -v PATH %s /tmp",
    "set -k",
    "shopt -s expand_aliases",
    "hash -p /tmp/sh ls",
    "exec -a x ls",
    "nice sh -c ls",
    "timeout 5 bash -c ls",
    "time -x ls",
    "ls *.py; nice -n * ls",
    "~root/bin/x",
    "*.sh",
]


def test_relay_and_bash_agree_on_the_plain_corpus(tmp_path: Path) -> None:
    assert [c for c in PLAIN if parse(c).opaque] == []
    assert agree(PLAIN, tmp_path) == len(PLAIN)


def test_what_relay_cannot_prove_plain_is_opaque() -> None:
    assert [c for c in OPAQUE if not parse(c).opaque] == []


def test_relay_splits_the_attack_where_bash_does(tmp_path: Path) -> None:
    # Bash's words for each case, read by a recorder put before it (nothing else runs).
    cases = [*ATTACK, "ls\v-la\f-x", "ls\u00a0-la"]
    ran = run_bash([f"__rec {c}" for c in cases], tmp_path)
    for case, bash in zip(cases, ran, strict=True):
        (words,) = bash.commands
        assert parse(case).parts[0].words == words, case
    assert parse(ATTACK[1]).parts[0].words[0] == "ls\r/../../../bin/sh"


# ---- generated cases ---------------------------------------------------------------------

# The characters bash reads differently from a naive split, and the ones it reads as syntax.
# No `/`: a generated program never names a real file to run.
_CHARS = "ab -\t\n\r\v\f'\"\\;&|<>(){},.*?[]~#=!$`012é\u00a0\u2003\x00"
_PIECES = st.one_of(
    st.text(alphabet="abcx.,-=:~@%+", min_size=1, max_size=4),
    st.text(alphabet="ab \t\n\r$`\\\"'{},*!#;|&<>()", max_size=4).map(
        lambda t: "'" + t.replace("'", "") + "'"
    ),
    st.text(alphabet="ab \t\n'{},*!#;|&<>()\\$`\"", max_size=4).map(
        lambda t: '"' + re.sub(r'(["$`\\])', r"\\\1", t) + '"'
    ),
    st.sampled_from(["\\ ", "\\\n", "\\'", '\\"', "\\\\", "\\;", "\\{", "\\*", "\\#", "\\\t"]),
    st.sampled_from(["{a,b}", "{1..2}", "$x", "*", "?", "[a]", "~", "a=b", "#"]),
)
_WORD = st.lists(_PIECES, min_size=1, max_size=3).map("".join)
_GLUE = st.sampled_from(
    [
        *(" ", "  ", "\t", " \\\n ", ";", " ; ", "&&", " || ", "|", " | ", "&", "\n", "|&"),
        *(" 2>&1 ", " >/dev/null ", " 2>/dev/null ", " <x ", " >x ", " ! ", " time ", " { "),
        *(" } ", " ( ", ")"),
    ]
)
_KEYWORD = st.sampled_from(["if", "then", "fi", "do", "done", "while", "{", "}", "!", "time"])


@st.composite
def _commands(draw: st.DrawFn) -> str:
    out = [draw(st.one_of(_WORD, _KEYWORD))]
    for _ in range(draw(st.integers(0, 5))):
        out.append(draw(_GLUE))
        out.append(draw(st.one_of(_WORD, _WORD, _KEYWORD)))
    return "".join(out)


_SETTINGS = settings(
    max_examples=8,
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@_SETTINGS
@given(cases=st.lists(st.text(alphabet=_CHARS, max_size=14), min_size=150, max_size=150))
def test_relay_and_bash_agree_on_any_text(
    cases: list[str], tmp_path_factory: pytest.TempPathFactory
) -> None:
    agree(cases, tmp_path_factory.mktemp("bash"))


@_SETTINGS
@given(cases=st.lists(_commands(), min_size=150, max_size=150))
def test_relay_and_bash_agree_on_shaped_commands(
    cases: list[str], tmp_path_factory: pytest.TempPathFactory
) -> None:
    assert agree(cases, tmp_path_factory.mktemp("bash")) > 10  # most are plain: a real test


# ---- through the rules -------------------------------------------------------------------


def _allowing(*commands: str) -> Rules:
    rule = {"action": "allow", "tools": ["Bash"], "commands": list(commands)}
    return parse_rules({"default": "ask", "rules": [rule]}, source="test")


def _verdict(rules: Rules, command: str) -> str:
    return rules.verdict(subject("Bash", {"command": command})).action


def test_the_attack_is_asked_under_ls_and_mkdir(tmp_path: Path) -> None:
    path = tmp_path / "rules.toml"
    path.write_text('[[rules]]\naction = "allow"\ncommands = ["ls*", "mkdir *"]\n')
    rules = load_rules(str(path))
    for command in [*ATTACK, "ls/../../../bin/sh -c id", "ls\r", "ls -la;\rsh"]:
        assert _verdict(rules, command) == "ask", command
    assert _verdict(rules, "ls -la && mkdir -p build") == "allow"


@pytest.mark.parametrize("command", [c for c in OPAQUE if c.strip() and "\x00" not in c])
def test_an_allow_rule_on_its_first_word_never_allows_a_construct(command: str) -> None:
    # `*` allows every plain command; `<first word>*` the command's own program.
    first = f"{command.split()[0]}*"
    rules = _allowing("*", first) if glob_error(first) is None else _allowing("*")
    assert _verdict(rules, command) == "ask"


@pytest.mark.parametrize(
    "command",
    ["sudo ls", "nice -n 5 sh", "timeout 5 rm -rf x", "env ls", "nohup ls", "stdbuf -oL ls"],
)
def test_a_wrapper_is_allowed_only_with_the_command_it_runs(command: str) -> None:
    wrapper = command.split()[0]
    assert _verdict(_allowing(f"{wrapper} *"), command) == "ask"
    if command.split()[-1] == "ls":
        assert _verdict(_allowing(f"{wrapper} *", "ls*"), command) == "allow"


@pytest.mark.parametrize(
    ("globs", "command", "action"),
    [
        (["ls*"], "ls *.py", "allow"),  # a glob word in the open tail: still only `ls`
        (["ls*"], "lsof -i", "allow"),
        (["ls *"], "lsof -i", "ask"),
        (["ls *"], "ls", "allow"),
        (["cat notes.txt"], "cat *.txt", "ask"),
        (["cat *"], "cat ~/notes.txt", "allow"),
        (["cat ~/notes.txt"], "cat ~/notes.txt", "ask"),  # `~` is a home, not the word `~`
        (["*"], "*.sh", "ask"),  # the program is whatever file the glob finds
        (["sudo *"], "sudo apt update", "ask"),
        (["sudo *", "apt update*"], "sudo apt update", "allow"),
        (["sudo *", "sh*"], "sudo sh", "ask"),
        (["./deploy.sh *", "cd *"], "./deploy.sh prod", "allow"),
        (["./deploy.sh *", "cd *"], "cd /tmp/x && ./deploy.sh prod", "ask"),
        (["/usr/bin/*"], "/usr/bin/../../tmp/x", "ask"),
        (["git *"], "git show stash@{0}", "allow"),
        (["git *"], "git show {HEAD,main}", "ask"),
        (["make*"], "FOO=1 make", "ask"),
    ],
)
def test_what_the_rules_page_says_an_allow_glob_allows(
    globs: list[str], command: str, action: str
) -> None:
    assert _verdict(_allowing(*globs), command) == action


def test_a_command_relay_cannot_prove_plain_is_asked_even_by_default_allow() -> None:
    rules = parse_rules({"default": "allow"}, source="test")
    assert rules.verdict(subject("Bash", {"command": "ls -la"})).action == "allow"
    for command in ("ls $(id)", "bash -c id", "FOO=1 ls", "xargs sh", *ATTACK):
        assert rules.verdict(subject("Bash", {"command": command})).action == "ask", command
