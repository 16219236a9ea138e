"""The language detector's shortcuts against its slow path, on real questions.

:meth:`LanguageDetector._decided` skips langdetect where it proves that langdetect cannot
change the winner (a lead of the text's own evidence of more than 1, or exactly 1 with the
leader first in the pool), and :meth:`LanguageDetector._unrestricted` reuses the last text's
probabilities. The reference below always runs langdetect and never reuses anything: every
label and support flag must be the same, on questions of every source the benchmark mixes
(CLINC150, BANKING77, NQ-open, Hinglish-TOP, XQuAD in several languages) and on their one- to
four-word prefixes (where ties at a lead of exactly 1 are common), under the default
configuration and under a gold set's expected languages with and without a dominant one.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Sequence
from pathlib import Path

import pytest

from benchmarks.datasets import load_xquad
from service.language.detector import LanguageConfig, LanguageDetector

pytest.importorskip("langdetect_rs")

PER_SOURCE = 100


class SlowPath(LanguageDetector):
    """The detector without shortcuts: langdetect runs for every ambiguous text."""

    def _decided(self, evidence, parts, pool):  # type: ignore[no-untyped-def]
        return None

    def _unrestricted(self, text: str) -> dict[str, float]:
        return self.backend.probabilities(text)


class Counting:
    """A backend wrapper counting the langdetect runs."""

    def __init__(self, inner: object) -> None:
        self.inner, self.name, self.calls = inner, "counting", 0

    def probabilities(self, text: str, restrict: Sequence[str] | None = None) -> dict[str, float]:
        self.calls += 1
        return self.inner.probabilities(text, restrict)  # type: ignore[attr-defined]


@pytest.fixture(scope="module")
def texts(shared_data: Path) -> list[str]:
    clinc = json.loads((shared_data / "clinc150" / "data_full.json").read_text("utf-8"))
    with (shared_data / "banking77" / "test.csv").open(encoding="utf-8", newline="") as f:
        banking = [row["text"] for row in csv.DictReader(f)]
    with (shared_data / "hinglish-top" / "test.tsv").open(encoding="utf-8", newline="") as f:
        rows = csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE)
        hinglish = [r["cs_query"] for r in rows if r["cs_query"]]
    nq_lines = (shared_data / "nq-open" / "NQ-open.dev.jsonl").read_text("utf-8").splitlines()
    nq = [json.loads(line)["question"] for line in nq_lines]
    sources = [
        [text for text, _ in clinc["test"]][::7],
        [text for text, _ in clinc["oos_test"]],
        banking[::5],
        nq[::11],
        hinglish[::13],
        *[
            [q for _, q, _ in load_xquad(lang, root=shared_data)[1]][::3]
            for lang in ("en", "es", "de", "ro", "tr", "vi", "hi")
        ],  # fmt: skip
    ]
    full = [text for source in sources for text in source[:PER_SOURCE]]
    prefixes = [" ".join(text.split()[:n]) for text in full[::2] for n in (1, 2, 3, 4)]
    return list(dict.fromkeys(full + prefixes))


@pytest.mark.parametrize(
    "config",
    [
        LanguageConfig(),
        # a gold set of mostly English rows, as the production-shaped benchmark's
        LanguageConfig(preferred=("en", "es", "hi"), preferred_shares=(377.0, 50.0, 50.0)),
        LanguageConfig(preferred=("de", "en", "es")),  # expected, no dominant language
    ],
    ids=["default", "dominant_en", "no_dominant"],
)
def test_shortcuts_give_the_slow_paths_labels(texts: list[str], config: LanguageConfig) -> None:
    fast, reference, before = LanguageDetector(config), SlowPath(config), LanguageDetector(config)
    before._exact_ties = False  # the shortcut of a lead above 1 only, as before
    # counted after construction: the exact tie rule is on for the langdetect backends only
    for detector in (fast, reference, before):
        detector.backend = Counting(detector.backend)  # type: ignore[assignment]
    before._unrestricted = before.backend.probabilities  # type: ignore[method-assign]
    expected = [reference.detect_with_support(text) for text in texts]
    assert [fast.detect_with_support(text) for text in texts] == expected
    assert [before.detect_with_support(text) for text in texts] == expected
    assert len(texts) > 2_000
    # the new shortcuts were taken: fewer langdetect runs than before them
    calls = [d.backend.calls for d in (fast, before, reference)]  # type: ignore[attr-defined]
    assert calls[0] < calls[1] < calls[2]


def test_a_lead_of_exactly_one_is_decided_when_the_leader_comes_first() -> None:
    """The question "decrease volume to": the lexicon gives ``en`` 3 x 1/3 = 1.0 on three
    words, the doubled prior 1.2 each to ``en`` and ``es`` (2.2 against 1.2). With all of
    langdetect's probability on ``es`` both score 2.2 and ``en``, earlier in the pool, still
    wins; so the label is ``en`` without running langdetect. With ``es`` first in the pool
    the tie would go to ``es``: langdetect must run."""
    config = LanguageConfig(preferred=("en", "es", "hi"), preferred_shares=(377.0, 50.0, 50.0))
    detector = LanguageDetector(config)
    detector.backend = Counting(detector.backend)  # type: ignore[assignment]
    pool = detector._pools["Latn"]
    assert pool.index("en") < pool.index("es")
    evidence = {"en": 1.0 + 1.2, "es": 1.2}
    parts = ([("en", 1.0)], [], [("en", 1.2), ("es", 1.2)])
    assert detector._decided(evidence, parts, pool) == "en"
    reordered = ("es", *[lang for lang in pool if lang != "es"])
    detector._ranks[reordered] = {lang: i for i, lang in enumerate(reordered)}
    assert detector._decided(evidence, parts, reordered) is None
    assert detector.detect_with_support("decrease volume to 4") == ("en", True)
    assert detector.backend.calls == 0  # type: ignore[attr-defined]
    # another backend's probabilities are not proven to be at most 1: no exact tie rule
    other = LanguageDetector(config, backend=Counting(detector.backend))
    assert other._decided(evidence, parts, pool) is None
