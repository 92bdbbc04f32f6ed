"""The shape of the package: imports point down the floors, the lifecycle knows no channel,
no import circles, no module over ``MOST_LINES``, no shims for names that moved.

Read from the source (``ast``), so that every import counts: those under ``TYPE_CHECKING``
and inside functions too, since each one is a dependency a reader has to follow.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

# apply-layout-map: skip (this file names the packages as they are, "relay.audit" among them)
ROOT = Path(__file__).resolve().parent.parent / "relay"
# The lifecycle and the Slack channel read top to bottom; past this, split by concept.
MOST_LINES = 400
SMALL_PACKAGES = ("asks", "slack")
# No module anywhere in relay/ grows past this.
MOST_LINES_ANYWHERE = 450
# A function longer than this wants its steps named (docstring and signature included).
MOST_FUNCTION_LINES = 80
# The house's floors, lowest first (docs/architecture.md draws them): a module imports from
# its own floor or those below, never from above. A module is on the floor of the longest
# prefix that names it; each prefix is one unit of MAY_IMPORT below.
FLOORS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("testing", ("relay.testing",)),  # the fakes: nothing of relay under them
    ("seam", ("relay", "relay.errors", "relay.seam")),  # the public face, the seam's types
    ("state", ("relay.store",)),
    ("lifecycle", ("relay.asks", "relay.config")),
    ("evidence", ("relay.audit", "relay.receipts", "relay.webhooks")),
    ("decision", ("relay.canonical", "relay.plans", "relay.grants", "relay.gate")),
    ("channels", ("relay.slack",)),
    (
        "doors",
        (
            *("relay.client", "relay.hooks", "relay.integrations", "relay.mcp", "relay.server"),
            # what the signed log teaches (rules suggest/replay) and shows (the report): they
            # read approvals as the gate asks them
            *("relay.learn", "relay.report"),
        ),
    ),
    ("roots", ("relay.cli", "relay.sandbox", "relay.testing.pytest_plugin")),  # build the rest
)
UNITS = tuple(prefix for _, prefixes in FLOORS for prefix in prefixes)
# Which unit imports which, as they are: a new dependency between packages is a decision about
# the layers, made here on purpose (and in docs/architecture.md), never by an import alone.
MAY_IMPORT: dict[str, set[str]] = {
    "relay.testing": set(),
    "relay": {"relay.errors", "relay.seam"},
    "relay.errors": set(),
    "relay.seam": {"relay.errors"},
    "relay.store": {"relay.errors", "relay.seam"},
    "relay.asks": {"relay.errors", "relay.seam", "relay.store"},
    "relay.config": {"relay.errors", "relay.seam", "relay.store"},
    "relay.audit": {"relay.asks", "relay.store"},
    "relay.receipts": {"relay.asks", "relay.config", "relay.errors", "relay.seam", "relay.store"},
    "relay.webhooks": {
        *("relay", "relay.asks", "relay.audit", "relay.errors", "relay.receipts", "relay.store"),
        "relay.seam",  # stop_task
    },
    "relay.canonical": set(),
    "relay.plans": {"relay.canonical", "relay.seam"},  # a plan's scope, derived and matched
    "relay.grants": {"relay.canonical", "relay.plans", "relay.seam", "relay.store"},
    "relay.gate": {
        *("relay.asks", "relay.canonical", "relay.errors", "relay.grants", "relay.plans"),
        "relay.seam",
        "relay.store",
    },
    "relay.slack": {"relay.asks", "relay.config", "relay.errors", "relay.seam", "relay.store"},
    "relay.client": {"relay.errors", "relay.seam", "relay.webhooks"},
    "relay.hooks": {"relay.errors", "relay.seam"},
    "relay.integrations": {"relay.errors", "relay.gate", "relay.grants", "relay.seam"},
    "relay.mcp": {
        "relay",
        "relay.asks",
        "relay.errors",
        "relay.gate",
        "relay.receipts",
        "relay.seam",
    },
    "relay.learn": {
        "relay.canonical",
        "relay.errors",
        "relay.gate",
        "relay.receipts",
        "relay.seam",
    },
    "relay.report": {
        *("relay.canonical", "relay.errors", "relay.gate", "relay.receipts", "relay.seam"),
        # the suggested rule beside a repeated call is relay rules suggest's (relay.learn)
        *("relay.learn", "relay.store"),
    },
    "relay.server": {
        *("relay", "relay.asks", "relay.audit", "relay.canonical", "relay.config"),
        *("relay.errors", "relay.gate", "relay.grants", "relay.mcp", "relay.plans"),
        "relay.receipts",
        *("relay.report", "relay.seam", "relay.store", "relay.webhooks"),
    },
    "relay.cli": {
        *("relay", "relay.asks", "relay.audit", "relay.canonical", "relay.client"),
        *("relay.config", "relay.errors", "relay.gate", "relay.grants", "relay.hooks"),
        *("relay.learn", "relay.mcp", "relay.receipts", "relay.report", "relay.sandbox"),
        *("relay.seam", "relay.server", "relay.slack", "relay.store", "relay.webhooks"),
    },
    "relay.sandbox": {
        *("relay.config", "relay.errors", "relay.receipts", "relay.report", "relay.seam"),
        *("relay.server", "relay.slack", "relay.testing"),
    },
    "relay.testing.pytest_plugin": {"relay.seam", "relay.slack", "relay.testing"},
}
# relay/slack/ by concern: its parts, and which part imports which, as they are. The provider,
# its settings and credentials, serving and the app manifest are the package's own modules.
SLACK_PARTS = ("intake", "rendering", "webapi", "socket_mode", "editing")
SLACK_MAY_IMPORT: dict[str, set[str]] = {
    "rendering": {"intake", "editing"},  # parse's Click and Notice; which fields are editable
    "webapi": {"intake", "rendering"},
    "socket_mode": set(),
    "editing": {"intake", "rendering", "webapi"},
    "intake": {"editing", "rendering", "webapi"},
    "own": {"intake", "rendering", "socket_mode", "webapi"},  # (the provider renders)
}
# What Slack's rendering (pure: no I/O) may import of the slack package beyond itself.
RENDERING_READS = ("relay.slack.intake.parse", "relay.slack.editing.fields")
# Names that moved, whose old module must not come back as a re-export.
MOVED = ("relay.expiry",)
# What the lifecycle may never import: a channel.
CHANNELS = ("relay.slack", "slack_sdk", "slack_bolt", "aiohttp")


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(p): p for p in sorted(ROOT.rglob("*.py"))}


def _imports(name: str) -> Iterator[str]:
    """Every module ``name`` imports (``from pkg import sub`` imports ``pkg.sub``)."""
    path = MODULES[name]
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([base] if base else [])])
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                yield sub if sub in MODULES else base


def _graph() -> dict[str, set[str]]:
    return {name: {i for i in _imports(name) if i in MODULES} for name in MODULES}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1 or node in graph[node]:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_the_lifecycle_imports_no_channel() -> None:
    lifecycle = [name for name in MODULES if name.startswith("relay.asks")]
    assert lifecycle, "relay/asks/ is where the ask's lifecycle lives"
    bad = {
        name: sorted(i for i in _imports(name) if i.startswith(CHANNELS))
        for name in lifecycle
        if any(i.startswith(CHANNELS) for i in _imports(name))
    }
    assert bad == {}


# The doors, which reach a channel only through relay.asks.channel.AskChannel (and the
# server's ServedChannel): the composition roots (relay serve's CLI, the sandbox, the
# in-process CLI backend) build the Slack channel and hand it in.
DOORS = ("relay.server", "relay.mcp", "relay.gate", "relay.integrations")


def _channel_imports(names: list[str]) -> dict[str, list[str]]:
    return {
        name: sorted(i for i in _imports(name) if i.startswith("relay.slack"))
        for name in names
        if any(i.startswith("relay.slack") for i in _imports(name))
    }


def test_the_doors_import_no_channel() -> None:
    doors = [n for n in MODULES if n.startswith(DOORS)]
    assert "relay.server.main" in doors
    assert "relay.gate.local" in doors
    assert _channel_imports(doors) == {}


def test_the_door_checker_sees_a_channel_import() -> None:
    # relay.cli.serve is a composition root: it may (and does) import the Slack channel.
    assert _channel_imports(["relay.cli.serve"]) == {"relay.cli.serve": ["relay.slack.serving"]}


def test_no_import_circles() -> None:
    assert _cycles(_graph()) == []


def _package(name: str) -> str:
    """``relay.X`` for a module of the package ``relay/X/``; a root module stands alone."""
    parts = name.split(".")
    if len(parts) >= 2 and (ROOT / parts[1]).is_dir():
        return ".".join(parts[:2])
    return name


def _package_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    packages: dict[str, set[str]] = {}
    for name, deps in graph.items():
        own = _package(name)
        packages.setdefault(own, set()).update(_package(d) for d in deps if _package(d) != own)
    return packages


def test_no_package_circles() -> None:
    # Module by module hides a circle between packages (gate.local -> grants -> gate.match).
    assert _cycles(_package_graph(_graph())) == []


def test_the_checker_sees_a_package_circle() -> None:
    graph = {
        "relay.gate.local": {"relay.grants.base"},
        "relay.grants.base": {"relay.gate.match"},  # where the canonical forms once lived
    }
    assert _cycles(_package_graph({**graph, "relay.gate.match": set()})) == [
        ["relay.gate", "relay.grants"]
    ]


def test_the_checker_sees_a_circle() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_the_checker_resolves_relative_and_package_imports() -> None:
    render = set(_imports("relay.slack.rendering.render"))
    assert "relay.slack.rendering.answered" in render  # from .answered import …
    assert "relay.slack.rendering.kit" in render  # from relay.slack.rendering import kit


@pytest.mark.parametrize("package", SMALL_PACKAGES)
def test_modules_stay_small(package: str) -> None:
    sizes = {
        name: len(path.read_text().splitlines())
        for name, path in MODULES.items()
        if name.startswith(f"relay.{package}")
    }
    assert sizes
    assert {name: n for name, n in sizes.items() if n > MOST_LINES} == {}


def _long_functions(source: str) -> dict[str, int]:
    """The functions in ``source`` over ``MOST_FUNCTION_LINES``, with their lengths."""
    return {
        node.name: n
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and (n := (node.end_lineno or node.lineno) - node.lineno + 1) > MOST_FUNCTION_LINES
    }


def test_no_function_is_over_the_most_lines() -> None:
    long = {
        f"{name}.{function}": n
        for name, path in MODULES.items()
        for function, n in _long_functions(path.read_text()).items()
    }
    assert long == {}


def test_the_function_checker_sees_a_long_function() -> None:
    body = "".join(f"    x{i} = {i}\n" for i in range(MOST_FUNCTION_LINES))
    assert _long_functions(f"def f() -> None:\n{body}\n\ndef g() -> None:\n    pass\n") == {
        "f": MOST_FUNCTION_LINES + 1
    }


def _floor(name: str) -> int:
    """The floor ``name`` is on (its index in ``FLOORS``)."""
    best, found = -1, -1
    for level, (_, prefixes) in enumerate(FLOORS):
        for prefix in prefixes:
            if (name == prefix or name.startswith(prefix + ".")) and len(prefix) > best:
                best, found = len(prefix), level
    assert found >= 0, f"{name} is on no floor: add it to FLOORS"
    return found


def _upward(graph: dict[str, set[str]]) -> dict[str, list[str]]:
    return {
        name: sorted(i for i in deps if _floor(i) > _floor(name))
        for name, deps in sorted(graph.items())
        if any(_floor(i) > _floor(name) for i in deps)
    }


def test_imports_point_down_the_floors() -> None:
    assert _upward(_graph()) == {}


def test_the_state_and_the_audit_trail_import_no_edge_or_channel() -> None:
    edges = ("relay.server", "relay.cli", "relay.slack", "relay.mcp", "relay.sandbox")
    below = [n for n in MODULES if n.startswith(("relay.store", "relay.audit"))]
    assert "relay.store.redis.asks" in below
    bad = {n: sorted(i for i in _imports(n) if i.startswith(edges)) for n in below}
    assert {n: i for n, i in bad.items() if i} == {}


def test_the_floor_checker_sees_an_upward_import() -> None:
    assert _floor("relay.store.redis.base") < _floor("relay.server.api")
    assert _floor("relay.seam.questions") < _floor("relay.gate.local")
    assert _upward({"relay.store.base": {"relay.server.api"}}) == {
        "relay.store.base": ["relay.server.api"]
    }
    assert _upward({"relay.server.api": {"relay.store.base"}}) == {}


def test_no_module_is_over_the_most_lines() -> None:
    sizes = {name: len(path.read_text().splitlines()) for name, path in MODULES.items()}
    assert {n: size for n, size in sizes.items() if size > MOST_LINES_ANYWHERE} == {}


@pytest.mark.parametrize("name", MOVED)
def test_no_shim_for_a_name_that_moved(name: str) -> None:
    assert name not in MODULES


def _unit(name: str) -> str:
    """The longest prefix in ``FLOORS`` that names ``name``: its unit of ``MAY_IMPORT``."""
    return max((u for u in UNITS if name == u or name.startswith(u + ".")), key=len)


def _unit_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    units: dict[str, set[str]] = {unit: set() for unit in UNITS}
    for name, deps in graph.items():
        own = _unit(name)
        units[own].update(_unit(d) for d in deps if _unit(d) != own)
    return units


def test_every_package_is_a_unit_on_a_floor() -> None:
    packages = {f"relay.{p.name}" for p in ROOT.iterdir() if (p / "__init__.py").is_file()}
    assert packages - set(UNITS) == set()
    # The root holds the public face only: every other module lives in a package.
    assert sorted(p.name for p in ROOT.glob("*.py")) == ["__init__.py", "errors.py"]


def test_each_package_imports_only_what_it_may() -> None:
    actual = _unit_graph(_graph())
    new = {u: sorted(actual[u] - MAY_IMPORT[u]) for u in UNITS if actual[u] - MAY_IMPORT[u]}
    assert new == {}, "a new dependency between packages: add it to MAY_IMPORT if it is right"
    gone = {u: sorted(MAY_IMPORT[u] - actual[u]) for u in UNITS if MAY_IMPORT[u] - actual[u]}
    assert gone == {}, "MAY_IMPORT says what is: remove a dependency that is gone"


def test_may_import_points_down_the_floors() -> None:
    up = {u: sorted(d for d in deps if _floor(d) > _floor(u)) for u, deps in MAY_IMPORT.items()}
    assert {u: d for u, d in up.items() if d} == {}
    assert set(MAY_IMPORT) == set(UNITS)


def test_the_unit_checker_sees_a_new_dependency() -> None:
    graph = {"relay.seam.questions": {"relay.store.base"}, "relay.store.base": set()}
    assert _unit_graph(graph)["relay.seam"] - MAY_IMPORT["relay.seam"] == {"relay.store"}
    assert _unit("relay.testing.pytest_plugin") == "relay.testing.pytest_plugin"
    assert _unit("relay.testing.fake_slack") == "relay.testing"
    assert _unit("relay.errors") == "relay.errors"


def _slack_part(name: str) -> str | None:
    """The part of relay/slack/ a module is in (``own``: the package's own modules)."""
    if name != "relay.slack" and not name.startswith("relay.slack."):
        return None
    parts = name.split(".")
    return parts[2] if len(parts) > 3 and parts[2] in SLACK_PARTS else "own"


def test_the_slack_package_is_split_by_concern() -> None:
    parts = {p.name for p in (ROOT / "slack").iterdir() if (p / "__init__.py").is_file()}
    assert parts == set(SLACK_PARTS)
    actual: dict[str, set[str]] = {part: set() for part in SLACK_MAY_IMPORT}
    for name, deps in _graph().items():
        own = _slack_part(name)
        if own is not None:
            actual[own].update(p for d in deps if (p := _slack_part(d)) not in (None, own))
    assert actual == SLACK_MAY_IMPORT


def test_slack_rendering_is_pure() -> None:
    rendering = [n for n in MODULES if n.startswith("relay.slack.rendering.")]
    assert "relay.slack.rendering.render" in rendering
    io = ("slack_sdk", "slack_bolt", "aiohttp", "asyncio")
    bad = {
        name: sorted(
            i
            for i in _imports(name)
            if i.startswith(io)
            or (_slack_part(i) not in (None, "rendering") and i not in RENDERING_READS)
        )
        for name in rendering
    }
    assert {n: i for n, i in bad.items() if i} == {}


def test_the_architecture_page_draws_every_package() -> None:
    page = (ROOT.parent / "docs" / "architecture.md").read_text()
    drawn = page.split("```")[1]  # the floors, as the page draws them
    packages = [p.name for p in ROOT.iterdir() if (p / "__init__.py").is_file()]
    missing = [f"{p}/" for p in [*packages, *SLACK_PARTS] if f"{p}/" not in drawn]
    assert missing == []
    floors = [line.split()[0] for line in drawn.splitlines() if line[:2].strip()]
    assert floors == [name for name, _ in reversed(FLOORS)]


def test_no_two_classes_share_a_name() -> None:
    # Two Verdicts or two Waits, used side by side, make a reader check which one is meant.
    homes: dict[str, list[str]] = {}
    for name, path in MODULES.items():
        for node in ast.parse(path.read_text(), str(path)).body:
            if isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
                homes.setdefault(node.name, []).append(name)
    assert {cls: names for cls, names in homes.items() if len(names) > 1} == {}
