"""Write docs/reference/errors.md's tables from ``relay.errors.ErrorCode``.

``python scripts/errors_doc.py`` rewrites the page; ``--check`` exits 1 when it is stale.
The prose above the first table is kept as written; everything from the first ``## `` heading
on is generated, so a code, its status or its advice is changed in the enum, never here.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from relay.errors import ErrorCode  # noqa: E402

PAGE = ROOT / "docs" / "reference" / "errors.md"


def tables() -> str:
    """The page's generated part: one table per section, codes in the enum's order."""
    sections: dict[str, list[ErrorCode]] = {}
    for code in ErrorCode:
        sections.setdefault(code.section, []).append(code)
    out: list[str] = []
    for section, codes in sections.items():
        exits = all(code.exit is not None for code in codes)
        out += [
            f"## {section}",
            "",
            f"| code | {'exit' if exits else 'HTTP'} | when, and what to do |",
        ]
        out.append("|---|---|---|")
        for code in codes:
            number = code.exit if exits else code.status
            out.append(f"| `{code}` | {'—' if number is None else number} | {code.hint} |")
        out.append("")
    return "\n".join(out)


def render(page: str) -> str:
    """``page`` with its generated part rewritten."""
    head, _, _ = page.partition("\n## ")
    return f"{head}\n{tables()}"


def main(argv: list[str]) -> int:
    page = PAGE.read_text(encoding="utf-8")
    fresh = render(page)
    if "--check" in argv:
        if fresh != page:
            print(f"{PAGE} is stale: run python scripts/errors_doc.py", file=sys.stderr)
            return 1
        return 0
    PAGE.write_text(fresh, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
