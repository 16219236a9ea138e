"""``render_replay_html`` on the hand-built replay report (values worked out in ``samples``)."""

from __future__ import annotations

import re

import pytest

from service.html import render_replay_html
from service.html.extras import suggestion_rows
from tests.service.html import samples
from tests.service.html.structure import external, parse

SECTIONS = ["ingest", "languages", "topics", "drift", "refusals", "shadow", "gold-candidates"]


@pytest.fixture(scope="module")
def page() -> str:
    return render_replay_html(samples.replay_report())


def test_structure_sections_and_charts(page: str) -> None:
    parsed = parse(page)
    assert parsed.unbalanced == []
    assert parsed.sections == SECTIONS
    # languages 1, topics 1, alarm time line 1, refusal rates 1, shadow agreement 1,
    # shadow by language 1 (by_topic is empty: no chart)
    assert parsed.svgs == 6
    assert parsed.scripts == 0
    assert external(parsed.urls) == []
    assert not re.search(r"url\((?!#)|@import|<link\b", page)


def test_user_text_is_escaped(page: str) -> None:
    assert "<script" not in page and "<img" not in page and "<i>fee" not in page
    assert "&lt;script&gt;console.error(&#x27;harvest&#x27;)&lt;/script&gt;" in page
    assert "&lt;img src=x onerror=console.error(1)&gt;.jsonl" in page
    assert "&lt;i&gt;fee&lt;/i&gt; kab tak?" in page


def test_language_shares_against_gold(page: str) -> None:
    # en 6/10 live vs 3/4 gold; hi-Latn 4/10 vs 1/4
    assert ("<tr><td>en</td><td>6</td><td>60.0%</td><td>3</td><td>75.0%</td>"
            "<td>-15.0%</td></tr>") in page  # fmt: skip
    assert ("<tr><td>hi-Latn</td><td>4</td><td>40.0%</td><td>1</td><td>25.0%</td>"
            "<td>+15.0%</td></tr>") in page  # fmt: skip


def test_drift_tests_and_alarms(page: str) -> None:
    assert "rising: hi-Latn 25%→40%; falling: en 75%→60%" in page
    assert ('<tr><td>2026-11-18 11:06 UTC</td><td>language</td><td>reference</td>'
            '<td><span class="badge drift">drift</span></td><td>5</td>') in page  # fmt: skip
    assert "<td>2026-11-18 11:36 UTC</td><td>refusal</td>" in page
    assert '<td class="text">10.0% → 40.0%</td>' in page
    assert (
        "10 events seen; kept out of the windows: 1 late, 0 stamped in the future, 0 too "
        "far ahead of the others."
    ) in page


def test_refusal_rate_with_its_baseline(page: str) -> None:
    # all events 2/8; baseline window 10 %, current 40 %, change interval +10 % … +50 %
    assert ("<tr><td>refused answers</td><td>25.0%</td><td>10.0%</td><td>40.0%</td>"
            "<td>+10.0% … +50.0%</td><td>0.001</td>") in page  # fmt: skip
    assert "<tr><td>out-of-scope questions</td><td>12.5%</td><td>–</td><td>–</td>" in page


def test_shadow_and_suggestions(page: str) -> None:
    # coverage: offered, compared, skipped by reason (one a line), errors by reason, in
    # flight, mean latency ms (12 = 9 + 2 + 1 + 0)
    assert ('<tr><td>bm25-v2</td><td>12</td><td>9</td><td class="nowrap">queue_full 2</td>'
            '<td class="nowrap">timeout 1</td><td>0</td><td>12.000</td></tr>') in page  # fmt: skip
    # agreement, a table of its own: overlap, jaccard, rbo, tau, top1, cr, each mean with its
    # n, "few" under the analytics' quality_min_class (10 here): 9 results have overlap,
    # jaccard, rbo and top1, 3 a Kendall's tau, none citation recall; a cell may break
    # before its n, never inside it
    assert ("<tr><td>bm25-v2</td>"
            + "".join(f'<td>{value} <span class="nowrap">({n})</span></td>' for value, n in (
                ("0.800", "n 9, few"), ("0.700", "n 9, few"), ("0.750", "n 9, few"),
                ("0.500", "n 3, few"), ("0.900", "n 9, few"), ("–", "n 0, few")))
            + "</tr>"
            ) in page  # fmt: skip
    # trial user6: a language's Kendall's tau of 1.0 on one result was shown bare; per label:
    # n, then RBO, Kendall's tau, overlap and top1 each with its own n (a report without
    # per-measure counts: the label's n, and no n for Kendall's tau, which it cannot know)
    assert ("<tr><td>hi-Latn</td><td>4</td><td>0.550 (n 4, few)</td><td>1.000 (n 1, few)</td>"
            "<td>0.500 (n 4, few)</td><td>0.750 (n 4, few)</td></tr>") in page  # fmt: skip
    assert ("<tr><td>en</td><td>5</td><td>0.900 (n 5, few)</td><td>–</td><td>– (n 5, few)</td>"
            "<td>1.000 (n 5, few)</td></tr>") in page  # fmt: skip
    assert ('<td class="text"><span class="id">p-1</span>, <span class="id">p-2</span></td>'
            '<td class="text"><span class="id">p-5</span>, <span class="id">p-1</span></td>'
            ) in page  # fmt: skip
    assert (
        "<th>id</th><th>question</th><th>count</th><th>language (guess)</th><th>topic (guess)</th>"
    ) in page


def test_shadow_coverage_lists_one_reason_a_line() -> None:
    """A trial user's candidate skipped for two reasons: each reason with its count on a line
    of its own (the cell is as wide as the longer one, not a 14em text column)."""
    report = samples.replay_report()
    candidate = report["shadow"]["candidates"]["bm25-v2"]
    candidate["skipped"] = {"no_production": 81, "cpu_budget": 2440}
    candidate["errors"] = {}
    page = render_replay_html(report)
    assert ('<td class="nowrap">no_production 81<br>cpu_budget 2440</td>'
            '<td class="nowrap">none</td>') in page  # fmt: skip


def test_suggestions_show_the_whole_id_first_and_the_time_to_the_minute() -> None:
    row = {
        "id": "c-424bdba397e1bfc0",
        "question": "afternoon paper kitne baje se hai ji",
        "count": 11,
        "first_seen": "2026-11-17T08:42:33Z",
        "last_seen": "2026-11-18T12:50:13Z",
    }
    page = render_replay_html({**samples.replay_report(), "gold_candidates": [row]})
    # the id never wraps (it broke at its hyphen) and the question wraps at words only
    assert ('<tr><td class="nowrap">c-424bdba397e1bfc0</td>'
            '<td class="text">afternoon paper kitne baje se hai ji</td><td>11</td>'
            '<td class="nowrap">11-18 12:50</td></tr>') in page  # fmt: skip
    assert "<th>last seen</th>" in page and "first_seen" not in page


def test_a_status_every_listed_suggestion_shares_is_said_once_not_in_a_column() -> None:
    """Trial 24: the status page lists the undecided suggestions only, and a ``status``
    column saying ``suggested`` on each of its rows took the width the table needed at
    1,400 px. One status for all: said under the table; mixed: a column, as before."""
    rows = [{"id": f"c-{i}", "question": f"q {i}", "count": 2, "status": "suggested"}
            for i in range(3)]  # fmt: skip
    page = render_replay_html({**samples.replay_report(), "gold_candidates": rows})
    listed = page[page.index('<section id="gold-candidates">') :]
    assert "<th>status</th>" not in listed and "<td>suggested</td>" not in listed
    assert "Status of every suggestion listed: suggested." in listed
    rows[0]["status"] = "accepted"
    page = render_replay_html({**samples.replay_report(), "gold_candidates": rows})
    listed = page[page.index('<section id="gold-candidates">') :]
    assert "<th>status</th>" in listed and "<td>accepted</td>" in listed
    assert "Status of every suggestion listed" not in listed


def test_extras_absent_are_skipped() -> None:
    parsed = parse(render_replay_html(samples.replay_report(extras=False)))
    assert parsed.sections == SECTIONS[:5]
    assert parsed.svgs == 4


def test_extras_inside_analytics_are_found() -> None:
    report = samples.replay_report(extras=False)
    report["analytics"]["shadow"] = samples.shadow()
    assert parse(render_replay_html(report)).sections == SECTIONS[:6]


def test_time_series_adds_charts_over_time() -> None:
    parsed = parse(render_replay_html(samples.replay_report(series=True)))
    # + languages over time, topics over time, refusal rate over time
    assert parsed.svgs == 9
    assert parsed.unbalanced == []


def test_analytics_disabled() -> None:
    report = samples.replay_report(extras=False)
    report["analytics"] = None
    page = render_replay_html(report)
    assert parse(page).sections == ["ingest", "analytics"]
    assert "Analytics are disabled." in page


def test_suggestion_shapes() -> None:
    assert suggestion_rows([{"question": "a"}, "b"]) == [{"question": "a"}, {"question": "b"}]
    assert suggestion_rows({"candidates": [{"question": "c", "count": 2}]}) == [
        {"question": "c", "count": 2}
    ]
    assert suggestion_rows({"unknown": 1}) == [] and suggestion_rows(3) == []
    report = samples.replay_report(extras=False)
    report["gold_candidates"] = []
    assert "No suggestion yet." in render_replay_html(report)


def test_replay_summary_shape_lists_top_with_totals() -> None:
    """The replay report's ``gold_candidates`` (``service.jobs.replay.harvest_summary`` plus
    the shed count): the list is under ``top``, 25 suggestions held in all, 2 listed."""
    report = samples.replay_report(extras=False)
    top = [
        {"question": "Fees <b>&</b> dues?", "count": 3, "reasons": {"refused": 3}},
        {"question": "Exam date?", "count": 1, "reasons": {"coverage_gap": 1}},
    ]
    report["gold_candidates"] = {
        "n_suggestions": 25, "by_reason": {"refused": 4, "coverage_gap": 21}, "top": top,
        "shed": 7, "max_new_per_batch": 48,
    }  # fmt: skip
    page = render_replay_html(report)
    assert "No suggestion yet." not in page
    assert '<td class="text">Fees &lt;b&gt;&amp;&lt;/b&gt; dues?</td>' in page
    assert "<td>refused=3</td>" in page
    assert "25 suggestions (by reason: coverage_gap 21, refused 4)" in page
    assert "Shed: 7 picked events whose new question was over harvest.max_new_per_batch" in page
    assert "23 more suggestions not shown." in page


def test_suggestions_in_coverage_gaps_get_their_own_table() -> None:
    """Trial 9 (F5): the top table (by priority across reasons) held no German or Spanish
    suggestion while both languages were gaps; ``in_gaps`` lists each gap's own, escaped,
    and says when smaller gaps were left off."""
    report = samples.replay_report(extras=False)
    de = [
        {"id": "c-1", "question": "Wann <b>ist</b> die Prüfung?"},
        {"id": "c-2", "question": "Gebühren?"},
    ]
    report["gold_candidates"] = {
        "n_suggestions": 5, "by_reason": {"coverage_gap": 5},
        "top": [{"id": "c-9", "question": "Exam date?"}],
        "in_gaps": [{"dimension": "language", "value": "de", "gap": 0.25, "n": 4, "top": de},
                    {"dimension": "topic", "value": "fees", "gap": 0.05, "n": 1, "top": []}],
        "n_gaps": 3,
    }  # fmt: skip
    page = render_replay_html(report)
    section = page[page.index('<section id="gold-candidates">') :]
    section = section[: section.index("</section>")]
    # session 41: the gaps count the questions judged out of scope (the document shares not)
    assert "; the 2 largest of 3 gaps (questions judged out of scope count in the language" in (
        section)  # fmt: skip
    assert (
        '<td>language de</td><td>0.250</td><td>4</td><td class="text">c-1 Wann '
        "&lt;b&gt;ist&lt;/b&gt; die Prüfung?<br>c-2 Gebühren?</td>"
    ) in section
    assert "<td>topic fees</td><td>0.050</td><td>1</td>" in section
    del report["gold_candidates"]["in_gaps"]
    assert "In the coverage gaps" not in render_replay_html(report)


def test_topic_gold_counts_say_they_are_assignments_not_labels(page: str) -> None:
    """A new user read 'gold n' as their labels (15/13/12/8) and saw 13/14/9/9 and 3 novel:
    the column counts the model's assignment of the gold rows; the topics section says so,
    the languages section (counted by the rows' language) does not."""
    from service.html.replay_page import GOLD_TOPIC_COUNTS

    topics = page[page.index('<section id="topics">') :]
    topics = topics[: topics.index("</section>")]
    languages = page[page.index('<section id="languages">') :]
    languages = languages[: languages.index("</section>")]
    note = "Gold n counts the gold set&#x27;s questions the way live questions are counted"
    assert GOLD_TOPIC_COUNTS.startswith("Gold n counts") and note in topics
    assert "Gold n counts" not in languages


def test_the_share_of_the_latest_events_kept_out_is_shown_when_there_is_one() -> None:
    # what ``starved`` is decided on: 600 of the latest 5,000 kept out = 12 %
    report = samples.replay_report()
    timing = report["analytics"]["drift"]["event_time"]
    timing.update(recent_events=5000, recent_kept_out_share=0.12)
    assert (
        "kept out of the windows: 1 late, 0 stamped in the future, 0 too far ahead of the "
        "others. Of the latest 5000 events, 12% were kept out."
    ) in render_replay_html(report)
    timing["recent_kept_out_share"] = 0.0  # none of the latest: nothing added
    assert "others.</p>" in render_replay_html(report)


def test_the_text_report_gives_both_shares_kept_out() -> None:
    from service.jobs.replay import render_text

    report = samples.replay_report(extras=False)
    timing = report["analytics"]["drift"]["event_time"]
    timing.update(kept_out_share=0.1, recent_events=10, recent_kept_out_share=0.1)
    assert (
        "  kept out of the drift windows: 1 late event, 0 stamped in the future, 0 too far "
        "ahead of the others (10% of the events seen, 10% of the latest 10)"
    ) in render_text(report).splitlines()


def test_starved_windows_are_said_in_the_text_and_the_page() -> None:
    from service.jobs.replay import render_text

    report = samples.replay_report(extras=False)
    why = "70% of the latest 10 events seen were kept out of the drift windows (7 late, ...)"
    report["analytics"]["drift"]["event_time"]["starved"] = why
    assert f"  starved: {why}" in render_text(report).splitlines()
    assert f'<p class="warn">Starved: {why}.</p>' in render_replay_html(report)


def test_a_resumed_text_report_gives_this_runs_dead_letters_before_the_totals_of_every_run() -> (
    None
):
    # a fifth trial: the per-run reason counts sat under "what follows covers every run on it"
    from service.jobs.replay import render_text

    report = samples.replay_report(extras=False)
    report |= {"dead_lettered": {"not_json": 1}, "dead_lettered_total": 1,
               "resumed": {"state": "s.sqlite", "processed_in_all": 3001}}  # fmt: skip
    lines = render_text(report).splitlines()
    reason = lines.index("  dead-lettered not_json: 1")
    resumed = next(i for i, line in enumerate(lines) if line.startswith("resumed from s.sqlite"))
    assert lines[0].endswith("1 dead-lettered in this run") and reason < resumed


def test_shadow_by_label_draws_no_bar_under_min_n_and_names_topics(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Trial 9: the "RBO by language" chart drew a bar for a language with n = 1, and the
    shadow-by-topic tables showed "topic-1" where the rest of the page says "topic-1: warsaw"."""
    from service.html import extras

    drawn: dict[str, tuple[list[str], dict[str, list[float]]]] = {}

    def capture(labels: list[str], series: dict[str, list[float]], **kw: object) -> str:
        drawn[str(kw["title"])] = (list(labels), {k: list(v) for k, v in series.items()})
        return "<svg></svg>"

    monkeypatch.setattr(extras.plots, "grouped_bars", capture)
    shadow = samples.shadow()
    cell = shadow["candidates"]["bm25-v2"]
    cell["by_language"] = {"en": {"n": 20, "rbo": 0.9}, "de": {"n": 1, "rbo": 0.5}}
    cell["by_topic"] = {"topic-1": {"n": 12, "rbo": 0.7, "counts": {"rbo": 12}}}
    cell["disagreements"][0]["topic"] = "topic-1"
    html = str(extras.shadow_section(shadow, 10, {"topic-1": "topic-1: warsaw"}))
    # de's mean is over 1 result (< 10): no bar; en's over 20: its mean
    assert drawn["RBO with production by language"] == (["de", "en"], {"bm25-v2": [0.0, 0.9]})
    assert drawn["RBO with production by topic"] == (["topic-1: warsaw"], {"bm25-v2": [0.7]})
    assert "<tr><td>topic-1: warsaw</td><td>12</td>" in html
    assert "<td>topic-1: warsaw</td>" in html.split("Largest disagreements")[1]
    assert "<td>topic-1</td>" not in html
    assert "NEAREST" not in html and "nearest" not in html  # novelty trusted: facts


def test_shadow_by_topic_says_nearest_gold_topic_while_novelty_is_untrusted(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Session 41: with the novelty detector untrusted (the topic drift's ``categories_are``
    set) the topics are each question's nearest gold topic; the topic section said so, the
    shadow RBO-by-topic chart, table and the disagreements' topic column did not. The replay
    page and the status page pass ``categories_are`` down."""
    from service.html import extras, render_replay_html, render_status_page
    from tests.acceptance.test_html_chromium import STATUS

    drawn: list[str] = []

    def capture(labels: list[str], series: dict[str, list[float]], **kw: object) -> str:
        drawn.append(str(kw["title"]))
        return "<svg></svg>"

    monkeypatch.setattr(extras.plots, "grouped_bars", capture)
    report = samples.replay_report()
    cell = report["shadow"]["candidates"]["bm25-v2"]
    cell["by_topic"] = {"topic-1": {"n": 12, "rbo": 0.7, "counts": {"rbo": 12}}}
    why = "each question's nearest gold topic (the novelty detector is uncalibrated: x)"
    report["analytics"]["drift"]["topic"]["categories_are"] = why
    for page in (render_replay_html(report),
                 render_status_page(STATUS, report["analytics"], extras=report)):  # fmt: skip
        shadow = page[page.index('id="shadow"') :]
        shadow = shadow[: shadow.index("</section>")]
        assert "<h3>By topic (NEAREST gold topic)</h3>" in shadow
        assert (f'<p class="warn">These topics are by NEAREST gold topic, '
                f"not facts: {why.replace(chr(39), '&#x27;')}.</p>") in shadow  # fmt: skip
        assert "<th>topic (NEAREST gold topic)</th>" in shadow
        assert "<th>topic (nearest gold topic)</th>" in shadow  # the disagreements' column
    assert drawn.count("RBO with production by topic (NEAREST gold topic)") == 2
