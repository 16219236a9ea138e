"""A document's language variants as one document (trial 23, plant C): the labels that
differ only by a language code are grouped, so a document is the article whatever language
copy production retrieved (:mod:`service.document_groups`, the ``document`` dimension of
:mod:`service.harvest.signals`).

Expected values worked by hand, not by the code under test. The groupings: read off each
label by the rules of the module docstring (a dotted part of the file name, a ``-``/``_``
suffix before its extension, a path part; ISO 639-1 codes only; two variants and two
distinct codes at least; a code is the corpus's language when it recurs over two such bases,
or, when it is also a path word, beside such a code in two of them). The gaps: 95 % Wilson
lower bounds with z = 1.959964 (z² = 3.841459),
L(x of n) = (p + z²/2n − z·√(p(1−p)/n + z²/4n²)) / (1 + z²/n):
L(2 of 2) = 1 / (1 + z²/2) = 0.342380 (p = 1: the root is z²/4n); L(1 of 2) = (0.5 +
0.960365 − 1.959964 · √(0.125 + 0.240091)) / 2.920730 = 0.094531; L(2 of 3) = 0.207660
(tests/service/harvest/test_document_gaps.py).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from typing import Any

import pytest
from pydantic import ValidationError

from benchmarks.datasets import SHARED_DATA
from service.document_groups import (
    AMBIGUOUS_CODES,
    LANGUAGE_CODES,
    Variant,
    compile_group_pattern,
    corpus_languages,
    group_labels,
    grouped_note,
    language_variant,
)
from service.harvest import HarvestStage
from service.harvest.config import HarvestConfig
from service.harvest.signals import (
    DOCUMENT,
    DOCUMENT_RULE,
    MAX_DOCUMENT_CHARS,
    CoverageTracker,
    document_labels,
)
from service.html.extras import document_gap_table
from service.jobs.replay import document_gap_lines
from tests.service.harvest.helpers import batch, event

L_1_OF_2, L_2_OF_2, L_2_OF_3 = 0.094531, 0.342380, 0.207660
CONFIG = HarvestConfig(flush_interval_s=0.0, min_live_events=1)
NOTES = {"language": "en", "topic": "fees"}


# -- a label's language code --------------------------------------------------------------


@pytest.mark.parametrize(
    ("label", "base", "code"),
    [
        ("Super_Bowl_50.de.html", "Super_Bowl_50.html", "de"),  # dotted, trial 23's form
        ("a.DE.html", "a.html", "de"),  # any case, normalised
        ("guide.pt-BR.md", "guide.md", "pt-BR"),  # with a region
        ("guide.zh_hant.md", "guide.md", "zh-Hant"),  # with a script, "_"
        ("report.2024.fr.pdf", "report.2024.pdf", "fr"),  # the part before the extension
        ("guide-de.html", "guide.html", "de"),  # a "-" suffix
        ("guide_pt_br.pdf", "guide.pdf", "pt-BR"),  # "_" suffix with region: the longest
        ("guide-es-419.html", "guide.html", "es-419"),  # a numeric region
        ("user-guide-de.html", "user-guide.html", "de"),  # "gu" + "ide" is no code
        ("guide-xx-de.html", "guide-xx.html", "de"),  # xx is no ISO 639-1 code
        ("docs/de/guide.html", "docs/guide.html", "de"),  # a path part
        ("de/guide.html", "guide.html", "de"),
        ("https://x.org/pt-br/guide", "https://x.org/guide", "pt-BR"),
        ("docs/de/guide.fr.html", "docs/de/guide.html", "fr"),  # the file name's first
    ],
)
def test_a_language_code_is_read_off_the_label(label: str, base: str, code: str) -> None:
    assert language_variant(label) == Variant(base, code)


@pytest.mark.parametrize(
    "label",
    [
        "Super_Bowl_50.html",  # "_Bo" is no suffix: a code stands alone
        "index.de",  # the extension is never the code
        "main.ts",  # a TypeScript file is not Tsonga
        "lib.pl",
        "it.html",  # a file named for a code: the stem is no code
        "https://de.example.org/guide.html",  # a URL's host is never read
        "https://x.org/de",  # the last part is the file name
        "faq.html?lang=de",  # a query string is never read
        "release-notes.html",  # "no" + "tes" is no code
        "<URL> #2",  # a scrubbed, told-apart URL
        "",
    ],
)
def test_a_label_without_a_code_is_its_own_base(label: str) -> None:
    assert language_variant(label) == Variant(label, "")


# -- grouping ---------------------------------------------------------------------------


def test_the_trial_s_articles_group_by_language() -> None:
    """30 XQuAD articles × en/es/de in trial 23; here three: one in three languages, one in
    two, one in English only (which stays itself: a single variant). ``de`` marks one
    article only, but beside the corpus's languages (en and es recur) and no path word: it
    joins."""
    labels = ["Warsaw.en.html", "Warsaw.es.html", "Warsaw.de.html", "Oxygen.en.html",
              "Oxygen.es.html", "Rhine.en.html"]  # fmt: skip
    warsaw, oxygen = "Warsaw.html (3 variants: de, en, es)", "Oxygen.html (2 variants: en, es)"
    assert group_labels(labels) == {"Oxygen.en.html": oxygen, "Oxygen.es.html": oxygen,
                                    "Warsaw.de.html": warsaw, "Warsaw.en.html": warsaw,
                                    "Warsaw.es.html": warsaw}  # fmt: skip
    assert corpus_languages(labels) == {"en", "es"}


def _xquad_labels() -> list[str]:
    """XQuAD's 48 article titles in its 12 languages as ``<title>.<code>.html`` (trial
    23's form), read from the shared data (the titles are the English ones in every file)."""
    labels = []
    for path in sorted((SHARED_DATA / "xquad").glob("xquad.*.json")):
        code = path.name.split(".")[1]
        data = json.loads(path.read_text(encoding="utf-8"))["data"]
        labels += [f"{article['title']}.{code}.html" for article in data]
    return labels


SIZES = ["img/photo-sm.jpg", "img/photo-lg.jpg", "img/logo-sm.png", "img/logo-lg.png",
         "img/logo.png"]  # fmt: skip
REGIONS = [f"sales/{r}/q{i}.pdf" for r in ("ne", "se", "sw", "nw") for i in (1, 2)]


@pytest.mark.skipif(
    not (SHARED_DATA / "xquad").is_dir(), reason="needs ../shared/data (GOLDWATCH_SHARED_DATA)"
)
def test_a_real_multilingual_corpus_groups_and_its_path_words_do_not() -> None:
    """XQuAD's 576 labels: 48 groups of 12 (``ro``, ``el``, ``hi``, ``vi`` are also path
    words — read-only, element, high, roman six — and join beside en, de, es…); with sizes
    and compass regions beside them, those stay themselves (``sm``/``lg`` and
    ``ne``/``se``/``sw`` only ever stand beside each other; ``nw`` is no code)."""
    xquad = _xquad_labels()
    assert len(xquad) == 576
    codes = {label.split(".")[-2] for label in xquad}
    assert codes == {"ar", "de", "el", "en", "es", "hi", "ro", "ru", "th", "tr", "vi", "zh"}
    grouped = group_labels(xquad + SIZES + REGIONS)
    assert sorted(grouped) == sorted(xquad)
    groups = set(grouped.values())
    assert len(groups) == 48
    assert "Warsaw.html (12 variants: ar, de, el, en, es, hi, ro, ru, th, tr, vi, zh)" in groups
    assert corpus_languages(xquad + SIZES + REGIONS) == codes
    assert group_labels(SIZES + REGIONS) == {}  # and alone, neither


@pytest.mark.parametrize(
    "labels",
    [
        [f"sales/{r}/q{i}.pdf" for r in ("ne", "se", "sw") for i in (1, 2, 3)],  # regions
        ["sales/q1.pdf", "sales/se/q1.pdf", "sales/q2.pdf", "sales/se/q2.pdf"],  # and whole
        SIZES,
        ["run-km.csv", "run-mi.csv", "ride-km.csv", "ride-mi.csv"],  # units
        ["mnt/ro/app.yaml", "mnt/rw/app.yaml", "mnt/ro/db.yaml", "mnt/rw/db.yaml"],  # modes
        ["notes/mr/12.md", "notes/12.md", "notes/mr/99.md", "notes/99.md"],  # merge requests
        ["chart-hi.png", "chart-lo.png", "map-hi.png", "map-lo.png"],  # resolutions
        ["book-ii.pdf", "book-vi.pdf", "vol-ii.pdf", "vol-vi.pdf"],  # roman numerals
        ["hr/policy.html", "it/policy.html", "hr/leave.html", "it/leave.html"],  # departments
        ["uk/prices.html", "prices.html", "uk/terms.html", "terms.html"],  # a country
        ["guide.de.html", "guide.en.html", "faq.html"],  # one base: no evidence of a scheme
    ],
)
def test_path_words_that_read_as_codes_are_not_languages(labels: list[str]) -> None:
    assert group_labels(labels) == {}


def test_the_ambiguous_codes_are_codes() -> None:
    assert AMBIGUOUS_CODES <= LANGUAGE_CODES
    assert {"sm", "lg", "ne", "se", "sw", "km", "mi", "ro", "rw", "mr"} <= AMBIGUOUS_CODES


@pytest.mark.parametrize(
    ("labels", "expected"),
    [
        (["index.de.html"], {}),  # alone: not rewritten
        (["it.html", "de.html"], {}),  # codes as file names: no code read
        (["a.de.html", "a-de.html"], {}),  # two labels, one code: no two variants
        (["hr/policy.html", "it/policy.html"], {}),  # two departments, not two languages
        (["hr/policy.html", "it/policy.html", "de/policy.html"], {}),  # one base: no evidence
        (
            ["hr/p.html", "it/p.html", "de/p.html", "it/q.html", "de/q.html"],
            {  # German, recurring, vouches for it (beside it twice), not for hr (once)
                "de/p.html": "p.html (2 variants: de, it)",
                "it/p.html": "p.html (2 variants: de, it)",
                "de/q.html": "q.html (2 variants: de, it)",
                "it/q.html": "q.html (2 variants: de, it)",
            },
        ),
        (
            ["docs/guide.html", "docs/de/guide.html", "docs/faq.html", "docs/de/faq.html"],
            {  # the default language, unmarked
                "docs/de/faq.html": "docs/faq.html (2 variants: de, unmarked)",
                "docs/de/guide.html": "docs/guide.html (2 variants: de, unmarked)",
                "docs/faq.html": "docs/faq.html (2 variants: de, unmarked)",
                "docs/guide.html": "docs/guide.html (2 variants: de, unmarked)",
            },
        ),
        (  # an unmarked label vouches for no path word: IT's pages, or Italian ones
            ["docs/guide.html", "docs/it/guide.html", "docs/faq.html", "docs/it/faq.html"],
            {},
        ),
        (
            [
                "guide.de.html",
                "guide-pt-BR.html",
                "faq.pt_br.html",
                "faq-de.pdf",
                "b.html",
                "faq.de.html",
            ],  # two forms, one base; pt counts pt-BR  # fmt: skip
            {
                "faq.de.html": "faq.html (2 variants: de, pt-BR)",
                "faq.pt_br.html": "faq.html (2 variants: de, pt-BR)",
                "guide-pt-BR.html": "guide.html (2 variants: de, pt-BR)",
                "guide.de.html": "guide.html (2 variants: de, pt-BR)",
            },
        ),
    ],
)
def test_groups_need_two_variants(labels: list[str], expected: dict[str, str]) -> None:
    assert group_labels(labels) == expected


def test_a_pattern_replaces_the_rule_and_off_groups_nothing() -> None:
    labels = ["kb/100-a.pdf", "kb/100-b.pdf", "kb/200-a.pdf", "x.de.html", "x.en.html"]
    two = compile_group_pattern(r"^kb/(\d+)-(\w)\.pdf$")
    assert group_labels(labels, two) == {"kb/100-a.pdf": "100 (2 variants: a, b)",
                                         "kb/100-b.pdf": "100 (2 variants: a, b)"}  # fmt: skip
    one = compile_group_pattern(r"^kb/(\d+)-")
    assert set(group_labels(labels, one).values()) == {"100 (2 variants)"}
    assert compile_group_pattern("off") is None and group_labels(labels, None) == {}
    assert compile_group_pattern("languages") == "languages"


def test_a_bad_pattern_is_a_configuration_error_naming_the_field() -> None:
    for bad, why in (("([a-z", "not a regular expression"), (r"\w+", "needs a group")):
        with pytest.raises(ValidationError, match=f"document_groups[\\s\\S]*{why}"):
            HarvestConfig(document_groups=bad)
    assert HarvestConfig(document_groups="off").document_groups == "off"
    assert isinstance(compile_group_pattern(r"(\w+)\."), re.Pattern)


# -- the corpus's labels ------------------------------------------------------------------


def test_long_urls_group_before_they_are_cut() -> None:
    """Two 300-character URLs that differ only by their language part are one document:
    grouped on the whole labels, then cut (a hash of the group's whole label), never the
    other way round (their cut labels differ by their hashes). (A second article in the
    two languages: one base is no evidence that de and en are languages.)"""
    tail = "a" * 300
    labels = document_labels([("p-1", f"https://x.org/de/{tail}.html"),
                              ("p-2", f"https://x.org/en/{tail}.html"),
                              ("p-3", "b.html"), ("p-4", "https://x.org/de/c.html"),
                              ("p-5", "https://x.org/en/c.html")])  # fmt: skip
    group = labels.documents["p-1"]
    assert labels.documents["p-2"] == group and len(group) == MAX_DOCUMENT_CHARS
    assert group.startswith(f"https://x.org/{tail[:50]}") and group[-9] == "…"
    short = "https://x.org/c.html (2 variants: de, en)"
    assert labels.documents["p-4"] == labels.documents["p-5"] == short
    assert labels.variants == {group: 2, short: 2}
    assert set(labels.renamed.values()) == {group, short} and len(labels.renamed) == 4
    cut = [own for own in labels.renamed if "c.html" not in own]
    assert len(cut) == 2 and all(len(own) == MAX_DOCUMENT_CHARS for own in cut)  # as saved


def test_signed_urls_stay_apart_and_no_doc_means_no_dimension() -> None:
    signed = [f"https://f.example.org/de/doc.pdf?sig={i:02d}f3a9b2c7d1e4f5a6b7c8d9e0f1a2b3"
              for i in range(2)]  # fmt: skip
    labels = document_labels([("p-1", signed[0]), ("p-2", signed[1])])
    assert labels.documents == {"p-1": "<URL>", "p-2": "<URL> #2"} and labels.renamed == {}
    assert document_labels([("p-1", None), ("p-2", "")]) == ({}, {}, {})


# -- the counts ---------------------------------------------------------------------------


def test_a_state_of_ungrouped_labels_is_counted_under_the_groups() -> None:
    """Saved before the grouping: a.de.html 3 and a.en.html 2 events all-time (→ G: 5),
    gone.html 4 (no longer in the corpus: dropped), b.html 1 (kept); the window's a.de.html
    → G, gone.html dropped, b.html kept. Moved 5 + 1 = 6 events, dropped 4 + 1 = 5."""
    group = "a.html (2 variants: de, en)"
    tracker = CoverageTracker({DOCUMENT: {"b.html": 1}}, min_live_events=1)
    window = {DOCUMENT: {"labels": ["a.de.html", "gone.html", "b.html"], "at": [0, 1, 2]}}
    saved = {"a.de.html": 3, "a.en.html": 2, "gone.html": 4, "b.html": 1}
    tracker.load({"window": window, "documents": saved, "document_rule": DOCUMENT_RULE})
    moved, dropped = tracker.relabel_documents(
        {group, "b.html"}, {"a.de.html": group, "a.en.html": group}
    )
    assert (moved, dropped) == (6, 5)
    assert tracker.document_totals == {group: 5, "b.html": 1}
    assert list(tracker.live[DOCUMENT].items()) == [(group, 1), ("b.html", 1)]


def test_the_all_time_counts_are_bounded() -> None:
    """max_documents 10: the 11th document forgets the least counted down to 9 (d09: 2,
    d10: 1 → 3 events uncounted), which still count in the shares: d00's 11 events of 66."""
    tracker = CoverageTracker({DOCUMENT: {"zz": 1}}, min_live_events=1, max_documents=10)
    docs = [f"d{i:02d}" for i in range(11) for _ in range(11 - i)]
    tracker.update_each([{}] * len(docs), docs)
    assert len(tracker.document_totals) == 9 and tracker.documents_uncounted == 3
    assert sum(tracker.document_totals.values()) + 3 == 66 == sum(range(1, 12))
    gaps = {g.label: (g.live, g.live_total) for g in tracker.document_gaps()}
    assert gaps["d00"] == (11, 66)
    again = CoverageTracker({DOCUMENT: {"zz": 1}}, min_live_events=1, max_documents=10)
    again.load(tracker.state())
    assert again.documents_uncounted == 3 and again.document_totals == tracker.document_totals
    ties = CoverageTracker({}, max_documents=2)
    ties.update_each([{}] * 3, ["c", "a", "b"])  # all 1: the first by label is kept
    assert ties.document_totals == Counter({"a": 1}) and ties.documents_uncounted == 2


# -- the stage ----------------------------------------------------------------------------


def _stage(labels: Any, **kwargs: Any) -> HarvestStage:
    gold = {"language": {"en": 4}, "topic": {"fees": 4},
            DOCUMENT: {labels.documents["p-3"]: 2}}  # fmt: skip
    return HarvestStage(CONFIG, gold_counts=gold, documents=labels.documents,
                        renamed=labels.renamed, **kwargs)  # fmt: skip


#: a.html in English and German, asked about; c.html in both too, never asked about (one
#: base would be no evidence that en and de are languages); b.html the gold set's
CORPUS = [("p-1", "a.en.html"), ("p-2", "a.de.html"), ("p-3", "b.html"), ("p-4", "c.en.html"),
          ("p-5", "c.de.html")]  # fmt: skip


def _run(stage: HarvestStage) -> dict[str, dict[str, Any]]:
    """Three questions, production's first passage p-1 (a.en), p-2 (a.de), p-3 (b: the
    gold set's two rows)."""
    questions = ["top up failed", "Aufladung fehlgeschlagen", "card arrival"]
    firsts = ["p-1", "p-2", "p-3"]
    events = [event(f"e{i}", q, results=[(p, 2.0)])
              for i, (q, p) in enumerate(zip(questions, firsts, strict=True))]  # fmt: skip
    stage.process(batch(events, [dict(NOTES) for _ in events]))
    return {row["question"]: dict(row) for row in stage.records()}


def test_the_variants_share_one_gap() -> None:
    """Grouped: the second question's article has, right after it, 2 of the 2 live
    questions (0 gold rows): L(2 of 2) = 0.342380, and over all three 2 of 3; each language
    copy alone had 1 of 2: L(1 of 2) = 0.094531."""
    grouped = _stage(document_labels(CORPUS))
    rows = _run(grouped)
    assert rows["Aufladung fehlgeschlagen"]["gap"] == pytest.approx(L_2_OF_2, abs=1e-6)
    report = grouped.document_gaps(10)
    assert report is not None
    assert [(g["document"], g["live"], g["live_total"]) for g in report["gaps"]] == [
        ("a.html (2 variants: de, en)", 2, 3)
    ]
    assert report["gaps"][0]["gap"] == pytest.approx(L_2_OF_3, abs=1e-6)
    assert report["documents"] == 3 and report["grouped"] == {"documents": 4, "groups": 2}
    line = document_gap_lines(report)[0]  # (the next: the uncovered share, its own test)
    assert "a.html (2 variants: de, en) 66.7% live (2 of 3 questions)" in line
    assert line.endswith("of 3 documents (4 corpus documents grouped into 2 by language variant)")
    assert "grouped into 2 by language variant" in "".join(document_gap_table(report))
    apart = _stage(document_labels(CORPUS, None))
    rows = _run(apart)
    assert rows["Aufladung fehlgeschlagen"]["gap"] == pytest.approx(L_1_OF_2, abs=1e-6)
    report = apart.document_gaps(10)
    assert report is not None and "grouped" not in report and report["documents"] == 5
    assert grouped_note(report) == ""


def test_a_restore_maps_old_labels_and_drops_groups_no_longer_formed() -> None:
    before = _stage(document_labels(CORPUS, None))  # a state saved before the grouping
    _run(before)
    assert before.coverage.document_totals == {"a.en.html": 1, "a.de.html": 1, "b.html": 1}
    grouped = _stage(document_labels(CORPUS))
    grouped.restore(before.state_snapshot())
    group = "a.html (2 variants: de, en)"
    assert grouped.coverage.document_totals == {group: 2, "b.html": 1}
    assert grouped.coverage.live[DOCUMENT] == {group: 2, "b.html": 1}
    apart = _stage(document_labels(CORPUS, None))  # and back: the group's counts dropped
    apart.restore(grouped.state_snapshot())
    assert apart.coverage.document_totals == {"b.html": 1}
    assert apart.coverage.live[DOCUMENT] == {"b.html": 1}


def test_a_restore_groups_old_labels_before_it_bounds_them() -> None:
    """A state saved before the grouping with more per-language labels than
    ``max_documents`` (4 here: a, c, d in en and de, one question each) is bounded once
    they are counted under their groups (3), so nothing is forgotten; bounded first, the 6
    labels would have been cut to 4 × 9 // 10 = 3 and 3 events uncounted."""
    corpus = CORPUS + [("p-6", "d.en.html"), ("p-7", "d.de.html")]
    firsts = ["p-1", "p-2", "p-4", "p-5", "p-6", "p-7"]
    events = [event(f"e{i}", f"question {i}", results=[(p, 2.0)]) for i, p in enumerate(firsts)]
    before = _stage(document_labels(corpus, None))
    before.process(batch(events, [dict(NOTES) for _ in events]))
    assert len(before.coverage.document_totals) == 6
    bounded = HarvestConfig(flush_interval_s=0.0, min_live_events=1, max_documents=4)
    labels = document_labels(corpus)
    grouped = HarvestStage(bounded, gold_counts={DOCUMENT: {"b.html": 2}},
                           documents=labels.documents, renamed=labels.renamed)  # fmt: skip
    grouped.restore(before.state_snapshot())
    totals = grouped.coverage.document_totals
    assert sorted(totals.values()) == [2, 2, 2] and len(totals) == 3
    assert all("(2 variants: de, en)" in doc for doc in totals)
    assert grouped.coverage.documents_uncounted == 0
