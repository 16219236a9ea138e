"""Benchmark: the embedding layer's cost and its multilingual coverage, before/after the
character n-gram mix, on real data.

1. **Cost** (one process, same run): µs per *uncached* question, embedded in batches of
   ``BATCH``, for WordLlama alone, the hashed character block alone and the default layer
   (WordLlama + characters, ``analytics.embeddings`` defaults, cache off), next to the
   reference: goldwatch's language detector (uncached) on the same questions. Questions:
   CLINC150's test questions (real, English) and every 4th XQuAD question of the 12
   languages. Best of ``REPEATS`` passes, the tools taking turns (the least disturbed by
   other load on a shared machine; compare the columns of one run, not runs). Then the load
   time of WordLlama's model (first call in this process) and of the character block.
2. **Multilingual coverage** on XQuAD (1,190 parallel questions in 12 languages, 240
   paragraphs each): mean cosine of each question to its English original ("parallel"), the
   share whose nearest English question is that original ("nn@1"), and question → passage
   top-1 in its own language ("mono@1": does the representation hold that language's
   meaning at all). Hinglish-TOP (test split): Hinglish query vs its English pair, cosine and
   nn@1 among all English queries. Each for WordLlama alone ("before") and the default mix
   ("after").
3. **No regression on English**: CLINC150 novelty ROC AUC, nearest-gold-question cosine, gold
   set of 60 and 300 questions from 3 domains (seeded), positives = test questions of the
   other 7 domains + out-of-scope, negatives = the 3 domains' test questions.

Usage: ``python -m benchmarks.bench_embeddings``.
"""

from __future__ import annotations

import csv
import json
import random
import time
from collections.abc import Callable, Sequence

import numpy as np

from benchmarks.datasets import SHARED_DATA, XQUAD_LANGUAGES, load_xquad
from service.embeddings.backends import CharNgramEmbedder
from service.embeddings.model import Embedder, EmbeddingConfig, WordLlamaEmbedder, build_embedder

BATCH = 256
REPEATS = 5


def _clinc() -> tuple[dict[str, list[list[str]]], dict[str, str]]:
    data = json.loads((SHARED_DATA / "clinc150" / "data_full.json").read_text(encoding="utf-8"))
    domains = json.loads((SHARED_DATA / "clinc150" / "domains.json").read_text(encoding="utf-8"))
    return data, {intent: domain for domain, intents in domains.items() for intent in intents}


def _per_question_us(
    tools: Sequence[Callable[[Sequence[str]], object]], texts: list[str]
) -> list[float]:
    """Best-of-``REPEATS`` µs per text of each tool; the tools take turns within each repeat,
    so a burst of load on the shared machine hits all of them alike."""
    best = [float("inf")] * len(tools)
    for _ in range(REPEATS):
        for t, tool in enumerate(tools):
            start = time.perf_counter()
            for i in range(0, len(texts), BATCH):
                tool(texts[i : i + BATCH])
            best[t] = min(best[t], time.perf_counter() - start)
    return [b / len(texts) * 1e6 for b in best]


def cost() -> None:
    """Section 1: µs per uncached question, and model load times."""
    from service.language.detector import LanguageConfig, LanguageDetector

    start = time.perf_counter()
    wordllama = WordLlamaEmbedder()
    wordllama.embed(["warm-up"])
    load_wl = time.perf_counter() - start
    start = time.perf_counter()
    chars = CharNgramEmbedder()
    chars.embed(["warm-up"])
    load_chars = time.perf_counter() - start
    layer = build_embedder(EmbeddingConfig(cache_size=0))
    layer.embed(["warm-up"])
    detector = LanguageDetector(LanguageConfig(cache_size=0))
    detector.detect("warm-up")
    data, _ = _clinc()
    clinc = [text for text, _ in data["test"]]
    xquad = [q for lang in XQUAD_LANGUAGES for _, q, _ in load_xquad(lang)[1][::4]]
    print(f"\n1. cost: µs per uncached question, batches of {BATCH}, best of {REPEATS}")
    print(f"{'questions':22} {'n':>6} {'wordllama':>10} {'char':>8} {'layer':>8} {'lang-id':>8}")
    for name, texts in (("CLINC150 test (en)", clinc), ("XQuAD 12 languages", xquad)):
        row = _per_question_us([wordllama.embed, chars.embed, layer.embed,
                                lambda b: [detector.detect(t) for t in b]], texts)  # fmt: skip
        print(f"{name:22} {len(texts):>6} " + " ".join(f"{v:>8.1f}" for v in row))
    print(f"load: WordLlama model {load_wl * 1000:.0f} ms (first call), "
          f"char block {load_chars * 1000:.0f} ms")  # fmt: skip


def _xquad_row(embedder: Embedder) -> dict[str, tuple[float, float, float]]:
    vectors, passages, gold = {}, {}, {}
    for lang in XQUAD_LANGUAGES:
        paras, questions = load_xquad(lang)
        ids = [p.id for p in paras]
        vectors[lang] = embedder.embed([q for _, q, _ in questions])
        passages[lang] = embedder.embed([p.text for p in paras])
        gold[lang] = np.array([ids.index(g) for _, _, g in questions])
    english = vectors["en"]
    out = {}
    for lang in XQUAD_LANGUAGES:
        q = vectors[lang]
        parallel = float((q * english).sum(axis=1).mean())
        nn = float((np.argmax(q @ english.T, axis=1) == np.arange(len(q))).mean())
        mono = float((np.argmax(q @ passages[lang].T, axis=1) == gold[lang]).mean())
        out[lang] = (parallel, nn, mono)
    return out


def _hinglish(embedder: Embedder) -> tuple[float, float, int]:
    path = SHARED_DATA / "hinglish-top" / "test.tsv"
    with path.open(encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle, delimiter="\t"))
    english = embedder.embed([r["en_query"] for r in rows])
    hinglish = embedder.embed([r["cs_query"] for r in rows])
    cos = float((english * hinglish).sum(axis=1).mean())
    nn = float((np.argmax(hinglish @ english.T, axis=1) == np.arange(len(rows))).mean())
    return cos, nn, len(rows)


def multilingual(before: Embedder, after: Embedder) -> None:
    """Section 2: XQuAD and Hinglish-TOP, before/after the character mix."""
    print(f"\n2. multilingual coverage: before = {before.name}, after = {after.name}")
    print(f"{'lang':5} {'parallel':>15} {'nn@1':>13} {'mono@1':>13}   (before → after)")
    rows = _xquad_row(before), _xquad_row(after)
    for lang in XQUAD_LANGUAGES:
        cells = [f"{rows[0][lang][i]:.2f} → {rows[1][lang][i]:.2f}" for i in range(3)]
        print(f"{lang:5} {cells[0]:>15} {cells[1]:>13} {cells[2]:>13}")
    for label, i in (("parallel", 0), ("nn@1", 1), ("mono@1", 2)):
        means = [float(np.mean([r[lang][i] for lang in XQUAD_LANGUAGES])) for r in rows]
        print(f"mean {label:8} over 12 languages: {means[0]:.3f} → {means[1]:.3f}")
    (cos0, nn0, n), (cos1, nn1, _) = _hinglish(before), _hinglish(after)
    print(f"Hinglish-TOP test ({n} pairs): cosine {cos0:.3f} → {cos1:.3f}, "
          f"nn@1 {nn0:.3f} → {nn1:.3f}")  # fmt: skip


def novelty_auc(embedder: Embedder, n_gold: int, seed: int = 0) -> float:
    """CLINC150 novelty ROC AUC (section 3) for one embedder and gold-set size."""
    from sklearn.metrics import roc_auc_score

    data, domain_of = _clinc()
    rng = random.Random(seed)
    chosen = rng.sample(sorted(set(domain_of.values())), 3)
    gold: list[str] = []
    for domain in chosen:
        pool = [t for t, i in data["train"] if i != "oos" and domain_of[i] == domain]
        gold += rng.sample(pool, n_gold // 3)
    test = data["test"] + data["oos_test"]
    novel = [i == "oos" or domain_of[i] not in chosen for _, i in test]
    similarity = (embedder.embed([t for t, _ in test]) @ embedder.embed(gold).T).max(axis=1)
    return float(roc_auc_score(novel, -similarity))


def main() -> None:
    """Run the three sections and print their tables."""
    before = build_embedder(EmbeddingConfig(char_weight=0, cache_size=0))
    after = build_embedder(EmbeddingConfig(cache_size=0))
    cost()
    multilingual(before, after)
    print("\n3. CLINC150 novelty ROC AUC (3 gold domains, seed 0): before → after")
    for n_gold in (60, 300):
        print(f"gold set of {n_gold}: {novelty_auc(before, n_gold):.3f} → "
              f"{novelty_auc(after, n_gold):.3f}")  # fmt: skip


if __name__ == "__main__":
    main()
