"""Every exception class the relay defines for a caller descends from ``RelayException``."""

from __future__ import annotations

import ast
import importlib
import inspect
from pathlib import Path

import relay
from relay.errors import RelayException

_ROOT = Path(relay.__file__).parent


def _exception_classes() -> list[type[BaseException]]:
    found: list[type[BaseException]] = []
    for path in sorted(_ROOT.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        names = [n.name for n in tree.body if isinstance(n, ast.ClassDef)]
        if not names:
            continue
        parts = path.relative_to(_ROOT.parent).with_suffix("").parts
        module = importlib.import_module(".".join(p for p in parts if p != "__init__"))
        for name in names:
            obj = getattr(module, name, None)
            if inspect.isclass(obj) and issubclass(obj, BaseException):
                found.append(obj)
    return found


def test_every_public_exception_descends_from_the_documented_base() -> None:
    classes = _exception_classes()
    assert len(classes) >= 20  # the scan found the tree, not an empty package
    outside = [
        f"{c.__module__}.{c.__qualname__}"
        for c in classes
        # a leading underscore marks control flow that never leaves its module
        if not c.__name__.startswith("_") and not issubclass(c, RelayException)
    ]
    assert outside == []


def test_builtin_bases_are_kept_for_existing_handlers() -> None:
    from relay.receipts.jws import BadJWS
    from relay.receipts.keys import ReceiptKeyError
    from relay.seam.safejson import JSONTooComplex, UnreadableJSON

    for cls in (BadJWS, ReceiptKeyError, UnreadableJSON, JSONTooComplex):
        assert issubclass(cls, ValueError)
        assert issubclass(cls, RelayException)


def test_the_tree_in_the_docstring_names_every_class() -> None:
    import relay.errors

    doc = relay.errors.__doc__ or ""
    missing = [
        c.__name__
        for c in _exception_classes()
        if not c.__name__.startswith("_") and c.__name__ not in doc
    ]
    assert missing == []
