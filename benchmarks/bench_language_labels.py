"""Benchmark: false language labels on real short questions, before and after issue 18.

"Before" is the detector with ``min_evidence_letters=0`` (every langdetect label kept, as
before the evidence threshold); "after" is the default configuration. Both run in the same
process on the same questions, in two setups:

- with a gold set: the detector as :func:`service.analytics.build_analytics` builds it, the
  gold set's languages (:data:`GOLD_LANGUAGES`, the demo college bot's) added to the
  candidates and used as the expected languages (``preferred``);
- without a gold set: a :class:`service.language.LanguageStage` over the stream in batches
  of :data:`BATCH` questions in file order, so the live baseline's mix is the prior.

English sets (every label but ``en`` and ``und`` is false; ``und`` is reported apart, as an
abstention): CLINC150 ``test`` + ``oos_test`` (5,500 questions), BANKING77 ``test`` (3,080)
and NQ-open ``dev`` cut to its first three whitespace-separated words (3,610).
Kept where they were: XQuAD macro accuracy over its 12 languages (1,190 questions each, whole
and cut to two words, languages interleaved) and Hinglish-TOP ``test`` (``cs_query`` labelled
``hi-Latn``, ``en_query`` wrongly labelled ``hi-Latn``).

Usage: ``python -m benchmarks.bench_language_labels``.
"""

from __future__ import annotations

import csv
import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace

from benchmarks.datasets import SHARED_DATA, XQUAD_LANGUAGES, load_xquad
from service.language import (
    DEFAULT_CANDIDATES,
    HINGLISH,
    UNDETERMINED,
    LanguageConfig,
    LanguageDetector,
    LanguageStage,
)

#: The demo college bot's gold-set languages (its ``gold.jsonl``): the "with a gold set" prior.
GOLD_LANGUAGES = ("en", "hi-Latn", "hi")
#: Questions per pipeline batch in the "without a gold set" setup.
BATCH = 100
#: The two configurations compared: evidence threshold off (before) and default (after).
VARIANTS = {"before": {"min_evidence_letters": 0}, "after": {}}


def english_sets(root: Path = SHARED_DATA) -> dict[str, list[str]]:
    """``{name: questions}`` of the three English short-question sets, in file order."""
    clinc = json.loads((root / "clinc150" / "data_full.json").read_text(encoding="utf-8"))
    with (root / "banking77" / "test.csv").open(encoding="utf-8", newline="") as f:
        banking = [row["text"] for row in csv.DictReader(f)]
    with (root / "nq-open" / "NQ-open.dev.jsonl").open(encoding="utf-8") as lines:
        nq = [" ".join(json.loads(line)["question"].split()[:3]) for line in lines]
    return {
        "CLINC150 test+oos": [text for split in ("test", "oos_test") for text, _ in clinc[split]],
        "BANKING77 test": banking,
        "NQ-open dev, 3 words": nq,
    }


def gold_detector(variant: dict, languages: Sequence[str] = GOLD_LANGUAGES) -> LanguageDetector:
    """The detector ``build_analytics`` makes for a gold set in ``languages``."""
    candidates = tuple(dict.fromkeys([*DEFAULT_CANDIDATES, *languages]))
    return LanguageDetector(LanguageConfig(candidates=candidates, preferred=tuple(languages),
                                           **variant))  # fmt: skip


def label_with_gold(texts: Sequence[str], variant: dict, languages: Sequence[str]) -> list[str]:
    """Labels of ``texts`` by :func:`gold_detector`."""
    return gold_detector(variant, languages).detect_many(texts)


def label_without_gold(texts: Sequence[str], variant: dict) -> list[str]:
    """Labels of ``texts`` streamed through a :class:`LanguageStage` with no expected
    languages, :data:`BATCH` at a time (the live baseline's mix is the prior)."""
    stage = LanguageStage(LanguageDetector(LanguageConfig(**variant)))
    labels: list[str] = []
    for start in range(0, len(texts), BATCH):
        chunk = texts[start : start + BATCH]
        annotations: list[dict] = [{} for _ in chunk]
        events = [SimpleNamespace(question=text) for text in chunk]
        stage.process(SimpleNamespace(events=events, annotations=annotations))  # type: ignore[arg-type]
        labels += [a["language"] for a in annotations]
    return labels


@dataclass(frozen=True)
class FalseLabels:
    """Share of English questions labelled another language (``false``) or ``und``, in
    [0, 1], and the most frequent false labels."""

    false: float
    und: float
    top: tuple[tuple[str, int], ...]


def false_labels(labels: Sequence[str], truth: str = "en") -> FalseLabels:
    """:class:`FalseLabels` of ``labels`` of questions all written in ``truth``."""
    counts = Counter(labels)
    wrong = Counter({k: v for k, v in counts.items() if k not in (truth, UNDETERMINED)})
    n = len(labels)
    return FalseLabels(sum(wrong.values()) / n, counts[UNDETERMINED] / n,
                       tuple(wrong.most_common(4)))  # fmt: skip


def xquad_stream(root: Path = SHARED_DATA, words: int | None = None) -> list[tuple[str, str]]:
    """``(language, question)`` over XQuAD's 12 languages, interleaved (question i of each
    language in turn), whole or cut to the first ``words`` words."""
    per_lang = {lang: [q for _, q, _ in load_xquad(lang, root)[1]] for lang in XQUAD_LANGUAGES}
    n = min(len(qs) for qs in per_lang.values())
    return [(lang, " ".join(per_lang[lang][i].split()[:words]) if words else per_lang[lang][i])
            for i in range(n) for lang in XQUAD_LANGUAGES]  # fmt: skip


def macro_accuracy(stream: Sequence[tuple[str, str]], labels: Sequence[str]) -> float:
    """Mean over languages of the share of each language's questions labelled right."""
    hits: Counter[str] = Counter()
    totals: Counter[str] = Counter()
    for (lang, _), label in zip(stream, labels, strict=True):
        totals[lang] += 1
        hits[lang] += label == lang
    return sum(hits[lang] / totals[lang] for lang in totals) / len(totals)


def hinglish_rates(variant: dict, root: Path = SHARED_DATA) -> tuple[float, float]:
    """Hinglish-TOP test: (share of ``cs_query`` labelled hi-Latn, share of ``en_query``
    labelled hi-Latn), default candidates, no expected languages."""
    with (root / "hinglish-top" / "test.tsv").open(encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE))
    detect = LanguageDetector(LanguageConfig(**variant)).detect
    cs = sum(detect(row["cs_query"]) == HINGLISH for row in rows) / len(rows)
    en = sum(detect(row["en_query"]) == HINGLISH for row in rows) / len(rows)
    return cs, en


def main() -> None:
    print("False labels on English short questions (rate of labels other than en/und; und)")
    for name, texts in english_sets().items():
        for variant_name, variant in VARIANTS.items():
            gold = false_labels(label_with_gold(texts, variant, GOLD_LANGUAGES))
            live = false_labels(label_without_gold(texts, variant))
            print(f"  {name:<22} {variant_name:<6} gold set: false {gold.false:7.3%} "
                  f"und {gold.und:6.2%} {list(gold.top)}\n{'':<31}no gold:  false "
                  f"{live.false:7.3%} und {live.und:6.2%} {list(live.top)}")  # fmt: skip
    print("XQuAD macro accuracy, 12 languages interleaved (gold set = the 12; no gold set)")
    for words in (None, 2):
        stream = xquad_stream(words=words)
        texts = [text for _, text in stream]
        for variant_name, variant in VARIANTS.items():
            gold = macro_accuracy(stream, label_with_gold(texts, variant, XQUAD_LANGUAGES))
            live = macro_accuracy(stream, label_without_gold(texts, variant))
            mode = "two words" if words else "whole"
            print(f"  {mode:<10} {variant_name:<6} gold set {gold:.4f}  no gold {live:.4f}")
    print("Hinglish-TOP test (cs_query -> hi-Latn; en_query wrongly hi-Latn)")
    for variant_name, variant in VARIANTS.items():
        cs, en = hinglish_rates(variant)
        print(f"  {variant_name:<6} cs_query {cs:.4f}  en_query {en:.4%}")


if __name__ == "__main__":
    main()
