"""The building blocks: escaping, number formats, tables, share rows, status flattening."""

from __future__ import annotations

from markupsafe import Markup

from service.html.extras import shadow_section
from service.html.page import badge, esc, num, pct, table, when
from service.html.replay_page import share_rows
from service.html.status import _flatten
from tests.service.html import samples


def test_esc_escapes_markup_and_quotes_but_passes_safe_fragments() -> None:
    assert esc("<a href='x'>&</a>") == "&lt;a href=&#x27;x&#x27;&gt;&amp;&lt;/a&gt;"
    assert esc(Markup("<b>kept</b>")) == "<b>kept</b>"
    assert esc(3) == "3"


def test_num_and_pct() -> None:
    assert [num(0.5), num(1.0, 1), num(None), num(7), num(0.0)] == ["0.500", "1.0", "–", "7",
                                                                   "0.000"]  # fmt: skip
    assert num(0.0004) == "4.00e-04"  # below the shown precision: scientific, not 0.000
    assert [pct(0.25), pct(1 / 3, 0), pct(None)] == ["25.0%", "33%", "–"]
    assert when(86400.0 + 3600.0) == "1970-01-02 01:00 UTC"


def test_table_escapes_cells_and_headers_and_formats_numbers() -> None:
    html = table(["<h>", "n"], [["<script>x</script>", 0.5], [Markup("<i>ok</i>"), None]])
    assert "<th>&lt;h&gt;</th>" in html
    assert "<td>&lt;script&gt;x&lt;/script&gt;</td><td>0.500</td>" in html
    assert "<td><i>ok</i></td><td>–</td>" in html
    assert "<script>" not in html


def test_badge_escapes_its_state() -> None:
    assert badge('x"><script>') == (
        '<span class="badge x&quot;&gt;&lt;script&gt;">x&quot;&gt;&lt;script&gt;</span>'
    )


def test_share_rows_rank_by_larger_share_and_sum_the_tail_into_other() -> None:
    live = {"en": 6, "hi-Latn": 3, "fr": 1}
    gold = {"en": 2, "hi": 2}
    # shares: en 0.6 / 0.5, hi 0 / 0.5, hi-Latn 0.3 / 0, fr 0.1 / 0
    assert share_rows(live, gold, top=2) == [
        ("en", 6, 0.6, 2, 0.5),
        ("hi", 0, 0.0, 2, 0.5),
        ("other", 4, 0.4, 0, 0.0),
    ]
    assert share_rows({}, {}) == []
    assert share_rows({"en": 1}, {}) == [("en", 1, 1.0, 0, 0.0)]


def test_flatten_status_values() -> None:
    rows = _flatten({"ready": True, "lag": None, "dead_lettered": {"bad_json": 2, "too_big": 1},
                     "partitions": [{"p": 0}]})  # fmt: skip
    assert rows == [["ready", "yes"], ["lag", "–"], ["dead_lettered: bad_json", 2],
                    ["dead_lettered: too_big", 1], ["partitions", '[{"p": 0}]']]  # fmt: skip


def test_fragments_joined_from_markup_are_not_escaped_again() -> None:
    """``str + Markup`` escapes the ``str`` (``Markup.__radd__``): fragments are joined in
    f-strings, so the shadow section's headings and ``<details>`` stay HTML."""
    page = shadow_section(samples.shadow())
    assert isinstance(page, Markup)
    assert "<h3>By language</h3><figure>" in page
    assert "<details><summary>Largest disagreements: bm25-v2</summary><div" in page
    assert "</table></div></details>" in page
    assert "&lt;h3" not in page and "&lt;details" not in page and "&lt;/details" not in page


def test_the_disagreements_table_shows_one_row_per_question() -> None:
    """Live traffic repeats its questions: the table lists each question once, at its lowest
    RBO, with how many of the kept events asked it (trial 24: 20 rows held 11 questions)."""
    report = samples.shadow()
    cell = report["candidates"]["bm25-v2"]
    first = cell["disagreements"][0]
    again = {**first, "event_id": "e-8", "rbo": first["rbo"] + 0.1}  # the same question
    other = {**first, "event_id": "e-9", "question": "another question", "rbo": 0.9}
    cell["disagreements"] = [first, again, other]
    page = str(shadow_section(report))
    table_html = page.split("Largest disagreements: bm25-v2")[1].split("</details>")[0]
    assert "<th>events</th>" in table_html
    assert table_html.count("<tr>") == 3  # the header and two questions, not three events
    assert f'<td class="text">{esc(first["question"])}</td><td>2</td>' in table_html
    assert '<td class="text">another question</td><td>1</td>' in table_html
    assert "e-7" in table_html and "e-8" not in table_html  # the lowest RBO's event
