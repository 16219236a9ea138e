"""The off-corpus rule per language (trial 6): cutoffs, rates and verdicts by the gold rows'
and the live question's languages.

The bug: one cutoff pooled over every answerable gold row is the least of them all, so one row
of another script (a Hindi question against a German/English corpus, which a monolingual
embedding puts far from everything) moved it for every language — off-corpus catches fell
1,054 → 295 while the report printed the same false-positive rate — and Hindi questions the
corpus answers were all off-corpus, though no Hindi row had been measured.
"""

from __future__ import annotations

import types

import numpy as np
import pytest

from service.pipeline.totals import AnnotationTotals
from service.records import GoldQuestion
from service.refusals.scope import (
    EmbeddingScope,
    calibrate_support,
    support_by_language,
    support_by_language_text,
)
from service.refusals.stage import EmbeddingScopeStage
from tests.service.test_scope_embedding import TableEmbedder, _events
from tests.service.test_scope_support import BANKING, DIM, _news_and_banking

# 6 gold rows: 0-2 German answerable, 3 English answerable, 4 Hindi answerable (Devanagari),
# 5 German unanswerable; cosines 0.1 unless set.
LANGUAGES = ["de", "de", "de", "en", "hi", "de"]
SCRIPTS = ["Latn", "Latn", "Latn", "Latn", "Deva", "Latn"]
LABELS = np.array([True, True, True, True, True, False])
CORPUS = np.array([0.3, 0.3, 0.3, 0.3, 0.05, 0.1])  # each row's nearest passage


def _sims() -> np.ndarray:
    sims = np.full((6, 6), 0.1)
    np.fill_diagonal(sims, 1.0)
    for (i, j), value in {(0, 1): 0.7, (1, 2): 0.6, (0, 2): 0.5, (0, 3): 0.45}.items():
        sims[i, j] = sims[j, i] = value
    sims[5, :5] = sims[:5, 5] = 0.2
    return sims


FOLDS = [(np.array([0, 1, 3, 5]), np.array([2, 4])), (np.array([2, 3, 4, 5]), np.array([0, 1]))]


def test_one_row_of_another_script_moves_the_pooled_cutoff_but_no_language_cutoff() -> None:
    pooled = calibrate_support(_sims(), CORPUS, LABELS, FOLDS)
    # Pooled: row 4's support is max(0.1 to rows 0-3, 0.2 to row 5, 0.05 to the corpus) =
    # 0.2, the least of all, so it is the cutoff for everyone (the bug).
    assert pooled.cutoff == pytest.approx(0.2)
    by, by_script = support_by_language(_sims(), CORPUS, LABELS, FOLDS, LANGUAGES, SCRIPTS, 3)
    # German, leave-one-out: row 0 → 0.7 (row 1), row 1 → 0.7, row 2 → 0.6 (row 1): 0.6.
    assert by["de"]["cutoff"] == pytest.approx(0.6) and by["de"]["basis"] == "own"
    # Held out: fold 1 trains on rows 0, 1 (cutoff 0.7); row 2 against rows 0, 1, 3, 5 and
    # the corpus is 0.6 < 0.7: a false positive. Fold 2 trains on row 2 alone (its support
    # against rows 3, 4, 5 and the corpus: 0.3); rows 0 (0.5) and 1 (0.6) are above. 1 of 3.
    assert by["de"]["held_out_fpr"] == pytest.approx(1 / 3)
    assert (by["de"]["n_answerable"], by["de"]["n_unanswerable"]) == (3, 1)
    # English, 1 row (< 3): its script's cutoff, German's 0.6; its row's support is
    # max(0.45 to row 0, 0.3 to the corpus) = 0.45 < 0.6: a false positive, 1 of 1.
    assert by["en"]["cutoff"] == pytest.approx(0.6) and by["en"]["basis"] == "script Latn"
    assert by["en"]["held_out_fpr"] == 1.0
    # Hindi: no language written in Devanagari has its own cutoff: not judged.
    assert by["hi"]["cutoff"] is None and by["hi"]["basis"] == "not judged"
    assert by_script == {"Latn": pytest.approx(0.6)}
    text = support_by_language_text({"by_language": by})
    assert text[-1].endswith("(de, en, hi); a question in another language is not judged, "
                             "one of no named language by its script's cutoff or not at "
                             "all")  # fmt: skip
    assert text[2].startswith("hi: not judged by the off-corpus rule (1 answerable gold question")


def _with_a_far_hindi_row() -> tuple[dict[str, np.ndarray], list[str], list[GoldQuestion]]:
    """The news gold set of test_scope_support plus one answerable Hindi row on a dimension
    (9) nothing else uses: its support similarity is 0, the least of every row."""
    table, passages, gold = _news_and_banking()
    table["समाचार का प्रश्न"] = np.eye(DIM)[9]
    table["हिंदी में दूसरा प्रश्न"] = np.eye(DIM)[10]
    gold.append(GoldQuestion("h0", "समाचार का प्रश्न", ("p0",), language="hi-IN"))
    return table, passages, gold


def test_the_detector_judges_each_live_question_by_its_language() -> None:
    table, passages, gold = _with_a_far_hindi_row()
    languages = [q.language or "en" for q in gold]
    pooled = EmbeddingScope(TableEmbedder(table), gold, passages, n_boot=0)
    # The bug: the Hindi row pulls the pooled cutoff to 0, and the banking questions (support
    # 0.4: test_scope_support) are no longer off-corpus.
    assert pooled.support.cutoff == pytest.approx(0.0, abs=1e-6)
    assert pooled.score_support(BANKING)[1].tolist() == [False] * 4
    det = EmbeddingScope(TableEmbedder(table), gold, passages, n_boot=0, languages=languages,
                         min_rows=10)  # fmt: skip
    english = det.support.by_language["en"]
    assert english["basis"] == "own" and english["n_answerable"] == 12
    assert english["cutoff"] > 0.4  # the news rows' own least support, as before the Hindi row
    assert det.support.by_language["hi"]["basis"] == "not judged"
    asked = [*BANKING, "हिंदी में दूसरा प्रश्न"]
    proba, off = det.score_support(asked, None, ["en-GB"] * 4 + ["hi"])
    assert off.tolist() == [True] * 4 + [False]  # Hindi: not judged, not off-corpus
    assert np.isneginf(det.cutoffs(asked, ["en"] * 4 + ["hi"])[4])
    # A language the gold set lacks, even in Latin script, is not judged: no gold row
    # measured how close its answerable questions come (before: the Latin cutoff, and a
    # German question to an English gold set was off-corpus whatever the corpus held).
    assert np.isneginf(det.cutoffs(["banking 0"], ["fr"])[0])
    assert det.score_support(["banking 0"], None, ["fr"])[1].tolist() == [False]
    # The same question labelled English (or a regional English) is judged, and off-corpus.
    assert det.cutoffs(["banking 0"], ["en-GB"])[0] == pytest.approx(english["cutoff"])

    stage = EmbeddingScopeStage(det)
    notes: list[dict[str, object]] = [{"refused": False, "language": lang}
                                      for lang in ["en"] * 4 + ["hi"]]  # fmt: skip
    batch = types.SimpleNamespace(events=_events(asked), annotations=notes)
    stage.process(batch)
    assert [n["off_corpus"] for n in notes] == [True] * 4 + [False]
    assert [n["off_corpus_judged"] for n in notes] == [True] * 4 + [False]
    totals = AnnotationTotals()
    totals.process(batch)  # type: ignore[arg-type]
    assert totals.by_language["off_corpus"] == {"en": 4}
    assert totals.by_language["not_judged"] == {"hi": 1}
    assert totals.by_language["no_gold_rows"] == {}
    again = AnnotationTotals()
    again.restore(totals.state_snapshot())
    assert again.by_language == totals.by_language


def test_a_live_question_in_a_language_the_gold_set_lacks_gets_no_verdict() -> None:
    """Trial 12 F1: the regression, too, was fitted on no row of a language the gold set
    lacks (300 answerable Hindi questions to an English/Spanish gold set were all "out of
    scope", 270 under-refusals "beyond" the detector's error, and a rise of German raised an
    out-of-scope drift alarm). Such a question gets no out-of-scope verdict (``None``: not in
    the scored count, no over- or under-refusal), and counts by language in ``no_gold_rows``;
    Hindi, which has a gold row, is still judged by the regression."""
    table, passages, gold = _with_a_far_hindi_row()
    languages = [q.language or "en" for q in gold]
    det = EmbeddingScope(TableEmbedder(table), gold, passages, n_boot=0, languages=languages,
                         min_rows=10)  # fmt: skip
    assert det.gold_languages() == {"en", "hi"}
    asked = [*BANKING, "हिंदी में दूसरा प्रश्न", "banking 0", "banking 1"]
    labels = ["en"] * 4 + ["hi", "fr", "und"]
    notes: list[dict[str, object]] = [{"refused": False, "language": lang} for lang in labels]
    batch = types.SimpleNamespace(events=_events(asked), annotations=notes)
    EmbeddingScopeStage(det).process(batch)
    assert [n["out_of_scope"] for n in notes] == [True] * 4 + [notes[4]["out_of_scope"], None,
                                                             True]  # fmt: skip
    assert notes[4]["out_of_scope"] is not None  # judged by the regression
    french, undetermined = notes[5], notes[6]
    assert french["scope_unjudged_language"] is True and "scope_unjudged_language" not in notes[0]
    assert (french["off_corpus"], french["off_corpus_judged"]) == (False, None)
    assert (french["under_refusal"], french["over_refusal"]) == (None, None)
    assert undetermined["off_corpus"] is True  # und: judged by its own script, as before
    totals = AnnotationTotals()
    totals.process(batch)  # type: ignore[arg-type]
    assert totals.flags["scope_scored"] == 6 and totals.flags["out_of_scope"] == 5 + (
        notes[4]["out_of_scope"] is True
    )
    assert totals.by_language["no_gold_rows"] == {"fr": 1}
    assert totals.by_language["not_judged"] == {"hi": 1}


def test_the_languages_of_one_script_share_its_least_cutoff() -> None:
    # Rows 0, 1 German (cosine 0.7), rows 2, 3 Spanish (cosine 0.4), row 4 unanswerable; no
    # corpus. Each language's own least row would be 0.7 and 0.4; the Latin cutoff is the
    # least of both, 0.4, and German is judged by it (the least of few rows is noisy: trial 5,
    # Spanish's own cutoff flagged 16 % of the Spanish questions the corpus answers).
    sims = np.full((5, 5), 0.1)
    np.fill_diagonal(sims, 1.0)
    sims[0, 1] = sims[1, 0] = 0.7
    sims[2, 3] = sims[3, 2] = 0.4
    labels = np.array([True, True, True, True, False])
    folds = [(np.array([0, 2, 3]), np.array([1, 4])), (np.array([1, 2, 3, 4]), np.array([0]))]
    by, by_script = support_by_language(sims, None, labels, folds, ["de", "de", "es", "es", "de"],
                                        ["Latn"] * 5, 2)  # fmt: skip
    assert by_script == {"Latn": pytest.approx(0.4)}
    assert by["de"]["cutoff"] == by["es"]["cutoff"] == pytest.approx(0.4)
    assert by["de"]["basis"] == by["es"]["basis"] == "own"
    # German held out: fold 1's cutoff is the least of rows 0, 2, 3 against rows 0, 2, 3:
    # row 0 → 0.1, so 0.1; row 1 against them is 0.7: inside. Fold 2: rows 1, 2, 3 against
    # rows 1-4: 0.4 (rows 2, 3); row 0 against them 0.7: inside. 0 of 2.
    assert by["de"]["held_out_fpr"] == 0.0
    # Spanish: no held-out Spanish row in these folds: nothing measured (not a rate of 0).
    assert by["es"]["held_out_fpr"] is None


def test_a_language_never_held_out_against_its_script_has_no_rate_not_a_rate_of_0() -> None:
    # analytics.quality_min_class 2: rows 0, 1 German and 2, 3 Greek answerable, 4 German and 5
    # Greek unanswerable; no corpus; cosines 0.1 but German 0-1 0.7 and Greek 2-3 0.8. Three
    # folds hold out [2, 3, 4], [0, 5], [1] (a partition, as StratifiedKFold's).
    sims = np.full((6, 6), 0.1)
    np.fill_diagonal(sims, 1.0)
    sims[0, 1] = sims[1, 0] = 0.7
    sims[2, 3] = sims[3, 2] = 0.8
    labels = np.array([True, True, True, True, False, False])
    folds = [(np.array([0, 1, 5]), np.array([2, 3, 4])), (np.array([1, 2, 3, 4]), np.array([0, 5])),
             (np.array([0, 2, 3, 4, 5]), np.array([1]))]  # fmt: skip
    languages = ["de", "de", "el", "el", "de", "el"]
    scripts = ["Latn", "Latn", "Grek", "Grek", "Latn", "Grek"]
    by, by_script = support_by_language(sims, None, labels, folds, languages, scripts, 2)
    # Cutoffs, leave-one-out: German rows 0, 1 → 0.7 each; Greek rows 2, 3 → 0.8 each.
    assert by_script == {"Grek": pytest.approx(0.8), "Latn": pytest.approx(0.7)}
    # German held out: fold 2's cutoff is row 1 against rows 2-4 (0.1); row 0 against rows
    # 1-4 is 0.7, inside. Fold 3's is row 0 against rows 2-5 (0.1); row 1 against them and
    # row 0 is 0.7, inside. 0 of 2, measured.
    assert by["de"]["held_out_fpr"] == 0.0
    # Greek: both rows are held out in fold 1, whose training rows (0, 1, 5) have no measured
    # Greek row to set a cutoff; no other fold holds one out. Nothing measured: no rate (the
    # code reported 0.0, "held-out false-positive rate 0.0%", for 0 of 0).
    assert by["el"]["basis"] == "own" and by["el"]["cutoff"] == pytest.approx(0.8)
    assert by["el"]["held_out_fpr"] is None
    lines = support_by_language_text({"by_language": by})
    assert lines[1] == ("el: below 0.800 (the Grek cutoff; 2 answerable gold questions), held-out "
                        "false-positive rate not measured (no fold held out one of its rows with "
                        "a training row of its script)")  # fmt: skip


def test_a_language_with_only_unanswerable_rows_says_its_rate_is_not_measured() -> None:
    # Rows 0-2 German answerable (support 0.6 each: 0-1, 1-2, 0-2 pairs), row 3 English
    # unanswerable only: English is judged by the Latin cutoff but has no answerable row to
    # measure a false-positive rate on (the text said "..., 0), false-positive rate not
    # measured on them").
    sims = np.full((4, 4), 0.1)
    np.fill_diagonal(sims, 1.0)
    for i, j in ((0, 1), (1, 2), (0, 2)):
        sims[i, j] = sims[j, i] = 0.6
    labels = np.array([True, True, True, False])
    folds = [(np.array([0, 1, 3]), np.array([2])), (np.array([1, 2]), np.array([0, 3])),
             (np.array([0, 2, 3]), np.array([1]))]  # fmt: skip
    by, _ = support_by_language(sims, None, labels, folds, ["de", "de", "de", "en"],
                                ["Latn"] * 4, 2)  # fmt: skip
    assert by["en"]["basis"] == "script Latn" and by["en"]["cutoff"] == pytest.approx(0.6)
    assert by["en"]["held_out_fpr"] is None and by["en"]["n_answerable"] == 0
    lines = support_by_language_text({"by_language": by})
    assert lines[1] == ("en: below 0.600 (the Latn cutoff; too few answerable gold questions to "
                        "set it, 0), false-positive rate not measured (no answerable gold "
                        "question)")  # fmt: skip


def test_the_html_report_lists_each_language_its_counts_and_the_limit() -> None:
    from service.html.rates import _both_directions

    support = {"cutoff": 0.163, "held_out_fpr": 1 / 37, "n_answerable": 37, "min_rows": 10,
               "by_language": {
                   "de": {"cutoff": 0.285, "basis": "own", "script": "Latn",
                          "held_out_fpr": 2 / 28, "n_answerable": 28},
                   "hi": {"cutoff": None, "basis": "not judged", "script": "Deva",
                          "held_out_fpr": None, "n_answerable": 1}}}  # fmt: skip
    analytics = {"refusals": {"answers": 3, "refused": 0},
                 "out_of_scope": {"scored": 3, "out_of_scope": 1, "off_corpus": 1,
                                  "over_refusals": 0, "under_refusals": 1, "support": support,
                                  "off_corpus_by_language": {"de": 1},
                                  "not_judged_by_language": {"hi": 1, "ta": 1,
                                                             "ru": 2}}}  # fmt: skip
    html = str(_both_directions(analytics))
    assert (
        "off-corpus rule, language de: off-corpus 1, not judged 0</td><td>below 0.285 (the Latn "
        "cutoff; 28 answerable gold questions), held-out false-positive rate 7.1%"
    ) in html
    assert (
        "hi: off-corpus 0, not judged 1</td><td>not judged by the off-corpus rule (1 "
        "answerable gold question, no language of its script has enough)"
    ) in html
    assert "off-corpus rule, language hi: off-corpus 0, not judged 1" in html
    # live languages the gold set lacks, one after the other ("; ": each has two counts)
    assert "ru: off-corpus 0, not judged 2; ta: off-corpus 0, not judged 1" in html
    assert "measured on the gold set&#39;s languages (de, hi)" in html or (
        "measured on the gold set&#x27;s languages (de, hi)" in html
    )
    assert "support similarity below 0.163" not in html  # the pooled cutoff is not applied


def test_an_undetermined_live_question_is_judged_by_its_own_script() -> None:
    # Gold: English (Latin, measured: cutoff 0.3) and rows the detector could not name, "und",
    # written in Latin. Live questions labelled "und" are in any script: each is judged by its
    # own script's cutoff, Latin 0.3, and a Cyrillic or letterless one by none (-inf): no
    # Cyrillic gold row was measured (before: every "und" question got the "und" gold rows'
    # Latin cutoff, the cross-script transfer the rule is there to avoid).
    support = types.SimpleNamespace(
        by_language={
            "en": {"cutoff": 0.3, "basis": "own", "script": "Latn"},
            "und": {"cutoff": 0.3, "basis": "script Latn", "script": "Latn"},
        },
        by_script={"Latn": 0.3},
    )
    detector = types.SimpleNamespace(support=support)
    asked = ["where is my card", "где моя карта", "2024?", "где моя карта"]
    found = EmbeddingScope.cutoffs(detector, asked, ["und", "und", "und", "en"])  # type: ignore[arg-type]
    # The last: labelled English by the language stage, judged by English's script.
    assert found.tolist() == [0.3, -np.inf, -np.inf, 0.3]
    # No labels at all (score_support without languages): each question's own script.
    assert EmbeddingScope.cutoffs(detector, asked[:3]).tolist() == [0.3, -np.inf, -np.inf]  # type: ignore[arg-type]


def test_totals_kept_before_the_counts_by_language_say_what_no_language_holds() -> None:
    from service.html.rates import _both_directions
    from service.refusals.scope import live_by_language_text

    # Totals of a serve run before this change: 700 off-corpus, no counts by language.
    totals = AnnotationTotals()
    totals.restore({"flags": {"off_corpus": 700, "out_of_scope": 900, "scope_scored": 2000},
                    "pii": {}})  # fmt: skip
    english = {"out_of_scope": True, "off_corpus": True, "off_corpus_judged": True,
               "language": "en-GB"}  # fmt: skip
    hindi = {"out_of_scope": False, "off_corpus": False, "off_corpus_judged": False,
             "language": "hi"}  # fmt: skip
    notes = [english] * 3 + [hindi]
    totals.process(types.SimpleNamespace(events=[None] * 4, annotations=notes))  # type: ignore[arg-type]
    assert totals.flags["off_corpus"] == 703
    scope = {"off_corpus": totals.flags["off_corpus"],
             "off_corpus_by_language": dict(totals.by_language["off_corpus"]),
             "not_judged_by_language": dict(totals.by_language["not_judged"])}  # fmt: skip
    # 703 off-corpus: 3 English since the restart, 700 before; the line adds up to 703.
    assert live_by_language_text(scope) == (
        "live off-corpus by language: en 3, 700 counted before the counts by language were "
        "kept; not judged by the off-corpus rule: hi 1"
    )
    support = {"cutoff": 0.2, "held_out_fpr": 0.0, "n_answerable": 12, "min_rows": 10,
               "by_language": {"en": {"cutoff": 0.2, "basis": "own", "script": "Latn",
                                      "held_out_fpr": 0.0, "n_answerable": 12}}}  # fmt: skip
    analytics = {"refusals": {"answers": 0, "refused": 0},
                 "out_of_scope": {"scored": 2004, "out_of_scope": 903, "over_refusals": 0,
                                  "under_refusals": 0, "support": support, **scope}}  # fmt: skip
    html = str(_both_directions(analytics))
    assert "off-corpus rule, language en: off-corpus 3, not judged 0" in html
    assert "off-corpus, counted before the counts by language were kept</td><td>700" in html
    assert "than any answerable gold question of their script&#39;s measured languages" in html or (
        "than any answerable gold question of their script&#x27;s measured languages" in html
    )


def test_a_row_of_another_script_sets_no_cutoff_of_its_languages_script() -> None:
    # min_rows 3. Rows 0-2: answerable, Latin, left "und" by the detector (no language
    # field); row 3: answerable, Devanagari, also "und"; row 4: English unanswerable. No
    # corpus; cosines 0.1 but 0-1 0.6, 1-2 0.5, 0-2 0.4, and row 3 0.05 to everything.
    sims = np.full((5, 5), 0.1)
    np.fill_diagonal(sims, 1.0)
    for (i, j), value in {(0, 1): 0.6, (1, 2): 0.5, (0, 2): 0.4}.items():
        sims[i, j] = sims[j, i] = value
    sims[3, :3] = sims[:3, 3] = sims[3, 4] = sims[4, 3] = 0.05
    labels = np.array([True, True, True, True, False])
    folds = [(np.setdiff1d(np.arange(5), [i]), np.array([i])) for i in range(5)]
    by, by_script = support_by_language(sims, None, labels, folds, ["und"] * 4 + ["en"],
                                        ["Latn", "Latn", "Latn", "Deva", "Latn"], 3)  # fmt: skip
    # "und" is written in Latin by most of its rows. Its three Latin rows set the Latin
    # cutoff: least of 0.6 (row 0: row 1), 0.6 (row 1: row 0), 0.5 (row 2: row 1) = 0.5.
    # Counting the Devanagari row (support 0.05) would make it 0.05: one row of another
    # script moving the cutoff for every Latin question (trial 6's bug).
    assert by_script == {"Latn": pytest.approx(0.5)}
    assert by["und"]["basis"] == "own" and by["und"]["n_answerable"] == 4
    # Held out (leave-one-out folds), answerable und rows: row 0 → training cutoff 0.5 (rows
    # 1, 2), support 0.6: in; row 1 → cutoff 0.4 (rows 0, 2), 0.6: in; row 2 → cutoff 0.6
    # (rows 0, 1), 0.5: out; row 3 → cutoff 0.5, support 0.05: out. 2 of 4.
    assert by["und"]["held_out_fpr"] == pytest.approx(0.5)


def test_a_one_language_gold_set_is_judged_as_by_the_pooled_rule() -> None:
    from sklearn.model_selection import StratifiedKFold

    # 40 rows of one language and script, 30 answerable, random unit vectors and corpus
    # similarities: the per-language cutoff and held-out rate are the pooled rule's, the
    # same folds (every answerable row sets the one cutoff and is held out once).
    rng = np.random.default_rng(5)  # (a seed whose rates are not 0: 2 of 30 both ways)
    vectors = rng.normal(size=(40, 8))
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    sims = vectors @ vectors.T
    corpus = rng.uniform(0.0, 0.6, size=40)
    labels = np.arange(40) < 30
    folds = list(StratifiedKFold(5, shuffle=True, random_state=0).split(sims, labels))
    for near in (corpus, None):
        pooled = calibrate_support(sims, near, labels, folds)
        by, by_script = support_by_language(sims, near, labels, folds, ["en"] * 40,
                                            ["Latn"] * 40, 10)  # fmt: skip
        assert by_script == {"Latn": pooled.cutoff}
        assert by["en"]["held_out_fpr"] == pooled.held_out_fpr
        assert (by["en"]["n_answerable"], by["en"]["n_unanswerable"]) == (30, 10)
        assert pooled.held_out_fpr > 0  # a case where the rate measures something


def test_a_language_whose_questions_have_no_script_says_so() -> None:
    # 12 answerable rows labelled "xx" with no letter of a known script (numbers, symbols):
    # enough rows, but no script to set a cutoff for; and 10 Latin English rows.
    sims = np.full((23, 23), 0.2)
    np.fill_diagonal(sims, 1.0)
    labels = np.array([True] * 22 + [False])
    folds = [(np.setdiff1d(np.arange(23), [i]), np.array([i])) for i in range(23)]
    by, _ = support_by_language(sims, None, labels, folds, ["xx"] * 12 + ["en"] * 11,
                                [None] * 12 + ["Latn"] * 11, 10)  # fmt: skip
    assert by["xx"]["cutoff"] is None and by["xx"]["script"] is None
    assert support_by_language_text({"by_language": by})[1] == (
        "xx: not judged by the off-corpus rule (12 answerable gold questions, its questions have "
        "no letters of a known script)"
    )  # (it said "no language of its script has enough": it has 12, and no script)


def test_cutoffs_once_per_label_are_the_per_question_rule() -> None:
    # EmbeddingScope.cutoffs finds a named language's cutoff once per distinct label of a
    # call (session 39): the same values as the rule applied question by question (the
    # loop it replaced, below), for repeated, regional, unknown, empty and missing labels.
    from service.language.gold import gold_keys_by_label
    from service.language.scripts import dominant_script
    from service.language.tags import language_key

    by_language = {
        "en": {"cutoff": 0.3, "basis": "own", "script": "Latn"},
        "hi": {"cutoff": 0.5, "basis": "own", "script": "Deva"},
        "zh-Hans": {"cutoff": 0.4, "basis": "own", "script": "Hans"},
        "es": {"cutoff": 0.2, "basis": "own", "script": "Cyrl"},
        "und": {"cutoff": 0.3, "basis": "script Latn", "script": "Latn"},
    }
    support = types.SimpleNamespace(by_language=by_language,
                                    by_script={"Latn": 0.3, "Deva": 0.5, "Hans": 0.4})  # fmt: skip
    detector = types.SimpleNamespace(support=support)
    asked = ["where is my card", "मेरा कार्ड कहाँ है", "我的卡在哪里", "где моя карта", "2024?"]
    labels = ["en", "en-GB", "hi", "zh", "zh-Hans", "es", "fr", "und", "", None, "x-klingon"]
    questions = [q for q in asked for _ in labels]
    languages = labels * len(asked)

    def per_question(languages: list[str | None] | None) -> list[float]:
        keys_of, by_script = gold_keys_by_label(by_language), support.by_script
        out = np.full(len(questions), -np.inf)
        for i, question in enumerate(questions):
            key = "und" if languages is None else language_key(languages[i] or "und")
            if key != "und":
                found = [by_script[script] for gold_key in keys_of.get(key, ())
                         if (script := by_language[gold_key]["script"]) in by_script]  # fmt: skip
                if found:
                    out[i] = min(found)
            elif (script := dominant_script(question)) in by_script:
                out[i] = by_script[script]
        return out.tolist()

    for given in (languages, None):
        found = EmbeddingScope.cutoffs(detector, questions, given)  # type: ignore[arg-type]
        assert found.tolist() == per_question(given)
    assert len(set(per_question(languages))) > 2  # the labels meet several cutoffs
