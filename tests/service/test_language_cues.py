"""A long text's character cues count by the share of its words that carry them (trial 9: an
English MultiHop-RAG question quoting the Spanish song title "Si No Estás" was labelled
``es``). Expected labels are the texts' languages as a reader sees them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from service.language.detector import CUE_SHARE_FROM, LanguageDetector, _cue_share


def test_cue_share_by_hand() -> None:
    # under CUE_SHARE_FROM words: whole; 2 of 45 words: 2 / (0.25 × 45) = 0.1778
    assert _cue_share(["qué", "es"]) == 1.0
    assert _cue_share(["niño"] + ["the"] * (CUE_SHARE_FROM - 2)) == 1.0
    assert _cue_share(["iñigo", "estás"] + ["the"] * 43) == pytest.approx(2 / 11.25)
    # a quarter of the words or more carry a cue letter: whole
    assert _cue_share(["más"] * 5 + ["de"] * 15) == 1.0
    # a word counts only with a cue letter (“ is none): 0 words, read as the floor of one
    assert _cue_share(["“the"] + ["the"] * 19) == pytest.approx(1 / 5)


def _multihop(shared_data: Path) -> list[str]:
    queries = json.loads((shared_data / "multihop-rag-sample500" / "queries.json").read_text())
    return [q["question"] for q in queries["queries"] if "Si No Est" in q["question"]]


def _xquad_contexts(shared_data: Path, lang: str, needle: str) -> list[str]:
    data = json.loads((shared_data / "xquad" / f"xquad.{lang}.json").read_text(encoding="utf-8"))
    return sorted({p["context"] for a in data["data"] for p in a["paragraphs"]
                   if needle in p["context"]})  # fmt: skip


def test_english_texts_quoting_foreign_names_read_as_english(shared_data: Path) -> None:
    detector = LanguageDetector()
    quoting = _multihop(shared_data)
    assert len(quoting) == 2  # "reaching" and "failing to reach"
    # XQuAD English paragraphs with Mongolian, Polish names: were de and pl
    paragraphs = [*_xquad_contexts(shared_data, "en", "Temüjin married Börte"),
                  *_xquad_contexts(shared_data, "en", "Ogród Saski")]  # fmt: skip
    assert len(paragraphs) == 2
    assert [detector.detect(text) for text in [*quoting, *paragraphs]] == ["en"] * 4


def test_long_spanish_and_german_texts_keep_their_cues(shared_data: Path) -> None:
    detector = LanguageDetector()
    for lang in ("es", "de"):
        data = json.loads((shared_data / "xquad" / f"xquad.{lang}.json").read_text("utf-8"))
        contexts = [p["context"] for a in data["data"] for p in a["paragraphs"]][:40]
        labels = [detector.detect(text) for text in contexts]
        assert labels.count(lang) == len(contexts), (lang, labels)
