"""Accuracy of the language detector on real data (targets from the language-drift issue).

XQuAD: 1,190 questions in each of 12 languages, whole and cut to their first two
whitespace-separated words; macro accuracy = mean of the 12 per-language accuracies. Weights
and cue lists were tuned on the first half of the questions (0-594), so the second half
(595-1189) is reported and held to the same targets. Plain langdetect (seeded, ``zh-cn`` and
``zh-tw`` counted as ``zh``, its exception as ``und``) is measured in the same run; it runs on
langdetect-rs, which ``test_language_parity.py`` shows to be bit-identical.

Hinglish-TOP: ``cs_query`` (Hinglish) must come out ``hi-Latn`` and ``en_query`` (English) must
not; the lexicon threshold was tuned on ``train.tsv``, the targets apply to ``test.tsv``.
English short questions (issue 18): CLINC150, BANKING77 and NQ-open's first three words
must almost never get a language other than English (``und`` is an abstention, not a false
label), with and without a gold set; ``benchmarks/bench_language_labels.py`` prints the
before/after table. The "default candidates" rows run without a gold set, as the live
pipeline does: through a ``LanguageStage`` whose prior is the live baseline's mix.
Run with ``-s`` to see the per-language tables.
"""

from __future__ import annotations

import csv
import json
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest

from benchmarks.bench_language_labels import (
    GOLD_SETS,
    VARIANTS,
    english_sets,
    false_labels,
    label_with_gold,
    label_without_gold,
)
from benchmarks.datasets import XQUAD_LANGUAGES, load_xquad
from service.language.detector import HINGLISH, LanguageConfig, LanguageDetector

HALF = 595
Labeler = Callable[[list[str]], list[str]]


@pytest.fixture(scope="module")
def xquad(shared_data: Path) -> dict[str, list[str]]:
    return {
        lang: [q for _, q, _ in load_xquad(lang, root=shared_data)[1]] for lang in XQUAD_LANGUAGES
    }


def _plain_langdetect(texts: list[str]) -> list[str]:
    module = pytest.importorskip("langdetect_rs")
    module.DetectorFactory.seed = 0
    out = []
    for text in texts:
        try:
            label = module.detect(text)
        except Exception:  # LangDetectException: no features in text
            label = "und"
        out.append("zh" if label in ("zh-cn", "zh-tw") else label)
    return out


def _ours(candidates: tuple[str, ...] | None) -> Labeler:
    """With ``candidates`` (a gold set's languages): the detector as ``build_analytics``
    makes it, the gold set's languages also the expected ones. Without: no gold set, so the
    questions go through a ``LanguageStage`` whose live baseline mix is the prior."""
    if candidates:
        config = LanguageConfig(cache_size=0, candidates=candidates, preferred=candidates)
        return LanguageDetector(config).detect_many
    return lambda texts: label_without_gold(texts, {"cache_size": 0})


def _accuracy(label: Labeler, xquad: dict[str, list[str]], words: int | None, part: slice):
    """Macro accuracy; the languages' questions are labelled in one interleaved stream."""
    per_lang_texts = {lang: [" ".join(q.split()[:words]) if words else q for q in qs[part]]
                      for lang, qs in xquad.items()}  # fmt: skip
    n = len(next(iter(per_lang_texts.values())))
    stream = [(lang, texts[i]) for i in range(n) for lang, texts in per_lang_texts.items()]
    labels = label([text for _, text in stream])
    hits = dict.fromkeys(per_lang_texts, 0)
    for (lang, _), got in zip(stream, labels, strict=True):
        hits[lang] += got == lang
    per_lang = {lang: hit / n for lang, hit in hits.items()}
    return sum(per_lang.values()) / len(per_lang), per_lang


def _row(name: str, macro: float, per_lang: dict[str, float]) -> str:
    cells = " ".join(f"{lang}:{acc * 100:5.1f}" for lang, acc in per_lang.items())
    return f"{name:<34} macro {macro * 100:5.2f} | {cells}"


@pytest.fixture(scope="module")
def xquad_results(xquad: dict[str, list[str]]) -> dict[tuple[str, str, str], float]:
    labelers = {
        "ours (gold-set candidates)": _ours((*XQUAD_LANGUAGES, HINGLISH)),
        "ours (default candidates)": _ours(None),
        "plain langdetect": _plain_langdetect,
    }
    parts = {"all": slice(None), "tune": slice(0, HALF), "held-out": slice(HALF, None)}
    results = {}
    for name, label in labelers.items():
        for words, mode in ((None, "full"), (2, "two words")):
            for part_name, part in parts.items():
                macro, per_lang = _accuracy(label, xquad, words, part)
                results[(name, mode, part_name)] = macro
                print(_row(f"{name} {mode} {part_name}", macro, per_lang))
    return results


@pytest.mark.slow
@pytest.mark.parametrize("part", ["all", "held-out"])
def test_xquad_targets(xquad_results: dict[tuple[str, str, str], float], part: str) -> None:
    ours = "ours (gold-set candidates)"
    assert xquad_results[(ours, "full", part)] >= 0.995
    assert xquad_results[(ours, "two words", part)] >= 0.90
    assert xquad_results[("ours (default candidates)", "full", part)] >= 0.99
    assert xquad_results[("ours (default candidates)", "two words", part)] >= 0.90


@pytest.mark.slow
def test_xquad_beats_plain_langdetect(xquad_results: dict[tuple[str, str, str], float]) -> None:
    for mode in ("full", "two words"):
        plain = xquad_results[("plain langdetect", mode, "all")]
        assert xquad_results[("ours (gold-set candidates)", mode, "all")] > plain


def _hinglish_rates(path: Path) -> tuple[float, float]:
    with path.open(encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE))
    detect = LanguageDetector(LanguageConfig(cache_size=0)).detect
    cs = sum(detect(row["cs_query"]) == HINGLISH for row in rows) / len(rows)
    en = sum(detect(row["en_query"]) == HINGLISH for row in rows) / len(rows)
    print(f"{path.name}: {len(rows)} rows, cs_query hi-Latn {cs:.2%}, en_query hi-Latn {en:.2%}")
    return cs, en


@pytest.mark.slow
def test_hinglish_top_test_split(shared_data: Path) -> None:
    _hinglish_rates(shared_data / "hinglish-top" / "train.tsv")  # tuning split, reported
    cs, en = _hinglish_rates(shared_data / "hinglish-top" / "test.tsv")
    assert cs >= 0.85
    assert en <= 0.03


@pytest.mark.slow
def test_other_latin_languages_are_not_taken_for_hinglish(xquad: dict[str, list[str]]) -> None:
    detect = LanguageDetector(LanguageConfig(cache_size=0)).detect
    latin = [q for lang in ("de", "en", "es", "ro", "tr", "vi") for q in xquad[lang]]
    false_positives = [q for q in latin if detect(q) == HINGLISH]
    assert len(false_positives) <= len(latin) // 1000, false_positives


@pytest.mark.slow
def test_english_short_questions_get_no_exotic_language(shared_data: Path) -> None:
    """False-label rate (labels other than ``en``/``und``) on 12,190 real English questions,
    at most 0.2 % per set in both setups (with the demo's and the fresh-user trial's gold set:
    63 % English; before the trial's finding 6 the latter gave CLINC150 1.5 % de/es, NQ-open
    0.9 %); before the evidence threshold (``no threshold``) CLINC150 alone had 1.0 % with the
    gold-set prior and 4.1 % without (it, fr, no, ro, ...)."""
    after = VARIANTS["after"]
    for name, texts in english_sets(shared_data).items():
        for gold_name, counts in GOLD_SETS.items():  # the demo's and the trial's gold set
            with_gold = false_labels(label_with_gold(texts, after, counts))
            print(f"{name}: false {with_gold.false:.3%} with the {gold_name} gold set")
            assert with_gold.false <= 0.002, (name, gold_name, with_gold)
        without = false_labels(label_without_gold(texts, after))
        print(f"{name}: false {without.false:.3%} without a gold set")
        assert without.false <= 0.002, (name, without)
        assert without.und <= 0.01, (name, without)  # abstaining is no way out either
    before = false_labels(label_without_gold(english_sets(shared_data)["CLINC150 test+oos"],
                                             VARIANTS["no threshold"]))  # fmt: skip
    assert before.false > 0.03  # the measurement sees the old failure


@pytest.mark.slow
def test_demo_log_gets_only_the_sites_languages() -> None:
    """The demo college bot (gold set: en, hi-Latn, hi) labelled 39 of its 3,000 English and
    Hinglish questions fi, fr, nl, it, pt, da, tr or no; now every label is a gold-set
    language or ``und``, and a question that is only a phone number is ``und`` (it was
    ``en``: detection read the scrubbed ``<PHONE>``)."""
    from service.data.corpus import load_corpus
    from service.data.goldset import load_gold_set
    from service.demo import demo_path
    from service.events import QueryLogEvent
    from service.pipeline import Pipeline
    from service.runtime.analytics import build_analytics
    from service.settings import load_settings

    gold = load_gold_set(demo_path("gold.jsonl"))
    analytics = build_analytics(load_settings(None).analytics, gold,
                                load_corpus(demo_path("corpus.jsonl")))  # fmt: skip
    with demo_path("querylog.jsonl").open("rb") as handle:
        lines = handle.readlines()
    events = [QueryLogEvent.model_validate_json(line) for line in lines]
    row = {**json.loads(lines[0]), "event_id": "phone-only", "question": "+91 98765 43210"}
    phone = QueryLogEvent.model_validate_json(json.dumps(row))
    pipeline = Pipeline(list(analytics.stages))
    labels: list[str] = []
    for start in range(0, len(events), 500):
        labels += [a["language"] for a in pipeline.process(events[start:start + 500],
                                                           "file").annotations]  # fmt: skip
    assert set(labels) <= {"en", "hi-Latn", "hi", "und"}, Counter(labels)
    batch = pipeline.process([phone], "file")
    assert "<PHONE>" in batch.events[0].question  # scrubbed before detection
    assert batch.annotations[0]["language"] == "und"
