""":meth:`LanguageDetector._settled`: langdetect is not run where no winner it could make
changes the answer (label and support flag); where one could, it still runs. The broad
check against the always-langdetect reference, on real questions of every source, is
``tests/service/test_language_skips.py::test_shortcuts_give_the_slow_paths_labels``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from service.language.detector import (
    CONTRADICTED,
    STRONG,
    LanguageConfig,
    LanguageDetector,
)

pytest.importorskip("langdetect_rs")

#: the production-shaped benchmark's gold set: English dominant on Latin script
CONFIG = LanguageConfig(preferred=("en", "es", "hi"), preferred_shares=(377.0, 50.0, 50.0))


class Counting:
    """A backend wrapper counting the langdetect runs."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.name, self.calls = inner, "counting", 0

    def probabilities(self, text: str, restrict: Sequence[str] | None = None) -> dict[str, float]:
        self.calls += 1
        found: dict[str, float] = self.inner.probabilities(text, restrict)
        return found


def counted(settle: bool) -> tuple[LanguageDetector, Counting]:
    detector = LanguageDetector(CONFIG)
    if not settle:
        detector._settled = lambda *args: None
    backend = Counting(detector.backend)
    detector.backend = backend  # type: ignore[assignment]
    return detector, backend


def test_an_answer_no_winner_changes_skips_langdetect() -> None:
    """The question "how do i top up my card", 7 words: the lexicon (weight 3) gives
    ``en`` 3 x (1 + 1/2) / 7 = 0.642857 ("how"; "do" is ``en`` and ``pt``) and ``pt``
    3 x (1/2) / 7 = 0.214286;
    the prior 0.6 goes to ``en`` and ``es``. Evidence: en 1.242857, es 0.6, pt 0.214286 — a
    lead of 0.64 < 1, so langdetect could make ``es`` win (``_decided`` cannot skip it).
    The possible winners are those within 1 of 1.242857: ``en`` and ``es``. ``en`` leads
    its own evidence with two of its function words (strong): ``("en", True)``. ``es`` is
    contradicted (``en`` leads), and ``en`` — two words of its own, none of ``es``'s — is
    its leader, an expected language: ``("en", True)`` too. So no langdetect run."""
    detector, backend = counted(settle=True)
    pool = detector._pools["Latn"]
    words = "how do i top up my card".split()
    own = {"en": 3 * 1.5 / 7, "pt": 3 * 0.5 / 7}
    evidence = {"en": own["en"] + 0.6, "pt": own["pt"], "es": 0.6}
    assert detector._decided(evidence, ([*own.items()], [], [("en", 0.6), ("es", 0.6)]),
                             pool) is None  # fmt: skip
    assert detector._settled("Latn", 19, own, evidence, [], words, pool) == ("en", STRONG, None)
    assert detector._support(19, "es", own, [], words) == CONTRADICTED
    assert detector._leader(CONTRADICTED, "es", own, words) == "en"
    assert detector.detect_with_support("how do i top up my card") == ("en", True)
    assert backend.calls == 0
    reference, ran = counted(settle=False)
    assert reference.detect_with_support("how do i top up my card") == ("en", True)
    assert ran.calls == 1


@pytest.mark.parametrize(
    "question",
    [
        # no function word: an ``en`` winner would be kept only if langdetect is confident
        "lost my debit card",
        # an ``es`` winner would answer ("en", False) (no leader of two words), ``en`` itself
        # ("en", True): the support flag depends on langdetect
        "i need you to phone sal",
    ],
)
def test_langdetect_runs_where_a_winner_could_change_the_answer(question: str) -> None:
    detector, backend = counted(settle=True)
    reference, ran = counted(settle=False)
    assert detector.detect_with_support(question) == reference.detect_with_support(question)
    assert backend.calls >= 1 and backend.calls == ran.calls


def test_not_settled_without_expected_languages_or_a_dominant_one() -> None:
    """The live baseline's prior (no expected languages) is no constant of the text, and a
    script without a dominant language may ask the backend for its prior label."""
    own = {"en": 3 * 1.5 / 7, "pt": 3 * 0.5 / 7}
    evidence = {"en": own["en"] + 0.6, "pt": own["pt"], "es": 0.6}
    words = "how do i top up my card".split()
    for config in (LanguageConfig(), LanguageConfig(preferred=("de", "en", "es"))):
        detector = LanguageDetector(config)
        pool = detector._pools["Latn"]
        assert detector._settled("Latn", 19, own, evidence, [], words, pool) is None


def test_a_label_no_winner_changes_skips_langdetect_when_only_the_label_is_asked() -> None:
    """The question "i need you to phone sal", 6 words: only "to" is a function word
    (``en``): the lexicon gives ``en`` 3 x 1 / 6 = 0.5, the prior 0.6 goes to ``en`` and
    ``es`` (evidence en 1.1, es 0.6; the rest 0 < 1.1 - 1 cannot win). ``en`` as winner
    leads its own evidence with one function word (supported, expected): ``("en", True)``;
    ``es`` is contradicted and has no leader (one word of ``en``'s, two needed), so it
    falls back to the script's dominant language: ``("en", False)``. The label is ``en``
    either way: :meth:`detect` runs no langdetect; :meth:`detect_with_support`, whose flag
    depends on the winner, runs it."""
    detector, backend = counted(settle=True)
    assert detector.detect("i need you to phone sal") == "en"
    assert backend.calls == 0
    assert detector.detect_with_support("i need you to phone sal") == ("en", True)
    assert backend.calls == 1
