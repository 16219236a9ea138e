"""Languages the language candidates leave out: named, and the questions in them counted.

``analytics.language.candidates: [en, de]`` makes a Spanish question ``en`` or ``und``
without a word. :attr:`LanguageDetector.excluded` names what such candidates leave out,
:meth:`LanguageDetector.excluded_language` tells a question that reads as one of those
languages. The expected values are worked out apart from the code under test: from the
script table by hand, by the construction of the logs (which positions hold Spanish
questions), and with seeded plain langdetect over all its 55 profiles.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from benchmarks.datasets import load_xquad
from service.language.detector import (
    DEFAULT_CANDIDATES,
    HINGLISH,
    LanguageConfig,
    LanguageDetector,
)
from service.language.hinglish import is_hinglish
from service.language.scripts import SCRIPT_LANGUAGES
from service.language.stage import LanguageStage
from service.pipeline import Batch
from service.text import normalise

EN_DE = LanguageConfig(candidates=("en", "de"), preferred=("en", "de"))


def _plain(texts: list[str]) -> list[str]:
    """Seeded plain langdetect (all 55 profiles), ``zh-*`` as ``zh``, no features ``und``."""
    module = pytest.importorskip("langdetect_rs")
    module.DetectorFactory.seed = 0
    out = []
    for text in texts:
        try:
            label = str(module.detect(text))
        except Exception:  # LangDetectException: no features in text
            label = "und"
        out.append("zh" if label.startswith("zh") else label)
    return out


@pytest.fixture(scope="module")
def xquad(shared_data: Path) -> dict[str, list[str]]:
    return {lang: [q for _, q, _ in load_xquad(lang, root=shared_data)[1]]
            for lang in ("en", "es", "hi")}  # fmt: skip


@pytest.fixture(scope="module")
def nq_open(shared_data: Path) -> list[str]:
    with (shared_data / "nq-open" / "NQ-open.dev.jsonl").open(encoding="utf-8") as handle:
        return [json.loads(line)["question"] for line in handle]


def spanish_log(xquad: dict[str, list[str]]) -> list[str]:
    """100 questions: four English XQuAD questions, then a Spanish one, 20 times; the
    Spanish ones are at positions 4, 9, ..., 99."""
    en, es = xquad["en"], xquad["es"]
    return [q for i in range(20) for q in (*en[4 * i : 4 * i + 4], es[i])]


SPANISH_AT = set(range(4, 100, 5))


def test_default_candidates_leave_nothing_out_and_build_nothing() -> None:
    detector = LanguageDetector()
    assert detector.excluded == ()
    assert detector._reference is None  # no second detector, nothing to run
    assert detector.excluded_language("¿Cuántos puntos ganó el equipo?", "es") is None
    wider = LanguageDetector(LanguageConfig(candidates=(*DEFAULT_CANDIDATES, "tl", "sw")))
    assert wider.excluded == ()


def test_narrowed_candidates_name_the_languages_they_leave_out() -> None:
    """By hand from the script table: ``[en, de]`` leaves out the defaults' other Latin-script
    languages and romanized Hindi; Cyrillic, Arabic and Devanagari have no candidate, so
    they keep all their languages (Hindi stays ``hi``) and leave none out."""
    latin = [lang for lang in SCRIPT_LANGUAGES["Latn"] if lang in DEFAULT_CANDIDATES]
    detector = LanguageDetector(EN_DE)
    assert sorted(detector.excluded) == sorted({*latin, HINGLISH} - {"en", "de"})
    assert len(detector.excluded) == 19
    assert detector.detect("भारत की राजधानी क्या है?") == "hi"
    # one Cyrillic candidate makes every Cyrillic question that one: ru and bg left out
    assert {"ru", "bg"} <= set(LanguageDetector(LanguageConfig(candidates=("en", "uk"))).excluded)
    only_ru = LanguageDetector(LanguageConfig(candidates=("ru",)))
    assert only_ru.excluded == ("bg", HINGLISH, "uk")  # no Latin candidate: Latin is open


def test_a_log_of_100_questions_with_20_spanish_ones_has_20_excluded(
    xquad: dict[str, list[str]],
) -> None:
    """Candidates ``[en, de]`` (a gold set in English and German): the 20 Spanish questions
    are labelled en, de or und, and exactly they read as a left-out language, Spanish —
    as seeded plain langdetect, over all its languages, says of the same 100 questions."""
    questions = spanish_log(xquad)
    detector = LanguageDetector(EN_DE)
    labels = detector.detect_many(questions)
    plain = _plain(questions)
    assert {i for i, lang in enumerate(plain) if lang in detector.excluded} == SPANISH_AT
    assert {plain[i] for i in SPANISH_AT} == {"es"}
    found = [detector.excluded_language(q, label)
             for q, label in zip(questions, labels, strict=True)]  # fmt: skip
    assert {i for i, lang in enumerate(found) if lang is not None} == SPANISH_AT
    assert {found[i] for i in SPANISH_AT} == {"es"}
    assert {labels[i] for i in SPANISH_AT} <= {"en", "de", "und"}  # what the count exposes


def test_romanized_hindi_reads_as_hinglish_when_it_is_left_out(shared_data: Path) -> None:
    """Hinglish-TOP: 50 Hinglish and 50 English queries with candidates ``[en, de]``; the
    questions counted as ``hi-Latn`` are the ASCII ones the Hinglish lexicon calls Hinglish
    (``is_hinglish``, the lexicon check alone), most of the 50."""
    with (shared_data / "hinglish-top" / "test.tsv").open(encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle, delimiter="\t"))[:50]
    questions = [r["cs_query"] for r in rows] + [r["en_query"] for r in rows]
    detector = LanguageDetector(EN_DE)
    found = [detector.excluded_language(q, detector.detect(q)) for q in questions]
    lexicon = [i for i, q in enumerate(questions) if q.isascii() and is_hinglish(q)]
    assert [i for i, lang in enumerate(found) if lang == HINGLISH] == lexicon
    assert len([i for i in lexicon if i < 50]) >= 45


def test_real_traffic_figures(xquad: dict[str, list[str]], nq_open: list[str]) -> None:
    """All 1,190 XQuAD Spanish questions read as Spanish under ``[en, de]``; XQuAD Hindi
    (Devanagari: no candidate writes it) keeps ``hi`` and none is counted; NQ-open's 3,610
    English questions under an English-only site (``[en]``) give almost none (measured 5,
    all ``hi-Latn``: four quote Hindi film or serial titles, "tiger zinda hai", and one is
    "what is mercy mercy me by marvin gaye about")."""
    detector = LanguageDetector(EN_DE)
    spanish = [detector.excluded_language(q, detector.detect(q)) for q in xquad["es"]]
    assert spanish.count("es") == len(xquad["es"]) == 1190
    hindi = [(detector.detect(q), detector.excluded_language(q, detector.detect(q)))
             for q in xquad["hi"]]  # fmt: skip
    assert all(found is None for _, found in hindi)
    assert sum(label == "hi" for label, _ in hindi) >= 1180
    english = LanguageDetector(LanguageConfig(candidates=("en",), preferred=("en",)))
    found = [english.excluded_language(q, english.detect(q)) for q in nq_open]
    assert sum(f is not None for f in found) <= 0.005 * len(nq_open)


def test_the_reference_runs_only_on_low_confidence_text(xquad: dict[str, list[str]]) -> None:
    """The cheap skip: a label that leads its text's own function words and cues among all
    the default Latin-script languages needs no second opinion. Measured: the reference
    ran on 11 of XQuAD's 1,190 English questions (0.9 %), on every Spanish one."""
    detector = LanguageDetector(EN_DE)
    reference = detector._reference
    assert reference is not None
    ran: list[str] = []
    detect = reference.detect

    def counting(text: str, prior: tuple[str, ...] = ()) -> str:
        ran.append(text)
        return detect(text, prior)

    reference.detect = counting  # type: ignore[method-assign]
    for q in xquad["en"]:
        detector.excluded_language(q, detector.detect(q))
    assert len(ran) <= 0.02 * len(xquad["en"])
    ran.clear()
    spanish = xquad["es"][:100]
    for q in spanish:
        detector.excluded_language(q, detector.detect(q))
    # each once, normalised as the detector caches it (one question is asked twice)
    assert sorted(ran) == sorted({normalise(q, fold="nfc", separators="whitespace")
                                  for q in spanish})  # fmt: skip


def _process(stage: LanguageStage, questions: list[str]) -> Batch:
    batch = Batch.of([SimpleNamespace(event_id=f"e-{i}", question=q)  # type: ignore[misc]
                      for i, q in enumerate(questions)], source="file")  # fmt: skip
    stage.process(batch)
    return batch


@pytest.mark.parametrize("preferred", [("en", "de"), ()], ids=["gold set", "no gold set"])
def test_the_stage_counts_the_20_spanish_questions_of_100(
    xquad: dict[str, list[str]], preferred: tuple[str, ...]
) -> None:
    """The same log through the language stage, with and without expected languages: 100
    judged, 20 Spanish (by construction), annotated where they are, kept with the state."""
    config = LanguageConfig(candidates=("en", "de"), preferred=preferred)
    stage = LanguageStage(LanguageDetector(config))
    batch = _process(stage, spanish_log(xquad))
    marked = {i for i, notes in enumerate(batch.annotations) if "language_excluded" in notes}
    assert marked == SPANISH_AT
    assert {batch.annotations[i]["language_excluded"] for i in marked} == {"es"}
    assert (stage.judged, dict(stage.excluded)) == (100, {"es": 20})
    assert stage.excluded_counts() == (100, {"es": 20})
    assert stage.take_pending() == {"es": 20} and stage.take_pending() == {}
    state = stage.state_snapshot()
    assert state["excluded"] == {"candidates": ["en", "de"], "judged": 100,
                                 "by_language": {"es": 20}}  # fmt: skip
    restarted = LanguageStage(LanguageDetector(config))
    restarted.restore(json.loads(json.dumps(state)))
    assert restarted.excluded_counts() == (100, {"es": 20})
    _process(restarted, spanish_log(xquad)[:5])  # one more Spanish question
    assert restarted.excluded_counts() == (105, {"es": 21})


def test_counts_start_afresh_under_other_candidates(xquad: dict[str, list[str]]) -> None:
    """Counts kept under ``[en, de]`` say nothing about ``[en, de, es]`` (a restart with
    Spanish added, or a gold-set refresh adding it): they are dropped, not reported."""
    stage = LanguageStage(LanguageDetector(EN_DE))
    _process(stage, spanish_log(xquad))
    state = stage.state_snapshot()
    wider = LanguageConfig(candidates=("en", "de", "es"), preferred=("en", "de", "es"))
    restarted = LanguageStage(LanguageDetector(wider))
    restarted.restore(state)
    assert restarted.excluded_counts() == (0, {})
    assert "excluded" not in restarted.state_snapshot()
    stage.detector = LanguageDetector(wider)  # a gold-set refresh swaps the detector in
    assert stage.excluded_counts() == (0, {})  # before the next batch too
    _process(stage, spanish_log(xquad))
    assert stage.excluded_counts() == (100, {})
    restarted.restore({"supported": {}, "excluded": "garbage"})  # a malformed state: none
    assert restarted.excluded_counts() == (0, {})


def test_default_candidates_cost_the_stage_nothing(
    nq_open: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the default candidates the stage never asks for a left-out language: the check
    raising would fail the batch. No annotation, no count, no state."""

    def never(self: LanguageDetector, text: str, label: str) -> str | None:
        raise AssertionError("asked with the default candidates")

    monkeypatch.setattr(LanguageDetector, "excluded_language", never)
    for config in (LanguageConfig(), LanguageConfig(preferred=("en",))):
        stage = LanguageStage(LanguageDetector(config))
        batch = _process(stage, nq_open[:500])
        assert not any("language_excluded" in notes for notes in batch.annotations)
        assert stage.excluded_counts() == (0, {}) and stage.judged == 0
        assert "excluded" not in stage.state_snapshot()
