"""Measurement: does the embedding layer find paraphrases that harvest's trigram MinHash misses?

Harvest merges a new question into an existing suggestion when their character-trigram
Jaccard is at least ``harvest.similarity`` (0.6; :mod:`service.harvest.neardup`, whose LSH only
lowers recall, never precision, so the exact Jaccard is the upper bound measured here).

Setting, as harvesting meets it: a pool of ``POOL`` real questions (BANKING77 test, CLINC150
test in-scope; seeded sample); each question is compared with every other one of the pool and
merged into its nearest neighbour when the similarity reaches the threshold. A merge is right
when both carry the same intent (paraphrases of one need), wrong otherwise.

* merges = questions merged; precision = right merges / merges; recall = right merges / the
  questions with a same-intent question in the pool.
* For the embedding layer (WordLlama + character block, the defaults of
  ``analytics.embeddings``) the cosine threshold is swept; the row at the threshold whose
  precision is closest to, but not below, the trigram rule's is the like-for-like comparison.
* "found only by embeddings": right merges the embedding rule makes at that threshold on
  questions the trigram rule leaves alone.
* ``OR`` rows: harvest's rule (:mod:`service.harvest.neardup`): merged when trigram Jaccard
  ≥ 0.6 (into the nearest by Jaccard) or else cosine ≥ the threshold (into the nearest by
  cosine), at each threshold of ``OR_COSINES`` (``harvest.embedding_similarity``).

Cost (``cost``): CPU µs per new question of :class:`service.harvest.neardup.NearDupIndex`'s
``probes`` + ``matches`` in batches of 48 (``harvest.max_new_per_batch``), trigrams only vs the
OR rule, with 1,000 and 5,000 (``harvest.max_suggestions``) keys stored (CLINC150 train
questions; the probes: 960 others, embedded uncached), both in the same run.

Usage: ``python -m benchmarks.bench_neardup_embeddings``.
"""

from __future__ import annotations

import csv
import json
import random
import time

import numpy as np

from benchmarks.datasets import SHARED_DATA
from service.embeddings.model import EmbeddingConfig, build_embedder
from service.harvest.neardup import NearDupIndex
from service.harvest.text import comparison_form as normalise
from service.harvest.text import trigrams

POOL = 2000
JACCARD = 0.6
COSINES = (0.95, 0.9, 0.85, 0.8, 0.75, 0.7)
OR_COSINES = (0.85, 0.8, 0.75)


def _banking() -> list[tuple[str, str]]:
    with (SHARED_DATA / "banking77" / "test.csv").open(encoding="utf-8", newline="") as handle:
        return [(row["text"], row["category"]) for row in csv.DictReader(handle)]


def _clinc() -> list[tuple[str, str]]:
    data = json.loads((SHARED_DATA / "clinc150" / "data_full.json").read_text(encoding="utf-8"))
    return [(text, intent) for text, intent in data["test"]]


def _nearest_jaccard(texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
    sets = [trigrams(normalise(t)) for t in texts]
    best = np.full(len(sets), -1)
    score = np.zeros(len(sets))
    for i, a in enumerate(sets):
        for j, b in enumerate(sets):
            if i != j and a and b:
                jac = len(a & b) / len(a | b)
                if jac > score[i]:
                    best[i], score[i] = j, jac
    return best, score


def _row(label: str, merged: np.ndarray, right: np.ndarray, possible: int) -> str:
    n, ok = int(merged.sum()), int((merged & right).sum())
    precision = ok / n if n else float("nan")
    return f"{label:24} merges {n:5}  precision {precision:.3f}  recall {ok / possible:.3f}"


def measure(name: str, rows: list[tuple[str, str]]) -> None:
    """Print the trigram rule and the embedding sweep for one data set."""
    rows = random.Random(0).sample(rows, POOL)
    texts, intents = [t for t, _ in rows], np.array([i for _, i in rows])
    possible = sum(int((intents == intent).sum() > 1) for intent in intents)
    j_best, j_score = _nearest_jaccard(texts)
    j_merged = j_score >= JACCARD
    j_right = intents[j_best] == intents
    vectors = build_embedder(EmbeddingConfig(cache_size=0)).embed(texts)
    sims = vectors @ vectors.T
    np.fill_diagonal(sims, -np.inf)
    e_best, e_score = sims.argmax(axis=1), sims.max(axis=1)
    e_right = intents[e_best] == intents
    print(f"\n{name}: {POOL} questions, {len(set(intents))} intents, "
          f"{possible} with a same-intent question in the pool")  # fmt: skip
    print(_row(f"trigram Jaccard >= {JACCARD}", j_merged, j_right, possible))
    j_precision = (j_merged & j_right).sum() / max(1, j_merged.sum())
    chosen = None
    for cosine in COSINES:
        merged = e_score >= cosine
        print(_row(f"embedding cos >= {cosine}", merged, e_right, possible))
        if (merged & e_right).sum() / max(1, merged.sum()) >= j_precision:
            chosen = cosine
    for cosine in OR_COSINES:
        merged = j_merged | (e_score >= cosine)
        right = np.where(j_merged, j_right, e_right)
        print(_row(f"OR cos >= {cosine}", merged, right, possible))
    if chosen is not None:
        only = (e_score >= chosen) & e_right & ~j_merged
        print(f"found only by embeddings at cos >= {chosen}: {int(only.sum())} right merges; "
              f"example: {texts[int(np.flatnonzero(only)[0])]!r} ~ "
              f"{texts[int(e_best[np.flatnonzero(only)[0]])]!r}" if only.any() else "")  # fmt: skip


def cost(batch: int = 48, probes: int = 960) -> None:
    """Print the CPU µs per new question, trigrams only vs the OR rule (module docstring)."""
    data = json.loads((SHARED_DATA / "clinc150" / "data_full.json").read_text(encoding="utf-8"))
    texts = list(dict.fromkeys(normalise(text) for text, _ in data["train"]))
    embedder = build_embedder(EmbeddingConfig(cache_size=0))
    embedder.embed(["load the model"])
    print(f"\ncost: CPU µs per new question, batches of {batch}, {probes} probes")
    for stored in (1000, 5000):
        fresh = texts[stored : stored + probes]
        row = []
        for label, index in (("trigrams only", NearDupIndex(0.6)),
                             ("OR cos >= 0.8", NearDupIndex(0.6, embedder=embedder))):  # fmt: skip
            for text, probe in zip(texts[:stored], index.probes(texts[:stored]), strict=True):
                index.add(text, probe)
            started = time.process_time()
            for k in range(0, len(fresh), batch):
                for probe in index.probes(fresh[k : k + batch]):
                    index.matches(probe)
            us = 1e6 * (time.process_time() - started) / len(fresh)
            row.append(f"{label} {us:6.1f}")
        print(f"  {stored:5} stored: " + ";  ".join(row))


def main() -> None:
    """Both data sets, then the cost."""
    measure("BANKING77 test", _banking())
    measure("CLINC150 test (in-scope)", _clinc())
    cost()


if __name__ == "__main__":
    main()
