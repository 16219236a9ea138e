"""Benchmark: topic quality and speed of ``service.topics.model`` on CLINC150.

Set-up: fit on a seeded sample of 20 in-scope TRAINING questions per intent (3,000 questions,
150 intents, 10 domains); assign the 4,500 in-scope TEST questions and the 1,000
out-of-scope (``oos``) TEST questions. Reported per mode:

* ``unsupervised``: KMeans topics (default ``n_topics`` rule: min(50, sqrt(3000)) = 50);
* ``supervised-domains`` / ``supervised-intents``: the gold rows' labels as topics
  (nearest centroid), as when a user labelled their gold set.

Quality is NMI (``sklearn.metrics.normalized_mutual_info_score``) and purity (share of
questions whose topic's majority label is theirs) of the *nearest* topic against the 10
domains and the 150 intents, on the in-scope test questions; novelty is the share of
``novel`` assignments among oos vs in-scope test questions. Speed: ``assign_many`` µs per
question in batches of 500 vs ``assign`` one at a time. Usage:
``python -m benchmarks.bench_topics``.
"""

from __future__ import annotations

import json
import random
import time
from pathlib import Path
from typing import Any

import numpy as np
from sklearn.metrics import normalized_mutual_info_score
from sklearn.metrics.cluster import contingency_matrix

from benchmarks.datasets import SHARED_DATA
from service.topics.model import TopicConfig, TopicModel

PER_INTENT = 20
BATCH = 500


def load_clinc(root: Path | None = None) -> dict[str, Any]:
    """Return ``{"train": [(text, intent)], "test": [...], "oos": [...], "domain": {intent:
    domain}}``; ``train`` is the seeded 20-per-intent sample of the training split."""
    folder = (root if root is not None else SHARED_DATA) / "clinc150"
    data = json.loads((folder / "data_full.json").read_text(encoding="utf-8"))
    domains = json.loads((folder / "domains.json").read_text(encoding="utf-8"))
    by_intent: dict[str, list[str]] = {}
    for text, intent in data["train"]:
        by_intent.setdefault(intent, []).append(text)
    rng = random.Random(0)
    train = [(t, i) for i in sorted(by_intent) for t in rng.sample(by_intent[i], PER_INTENT)]
    domain = {intent: name for name, intents in domains.items() for intent in intents}
    return {"train": train, "test": data["test"], "oos": data["oos_test"], "domain": domain}


def purity(truth: list[str], clusters: list[str]) -> float:
    """Σ over clusters of its majority-label count, over n; in (0, 1]."""
    matrix = contingency_matrix(truth, clusters)
    return float(matrix.max(axis=0).sum() / matrix.sum())


def measure(model: TopicModel, clinc: dict[str, Any]) -> dict[str, float]:
    """NMI / purity vs domains and intents, and novel shares, for one fitted model."""
    test, oos = clinc["test"], clinc["oos"]
    found = model.assign_many([text for text, _ in test])
    nearest = [a.nearest for a in found]
    intents = [intent for _, intent in test]
    domains = [clinc["domain"][intent] for intent in intents]
    oos_found = model.assign_many([text for text, _ in oos])
    return {
        "topics": len(model.topics),
        "nmi_domains": normalized_mutual_info_score(domains, nearest),
        "nmi_intents": normalized_mutual_info_score(intents, nearest),
        "purity_domains": purity(domains, nearest),
        "purity_intents": purity(intents, nearest),
        "novel_oos": float(np.mean([a.novel for a in oos_found])),
        "novel_in_scope": float(np.mean([a.novel for a in found])),
    }


def timing(model: TopicModel, texts: list[str]) -> dict[str, float]:
    """µs per question: ``assign_many`` in batches of 500 vs ``assign`` one by one."""
    start = time.perf_counter()
    for i in range(0, len(texts), BATCH):
        model.assign_many(texts[i : i + BATCH])
    batched = (time.perf_counter() - start) / len(texts) * 1e6
    single_texts = texts[:BATCH]
    start = time.perf_counter()
    for text in single_texts:
        model.assign(text)
    single = (time.perf_counter() - start) / len(single_texts) * 1e6
    return {"us_per_q_batch500": batched, "us_per_q_single": single}


def run(config: TopicConfig | None = None, speed: bool = True) -> list[dict[str, Any]]:
    """One row per mode: quality figures, fit seconds and (if ``speed``) assign timings."""
    clinc = load_clinc()
    texts = [text for text, _ in clinc["train"]]
    modes: dict[str, list[str] | None] = {
        "unsupervised": None,
        "supervised-domains": [clinc["domain"][i] for _, i in clinc["train"]],
        "supervised-intents": [i for _, i in clinc["train"]],
    }
    rows = []
    for mode, labels in modes.items():
        start = time.perf_counter()
        model = TopicModel.fit(texts, config, labels=labels)
        row: dict[str, Any] = {"mode": mode, "fit_s": time.perf_counter() - start}
        row.update(measure(model, clinc))
        if speed and mode == "unsupervised":
            row.update(timing(model, [text for text, _ in clinc["test"]]))
        rows.append(row)
    return rows


def main() -> None:
    rows = run()
    columns = [
        ("mode", "{:<19}"), ("topics", "{:>6}"), ("nmi_domains", "{:>11.3f}"),
        ("nmi_intents", "{:>11.3f}"), ("purity_domains", "{:>14.3f}"),
        ("purity_intents", "{:>14.3f}"), ("novel_oos", "{:>9.3f}"),
        ("novel_in_scope", "{:>14.3f}"), ("fit_s", "{:>6.2f}"),
    ]  # fmt: skip
    print(" ".join(f"{name:>{len(fmt.format(rows[0][name]))}}" for name, fmt in columns))
    for row in rows:
        print(" ".join(fmt.format(row[name]) for name, fmt in columns))
    speed = rows[0]
    print(
        f"assign: {speed['us_per_q_batch500']:.0f} µs/question in batches of {BATCH}, "
        f"{speed['us_per_q_single']:.0f} µs/question one at a time "
        f"({speed['us_per_q_single'] / speed['us_per_q_batch500']:.0f}x)"
    )


if __name__ == "__main__":
    main()
