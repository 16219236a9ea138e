"""One gold-row language rule for the topic stage and the out-of-scope detector (review of
session 35).

The topic stage learnt two things the out-of-scope rule had not: gold rows tagged with a script
the language stage never gives (``zh-Hans``, ``en-Latn``) judge the label it gives those
questions (``zh``, ``en``), and a question read as a left-out language (``language_excluded``,
narrowed candidates) is in that language, not in the candidate it was labelled. Before, the
out-of-scope rule kept its own copy: an ``en-Latn``-tagged gold set gave none of the live
English questions a verdict, a live ``zh`` question got no cutoff from ``zh-Hans`` rows, and
a German question labelled ``en`` under candidates ``[en]`` was judged as English.
"""

from __future__ import annotations

import types

import numpy as np
import pytest

from service.language.gold import gold_keys_by_label, gold_language_keys, lacks_gold
from service.pipeline.totals import AnnotationTotals
from service.refusals.scope import EmbeddingScope
from service.refusals.stage import EmbeddingScopeStage
from service.topics.stage import TopicStage
from tests.service.test_scope_embedding import TableEmbedder, _events
from tests.service.test_scope_support import BANKING
from tests.service.test_scope_support_language import _with_a_far_hindi_row
from tests.service.topics.test_unjudged_languages import SpyModel


def _detector(english_tag: str) -> EmbeddingScope:
    """test_scope_support_language's detector (12 answerable English news rows with their own
    Latin cutoff, 1 Hindi row), its English rows tagged ``english_tag``."""
    table, passages, gold = _with_a_far_hindi_row()
    languages = [q.language or english_tag for q in gold]
    return EmbeddingScope(TableEmbedder(table), gold, passages, n_boot=0, languages=languages,
                          min_rows=10)  # fmt: skip


def test_the_fold_keeps_each_gold_key_and_adds_the_label_of_a_script_never_given() -> None:
    assert gold_keys_by_label(["zh-Hans", "zh-Hant", "en-US", "und"]) == {
        "zh-Hans": ("zh-Hans",), "zh-Hant": ("zh-Hant",), "en": ("en",),
        "zh": ("zh-Hans", "zh-Hant"),
    }  # fmt: skip
    # a gold "zh" row judges live zh itself; hi-Latn is a label: no fold to hi
    assert gold_keys_by_label(["zh", "zh-Hans", "hi-Latn"])["zh"] == ("zh",)
    assert "hi" not in gold_language_keys(["hi-Latn"])
    assert lacks_gold("zh-CN", gold_language_keys(["zh-Hans"])) is False


def test_gold_rows_tagged_en_latn_judge_the_live_english_questions() -> None:
    det = _detector("en-Latn")
    english = det.support.by_language["en-Latn"]
    assert english["basis"] == "own" and english["n_answerable"] == 12
    # Before: {"en-Latn", "hi"}, and every live "en" question had no gold rows.
    assert det.gold_languages() == {"en", "en-Latn", "hi"}
    # The live label's cutoff is the en-Latn rows' script's (before: -inf, not judged).
    assert det.cutoffs(["banking 0"], ["en"])[0] == pytest.approx(english["cutoff"])
    notes: list[dict[str, object]] = [{"refused": False, "language": "en"} for _ in BANKING]
    batch = types.SimpleNamespace(events=_events(BANKING), annotations=notes)
    EmbeddingScopeStage(det).process(batch)
    # The banking questions are off-corpus (support 0.4 < the news rows' cutoff, as with the
    # rows tagged "en"); before: no verdict, scope_unjudged_language.
    assert [n["out_of_scope"] for n in notes] == [True] * 4
    assert [n["off_corpus"] for n in notes] == [True] * 4
    assert not any("scope_unjudged_language" in n for n in notes)


def test_a_live_zh_question_gets_the_cutoff_of_the_zh_hans_rows_script() -> None:
    # Hand-made rule: English rows (Latin, cutoff 0.3), zh-Hans rows (Han, cutoff 0.25),
    # zh-Hant rows (Han too; a script's cutoff is the least of its languages', 0.25).
    support = types.SimpleNamespace(
        by_language={
            "en": {"cutoff": 0.3, "basis": "own", "script": "Latn"},
            "zh-Hans": {"cutoff": 0.25, "basis": "own", "script": "Hani"},
        },
        by_script={"Latn": 0.3, "Hani": 0.25},
    )
    detector = types.SimpleNamespace(support=support)
    asked = ["我的卡在哪里", "我的卡在哪里", "where is my card", "où est ma carte"]
    found = EmbeddingScope.cutoffs(detector, asked, ["zh", "zh-Hans", "en", "fr"])  # type: ignore[arg-type]
    # Before: [-inf, 0.25, 0.3, -inf] — zh, the label the language stage gives Chinese, was
    # a language the gold set lacked.
    assert found.tolist() == [0.25, 0.25, 0.3, -np.inf]
    assert EmbeddingScope.gold_languages(detector) == {"en", "zh", "zh-Hans"}  # type: ignore[arg-type]


def test_a_question_read_as_a_left_out_language_is_judged_in_that_language() -> None:
    det = _detector("en")
    # "banking 0" labelled en (candidates [en]) but read as French: no French gold row.
    asked = ["banking 0", "banking 1"]
    notes: list[dict[str, object]] = [
        {"refused": False, "language": "en", "language_excluded": "fr"},
        {"refused": False, "language": "en"},
    ]
    batch = types.SimpleNamespace(events=_events(asked), annotations=notes)
    EmbeddingScopeStage(det).process(batch)
    french, english = notes
    # Before: judged as English — off-corpus by the English cutoff, out of scope.
    assert french["out_of_scope"] is None and french["scope_unjudged_language"] is True
    assert (french["off_corpus"], french["off_corpus_judged"]) == (False, None)
    assert english["out_of_scope"] is True and english["off_corpus"] is True
    totals = AnnotationTotals()
    totals.process(batch)  # type: ignore[arg-type]
    # counted under the language it was judged in (before: none, the event had a verdict)
    assert totals.by_language["no_gold_rows"] == {"fr": 1}
    assert totals.by_language["off_corpus"] == {"en": 1}


def test_the_topic_and_scope_rules_leave_out_the_same_questions() -> None:
    det = _detector("en-Latn")  # gold rows: en-Latn (12 answerable), hi (1), en-Latn (unans.)
    # the topic stage's gold languages, as the analytics builds them from the same tags
    topic = TopicStage(SpyModel(), gold_languages=gold_language_keys(["en-Latn", "hi-IN"]))  # type: ignore[arg-type]
    asked = ["banking 0", "banking 1", "banking 2", "banking 3", "हिंदी में दूसरा प्रश्न"]
    labels: list[dict[str, object]] = [
        {"language": "en"},  # judged by the en-Latn rows
        {"language": "en", "language_excluded": "de"},  # read as German: no gold row
        {"language": "fr"},  # no gold row
        {"language": "und"},  # no language: judged
        {"language": "hi"},  # judged by the hi row
    ]
    notes = [{"refused": False, **n} for n in labels]
    EmbeddingScopeStage(det).process(types.SimpleNamespace(events=_events(asked),
                                                           annotations=notes))  # fmt: skip
    scope = [n.get("scope_unjudged_language") is True for n in notes]
    assert scope == [False, True, True, False, False]
    assert topic.unjudged([dict(n) for n in labels]) == scope


def test_the_reports_name_the_live_language_the_script_tagged_rows_judge() -> None:
    """A review of session 36: once ``en-Latn`` rows judged the live English questions, their
    off-corpus counts (kept under the live key, ``en``) were listed by the HTML report as
    "languages not in the gold set: en: off-corpus 54", next to "language en-Latn: off-corpus
    0", and the limit line said a question in another language than (de, en-Latn) is not
    judged. The XQuAD replay's figures: 54 English and 33 German questions off-corpus, 2
    Hindi not judged (Hindi is the only live language without gold rows)."""
    from service.html.rates import _both_directions
    from service.refusals.scope import support_by_language_text

    row = {"cutoff": 0.233, "basis": "own", "script": "Latn", "held_out_fpr": 0.0}
    support = {"cutoff": 0.2, "held_out_fpr": 0.0, "n_answerable": 72, "min_rows": 10,
               "by_language": {"de": {**row, "n_answerable": 12},
                               "en-Latn": {**row, "n_answerable": 60}}}  # fmt: skip
    analytics = {"refusals": {"answers": 0, "refused": 0},
                 "out_of_scope": {"scored": 1620, "out_of_scope": 191, "off_corpus": 87,
                                  "over_refusals": 0, "under_refusals": 191, "support": support,
                                  "off_corpus_by_language": {"en": 54, "de": 33},
                                  "not_judged_by_language": {"hi": 2}}}  # fmt: skip
    html = str(_both_directions(analytics))
    # the gold rows' own keys as before (no live question is labelled en-Latn)
    assert "off-corpus rule, language en-Latn: off-corpus 0, not judged 0" in html
    assert "off-corpus rule, language de: off-corpus 33, not judged 0" in html
    # live en: judged by the en-Latn rows, not a language the gold set lacks
    assert ("off-corpus rule, live language en (judged by the gold rows of en-Latn): "
            "off-corpus 54, not judged 0") in html  # fmt: skip
    assert "languages not in the gold set</td><td>hi: off-corpus 0, not judged 2<" in html
    assert "en: off-corpus 54" not in html
    limit = support_by_language_text(support)[-1]
    assert limit == (
        "off-corpus rule limit: cutoffs and false-positive rates are measured on the gold "
        "set's languages (de, en-Latn; the en-Latn rows also judge live en, the label the "
        "language stage gives them); a question in another language is not judged, one of no "
        "named language by its script's cutoff or not at all"
    )
