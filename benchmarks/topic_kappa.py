"""The topic assignment's held-out Cohen's kappa on real labelled gold sets, the figure the
``analytics.topics.min_kappa`` floor reads (docs/topics.md, "A topic model near chance").

Each gold set is fitted as goldwatch fits a supervised one (:meth:`TopicModel.fit` with the
default :class:`TopicConfig` and embedder) and its held-out agreement
(:attr:`TopicModel.topic_agreement`, ``cv_folds``-fold cross-validated) is read with
:func:`service.topics.quality.kappa_of`:

* CLINC150: 20 training questions of each of the 10 domains as labels (200 rows), and 10
  questions of each intent of 3 domains as labels (45 intents, 450 rows);
* BANKING77: 10 training questions of each of 10 random categories (100 rows);
* XQuAD: 10 questions of each of 5 random articles, in English (50 rows), and the same in
  English and Hindi (100 rows: trial 37's shape);
* MultiHop-RAG: the questions whose evidence is all of one news category (4 categories,
  304 rows, sample of 500).

Seeds 0..2 each. ``python -m benchmarks.topic_kappa`` (``GOLDWATCH_SHARED_DATA`` set) prints one
line per gold set and seed.
"""

from __future__ import annotations

import csv
import json
import random
from collections.abc import Iterator

from benchmarks.bench_topics import load_clinc
from benchmarks.datasets import SHARED_DATA, load_xquad
from service.topics.config import TopicConfig
from service.topics.model import TopicModel
from service.topics.quality import kappa_of

Rows = list[tuple[str, str]]


def clinc_domains(seed: int) -> Rows:
    clinc = load_clinc()
    by: dict[str, list[str]] = {}
    for text, intent in clinc["train"]:
        by.setdefault(clinc["domain"][intent], []).append(text)
    rng = random.Random(seed)
    return [(t, d) for d in sorted(by) for t in rng.sample(by[d], 20)]


def clinc_intents(seed: int) -> Rows:
    clinc = load_clinc()
    rng = random.Random(seed)
    domains = rng.sample(sorted(set(clinc["domain"].values())), 3)
    by: dict[str, list[str]] = {}
    for text, intent in clinc["train"]:
        if clinc["domain"][intent] in domains:
            by.setdefault(intent, []).append(text)
    return [(t, i) for i in sorted(by) for t in rng.sample(by[i], 10)]


def banking(seed: int) -> Rows:
    by: dict[str, list[str]] = {}
    with (SHARED_DATA / "banking77" / "train.csv").open(encoding="utf-8") as handle:
        for row in csv.DictReader(handle):
            by.setdefault(row["category"], []).append(row["text"])
    rng = random.Random(seed)
    return [(t, c) for c in rng.sample(sorted(by), 10) for t in rng.sample(by[c], 10)]


def xquad(seed: int, languages: tuple[str, ...]) -> Rows:
    rng = random.Random(seed)
    per: dict[str, dict[str, list[tuple[str, str]]]] = {}
    for lang in languages:
        _, questions = load_xquad(lang)
        for qid, text, gold_id in questions:
            per.setdefault(lang, {}).setdefault(gold_id.split("#")[0], []).append((qid, text))
    articles = rng.sample(sorted(per[languages[0]]), 5)
    rows: Rows = []
    for article in articles:
        picked = rng.sample(range(len(per[languages[0]][article])), 10)
        for lang in languages:
            rows += [(per[lang][article][i][1], article) for i in picked]
    return rows


def multihop(seed: int) -> Rows:
    base = SHARED_DATA / "multihop-rag-sample500"
    queries = json.loads((base / "queries.json").read_text(encoding="utf-8"))["queries"]
    truth = json.loads((base / "ground_truth.json").read_text(encoding="utf-8"))
    rows = []
    for query in queries:
        categories = {e["category"] for e in truth[query["id"]]["evidence_list"]}
        if len(categories) == 1:
            rows.append((query["question"], categories.pop()))
    random.Random(seed).shuffle(rows)
    return rows


def cases() -> Iterator[tuple[str, int, Rows]]:
    for seed in range(3):
        yield "CLINC150 domains (10 x 20)", seed, clinc_domains(seed)
        yield "CLINC150 intents of 3 domains (45 x 10)", seed, clinc_intents(seed)
        yield "BANKING77 (10 categories x 10)", seed, banking(seed)
        yield "XQuAD en (5 articles x 10)", seed, xquad(seed, ("en",))
        yield "XQuAD en+hi (5 articles x 10 x 2)", seed, xquad(seed, ("en", "hi"))
        if seed == 0:  # the whole single-category sample: the seed only shuffles it
            yield "MultiHop-RAG (4 news categories)", seed, multihop(seed)


def main() -> None:
    for name, seed, rows in cases():
        model = TopicModel.fit([t for t, _ in rows], TopicConfig(), labels=[c for _, c in rows])
        q = model.topic_agreement or {}
        found = kappa_of(q)
        kappa, chance = found if found is not None else (float("nan"), float("nan"))
        per = ", ".join(f"{g} {v['agree']}/{v['n']}" for g, v in q["by_language"].items())
        print(f"{name} seed {seed}: {q['agree']}/{q['n']} ({q['share']:.3f}), chance "
              f"{chance:.3f}, kappa {kappa:.3f}; {per}", flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
