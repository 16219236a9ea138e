"""``render_eval_html`` on the hand-built sample (values worked out in ``samples``)."""

from __future__ import annotations

import re

import pytest

from service.html import render_eval_html
from tests.service.html import samples
from tests.service.html.structure import external, parse


@pytest.fixture(scope="module")
def page() -> str:
    return render_eval_html(samples.eval_outcome())


def test_structure_sections_and_charts(page: str) -> None:
    assert page.startswith("<!DOCTYPE html>\n")
    parsed = parse(page)
    assert parsed.unbalanced == []
    assert parsed.sections == [
        "overall", "curves", "breakdown", "misses", "unanswerable", "comparison"
    ]  # fmt: skip
    # recall@k curves 1 + breakdown by kind, source, language 3 + paired comparison 1
    assert parsed.svgs == 5
    assert parsed.scripts == 0
    assert external(parsed.urls) == []
    assert not re.search(r"url\((?!#)|@import|<link\b", page)  # url(#clip) is in-page


def test_planted_script_question_is_escaped(page: str) -> None:
    assert "<script" not in page
    assert samples.PLANTED_ESCAPED in page
    assert "&lt;b&gt;q-9&lt;/b&gt; names an unknown passage" in page  # the warning


def test_overall_values(page: str) -> None:
    # one row per metric, one column per retriever (bm25, tfidf): the table stays as wide as
    # the retrievers, however many cut-offs (the old one-row-per-retriever table overflowed)
    assert "<thead><tr><th>metric</th><th>bm25</th><th>tfidf</th></tr></thead>" in page
    assert "<tr><td>recall@1</td><td>0.500</td><td>1.000</td></tr>" in page
    assert "<tr><td>mrr</td><td>0.500</td><td>1.000</td></tr>" in page
    assert ("<tr><td>misses (a gold passage outside the top 2)</td><td>1</td><td>0</td>"
            "</tr>") in page  # fmt: skip
    assert "<tr><td>questions averaged over</td><td>2</td><td>2</td></tr>" in page
    assert "<tr><td>missing from the run (scored 0)</td><td>0</td><td>0</td></tr>" in page
    assert "<td>bm25</td><td>recall@1</td><td>0.500</td><td>0.800</td>" in page  # failed gate


def test_unanswerable_questions_have_their_own_section(page: str) -> None:
    # q-3 has no gold passage: bm25 ranked p-7 first at 0.5, tfidf returned nothing
    assert ('<tr><td class="nowrap">q-3</td><td class="text">Who won in 1990?</td>'
            '<td class="nowrap">unanswerable</td><td>p-7 (0.5)</td><td>nothing returned</td>'
            "</tr>") in page  # fmt: skip
    assert "<tr><td>bm25</td><td>1</td><td>0.500</td></tr>" in page  # mean best score
    assert "<tr><td>tfidf</td><td>1</td><td>0.000</td></tr>" in page


def test_breakdown_uses_the_chosen_cut_off() -> None:
    # the sample's cut-offs are 1 and 2: by default the largest k <= 10 (2); a --fail-under
    # on recall@1 makes the breakdowns recall@1
    default = render_eval_html(samples.eval_outcome())
    assert "recall@2 by kind" in default and "recall@1 by kind" not in default
    outcome = samples.eval_outcome()
    object.__setattr__(outcome, "breakdown_k", 1)
    chosen = render_eval_html(outcome)
    assert "recall@1 by kind" in chosen and "recall@2 by kind" not in chosen
    # by kind at k = 1: expert = q-2, bm25 misses it, tfidf finds it first
    assert ("<tr><td>expert</td><td>1</td><td>0.000</td><td>0.000</td><td>0.000</td>"
            "<td>1.000</td><td>1.000</td><td>1.000</td></tr>") in chosen  # fmt: skip


def test_breakdown_rows(page: str) -> None:
    # by kind: expert = q-2 (bm25 misses it), plain = q-1 (bm25 finds it at rank 1)
    # columns: value, n, bm25 recall@2, hit_rate@2, mrr, tfidf recall@2, hit_rate@2, mrr
    assert ("<tr><td>expert</td><td>1</td><td>0.000</td><td>0.000</td><td>0.000</td>"
            "<td>1.000</td><td>1.000</td><td>1.000</td></tr>") in page  # fmt: skip
    assert "<h3>By kind</h3>" in page and "<h3>By source</h3>" in page


def test_misses_show_what_came_back_instead(page: str) -> None:
    assert "bm25: 1 misses" in page and "tfidf: 0 misses" in page
    # each passage id kept whole (session 41: span.id, never broken at its hyphen)
    assert '<td><span class="id">p-2</span> (not retrieved)</td>' in page
    assert ('<td class="text">1. <span class="id">p-9</span> (2); 2. <span class="id">p-8</span>'
            " (1)</td>") in page  # fmt: skip


def test_paired_comparison_table(page: str) -> None:
    # recall@1: bm25 (A) 0.5, tfidf (B) 1.0, one win (q-2), one tie (q-1)
    assert ("<tr><td>recall@1</td><td>bm25</td><td>tfidf</td><td>2</td><td>0.500</td>"
            "<td>1.000</td><td>0.500</td>") in page  # fmt: skip


def test_without_comparison_says_how_to_get_one() -> None:
    parsed_page = render_eval_html(samples.eval_outcome(compare=False))
    assert "No paired comparison: run with --compare A B." in parsed_page
    assert parse(parsed_page).svgs == 4


def test_misses_limit_and_errors() -> None:
    outcome = samples.eval_outcome()
    limited = render_eval_html(outcome, max_misses=0)
    assert "1 more in the misses JSONL (--misses)." in limited
    with pytest.raises(ValueError, match="max_misses"):
        render_eval_html(outcome, max_misses=-1)
    empty = samples.eval_outcome()
    object.__setattr__(empty, "reports", ())
    with pytest.raises(ValueError, match="no retriever"):
        render_eval_html(empty)


def test_rendering_is_deterministic(page: str) -> None:
    assert render_eval_html(samples.eval_outcome()) == page


def test_a_float_noise_difference_is_shown_as_zero() -> None:
    """Trial 9: the paired-comparison table showed "1.63e-18" for two equal means."""
    from service.evaluation.compare import PairedComparison
    from service.evaluation.report import comparison_rows

    c = PairedComparison(metric="recall@10", a="bm25", b="hybrid", n=3, mean_a=0.5,
                         mean_b=0.5, mean_diff=1.63e-18, wins=0, losses=0, ties=3, p_value=1.0,
                         ci_low=-2e-17, ci_high=0.01, confidence=0.95, deltas={})  # fmt: skip
    (row,) = comparison_rows([c])
    assert row[6:9] == [0.0, 0.0, 0.01]  # the difference and its interval ends
