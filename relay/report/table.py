"""The report as plain text for a terminal: a few short tables, no colour, no wider than 100
columns but for a suggested rule's (pure: ``Figures`` in, text out)."""

from __future__ import annotations

from collections.abc import Sequence

from relay.report.figures import ENDINGS, Ending, Figures

__all__ = ["duration", "render_table"]

_BAR = 30


def duration(seconds: float | None) -> str:
    """``seconds`` as a person reads a wait: ``42 s``, ``3 min``, ``1.5 h``; ``—`` if none."""
    if seconds is None:
        return "—"
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def _share(part: int, whole: int) -> str:
    return f"{100 * part / whole:.0f}%" if whole else "—"


def _rows(header: tuple[str, ...], rows: Sequence[tuple[str, ...]]) -> list[str]:
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]

    def line(row: tuple[str, ...]) -> str:
        cells = [
            c.rjust(w) if c[:1].isdigit() else c.ljust(w) for c, w in zip(row, widths, strict=True)
        ]
        return "  ".join(cells).rstrip()

    return [line(header), "  ".join("-" * w for w in widths), *(line(r) for r in rows)]


def render_table(figures: Figures, *, source: str) -> str:
    """The report of ``figures``, read from ``source`` (a relay's URL or a file)."""
    f = figures
    span = f"{f.first} to {f.last}" if f.first else "no approvals yet"
    out = [f"Approvals report: {source}, {span} (from verified receipts)", ""]
    out += ["How they ended", ""]
    out += _rows(
        ("ending", "count", "share"),
        [(e.value, str(f.endings[e]), _share(f.endings[e], f.approvals)) for e in ENDINGS]
        + [("all", str(f.approvals), "")],
    )
    out += ["", "Time to decide"]
    out += [
        f"  p50 {duration(f.decide_p50)}, p90 {duration(f.decide_p90)}"
        f" (over {f.decided} decided by people)",
        f"  decided without a person (timed out or defaulted): {f.without_person}",
        "  " + ", ".join(f"{label}: {count}" for label, count in f.spread if count),
        "",
        "Decided by whom",
        "",
    ]
    out += _rows(
        ("person", "allowed", "denied", "edited", "all"),
        [(p.user, str(p.allowed), str(p.denied), str(p.edited), str(p.total)) for p in f.people]
        or [("(nobody yet)", "0", "0", "0", "0")],
    )
    out += ["", "What the rules decided without a person", ""]
    out += _rows(
        ("decided by", "allowed", "denied", "all"),
        [(t.name, str(t.allowed), str(t.denied), str(t.total)) for t in f.at_once]
        + [
            (
                "all",
                str(f.at_once_allowed),
                str(f.at_once_denied),
                str(f.at_once_allowed + f.at_once_denied),
            )
        ],
    )
    out += ["", "Approvals per day", ""]
    busiest = max((sum(c.values()) for _, c in f.days), default=0)
    for day, counts in f.days:
        total = sum(counts.values())
        bar = "#" * (round(_BAR * total / busiest) if busiest else 0)
        denied = counts.get(Ending.DENIED, 0)
        out.append(f"  {day}  {total:4d}  {bar}" + (f"  ({denied} denied)" if denied else ""))
    out += ["", "Top repeated calls", ""]
    if f.repeated:
        out += _rows(
            ("times", "allowed", "agent", "call", "suggested rule"),
            [
                (
                    str(c.count),
                    _share(c.endings.get(Ending.ALLOWED, 0), c.count),
                    c.agent,
                    c.label or f"shown sha256 {c.shown[:12]}…",
                    c.rule or "—",
                )
                for c in f.repeated
            ],
        )
    else:
        out.append("  (no call was asked about twice)")
    tail = []
    if f.other_asks:
        tail.append(f"{f.other_asks} other asks (not tool approvals) are not counted.")
    if f.error_receipts:
        tail.append(f"{f.error_receipts} error receipts (records the relay could not receipt).")
    tail += list(f.notes)
    return "\n".join([*out, "", *tail]) + "\n"
