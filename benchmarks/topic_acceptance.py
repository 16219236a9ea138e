"""Issue 17's topic acceptance figures, each next to today's (TF-IDF/LSA) figure from the same run.

All streams are deterministic (seeded) from ``../shared/data``:

1. **Novelty on CLINC150** (:func:`novelty`): a gold set of ``per_domain`` training questions
   from each of 3 domains (20 → 60 questions, 100 → 300); novelty score = 1 − cosine
   similarity to the nearest gold question; ROC AUC of the *test* questions of the other 7
   domains plus the out-of-scope test set (positives) vs the test questions of the 3 domains
   (negatives). Representations: the embedding layer (WordLlama) and HEAD's TF-IDF/LSA path
   (word 1-2 grams ⊕ char_wb 3-5 grams, sublinear tf, TruncatedSVD 150, L2 — the vectoriser
   ``service/topics/model.py`` used before this change, refitted on the gold set). Reported for
   the scenario domains (banking, travel, kitchen_and_dining) and over
   10 seeded domain triples (mean / min / max); next to it the model's own leave-one-topic-out
   estimate (``novelty_quality``, what the service reports without any held-out data).
   ``embedding`` is the issue's plain setup exactly (WordLlama ``l2_supercat`` 256,
   L2-normalised, max cosine to the gold questions, gold from *train*, unseen from *test*);
   variants from the same run: ``covered_intents`` — negatives only the test questions of the
   intents the gold set has (a 60-question random gold set covers ~70–80 % of its domains'
   45 intents; a question of an uncovered intent is arguably novel); ``stratified`` — the gold
   set drawn evenly over each domain's 15 intents; ``knn2`` — mean of the 2 nearest gold
   questions; ``product`` — what the service computes by default (:class:`TopicModel`
   novelty similarity: the nearest gold question, :func:`~service.topics.model.embedding_texts`,
   the default ``build_embedder``: WordLlama ⊕ char n-grams at weight 0.35);
   ``product_hubness20`` — the service with the opt-in hubness correction
   (``novelty_hubness: 20``: each gold question's similarity lowered by half its mean
   similarity to its 20 nearest gold questions, CSLS's gold-side term);
   ``product_centred_knn3`` — the service with ``novelty_neighbours: 3``,
   ``novelty_centring: true`` (mean of the 3 nearest gold questions after centring on the
   gold mean); ``self_estimate`` /
   ``centred_self_estimate`` — the ``product`` and ``product_centred_knn3`` models' own
   leave-one-topic-out estimates. Then :func:`novelty_all_triples`: ``embedding``,
   ``product``, ``product_hubness20`` and ``product_centred_knn3`` over all 120 triples of
   the 10 domains (one seeded gold set each), the spread that explains
   why one triple's figure says little.
2. **NMI against CLINC150** (:func:`nmi`): unsupervised topics fitted on 20 training
   questions per intent (3,000), nearest topic of the 4,500 test questions; NMI vs the 150
   intents and the 10 domains, with 150 topics and with the default rule (50); LSA + KMeans.
3. **Stable identities** (:func:`stable_ids`): 1,000 gold questions (CLINC150 training), one
   accepted question (a validation question, flagged as an accept writes it) → refit given
   the previous model; the ids kept and the agreement of the topic names given to 1,000 live
   (test) questions before/after; also after a restart (identity through JSON) and after 100
   accepted questions, and for a fit without any previous model (a fresh replica: content ids
   since the forty-eighth session; the renumbering before).
4. **Like-for-like** (:func:`like_for_like`): a gold set of 3,000 rows with supervised labels —
   2,000 CLINC150 training questions (200 from each of its 10 domains, ``topic`` = domain)
   and 1,000 general-knowledge rows (500 NQ-open + 500 XQuAD-en questions, ``topic`` =
   ``general_knowledge``) — and two query logs of 6,000 events in the gold set's mixture:
   the gold questions themselves, and unseen questions of the same topics (CLINC150
   validation/test, the other NQ-open and XQuAD questions). Each is replayed through the
   full pipeline (``run_replay``: the real drift stage, windows as in
   ``tests/acceptance/test_analytics_real_data.py``); topic alarms counted. Next to it: the
   same replay with the gold counts taken from the gold rows' own labels (today's method).
5. **Artefact size** for 1,000 gold questions.

``--embeddings minilm`` runs instead the opt-in MiniLM profile's comparison
(:func:`minilm_comparison`), every figure next to the default's (WordLlama ⊕ char n-grams)
from the same run: novelty (item 1's scenario and 10-triple mean / min / max, 60 and 300
gold questions; nearest gold question, centred k = 3 and hubness h = 20, with the models'
own estimates); embedding cost (µs of CPU per uncached question, batches of 256, one
thread); model load and topic-model fit time; the out-of-domain alarm scenario
(:func:`benchmarks.drift_streams.out_of_domain_shift` through the real replay, as
``tests/acceptance/test_scope_real_data.py`` runs it); the production-shaped gold set's novelty
self-estimate (:mod:`benchmarks.bench_production`'s first 3,000 lines, as
``tests/service/test_replay_golden.py``); and CLINC150 out-of-scope ROC AUC
(:func:`benchmarks.bench_scope.run`'s held-out questions).

``--embeddings minilm --all-triples``: :func:`novelty_all_triples` for both profiles.

Usage: ``python -m benchmarks.topic_acceptance [--embeddings minilm [--all-triples]]``.
"""

from __future__ import annotations

import json
import random
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from sklearn.cluster import KMeans
from sklearn.decomposition import TruncatedSVD
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.metrics import normalized_mutual_info_score
from sklearn.pipeline import FeatureUnion, make_pipeline
from sklearn.preprocessing import Normalizer

from benchmarks.bench_topics import load_clinc
from benchmarks.datasets import SHARED_DATA, load_xquad
from benchmarks.drift_streams import (
    DOMAINS,
    Scenario,
    ScenarioFiles,
    make_event,
    nq_questions,
    xquad_corpus,
)
from service.embeddings.model import Embedder, EmbeddingConfig, build_embedder, default_embedder
from service.evaluation.detector_quality import measure_auc
from service.topics.config import TopicConfig
from service.topics.model import TOKEN_PATTERN, TopicModel

#: Drift windows of the replays (pilot traffic, one question every ~10 s): as the analytics
#: acceptance tests — current window 1 h, gold-set comparison over the last 6 h.
DRIFT: dict[str, Any] = {
    "window_s": 3600,
    "reference_window_s": 21_600,
    "warmup_s": 21_600,
    "test_every_s": 300,
    "min_count": 100,
}
GENERAL = "general_knowledge"


def _clinc_raw(root: Path = SHARED_DATA) -> tuple[dict[str, Any], dict[str, str]]:
    data = json.loads((root / "clinc150" / "data_full.json").read_text(encoding="utf-8"))
    domains = json.loads((root / "clinc150" / "domains.json").read_text(encoding="utf-8"))
    return data, {intent: d for d, intents in domains.items() for intent in intents}


# -- representations ---------------------------------------------------------------------------


def lsa_embedder(fit_texts: Sequence[str], seed: int = 0) -> Callable[[Sequence[str]], np.ndarray]:
    """HEAD's TF-IDF/LSA representation fitted on ``fit_texts``: text → unit LSA vector."""
    words = TfidfVectorizer(token_pattern=TOKEN_PATTERN, ngram_range=(1, 2), sublinear_tf=True,
                            stop_words="english")  # fmt: skip
    chars = TfidfVectorizer(analyzer="char_wb", ngram_range=(3, 5), sublinear_tf=True, min_df=2)
    union = FeatureUnion([("words", words), ("chars", chars)])
    tfidf = union.fit_transform(list(fit_texts))
    dims = max(1, min(150, tfidf.shape[1] - 1, len(fit_texts) - 1))
    lsa = make_pipeline(svd := TruncatedSVD(dims, random_state=seed), Normalizer(copy=False))
    lsa.fit(tfidf)
    del svd
    pipeline = make_pipeline(union, lsa)
    return lambda texts: np.asarray(pipeline.transform(list(texts)), dtype=np.float32)


def _nearest_similarity(queries: np.ndarray, gold: np.ndarray) -> np.ndarray:
    return (queries @ gold.T).max(axis=1)


# -- 1. novelty --------------------------------------------------------------------------------


def _gold_sample(pool: Sequence[tuple[str, str]], n: int, rng: random.Random, stratified: bool
                 ) -> list[tuple[str, str]]:  # fmt: skip
    """``n`` of a domain's ``(text, intent)`` training pairs: a simple random sample, or
    stratified over its intents (``n // intents`` from each, the remainder from a random
    choice of intents) — the gold set of a team that writes questions for every intent."""
    if not stratified:
        return rng.sample(list(pool), n)
    by_intent: dict[str, list[tuple[str, str]]] = {}
    for text, intent in pool:
        by_intent.setdefault(intent, []).append((text, intent))
    intents = sorted(by_intent)
    extra = set(rng.sample(intents, n % len(intents)))
    return [
        pair
        for intent in intents
        for pair in rng.sample(by_intent[intent], n // len(intents) + (intent in extra))
    ]


def _novelty_case(domains: Sequence[str], per_domain: int, seed: int, embedder: Embedder,
                  product: Embedder) -> dict[str, float]:  # fmt: skip
    data, domain_of = _clinc_raw()
    out: dict[str, float] = {}
    for stratified in (False, True):
        rng = random.Random(f"novelty-{seed}-{'-'.join(domains)}" + ("-strat" * stratified))
        pairs = [pair for domain in domains for pair in _gold_sample(
            [(t, i) for t, i in data["train"] if domain_of[i] == domain], per_domain, rng,
            stratified)]  # fmt: skip
        gold = [t for t, _ in pairs]
        labels = [domain_of[i] for _, i in pairs]
        covered = {i for _, i in pairs}
        in_domain = [(t, i) for t, i in data["test"] if domain_of[i] in domains]
        negatives = [t for t, _ in in_domain]
        positives = [t for t, i in data["test"] if domain_of[i] not in domains]
        positives += [t for t, _ in data["oos_test"]]
        g = embedder.embed(gold)
        pos_sims, neg_sims = embedder.embed(positives) @ g.T, embedder.embed(negatives) @ g.T
        nearest_pos, nearest_neg = pos_sims.max(axis=1), neg_sims.max(axis=1)
        if stratified:
            out["stratified"] = measure_auc(1 - nearest_pos, 1 - nearest_neg, n_boot=0).auc
            continue
        out["embedding"] = measure_auc(1 - nearest_pos, 1 - nearest_neg, n_boot=0).auc
        seen = np.array([i in covered for _, i in in_domain])
        out["covered_intents"] = measure_auc(1 - nearest_pos, 1 - nearest_neg[seen], n_boot=0).auc
        out["intents_covered_share"] = float(seen.mean())
        top2 = [1 - np.sort(s, axis=1)[:, -2:].mean(axis=1) for s in (pos_sims, neg_sims)]
        out["knn2"] = measure_auc(top2[0], top2[1], n_boot=0).auc
        lsa = lsa_embedder(gold)
        g = lsa(gold)
        out["lsa"] = measure_auc(
            1 - _nearest_similarity(lsa(positives), g),
            1 - _nearest_similarity(lsa(negatives), g),
            n_boot=0,
        ).auc
        shipped = TopicModel.fit(gold, TopicConfig(), labels=labels, embedder=product)
        out["self_estimate"] = (shipped.novelty_quality.auc if shipped.novelty_quality
                                else float("nan"))  # fmt: skip
        score = [1 - np.array([a.neighbour for a in shipped.assign_many(texts)])
                 for texts in (positives, negatives)]  # fmt: skip
        out["product"] = measure_auc(score[0], score[1], n_boot=0).auc
        centred = TopicModel.fit(gold, CENTRED_KNN3, labels=labels, embedder=product)
        score = [1 - np.array([a.neighbour for a in centred.assign_many(texts)])
                 for texts in (positives, negatives)]  # fmt: skip
        out["product_centred_knn3"] = measure_auc(score[0], score[1], n_boot=0).auc
        out["centred_self_estimate"] = (centred.novelty_quality.auc if centred.novelty_quality
                                        else float("nan"))  # fmt: skip
        hubness = TopicModel.fit(gold, HUBNESS20, labels=labels, embedder=product)
        score = [1 - np.array([a.neighbour for a in hubness.assign_many(texts)])
                 for texts in (positives, negatives)]  # fmt: skip
        out["product_hubness20"] = measure_auc(score[0], score[1], n_boot=0).auc
    return out


#: The figures of :func:`novelty`, each per case (see the module docstring, item 1).
NOVELTY_VARIANTS = ("embedding", "covered_intents", "stratified", "knn2", "product",
                    "product_centred_knn3", "product_hubness20", "lsa", "self_estimate",
                    "centred_self_estimate", "intents_covered_share")  # fmt: skip
#: The opt-in novelty score: mean of the 3 nearest gold questions, centred on the gold mean.
CENTRED_KNN3 = TopicConfig(novelty_neighbours=3, novelty_centring=True, novelty_hubness=0)
#: The opt-in hubness correction, h = 20.
HUBNESS20 = TopicConfig(novelty_hubness=20)


def novelty(per_domain: int = 20, n_triples: int = 10, embedder: Embedder | None = None,
            product: Embedder | None = None) -> dict[str, Any]:  # fmt: skip
    """Novelty ROC AUC for the scenario domains and over ``n_triples`` seeded domain triples.

    ``embedder``: the issue's plain setup (default: WordLlama ``l2_supercat`` 256 alone,
    L2-normalised: ``build_embedder`` with ``char_weight=0``); ``product``: what the service
    embeds with (default :func:`~service.embeddings.model.build_embedder` of the default settings,
    WordLlama ⊕ hashed char n-grams at weight 0.35). Returns ``{variant}_scenario`` and
    ``{variant}_{mean,min,max}`` over the triples for every :data:`NOVELTY_VARIANTS` entry,
    and ``gold_size``.
    """
    # not default_embedder(): that is the service's mix since 0ad635c, which silently made
    # "embedding" the same figure as "product" instead of the WordLlama alone
    embedder = embedder or build_embedder(EmbeddingConfig(char_weight=0))
    product = product or build_embedder(EmbeddingConfig())
    _, domain_of = _clinc_raw()
    all_domains = sorted(set(domain_of.values()))
    main = _novelty_case(DOMAINS, per_domain, 0, embedder, product)
    rng = random.Random(f"triples-{per_domain}")
    triples = [tuple(sorted(rng.sample(all_domains, 3))) for _ in range(n_triples)]
    cases = [_novelty_case(t, per_domain, i, embedder, product) for i, t in enumerate(triples)]
    summary = {f"{k}_{stat}": float(fn([c[k] for c in cases])) if cases else float("nan")
               for k in NOVELTY_VARIANTS
               for stat, fn in (("mean", np.mean), ("min", np.min), ("max", np.max))}  # fmt: skip
    return {"gold_size": 3 * per_domain, **{f"{k}_scenario": v for k, v in main.items()},
            **summary}  # fmt: skip


def novelty_all_triples(per_domain: int = 20, embedder: Embedder | None = None,
                        product: Embedder | None = None) -> dict[str, Any]:  # fmt: skip
    """Novelty ROC AUC over *every* triple of CLINC150's 10 domains (120), one seeded random
    gold set each: how much the figure depends on which 3 domains the gold set covers.

    Per triple: ``embedding`` (WordLlama alone, the nearest gold question), ``product`` (the
    service's default :class:`TopicModel` novelty similarity, default embedder),
    ``product_hubness20`` (:data:`HUBNESS20`) and ``product_centred_knn3``
    (:data:`CENTRED_KNN3`). Returns ``{variant: {"mean", "min", "p10", "median", "p90",
    "max", "share_0.90", "share_0.94"}}`` (shares: of triples at or above that AUC) and
    ``{"gold_size", "triples"}``.
    """
    import itertools

    embedder = embedder or build_embedder(EmbeddingConfig(char_weight=0))
    product = product or build_embedder(EmbeddingConfig())
    data, domain_of = _clinc_raw()
    aucs: dict[str, list[float]] = {"embedding": [], "product": [], "product_hubness20": [],
                                    "product_centred_knn3": []}  # fmt: skip
    for domains in itertools.combinations(sorted(set(domain_of.values())), 3):
        rng = random.Random(f"novelty-all-{'-'.join(domains)}")
        gold = [t for d in domains for t, _ in _gold_sample(
            [(t, i) for t, i in data["train"] if domain_of[i] == d], per_domain, rng, False)
        ]  # fmt: skip
        negatives = [t for t, i in data["test"] if domain_of[i] in domains]
        positives = [t for t, i in data["test"] if domain_of[i] not in domains]
        positives += [t for t, _ in data["oos_test"]]
        g = embedder.embed(gold)
        near = [_nearest_similarity(embedder.embed(x), g) for x in (positives, negatives)]
        aucs["embedding"].append(measure_auc(1 - near[0], 1 - near[1], n_boot=0).auc)
        for name, config in (("product", TopicConfig()), ("product_hubness20", HUBNESS20),
                             ("product_centred_knn3", CENTRED_KNN3)):  # fmt: skip
            model = TopicModel.fit(gold, config, embedder=product)
            score = [
                1 - np.array([a.neighbour for a in model.assign_many(x)])
                for x in (positives, negatives)
            ]
            aucs[name].append(measure_auc(score[0], score[1], n_boot=0).auc)
    out: dict[str, Any] = {"gold_size": 3 * per_domain, "triples": len(aucs["product"])}
    for name, values in aucs.items():
        v = np.array(values)
        out[name] = {
            "mean": v.mean(),
            "min": v.min(),
            "p10": np.percentile(v, 10),
            "median": np.median(v),
            "p90": np.percentile(v, 90),
            "max": v.max(),
            "share_0.90": (v >= 0.90).mean(),
            "share_0.94": (v >= 0.94).mean(),
        }
    return out  # fmt: skip


# -- 2. NMI ------------------------------------------------------------------------------------


def nmi(embedder: Embedder | None = None) -> list[dict[str, Any]]:
    """NMI of the nearest topic vs intents/domains on CLINC150's in-scope test questions."""
    embedder = embedder or default_embedder()
    clinc = load_clinc()
    train = [t for t, _ in clinc["train"]]
    test = [t for t, _ in clinc["test"]]
    intents = [i for _, i in clinc["test"]]
    domains = [clinc["domain"][i] for i in intents]
    rows = []
    for n_topics in (150, None):
        model = TopicModel.fit(train, TopicConfig(n_topics=n_topics, novelty_percentile=0),
                               embedder=embedder)  # fmt: skip
        nearest = [a.nearest for a in model.assign_many(test)]
        rows.append({"method": "embedding", "topics": len(model.topics),
                     "nmi_intents": normalized_mutual_info_score(intents, nearest),
                     "nmi_domains": normalized_mutual_info_score(domains, nearest)})  # fmt: skip
        k = len(model.topics)
        embed = lsa_embedder(train)
        kmeans = KMeans(k, n_init=3, random_state=0).fit(embed(train))
        nearest_lsa = kmeans.predict(embed(test))
        rows.append({"method": "lsa", "topics": k,
                     "nmi_intents": normalized_mutual_info_score(intents, nearest_lsa),
                     "nmi_domains": normalized_mutual_info_score(domains, nearest_lsa),
                     })  # fmt: skip
    return rows


# -- 3. stable ids -----------------------------------------------------------------------------


def _agreement(before: TopicModel, after: TopicModel, live: Sequence[str]) -> float:
    a = [x.nearest for x in before.assign_many(live)]
    b = [x.nearest for x in after.assign_many(live)]
    return float(np.mean([x == y for x, y in zip(a, b, strict=True)]))


def stable_ids(n_gold: int = 1000, n_live: int = 1000, embedder: Embedder | None = None
               ) -> dict[str, Any]:  # fmt: skip
    """Topic ids and live assignments before/after refits (see the module docstring)."""
    embedder = embedder or default_embedder()
    data, _ = _clinc_raw()
    rng = random.Random("stable-ids")
    train = [t for t, _ in data["train"]]
    gold = rng.sample(train, n_gold)
    live = rng.sample([t for t, _ in data["test"]], n_live)
    accepted = rng.sample([t for t, _ in data["val"]], 100)
    config = TopicConfig()
    start = time.perf_counter()
    before = TopicModel.fit(gold, config, embedder=embedder)
    fit_s = time.perf_counter() - start
    # accepted rows are flagged as an accept writes them (harvest_id): they join the topics
    flag = [False] * len(gold)
    one = TopicModel.fit([*gold, accepted[0]], config, embedder=embedder, previous=before,
                         accepted=[*flag, True])  # fmt: skip
    identity = json.loads(json.dumps(before.identity()))
    restart = TopicModel.fit(gold, config, embedder=embedder, previous=identity)
    hundred = TopicModel.fit([*gold, *accepted], config, embedder=embedder, previous=before,
                             accepted=[*flag, *[True] * len(accepted)])  # fmt: skip
    # a replica fitting the same gold set without any previous model (content ids)
    cold = TopicModel.fit([*gold, accepted[0]], config, embedder=embedder,
                          accepted=[*flag, True])  # fmt: skip
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "topics.model"
        before.save(path)
        size_mb = path.stat().st_size / 1e6
    old = set(before.names)
    return {
        "topics": len(before.topics),
        "fit_s": fit_s,
        "artefact_mb": size_mb,
        "accept_one_ids_kept": len(old & set(one.names)) / len(old),
        "accept_one_agreement": _agreement(before, one, live),
        "restart_ids_kept": len(old & set(restart.names)) / len(old),
        "restart_agreement": _agreement(before, restart, live),
        "accept_100_ids_kept": len(old & set(hundred.names)) / len(old),
        "accept_100_agreement": _agreement(before, hundred, live),
        "accept_100_new_topics": len(set(hundred.names) - old),
        "cold_refit_agreement": _agreement(before, cold, live),
    }


# -- 4. like-for-like --------------------------------------------------------------------------


Rows = list[dict[str, Any]]


def mixed_gold(per_domain: int = 200, n_general: int = 1000, seed: int = 0
               ) -> tuple[Rows, dict[str, list[str]], Rows]:  # fmt: skip
    """Gold rows (CLINC150 domains + general knowledge, ``topic`` labelled), the unseen
    questions of each topic, and a corpus (XQuAD-en paragraphs and one passage per intent)."""
    data, domain_of = _clinc_raw()
    rng = random.Random(f"mixed-{seed}")
    rows: list[dict[str, Any]] = []
    unseen: dict[str, list[str]] = {}
    for domain in sorted(set(domain_of.values())):
        train = [(t, i) for t, i in data["train"] if domain_of[i] == domain]
        for j, (text, intent) in enumerate(rng.sample(train, per_domain)):
            rows.append({"id": f"clinc-{domain}-{j}", "question": text, "language": "en",
                         "gold": [f"intent-{intent}"], "topic": domain})  # fmt: skip
        unseen[domain] = [t for s in ("val", "test") for t, i in data[s] if domain_of[i] == domain]
    nq = nq_questions()
    _, xquad = load_xquad("en")
    nq_order = rng.sample(range(len(nq)), len(nq))
    xq_order = rng.sample(range(len(xquad)), len(xquad))
    half = n_general // 2
    for j in nq_order[:half]:
        rows.append({"id": f"nq-{j}", "question": nq[j], "gold": [f"nq-open-{j}"],
                     "language": "en", "topic": GENERAL})  # fmt: skip
    for j in xq_order[:half]:
        qid, question, passage = xquad[j]
        rows.append({"id": qid, "question": question, "gold": [passage], "language": "en",
                     "topic": GENERAL})  # fmt: skip
    unseen[GENERAL] = [nq[j] for j in nq_order[half:]] + [xquad[j][1] for j in xq_order[half:]]
    corpus = list(xquad_corpus())
    corpus += [
        {"id": f"intent-{i}", "text": i.replace("_", " "), "doc": d, "doc_type": "faq"}
        for i, d in sorted(domain_of.items())
    ]
    return rows, unseen, corpus


def mixed_stream(kind: str, n: int = 6000, seed: int = 0) -> Scenario:
    """``kind`` = ``"gold"`` (the gold questions, drawn uniformly) or ``"unseen"`` (unseen
    questions of each topic, topics drawn in the gold set's shares)."""
    rows, unseen, corpus = mixed_gold(seed=seed)
    rng = random.Random(f"mixed-stream-{kind}-{seed}")
    topics = [row["topic"] for row in rows]
    events = []
    for i in range(n):
        if kind == "gold":
            question = rows[rng.randrange(len(rows))]["question"]
        else:
            pool = unseen[topics[rng.randrange(len(topics))]]
            question = pool[rng.randrange(len(pool))]
        events.append(make_event(f"mixed-{kind}", i, question, rng))
    return Scenario(f"mixed-{kind}", events, rows, corpus, None)


def replay_topic_alarms(scenario: Scenario, out: Path, labels_as_gold_counts: bool = False
                        ) -> dict[str, Any]:  # fmt: skip
    """Replay ``scenario`` through the full pipeline; its topic alarms and shares.

    ``labels_as_gold_counts`` reproduces today's reference: the gold rows' own labels as the
    gold counts (not the assignment live traffic gets)."""
    from collections import Counter

    import service.runtime.analytics as analytics
    from service.jobs.replay import run_replay
    from service.settings import load_settings

    files = scenario.write(out)
    settings = load_settings(None, gold_set=files.gold, corpus=files.corpus,
                             pipeline={"max_batch_wait_ms": 0},
                             analytics={"scope_retriever": None, "drift": DRIFT})  # fmt: skip
    original = analytics._topic_counts
    if labels_as_gold_counts:
        analytics._topic_counts = lambda gold, model: dict(Counter(q.topic for q in gold))  # type: ignore[assignment]
    try:
        report = run_replay(settings, files.events, None, None)
    finally:
        analytics._topic_counts = original  # type: ignore[assignment]
    drift = report["analytics"]["drift"]
    # (an open alarm's widening, ``widened``, is no new alarm)
    found = [a for a in drift["alarms"] if a["state"] == "drift" and a["dimension"] == "topic"
             and not a.get("widened")]  # fmt: skip
    live, gold = drift["topic"]["live_counts"], drift["topic"]["gold_counts"]
    return {
        "events": report["processed"],
        "topic_alarms": len(found),
        "first_alarm_after": found[0]["after_events"] if found else None,
        "live_novel_share": live.get("novel", 0) / max(1, sum(live.values())),
        "gold_novel_share": gold.get("novel", 0) / max(1, sum(gold.values())),
    }


def like_for_like(n: int = 6000) -> list[dict[str, Any]]:
    """Topic alarms on the two mixed streams, like-for-like vs today's gold counts."""
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for kind in ("gold", "unseen"):
            scenario = mixed_stream(kind, n)
            for today in (False, True):
                found = replay_topic_alarms(scenario, Path(tmp) / f"{kind}-{today}", today)
                rows.append({"stream": kind, "gold_counts": "labels (today)" if today
                             else "like-for-like", **found})  # fmt: skip
    return rows


# -- 6. The opt-in MiniLM profile ------------------------------------------------------------

#: The embedding profiles :func:`minilm_comparison` compares: the default (WordLlama ⊕ char
#: n-grams 0.35) and ``backend: minilm`` (all-MiniLM-L6-v2 ⊕ the same char block).
PROFILES: dict[str, EmbeddingConfig] = {
    "default": EmbeddingConfig(),
    "minilm": EmbeddingConfig(backend="minilm"),
}
#: The novelty settings compared per profile (``analytics.topics``).
NOVELTY_SETTINGS: dict[str, dict[str, Any]] = {
    "nearest": {},
    "centred_knn3": {"novelty_neighbours": 3, "novelty_centring": True},
    "hubness20": {"novelty_hubness": 20},
}


def embedding_cost(configs: dict[str, EmbeddingConfig], n: int = 2048, repeats: int = 3
                   ) -> dict[str, dict[str, float]]:  # fmt: skip
    """Per profile: ``load_s`` (build + first call, wall), ``us_cpu`` (µs of process CPU
    per uncached CLINC150 test question, batches of 256, best of ``repeats``, under
    ``native_threads(1)`` as the live path runs) and ``us_wall``. Profiles take turns."""
    from service.runtime.threads import native_threads

    data, _ = _clinc_raw()
    texts = [t for t, _ in data["test"]][:n]
    embedders: dict[str, Embedder] = {}
    out: dict[str, dict[str, float]] = {}
    for name, config in configs.items():
        started = time.perf_counter()
        embedders[name] = build_embedder(config.model_copy(update={"cache_size": 0}))
        embedders[name].embed(["warm-up"])
        out[name] = {"load_s": time.perf_counter() - started, "us_cpu": float("inf"),
                     "us_wall": float("inf")}  # fmt: skip
    with native_threads(1):
        for _ in range(repeats):
            for name, embedder in embedders.items():
                cpu, wall = time.process_time(), time.perf_counter()
                for i in range(0, len(texts), 256):
                    embedder.embed(texts[i : i + 256])
                cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
                out[name]["us_cpu"] = min(out[name]["us_cpu"], cpu / len(texts) * 1e6)
                out[name]["us_wall"] = min(out[name]["us_wall"], wall / len(texts) * 1e6)
    return out


def _replay_with(files: ScenarioFiles, out: Path, embeddings: EmbeddingConfig,
                 topics: dict[str, Any]) -> tuple[dict[str, Any], float]:  # fmt: skip
    """:func:`~service.jobs.replay.run_replay` of written scenario files with default settings
    but ``analytics.embeddings`` and ``analytics.topics``; the report and its wall time."""
    from service.jobs.replay import run_replay
    from service.settings import load_settings

    settings = load_settings(None, gold_set=files.gold, corpus=files.corpus,
                             analytics={"embeddings": embeddings.model_dump(mode="json"),
                                        "topics": topics})  # fmt: skip
    out.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    report = run_replay(settings, files.events, None, out / "dlq.jsonl")
    return report, time.perf_counter() - started


def _novelty_summary(report: dict[str, Any]) -> dict[str, Any]:
    novelty = report["analytics"]["novelty"]
    quality = novelty.get("quality") or {}
    return {"novel_share": novelty.get("share"), "novelty_auc": quality.get("auc"),
            "novelty_low": quality.get("auc_low"), "novelty_high": quality.get("auc_high"),
            "novelty_uncalibrated": novelty.get("uncalibrated")}  # fmt: skip


def out_of_domain_alarms(profiles: dict[str, tuple[EmbeddingConfig, dict[str, Any]]]
                         ) -> dict[str, dict[str, Any]]:  # fmt: skip
    """Per profile (embeddings, topics): the out-of-domain alarm scenario through the replay
    — alarms before the change, the first after it (events after the change), the live share
    flagged novel before / after the change, the novelty self-estimate, and the wall time."""
    from benchmarks.bench_scope import drift_alarms
    from benchmarks.drift_streams import out_of_domain_shift

    scenario = out_of_domain_shift()
    change = scenario.change_at or 0
    results: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        files = scenario.write(Path(tmp) / "scenario")
        for name, (embeddings, topics) in profiles.items():
            report, wall = _replay_with(files, Path(tmp) / name, embeddings, topics)
            found = drift_alarms(report)
            after = [a for a in found if a["after_events"] > change]
            results[name] = {
                "alarms_before_change": len(found) - len(after),
                "first_alarm_after_change": (
                    f"{after[0]['dimension']} +{after[0]['after_events'] - change}"
                    if after else None),
                **_novelty_summary(report),
                "wall_s": wall,
            }  # fmt: skip
    return results


def production_self_estimate(profiles: dict[str, tuple[EmbeddingConfig, dict[str, Any]]],
                             lines: int = 3_000) -> dict[str, dict[str, Any]]:  # fmt: skip
    """Per profile: the novelty self-estimate the service reports on the production-shaped
    gold set (:mod:`benchmarks.bench_production`, seed 0, its first ``lines`` lines, as the
    golden-report test), with the replay's wall time (start-up included)."""
    from benchmarks.bench_production import write_gold_and_corpus, write_log

    results: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        gold, corpus = write_gold_and_corpus(work, seed=0)
        log = write_log(work / "events.jsonl", lines, seed=0)
        files = ScenarioFiles(log.path, gold, corpus)
        for name, (embeddings, topics) in profiles.items():
            report, wall = _replay_with(files, work / name, embeddings, topics)
            results[name] = {**_novelty_summary(report), "wall_s": wall}
    return results


def minilm_all_triples() -> None:
    """:func:`novelty_all_triples` (all 120 domain triples, 60 and 300 gold questions) for
    both :data:`PROFILES`, same run: how often each reaches issue 17's targets."""
    for per_domain in (20, 100):
        for name, config in PROFILES.items():
            every = novelty_all_triples(
                per_domain,
                embedder=build_embedder(config.model_copy(update={"char_weight": 0.0})),
                product=build_embedder(config),
            )
            print(f"  all 120 triples, {every['gold_size']} gold, {name}: mean, min/p10/median/"
                  "p90/max, share >= 0.90, share >= 0.94")  # fmt: skip
            for k in ("embedding", "product", "product_hubness20", "product_centred_knn3"):
                v = every[k]
                print(f"    {k:<22} {v['mean']:.3f}, {v['min']:.3f}/{v['p10']:.3f}/"
                      f"{v['median']:.3f}/{v['p90']:.3f}/{v['max']:.3f}, "
                      f"{v['share_0.90']:.2f}, {v['share_0.94']:.2f}")  # fmt: skip


def minilm_comparison() -> None:
    """Print the MiniLM profile's figures next to the default's (module docstring)."""
    from benchmarks.bench_scope import run as scope_run

    embedders = {name: build_embedder(config) for name, config in PROFILES.items()}
    plain = {
        "default": build_embedder(EmbeddingConfig(char_weight=0)),
        "minilm": build_embedder(EmbeddingConfig(backend="minilm", char_weight=0)),
    }
    print("6. MiniLM profile vs default, same run")
    for name, cost in embedding_cost(PROFILES).items():
        print(f"  cost {name:<8} load {cost['load_s']:.2f} s; {cost['us_cpu']:.0f} µs CPU, "
              f"{cost['us_wall']:.0f} µs wall per uncached question (batches of 256, "
              "1 thread)")  # fmt: skip
    data, domain_of = _clinc_raw()
    gold = [t for d in DOMAINS for t, i in data["train"] if domain_of[i] == d][::5][:60]
    for name, embedder in embedders.items():
        started = time.perf_counter()
        TopicModel.fit(gold, TopicConfig(), embedder=embedder)
        print(f"  fit {name:<8} {time.perf_counter() - started:.2f} s (60 gold questions, "
              "embedding included)")  # fmt: skip
    keys = ("embedding", "product", "product_centred_knn3", "product_hubness20",
            "self_estimate", "centred_self_estimate")  # fmt: skip
    for per_domain in (20, 100):
        rows = {name: novelty(per_domain, embedder=plain[name], product=embedders[name])
                for name in PROFILES}  # fmt: skip
        print(f"  novelty, {3 * per_domain} gold questions: scenario; 10 triples mean/min/max")
        for k in keys:
            print(f"    {k:<22} " + " | ".join(
                f"{name} {r[k + '_scenario']:.3f}; {r[k + '_mean']:.3f}/{r[k + '_min']:.3f}/"
                f"{r[k + '_max']:.3f}" for name, r in rows.items()))  # fmt: skip
    profiles = {f"{name}+{setting}": (PROFILES[name], topics)
                for name in PROFILES for setting, topics in NOVELTY_SETTINGS.items()}  # fmt: skip
    for name, row in out_of_domain_alarms(profiles).items():
        print(f"  out-of-domain scenario {name:<22} {json.dumps(row, default=str)}")
    for name, row in production_self_estimate(profiles).items():
        print(f"  production-shaped gold {name:<22} {json.dumps(row, default=str)}")
    for name, embedder in embedders.items():
        figures = scope_run(embedder=embedder)
        print(f"  CLINC150 out-of-scope {name:<8} bm25 held-out "
              f"{figures['bm25']['held_out_auc']['auc']:.3f}; embedding calibration "
              f"{figures['embedding']['calibration_auc']['auc']:.3f}, held-out "
              f"{figures['embedding']['held_out_auc']['auc']:.3f}")  # fmt: skip


def main(argv: Sequence[str] | None = None) -> None:
    import argparse

    parser = argparse.ArgumentParser(description="Issue 17's topic acceptance figures.")
    parser.add_argument("--embeddings", choices=["default", "minilm"], default="default",
                        help="minilm: the MiniLM profile next to the default (section 6) "
                             "instead of sections 1-5")  # fmt: skip
    parser.add_argument("--all-triples", action="store_true",
                        help="with --embeddings minilm: all 120 triples")  # fmt: skip
    args = parser.parse_args(argv)
    if args.embeddings == "minilm":
        if args.all_triples:
            minilm_all_triples()
        else:
            minilm_comparison()
        return
    for per_domain in (20, 100):
        row = novelty(per_domain)
        print(
            f"novelty, {row['gold_size']} gold questions, ROC AUC on {'/'.join(DOMAINS)}; "
            "10 triples mean/min/max:"
        )
        for k in NOVELTY_VARIANTS:
            print(
                f"  {k:<22} {row[k + '_scenario']:.3f}; {row[k + '_mean']:.3f}/"
                f"{row[k + '_min']:.3f}/{row[k + '_max']:.3f}"
            )
        every = novelty_all_triples(per_domain)
        print(f"novelty, {every['gold_size']} gold questions, all {every['triples']} triples: "
              "mean, min/p10/median/p90/max, share >= 0.90, share >= 0.94:")  # fmt: skip
        for k in ("embedding", "product", "product_centred_knn3"):
            v = every[k]
            print(f"  {k:<22} {v['mean']:.3f}, {v['min']:.3f}/{v['p10']:.3f}/{v['median']:.3f}/"
                  f"{v['p90']:.3f}/{v['max']:.3f}, {v['share_0.90']:.2f}, "
                  f"{v['share_0.94']:.2f}")  # fmt: skip
    for row in nmi():
        print(
            f"NMI {row['method']:<9} {row['topics']:>3} topics: intents "
            f"{row['nmi_intents']:.3f}, domains {row['nmi_domains']:.3f}"
        )
    ids = stable_ids()
    print("stable ids: " + ", ".join(f"{k} {v:.3f}" if isinstance(v, float) else f"{k} {v}"
                                     for k, v in ids.items()))  # fmt: skip
    for row in like_for_like():
        print(
            f"like-for-like, {row['stream']:<6} stream, gold counts {row['gold_counts']:<14}: "
            f"{row['topic_alarms']} topic alarms (first after {row['first_alarm_after']}) in "
            f"{row['events']} events; novel live {row['live_novel_share']:.3f} vs gold "
            f"{row['gold_novel_share']:.3f}"
        )


if __name__ == "__main__":
    main()
