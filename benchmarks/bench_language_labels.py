"""Benchmark: false language labels on real short questions, before and after issue 18.

Three configurations run in the same process on the same questions (:data:`VARIANTS`):
"no threshold" (``min_evidence_letters=0``: every langdetect label kept, as before issue 18),
"before" (issue 18's evidence threshold, as before the fresh-user trial's finding 6: an
unsupported label that is an expected language is kept; one function word supports any
label) and "after" (the default: short text without evidence falls back to the gold set's
dominant language of its script, and a label outside the expected languages needs strong
evidence). Two setups:

- with a gold set: the detector as :func:`service.runtime.analytics.build_analytics` builds it, the
  gold set's languages added to the candidates and used as the expected languages
  (``preferred``, weighted by their row counts in "after"), for two gold sets
  (:data:`GOLD_SETS`): the demo college bot's (en 48, hi-Latn 8, hi 3 rows) and the fresh-user
  trial's (en 620, de/es/hi 120 each: 63 % English);
- without a gold set: a :class:`service.language.stage.LanguageStage` over the stream in batches
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
from service.language.detector import (
    DEFAULT_CANDIDATES,
    HINGLISH,
    UNDETERMINED,
    LanguageConfig,
    LanguageDetector,
)
from service.language.stage import LanguageStage

#: The demo college bot's gold-set languages (its ``gold.jsonl``): the "with a gold set" prior.
GOLD_LANGUAGES = ("en", "hi-Latn", "hi")
#: Gold sets by their language row counts: the demo's ``gold.jsonl`` and the fresh-user
#: trial's (XQuAD en/de/es/hi rows and English SQuAD2 rows; /work/notes/trial-user2-report.md).
GOLD_SETS: dict[str, dict[str, int]] = {
    "demo": {"en": 48, "hi-Latn": 8, "hi": 3},
    "trial": {"en": 620, "de": 120, "es": 120, "hi": 120},
}
#: Questions per pipeline batch in the "without a gold set" setup.
BATCH = 100
#: The two configurations compared: evidence threshold off (before) and default (after).
VARIANTS: dict[str, dict] = {
    "no threshold": {"min_evidence_letters": 0, "min_unexpected_words": 0, "shares": False},
    "before": {"min_unexpected_words": 0, "shares": False},
    "after": {"shares": True},
}


def _config(variant: dict) -> dict:
    """``variant`` without the benchmark's own ``shares`` switch."""
    return {k: v for k, v in variant.items() if k != "shares"}


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


def gold_detector(variant: dict, counts: dict[str, int]) -> LanguageDetector:
    """The detector ``build_analytics`` makes for a gold set with ``{language: rows}``."""
    languages = tuple(sorted(counts))
    candidates = tuple(dict.fromkeys([*DEFAULT_CANDIDATES, *languages]))
    shares = tuple(float(counts[lang]) for lang in languages) if variant.get("shares") else ()
    return LanguageDetector(LanguageConfig(candidates=candidates, preferred=languages,
                                           preferred_shares=shares,
                                           **_config(variant)))  # fmt: skip


def label_with_gold(texts: Sequence[str], variant: dict, counts: dict[str, int]) -> list[str]:
    """Labels of ``texts`` by :func:`gold_detector`."""
    return gold_detector(variant, counts).detect_many(texts)


def label_without_gold(texts: Sequence[str], variant: dict) -> list[str]:
    """Labels of ``texts`` streamed through a :class:`LanguageStage` with no expected
    languages, :data:`BATCH` at a time (the live baseline's mix is the prior)."""
    stage = LanguageStage(LanguageDetector(LanguageConfig(**_config(variant))))
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
    detect = LanguageDetector(LanguageConfig(**_config(variant))).detect
    cs = sum(detect(row["cs_query"]) == HINGLISH for row in rows) / len(rows)
    en = sum(detect(row["en_query"]) == HINGLISH for row in rows) / len(rows)
    return cs, en


def main() -> None:
    print("False labels on English short questions (rate of labels other than en/und; und)")
    for name, texts in english_sets().items():
        for variant_name, variant in VARIANTS.items():
            row = [f"  {name:<22} {variant_name:<12}"]
            for gold_name, counts in GOLD_SETS.items():
                gold = false_labels(label_with_gold(texts, variant, counts))
                row.append(f"gold {gold_name}: false {gold.false:7.3%} und {gold.und:6.2%} "
                           f"{list(gold.top)[:3]}")  # fmt: skip
            live = false_labels(label_without_gold(texts, variant))
            row.append(f"no gold: false {live.false:7.3%} und {live.und:6.2%} "
                       f"{list(live.top)[:3]}")  # fmt: skip
            print(f"\n{'':<37}".join(row))
    print(
        "XQuAD macro accuracy, 12 languages interleaved (gold set = the 12 / the trial's "
        "en, de, es, hi; no gold set)"
    )
    xquad_gold = dict.fromkeys(XQUAD_LANGUAGES, 1190)
    for words in (None, 2):
        stream = xquad_stream(words=words)
        texts = [text for _, text in stream]
        for variant_name, variant in VARIANTS.items():
            gold = macro_accuracy(stream, label_with_gold(texts, variant, xquad_gold))
            trial = macro_accuracy(stream, label_with_gold(texts, variant, GOLD_SETS["trial"]))
            live = macro_accuracy(stream, label_without_gold(texts, variant))
            mode = "two words" if words else "whole"
            print(
                f"  {mode:<10} {variant_name:<12} gold set {gold:.4f}  trial gold {trial:.4f}"
                f"  no gold {live:.4f}"
            )
    print("Hinglish-TOP test (cs_query -> hi-Latn; en_query wrongly hi-Latn)")
    for variant_name, variant in VARIANTS.items():
        cs, en = hinglish_rates(variant)
        print(f"  {variant_name:<12} cs_query {cs:.4f}  en_query {en:.4%}")


if __name__ == "__main__":
    main()
