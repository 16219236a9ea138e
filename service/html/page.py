"""HTML building blocks shared by the reports: escaping, tables, sections and the page shell.

Every string that can come from a user (questions, ids, labels, file names) goes through
:func:`esc`. Fragments that are already HTML are :class:`markupsafe.Markup` (the type Jinja
and the ``__html__`` protocol use) so the helpers know not to escape them again. Build a
fragment with an f-string inside ``Markup(...)``: ``Markup + str`` would escape the ``str``
(with :func:`markupsafe.escape`'s entities), and ``str + Markup`` the left side too. The page
is self-contained: inline CSS, no script, no link to anything outside the file.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime

from markupsafe import Markup

#: The pages' style sheet. Tables fit the page at a laptop's width (session 40: trial 24's
#: suggestions table scrolled sideways at 1,400 px): cells padded 7 px a side, free-text
#: cells (``td.text``) may break inside a long token (a setting's dotted name, a URL) rather
#: than widen their column; under 1,200 px the body's margins narrow, free text may shrink to
#: 10em and the never-wrapped cells (ids, times) wrap too, at 9 characters or more a line,
#: where the alternative is a table scrolled sideways. An id in a list (passages, events:
#: :func:`ids`) is a ``span.id`` never broken, at its hyphen either (session 41: at 1,024 px
#: ``p-0054, p-0052`` read ``p-0054, p-`` / ``0052``); the list breaks between ids.
CSS = """
:root { --fg: #1d2430; --muted: #5b6577; --line: #d9dee7; --bg: #ffffff; --band: #f4f6fa;
        --bad: #b42318; --ok: #1a7f37; --warn: #9a6700; }
* { box-sizing: border-box; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif;
       color: var(--fg); background: var(--bg); margin: 0 auto; max-width: 1180px;
       padding: 16px 24px 48px; }
h1 { font-size: 22px; margin: 8px 0 4px; }
h2 { font-size: 18px; margin: 28px 0 8px; padding-top: 12px; border-top: 1px solid var(--line); }
h3 { font-size: 15px; margin: 18px 0 6px; }
p.meta, .muted { color: var(--muted); }
p.notice { border-left: 4px solid var(--warn); background: var(--band); padding: 6px 10px; }
p.warn { border-left: 4px solid var(--warn); padding: 4px 8px; font-weight: 600; }
.scroll { overflow-x: auto; }
table { border-collapse: collapse; margin: 6px 0 14px; font-variant-numeric: tabular-nums; }
th, td { border-bottom: 1px solid var(--line); padding: 3px 7px; text-align: right;
         vertical-align: top; }
th { background: var(--band); font-weight: 600; }
th:first-child, td:first-child, td.text { text-align: left; }
td.text { max-width: 520px; min-width: 14em; overflow-wrap: anywhere; }
td.nowrap, span.nowrap, span.id { white-space: nowrap; }
figure { margin: 8px 0 16px; }
figure svg { max-width: 100%; height: auto; }
figcaption { color: var(--muted); font-size: 12px; }
.badge { display: inline-block; padding: 0 7px; border-radius: 9px; font-size: 12px;
         font-weight: 600; color: #fff; background: var(--muted); }
.badge.drift, .badge.fail { background: var(--bad); }
.badge.ok { background: var(--ok); }
.badge.insufficient_data, .badge.uncalibrated, .badge.starved { background: var(--warn); }
details { margin: 4px 0 10px; }
summary { cursor: pointer; font-weight: 600; }
ul.notes { margin: 4px 0; padding-left: 20px; }
code { font-size: 12px; }
@media (max-width: 1200px) {
  body { padding: 12px 12px 40px; }
  td.text { min-width: 10em; }
  td.nowrap { white-space: normal; overflow-wrap: anywhere; min-width: 9ch; }
}
"""


def esc(value: object) -> Markup:
    """Escape ``value`` for HTML text and attribute values (``Markup`` passes through).

    The entities are :func:`html.escape`'s (``&quot;``, ``&#x27;``), not
    :func:`markupsafe.escape`'s (``&#34;``, ``&#39;``): same meaning, and the pages stay
    byte-identical to what they were.

    >>> esc('<script>alert("x")</script>')
    Markup('&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;')
    """
    if isinstance(value, Markup):
        return value
    return Markup(html.escape(str(value), quote=True))


def num(value: object, digits: int = 3) -> str:
    """Format a number for a table cell: floats with ``digits`` decimals, ``None`` as ``–``.

    >>> num(0.5), num(None), num(12), num(0.00001234)
    ('0.500', '–', '12', '1.23e-05')
    """
    if value is None:
        return "–"
    if isinstance(value, float):
        if value != 0 and abs(value) < 10**-digits:
            return f"{value:.2e}"
        return f"{value:.{digits}f}"
    return str(value)


def pct(value: float | None, digits: int = 1) -> str:
    """Format a proportion in [0, 1] as a percentage (``None`` as ``–``).

    >>> pct(0.10933), pct(None)
    ('10.9%', '–')
    """
    return "–" if value is None else f"{value:.{digits}%}"


def badge(state: str) -> Markup:
    """A coloured state badge (``drift``, ``ok``, ``insufficient_data``, ``fail``...)."""
    return Markup(f'<span class="badge {esc(state)}">{esc(state)}</span>')


def table(
    header: Sequence[object],
    rows: Iterable[Sequence[object]],
    text_columns: Sequence[int] = (),
    nowrap_columns: Sequence[int] = (),
) -> Markup:
    """An HTML table; every cell is escaped unless it is :class:`Markup`.

    Args:
        header: column titles.
        rows: the cells; floats are formatted with :func:`num`.
        text_columns: indices of long free-text columns (left-aligned, wrapped).
        nowrap_columns: indices of columns never wrapped (ids such as ``q-008``, which would
            otherwise break at the hyphen).
    """
    head = "".join(f"<th>{esc(h)}</th>" for h in header)
    body = []
    for row in rows:
        cells = []
        for i, cell in enumerate(row):
            value = cell if isinstance(cell, Markup) else esc(num(cell) if _is_num(cell) else cell)
            classes = ["text"] * (i in text_columns) + ["nowrap"] * (i in nowrap_columns)
            klass = f' class="{" ".join(classes)}"' if classes else ""
            cells.append(f"<td{klass}>{value}</td>")
        body.append(f"<tr>{''.join(cells)}</tr>")
    return Markup(
        f'<div class="scroll"><table><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(body)}</tbody></table></div>"
    )


def ids(values: Iterable[object], sep: str = ", ") -> Markup:
    """Ids (passages, events) for a table cell, each kept whole (``span.id``: a narrow
    column breaks the list between ids, never inside one at its hyphen); ``–`` for none.

    >>> print(ids(["p-0054", "p-0052"]))
    <span class="id">p-0054</span>, <span class="id">p-0052</span>
    >>> print(ids([]))
    –
    """
    spans = [ident(value) for value in values]
    return Markup(esc(sep).join(spans) if spans else "–")


def ident(value: object) -> Markup:
    """One id kept whole in a table cell (``span.id``: :func:`ids`).

    >>> print(ident("p-0054"))
    <span class="id">p-0054</span>
    """
    return Markup(f'<span class="id">{esc(value)}</span>')


def _is_num(cell: object) -> bool:
    return cell is None or (isinstance(cell, int | float) and not isinstance(cell, bool))


def section(anchor: str, title: str, *parts: str) -> Markup:
    """An ``<h2>`` section with id ``anchor``; ``parts`` must already be HTML."""
    return Markup(f'<section id="{esc(anchor)}"><h2>{esc(title)}</h2>{"".join(parts)}</section>')


def figure(svg: str, caption: str) -> Markup:
    """Wrap an inline SVG (from :mod:`service.html.plots`) with an escaped caption."""
    return Markup(f"<figure>{svg}<figcaption>{esc(caption)}</figcaption></figure>")


def para(text: str, klass: str = "") -> Markup:
    """An escaped paragraph."""
    attr = f' class="{esc(klass)}"' if klass else ""
    return Markup(f"<p{attr}>{esc(text)}</p>")


def document(title: str, body: Iterable[str], head_extra: str = "") -> str:
    """The whole page: doctype, UTF-8, inline CSS, ``title`` (escaped) and ``body`` (HTML).

    ``head_extra`` is trusted HTML for the ``<head>`` (e.g. a meta refresh).
    """
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{esc(title)}</title>{head_extra}<style>{CSS}</style></head>"
        f"<body>{''.join(body)}</body></html>\n"
    )


def dated_minute(value: object) -> object:
    """An RFC 3339 UTC time to the minute, with the year (``2026-11-17T08:42:33Z`` →
    ``2026-11-17 08:42``), for prose where the year may differ from the report's (a "since"
    that an old event set); anything else as it is.

    >>> dated_minute("2026-11-17T08:42:33Z"), dated_minute(None)
    ('2026-11-17 08:42', None)
    """
    if isinstance(value, str) and len(value) >= 16 and value[10:11] == "T":
        return f"{value[:10]} {value[11:16]}"
    return value


def minute(value: object) -> object:
    """An RFC 3339 UTC time to the minute, without the year (``2026-11-17T08:42:33Z`` or
    ``2026-11-17T08:42:33+00:00`` → ``11-17 08:42``); anything else as it is.

    >>> minute("2026-11-17T08:42:33Z"), minute(None)
    ('11-17 08:42', None)
    """
    if isinstance(value, str) and len(value) >= 16 and value[10:11] == "T":
        return f"{value[5:10]} {value[11:16]}"
    return value


def when(timestamp: float | None) -> str:
    """Unix seconds as ``YYYY-MM-DD HH:MM UTC`` (``–`` for ``None``).

    >>> when(0.0)
    '1970-01-01 00:00 UTC'
    """
    if timestamp is None:
        return "–"
    return datetime.fromtimestamp(timestamp, UTC).strftime("%Y-%m-%d %H:%M UTC")
