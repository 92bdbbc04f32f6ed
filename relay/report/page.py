"""The report as one self-contained HTML page: inline SVG charts, one inline style block, no
script and nothing fetched from elsewhere, so it works with JavaScript off and under a strict
Content-Security-Policy (``page_policy``). Pure: ``Figures`` in, text out.

Every chart is a ``<figure>`` whose SVG has a text alternative (``role="img"`` with a title
naming the figures) and is followed by a table of the same numbers, so a screen reader or a
text browser gets everything the picture shows; colours are paired with words, never alone.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Mapping
from datetime import date
from html import escape

from relay.report.figures import ENDINGS, Ending, Figures
from relay.report.table import duration

__all__ = ["PAGE_POLICY", "render_page"]

COLOURS: Mapping[str, str] = {
    Ending.ALLOWED: "#1a7f37",
    Ending.DENIED: "#cf222e",
    Ending.EDITED: "#9a6700",
    Ending.TIMED_OUT: "#6e7781",
    Ending.WITHDRAWN: "#8250df",
    Ending.FAILED: "#24292f",
}
"""Each ending's colour (each chart also names the ending in words)."""

_STYLE = """
body { font: 15px/1.45 system-ui, sans-serif; margin: 0 auto; max-width: 1100px;
  padding: 1.5rem; color: #1f2328; background: #fff; }
h1 { font-size: 1.6rem; margin: 0 0 .25rem; }
h2 { font-size: 1.15rem; margin: 2rem 0 .5rem; }
.lede { color: #59636e; margin: 0 0 1rem; }
.tiles { display: flex; flex-wrap: wrap; gap: .75rem; margin: 1rem 0; padding: 0;
  list-style: none; }
.tiles li { border: 1px solid #d1d9e0; border-radius: 8px; padding: .6rem .9rem;
  min-width: 9rem; }
.tiles b { display: block; font-size: 1.6rem; }
figure { margin: 0; }
figcaption { color: #59636e; margin: .25rem 0; }
svg text { font: 12px system-ui, sans-serif; fill: #1f2328; }
table { border-collapse: collapse; margin: .5rem 0; }
th, td { border-bottom: 1px solid #d1d9e0; padding: .3rem .6rem; text-align: left; }
td.n, th.n { text-align: right; font-variant-numeric: tabular-nums; }
code { font: 13px ui-monospace, monospace; background: #f6f8fa; padding: 0 .25rem; }
.key { display: inline-block; width: .8rem; height: .8rem; border-radius: 2px;
  vertical-align: -1px; margin-right: .3rem; }
.legend { display: flex; gap: 1rem; flex-wrap: wrap; margin: .25rem 0; padding: 0;
  list-style: none; }
details { margin: .25rem 0 1rem; }
.note { color: #59636e; font-size: .9rem; }
.two { display: grid; grid-template-columns: repeat(auto-fit, minmax(320px, 1fr)); gap: 2rem; }
"""
_KEYS = "\n".join(f".k-{_e.name.lower()} {{ background: {COLOURS[_e]}; }}" for _e in ENDINGS)
_STYLE_TEXT = _STYLE + _KEYS + "\n"
_STYLE_HASH = base64.b64encode(hashlib.sha256(_STYLE_TEXT.encode()).digest()).decode()

PAGE_POLICY = "; ".join(
    (
        "default-src 'none'",
        f"style-src 'sha256-{_STYLE_HASH}'",
        "img-src 'none'",
        "base-uri 'none'",
        "form-action 'none'",
        "frame-ancestors 'none'",
    )
)
"""The page's Content-Security-Policy: its one style block (by hash), nothing else at all."""


def _n(value: int) -> str:
    return f"{value:,}"


def _tiles(f: Figures) -> str:
    allowed = f.endings[Ending.ALLOWED] + f.endings[Ending.EDITED]
    tiles = (
        ("approvals", _n(f.approvals)),
        ("allowed (edited included)", _n(allowed)),
        ("denied", _n(f.endings[Ending.DENIED])),
        ("time to decide, p50", duration(f.decide_p50)),
        ("time to decide, p90", duration(f.decide_p90)),
        ("allowed at once by rules, grants, plans", _n(f.at_once_allowed)),
        ("denied at once by rules", _n(f.at_once_denied)),
        ("ended with nobody's answer", _n(f.without_person)),
    )
    items = "".join(f"<li><b>{escape(v)}</b>{escape(k)}</li>" for k, v in tiles)
    return f'<ul class="tiles" aria-label="The figures at a glance">{items}</ul>'


def _legend() -> str:
    items = "".join(
        f'<li><span class="key k-{e.name.lower()}" aria-hidden="true"></span>{e.value}</li>'
        for e in ENDINGS[:4]
    )
    return f'<ul class="legend" aria-label="Colours">{items}</ul>'


def _per_day(days: tuple[tuple[date, Mapping[str, int]], ...]) -> str:
    if not days:
        return "<p>No approvals yet.</p>"
    width, height, left, bottom, top = 1040, 260, 36, 40, 12
    busiest = max(max(sum(c.values()) for _, c in days), 1)
    step = (width - left) / len(days)
    bar = max(2.0, step * 0.7)
    scale = (height - bottom - top) / busiest
    parts = []
    for tick in sorted({0, busiest // 2, busiest}):
        y = height - bottom - tick * scale
        parts.append(
            f'<line x1="{left}" x2="{width}" y1="{y:.1f}" y2="{y:.1f}" stroke="#d1d9e0"/>'
            f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end">{tick}</text>'
        )
    label_every = max(1, len(days) // 14)
    for i, (day, counts) in enumerate(days):
        x = left + i * step + (step - bar) / 2
        y = float(height - bottom)
        said = ", ".join(f"{counts.get(e, 0)} {e.value}" for e in ENDINGS if counts.get(e, 0))
        parts.append(f'<g class="day" data-day="{day}"><title>{day}: {said or "none"}</title>')
        for ending in ENDINGS:
            count = counts.get(ending, 0)
            if not count:
                continue
            h = count * scale
            y -= h
            parts.append(
                f'<rect x="{x:.1f}" y="{y:.1f}" width="{bar:.1f}" height="{h:.1f}"'
                f' fill="{COLOURS[ending]}" data-ending="{ending.value}" data-count="{count}"/>'
            )
        parts.append("</g>")
        if i % label_every == 0:
            parts.append(
                f'<text x="{x + bar / 2:.1f}" y="{height - bottom + 16}"'
                f' text-anchor="middle">{day:%b %d}</text>'
            )
    total = sum(sum(c.values()) for _, c in days)
    alt = f"Approvals per day, {days[0][0]} to {days[-1][0]}: {total} in all, at most {busiest}"
    svg = (
        f'<svg id="per-day" role="img" aria-labelledby="per-day-title" viewBox="0 0 {width}'
        f' {height}" width="100%" preserveAspectRatio="xMidYMid meet">'
        f'<title id="per-day-title">{escape(alt)}</title>{"".join(parts)}</svg>'
    )
    head = "".join(f'<th class="n" scope="col">{e.value}</th>' for e in ENDINGS[:4])
    rows = "".join(
        f'<tr><th scope="row">{day}</th>'
        + "".join(f'<td class="n">{counts.get(e, 0)}</td>' for e in ENDINGS[:4])
        + "</tr>"
        for day, counts in days
    )
    table = (
        f'<details><summary>The numbers by day</summary><table><thead><tr><th scope="col">'
        f"day</th>{head}</tr></thead><tbody>{rows}</tbody></table></details>"
    )
    return f"<figure>{_legend()}{svg}{table}</figure>"


def _bars(chart_id: str, title: str, rows: list[tuple[str, int, str]]) -> str:
    """A horizontal bar chart of ``rows`` (label, value, colour), with its table."""
    if not rows:
        return "<p>Nobody yet.</p>"
    width, row, left = 480, 28, 150
    most = max(max(v for _, v, _ in rows), 1)
    height = row * len(rows) + 8
    parts = []
    for i, (label, value, colour) in enumerate(rows):
        y = 4 + i * row
        w = (width - left - 50) * value / most
        parts.append(
            f'<g class="bar"><title>{escape(label)}: {value}</title>'
            f'<text x="{left - 8}" y="{y + 17}" text-anchor="end">{escape(label[:22])}</text>'
            f'<rect x="{left}" y="{y + 4}" width="{w:.1f}" height="{row - 10}"'
            f' fill="{colour}" data-count="{value}"/>'
            f'<text x="{left + w + 6:.1f}" y="{y + 17}">{value}</text></g>'
        )
    said = ", ".join(f"{label} {value}" for label, value, _ in rows)
    return (
        f'<svg id="{chart_id}" role="img" aria-labelledby="{chart_id}-title" viewBox="0 0'
        f' {width} {height}" width="100%" preserveAspectRatio="xMinYMin meet">'
        f'<title id="{chart_id}-title">{escape(title)}: {escape(said)}</title>'
        f"{''.join(parts)}</svg>"
    )


def _endings(f: Figures) -> str:
    rows = [
        (e.value, f.endings[e], COLOURS[e]) for e in ENDINGS if f.endings[e] or e in ENDINGS[:4]
    ]
    chart = _bars("endings", "How approvals ended", rows)
    body = "".join(
        f'<tr><th scope="row"><span class="key k-{Ending(e).name.lower()}" aria-hidden="true">'
        f'</span>{escape(e)}</th><td class="n">{v}</td><td class="n">'
        f"{(100 * v / f.approvals if f.approvals else 0):.0f}%</td></tr>"
        for e, v, _ in rows
    )
    table = (
        '<table><thead><tr><th scope="col">ending</th><th class="n" scope="col">count</th>'
        f'<th class="n" scope="col">share</th></tr></thead><tbody>{body}</tbody></table>'
    )
    return f"<figure>{chart}{table}</figure>"


def _spread(f: Figures) -> str:
    if not f.decided:
        return ""
    rows = [(label, count, "#8250df") for label, count in f.spread]
    return f"<figure>{_bars('decide-times', 'Approvals decided within', rows)}</figure>"


def _people(f: Figures, names: Mapping[str, str]) -> str:
    rows = [(names.get(p.user, p.user), p.total, "#0969da") for p in f.people[:12]]
    chart = _bars("people", "Approvals decided, by person", rows)
    body = "".join(
        f'<tr><th scope="row">{escape(names.get(p.user, p.user))}</th>'
        f'<td class="n">{p.allowed}</td><td class="n">{p.denied}</td>'
        f'<td class="n">{p.edited}</td><td class="n">{p.total}</td></tr>'
        for p in f.people
    )
    table = (
        '<table><thead><tr><th scope="col">person</th><th class="n" scope="col">allowed</th>'
        '<th class="n" scope="col">denied</th><th class="n" scope="col">edited</th>'
        f'<th class="n" scope="col">all</th></tr></thead><tbody>{body}</tbody></table>'
    )
    return f"<figure>{chart}{table}</figure>"


def _at_once(f: Figures) -> str:
    if not f.at_once:
        return "<p>No call was decided at once yet.</p>"
    body = "".join(
        f"<tr><td>{escape(t.kind)}</td><td>{escape(t.name)}</td>"
        f'<td class="n">{t.allowed}</td><td class="n">{t.denied}</td>'
        f'<td class="n">{t.total}</td></tr>'
        for t in f.at_once
    )
    return (
        '<table id="at-once"><thead><tr><th scope="col">by</th><th scope="col">which</th>'
        '<th class="n" scope="col">allowed</th><th class="n" scope="col">denied</th>'
        f'<th class="n" scope="col">all</th></tr></thead><tbody>{body}</tbody></table>'
        f'<p class="note">{f.at_once_allowed} allowed and {f.at_once_denied} denied with'
        " nobody asked: each has a receipt naming the rule, grant or plan that decided it.</p>"
    )


def _repeated(f: Figures) -> str:
    if not f.repeated:
        return "<p>No call was asked about twice.</p>"
    rows = []
    for call in f.repeated:
        allowed = call.endings.get(Ending.ALLOWED, 0)
        shown = (
            f"<code>{escape(call.label)}</code>"
            if call.label
            else f"shown sha256 <code>{escape(call.shown[:16])}…</code>"
        )
        rule = (
            f"<code>{escape(call.rule)}</code>"
            if call.rule
            else '<span class="note">none yet</span>'
        )
        rows.append(
            f'<tr><td class="n">{call.count}</td><td class="n">{allowed} of {call.count}</td>'
            f"<td>{escape(call.agent)}</td><td>{shown}</td><td>{rule}</td></tr>"
        )
    return (
        '<table id="repeated"><thead><tr><th class="n" scope="col">asked</th>'
        '<th class="n" scope="col">allowed</th><th scope="col">agent</th>'
        '<th scope="col">call</th><th scope="col">suggested rule</th></tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table>"
        '<p class="note">A call people allowed every time is a candidate for a rule in the'
        " relay's rules file: <code>relay rules suggest</code> proposes one with its replay"
        " against every receipted decision; adopting it is a person's edit.</p>"
    )


def render_page(figures: Figures, *, source: str, names: Mapping[str, str] | None = None) -> str:
    """The page for ``figures`` read from ``source``; ``names`` shows Slack ids as names."""
    f = figures
    span = f"{f.first} to {f.last}" if f.first else "no approvals yet"
    notes = list(f.notes)
    if f.other_asks:
        notes.append(f"{f.other_asks} other asks (not tool approvals) are not counted.")
    if f.error_receipts:
        notes.append(f"{f.error_receipts} error receipts (records the relay could not receipt).")
    note_html = "".join(f'<p class="note">{escape(n)}</p>' for n in notes)
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>Approvals report · relay</title><style>{_STYLE_TEXT}</style></head><body>"
        "<header><h1>Approvals report</h1>"
        f'<p class="lede">{escape(source)}, {escape(span)}: figures from the signed receipts,'
        " verified.</p></header><main>"
        f"{_tiles(f)}"
        f'<section aria-labelledby="h-days"><h2 id="h-days">Approvals per day</h2>'
        f"{_per_day(f.days)}</section>"
        '<div class="two">'
        f'<section aria-labelledby="h-endings"><h2 id="h-endings">How they ended</h2>'
        f"{_endings(f)}</section>"
        f'<section aria-labelledby="h-people"><h2 id="h-people">Decided by whom</h2>'
        f"{_people(f, names or {})}</section></div>"
        f'<section aria-labelledby="h-wait"><h2 id="h-wait">Time to decide</h2>'
        f'<div class="two">{_spread(f)}'
        f"<p>Half were decided within <b>{duration(f.decide_p50)}</b>, nine in ten within"
        f" <b>{duration(f.decide_p90)}</b> ({f.decided} decided by people). With nobody's"
        f" answer the relay ended <b>{f.without_person}</b> (timed out or defaulted).</p>"
        "</div></section>"
        '<section aria-labelledby="h-at-once"><h2 id="h-at-once">What the rules decided'
        f" without a person</h2>{_at_once(f)}</section>"
        f'<section aria-labelledby="h-repeated"><h2 id="h-repeated">Top repeated calls</h2>'
        f"{_repeated(f)}</section>"
        f"<footer>{note_html}</footer></main></body></html>"
    )
