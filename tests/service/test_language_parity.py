"""langdetect-rs against langdetect 1.0.9 (the reference) on 2,004 real XQuAD questions.

langdetect-rs claims the same results bit for bit. Checked here on 167 questions of each of the
12 XQuAD languages and on their two-word prefixes: the same top label, and the same
probabilities compared with ``==`` (no tolerance); then goldwatch's detector run on each backend
(which also exercises langdetect's prior-map path) gives the same labels.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.datasets import XQUAD_LANGUAGES, load_xquad
from service.language.detector import LanguageConfig, LanguageDetector

langdetect = pytest.importorskip("langdetect")
langdetect_rs = pytest.importorskip("langdetect_rs")

PER_LANGUAGE = 167  # 12 x 167 = 2,004 questions


@pytest.fixture(scope="module")
def questions(shared_data: Path) -> list[str]:
    out: list[str] = []
    for lang in XQUAD_LANGUAGES:
        out += [q for _, q, _ in load_xquad(lang, root=shared_data)[1][:PER_LANGUAGE]]
    return out


def _probabilities(module: object, text: str) -> list[tuple[str, float]] | None:
    try:
        return [(r.lang, r.prob) for r in module.detect_langs(text)]  # type: ignore[attr-defined]
    except Exception:  # LangDetectException: no features
        return None


@pytest.mark.slow
@pytest.mark.parametrize("prefix_words", [None, 2], ids=["full", "two_words"])
def test_same_labels_and_probabilities_bit_for_bit(
    questions: list[str], prefix_words: int | None
) -> None:
    langdetect.DetectorFactory.seed = 0
    langdetect_rs.DetectorFactory.seed = 0
    texts = [" ".join(q.split()[:prefix_words]) if prefix_words else q for q in questions]
    reference = [_probabilities(langdetect, t) for t in texts]
    port = [_probabilities(langdetect_rs, t) for t in texts]
    label_diffs = [
        (t, r[0][0] if r else None, p[0][0] if p else None)
        for t, r, p in zip(texts, reference, port, strict=True)
        if (r[0][0] if r else None) != (p[0][0] if p else None)
    ]
    prob_diffs = [(t, r, p) for t, r, p in zip(texts, reference, port, strict=True) if r != p]
    assert len(texts) == 2_004
    assert label_diffs == []
    assert prob_diffs == []


@pytest.mark.slow
def test_goldwatch_detector_same_on_both_backends(questions: list[str]) -> None:
    candidates = (*XQUAD_LANGUAGES, "hi-Latn")
    texts = questions + [" ".join(q.split()[:2]) for q in questions]
    labels = {
        backend: LanguageDetector(
            LanguageConfig(backend=backend, candidates=candidates, cache_size=0)
        ).detect_many(texts)
        for backend in ("langdetect", "langdetect-rs")
    }
    diffs = [
        (t, a, b)
        for t, a, b in zip(texts, labels["langdetect"], labels["langdetect-rs"], strict=True)
        if a != b
    ]
    assert diffs == []
