"""Benchmark: questions in languages the language candidates leave out, found on real data,
and what finding them costs.

Detection: the detector as :func:`service.runtime.analytics.build_analytics` builds it for
``analytics.language.candidates: [en, de]`` and a gold set in English and German (candidates
and expected languages ``en``, ``de``), on XQuAD's 1,190 questions in Spanish, Romanian,
Hindi (Devanagari), German and English, Hinglish-TOP ``test`` (``cs_query``, 6,513), NQ-open
``dev`` (3,610) and BANKING77 ``test`` (3,080); and an English-only site (``[en]``, expected
``en``) on the two English sets. Per set: the labels the narrowed detector gives, the
questions :meth:`~service.language.detector.LanguageDetector.excluded_language` counts (and
their languages), how often its reference detector ran (the cheap skip's trigger rate), and,
as an independent check, the questions seeded plain langdetect (all 55 profiles; it knows no
Hinglish) calls a left-out language.

Cost: CPU µs per question (``time.process_time``: a loaded machine's other processes do not
count) of the language stage (:class:`~service.language.stage.LanguageStage`,
batches of 500, a fresh detector per run, so every question is a cache miss) on 5,000 real
questions: NQ-open's 3,610 and 1,390 XQuAD questions (Spanish, German, Hindi in turn), with
the default configuration (no gold set; and a gold set's expected languages en/de/es/hi) and
with candidates ``[en, de]``. The median of :data:`RUNS` runs. The cost part runs on an older
checkout too (``PYTHONPATH=<checkout> python benchmarks/bench_language_excluded.py --cost``),
for a before/after on the same machine.

Usage: ``python -m benchmarks.bench_language_excluded [--cost] [--runs N]``.
"""

from __future__ import annotations

import csv
import importlib
import json
import statistics
import sys
import time
from collections import Counter
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from benchmarks.datasets import SHARED_DATA, load_xquad
from service.language.detector import LanguageConfig, LanguageDetector
from service.language.stage import LanguageStage
from service.pipeline import Batch

RUNS = 9
BATCH = 500
#: ``[en, de]`` as build_analytics makes it for a gold set in English and German.
EN_DE: dict[str, Any] = {"candidates": ("en", "de"), "preferred": ("en", "de")}
EN: dict[str, Any] = {"candidates": ("en",), "preferred": ("en",)}
COST_CONFIGS: dict[str, dict[str, Any]] = {
    "default, no gold set": {},
    "default, gold set en/de/es/hi": {"preferred": ("de", "en", "es", "hi"),
                                      "preferred_shares": (1.0, 3.0, 1.0, 1.0)},
    "candidates [en, de], gold set en/de": EN_DE,
}  # fmt: skip


def nq_open(root: Path = SHARED_DATA) -> list[str]:
    with (root / "nq-open" / "NQ-open.dev.jsonl").open(encoding="utf-8") as lines:
        return [json.loads(line)["question"] for line in lines]


def real_sets(root: Path = SHARED_DATA) -> dict[str, list[str]]:
    """``{name: questions}`` of the detection sets, in file order."""
    sets = {f"XQuAD {lang}": [q for _, q, _ in load_xquad(lang, root)[1]]
            for lang in ("es", "ro", "hi", "de", "en")}  # fmt: skip
    with (root / "hinglish-top" / "test.tsv").open(encoding="utf-8", newline="") as f:
        sets["Hinglish-TOP cs_query"] = [r["cs_query"] for r in csv.DictReader(f, delimiter="\t")]
    sets["NQ-open dev"] = nq_open(root)
    with (root / "banking77" / "test.csv").open(encoding="utf-8", newline="") as f:
        sets["BANKING77 test"] = [row["text"] for row in csv.DictReader(f)]
    return sets


def _plain(texts: list[str]) -> list[str]:
    module = importlib.import_module("langdetect_rs")
    module.DetectorFactory.seed = 0
    out = []
    for text in texts:
        try:
            out.append(str(module.detect(text)))
        except Exception:  # LangDetectException: no features in text
            out.append("und")
    return out


def detection(config: dict[str, Any], texts: list[str]) -> dict[str, Any]:
    """One set under one configuration: labels, excluded counts, reference runs, plain
    langdetect's left-out count."""
    detector = LanguageDetector(LanguageConfig(**config))
    reference = detector._reference
    ran = 0
    if reference is not None:
        detect = reference.detect

        def counting(text: str, prior: tuple[str, ...] = ()) -> str:
            nonlocal ran
            ran += 1
            return detect(text, prior)

        reference.detect = counting  # type: ignore[method-assign]
    labels = detector.detect_many(texts)
    found = Counter(
        lang
        for text, label in zip(texts, labels, strict=True)
        if (lang := detector.excluded_language(text, label)) is not None
    )
    plain = sum(lang in detector.excluded for lang in _plain(texts))
    return {"n": len(texts), "labels": Counter(labels).most_common(3),
            "excluded": sum(found.values()), "by_language": found.most_common(3),
            "reference_runs": ran, "plain_left_out": plain}  # fmt: skip


def cost_questions(root: Path = SHARED_DATA) -> list[str]:
    """NQ-open's 3,610 questions, then 1,390 XQuAD ones: Spanish, German, Hindi in turn."""
    xquad = {lang: [q for _, q, _ in load_xquad(lang, root)[1]] for lang in ("es", "de", "hi")}
    mixed = [q for i in range(500) for q in (xquad["es"][i], xquad["de"][i], xquad["hi"][i])]
    return nq_open(root) + mixed[:1390]


def cost(config: dict[str, Any], questions: list[str], runs: int = RUNS) -> list[float]:
    """CPU µs per question of a fresh language stage over ``questions``, ``runs`` times."""
    events = [SimpleNamespace(event_id=f"e-{i}", question=q) for i, q in enumerate(questions)]
    out = []
    for _ in range(runs):
        stage = LanguageStage(LanguageDetector(LanguageConfig(**config)))
        batches = [Batch.of(events[i : i + BATCH], source="file")  # type: ignore[arg-type]
                   for i in range(0, len(events), BATCH)]  # fmt: skip
        start = time.process_time_ns()  # CPU time: other processes' load does not count
        for batch in batches:
            stage.process(batch)
        out.append((time.process_time_ns() - start) / 1_000 / len(events))
    return out


def main() -> None:
    questions = cost_questions()
    LanguageDetector().detect("warm-up: load the profiles")
    print(f"-- cost: language stage, {len(questions)} real questions, cold cache --")
    runs_n = int(sys.argv[sys.argv.index("--runs") + 1]) if "--runs" in sys.argv else RUNS
    for name, config in COST_CONFIGS.items():
        runs = cost(config, questions, runs_n)
        print(f"{name:<38} median {statistics.median(runs):6.1f} µs/question "
              f"(min {min(runs):.1f}, max {max(runs):.1f}, {len(runs)} runs)")  # fmt: skip
    if "--cost" in sys.argv:
        return
    print("-- detection: questions reading as a left-out language --")
    sets = real_sets()
    for site, config, names in (
        ("[en, de]", EN_DE, list(sets)),
        ("[en]", EN, ["NQ-open dev", "BANKING77 test", "XQuAD en"]),
    ):
        for name in names:
            row = detection(config, sets[name])
            n = row["n"]
            print(f"{site:<9} {name:<22} n {n:>5}  excluded {row['excluded']:>5} "
                  f"({row['excluded'] / n:6.1%}) {row['by_language']}  reference ran "
                  f"{row['reference_runs'] / n:6.1%}  plain langdetect left-out "
                  f"{row['plain_left_out'] / n:6.1%}  labels {row['labels']}")  # fmt: skip


if __name__ == "__main__":
    main()
