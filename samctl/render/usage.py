"""Charts of a usage report (report/usage.py ``report``): a terminal bar chart and a self-contained HTML page.

Plain strings, no terminal codes.  Every text that comes from a file (a project path, a model or session id)
goes through ``safetext.one_line`` for the terminal and ``html.escape`` for the page; the page loads nothing
(no script, no font, no image from elsewhere): the chart is inline SVG.
"""

from __future__ import annotations

import html

from samctl.safetext import one_line

COLUMNS = (
    ("input_tokens", "INPUT"),
    ("output_tokens", "OUTPUT"),
    ("cache_creation_tokens", "CACHE WRITE"),
    ("cache_read_tokens", "CACHE READ"),
    ("reasoning_tokens", "REASONING"),
    ("total_tokens", "TOTAL"),
)


def money(row: dict) -> str:
    """``$1.23``; unknown: ``?``, partly known: ``$1.23+?``."""
    c = row.get("cost_usd")
    if c is not None:
        return f"${c:,.2f}"
    known = row.get("priced_cost_usd") or 0
    return f"${known:,.2f}+?" if known else "?"


def label(rep: dict, row: dict) -> str:
    return one_line(str(row[rep["key"]]))


def bar_chart(rep: dict, width: int = 80, measure: str = "total_tokens") -> str:
    """One bar a row, scaled to the largest; the label, the bar, then the figure."""
    rows = rep["rows"]
    if not rows:
        return ""
    labels = [label(rep, r)[:40] for r in rows]
    figures = [f"{r[measure]:,}" for r in rows]
    lw, fw = max(map(len, labels)), max(map(len, figures))
    room = max(10, width - lw - fw - 4)
    top = max(r[measure] for r in rows) or 1
    out = []
    for lab, fig, r in zip(labels, figures, rows):
        n = r[measure] * room / top
        bar = "█" * int(n) + ("▌" if n - int(n) >= 0.5 else "")
        out.append(f"{lab.ljust(lw)}  {bar.ljust(room)}  {fig.rjust(fw)}")
    return "\n".join(out)


def html_page(rep: dict, title: str = "samctl usage") -> str:
    """A page with an SVG bar chart of total tokens per row and the table (totals last)."""
    rows = rep["rows"]
    e = html.escape
    bar_w, gap, h, pad = 18, 4, 260, 40
    n = max(1, len(rows))
    w = pad + n * (bar_w + gap) + pad
    top = max([r["total_tokens"] for r in rows] or [0]) or 1
    bars = []
    for i, r in enumerate(rows):
        bh = r["total_tokens"] * (h - 20) / top
        x = pad + i * (bar_w + gap)
        bars.append(
            f'<rect x="{x}" y="{h - bh:.1f}" width="{bar_w}" height="{bh:.1f}" fill="#4a7bd0">'
            f"<title>{e(str(r[rep['key']]))}: {r['total_tokens']:,} tokens, {e(money(r))}</title></rect>"
        )
    svg = (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h + 10}" role="img" '
        f'aria-label="total tokens per {e(rep["by"])}">'
        f'<line x1="{pad}" y1="{h}" x2="{w - pad}" y2="{h}" stroke="#888"/>'
        f'<text x="{pad}" y="12" font-size="11" font-family="sans-serif">{top:,} tokens</text>'
        + "".join(bars)
        + "</svg>"
    )
    head = [rep["key"]] + [h for _, h in COLUMNS] + ["COST"]
    body = []
    for r in rows + [dict(rep["totals"], **{rep["key"]: "TOTAL"})]:
        cells = [str(r[rep["key"]])] + [f"{r[k]:,}" for k, _ in COLUMNS] + [money(r)]
        body.append("<tr>" + "".join(f"<td>{e(c)}</td>" for c in cells) + "</tr>")
    prices = rep.get("prices") or {}
    note = (
        f"Cost is an estimate from the price table taken {e(str(prices.get('taken')))} "
        f"({e(str(prices.get('source')))}); ? marks a model with no price."
    )
    return (
        '<!doctype html><html><head><meta charset="utf-8">'
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">"
        f"<title>{e(title)}</title><style>body{{font-family:sans-serif;margin:2em}}"
        "table{border-collapse:collapse}td,th{padding:2px 8px;text-align:right;border-bottom:1px solid #ddd}"
        "td:first-child,th:first-child{text-align:left}tr:last-child{font-weight:bold}</style></head><body>"
        f"<h1>{e(title)}: by {e(rep['by'])}</h1>{svg}<table><thead><tr>"
        + "".join(f"<th>{e(c)}</th>" for c in head)
        + "</tr></thead><tbody>"
        + "".join(body)
        + f"</tbody></table><p>{note}</p></body></html>\n"
    )
