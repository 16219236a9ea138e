"""Topic ids under accepts, restarts and hand edits, on real questions (trial 46 F2).

A gold set of CLINC150 questions (``--intents`` intents of two domains, ``--rows`` written
questions each, train split, seeded), live traffic of the same intents (val and test splits),
unsupervised topics (default configuration, WordLlama). Measured, per seed:

* accepts: 1, then 5 in-domain suggestions (other train questions of the gold set's intents)
  accepted one by one, each refit given the model it replaces (a long-running replica):
  the share of traffic whose topic name is unchanged; and the drift test the topic windows
  would run — the first half of the traffic counted under the model before, the second
  under the model after (``chi2_homogeneity``, alarm at p < 0.001 and JSD ≥ 0.05, the
  defaults) — unless the model's :meth:`assignment_key` changed and the windows restart
  (``--branch`` only: main has no such restart);
* restart: a replica fitted afresh (no previous model) on the final gold set against the
  long-running one: share of traffic given the same topic name;
* hand edits of the written rows (sort, reverse, remove one, add one; remove/add averaged over
  ``--edits`` rows): share kept by the long-running replica, and its agreement with a fresh one;
* a new subject: ``--new`` BANKING77 ``card_arrival`` questions accepted: does a topic hold
  most of them, and what share of that subject's traffic (BANKING77 test) it takes.

Run from a worktree: ``PYTHONPATH=$PWD python -m benchmarks.topic_ids --seeds 3``.
"""

from __future__ import annotations

import argparse
import csv
import json
import random
import statistics
from collections import Counter
from pathlib import Path
from typing import Any

from service.data.goldset import GoldSet
from service.drift.distances import js_divergence
from service.drift.stats_tests import chi2_homogeneity
from service.embeddings.model import default_embedder
from service.records import GoldQuestion
from service.runtime.analytics import fit_topic_model
from service.topics.config import TopicConfig
from service.topics.model import TopicModel

DATA = Path("/work/shared/data")


def _gold(texts: list[str], accepted: list[str]) -> GoldSet:
    rows = [GoldQuestion(f"q-{i}", t, ("p-1",)) for i, t in enumerate(texts)]
    rows += [GoldQuestion(f"a-{i}", t, ("p-1",), harvest_id=f"c-{i}")
             for i, t in enumerate(accepted)]  # fmt: skip
    return GoldSet(tuple(rows))


def _names(model: TopicModel, traffic: list[str]) -> list[str]:
    return [a.nearest for a in model.assign_many(traffic)]


def _same(a: list[str], b: list[str]) -> float:
    return sum(x == y for x, y in zip(a, b, strict=True)) / len(a)


def _alarm(before: list[str], after: list[str], restarted: bool) -> dict[str, Any]:
    if restarted:
        return {"alarm": False, "restarted": True}
    half = len(before) // 2
    ref, cur = Counter(before[:half]), Counter(after[half:])
    test = chi2_homogeneity(ref, cur)
    jsd = js_divergence(ref, cur)
    return {"alarm": bool(test.p_value < 0.001 and jsd >= 0.05), "p": float(test.p_value),
            "jsd": round(jsd, 4), "restarted": False}  # fmt: skip


def _key(model: TopicModel) -> str | None:
    fn = getattr(model, "assignment_key", None)
    return fn() if fn is not None else None


def run(seed: int, intents: int, rows: int, new: int, edits: int) -> dict[str, Any]:
    data = json.loads((DATA / "clinc150/data_full.json").read_text())
    domains = json.loads((DATA / "clinc150/domains.json").read_text())
    rng = random.Random(seed)
    pair = rng.sample(["banking", "credit_cards", "kitchen_and_dining", "home", "travel",
                       "utility", "work", "auto_and_commute"], 2)  # fmt: skip
    chosen = rng.sample([i for d in pair for i in domains[d]], intents)
    by: dict[str, list[str]] = {}
    for text, intent in data["train"]:
        by.setdefault(intent, []).append(text)
    written, spare = [], []
    for intent in chosen:
        texts = rng.sample(by[intent], len(by[intent]))
        written += texts[:rows]
        spare += texts[rows : rows + 2]
    rng.shuffle(written)
    rng.shuffle(spare)
    traffic = [t for split in ("val", "test") for t, i in data[split] if i in chosen]
    rng.shuffle(traffic)
    with (DATA / "banking77/train.csv").open() as f:
        arrival = [r["text"] for r in csv.DictReader(f) if r["category"] == "card_arrival"]
    with (DATA / "banking77/test.csv").open() as f:
        arrival_traffic = [r["text"] for r in csv.DictReader(f) if r["category"] == "card_arrival"]
    embedder = default_embedder()
    config = TopicConfig()

    def fit(gold: GoldSet, previous: Any) -> TopicModel:
        return fit_topic_model(gold, (), config, embedder=embedder, previous=previous)

    out: dict[str, Any] = {"seed": seed, "domains": pair, "written": len(written),
                           "traffic": len(traffic)}  # fmt: skip
    m0 = fit(_gold(written, []), None)
    t0 = _names(m0, traffic)
    out["topics"] = len(m0.names)
    model, names, accepted = m0, t0, []
    for step, count in (("accept_1", 1), ("accept_5", 4)):
        for _ in range(count):
            accepted.append(spare[len(accepted)])
            nxt = fit(_gold(written, accepted), model)
            t = _names(nxt, traffic)
            restarted = _key(nxt) is not None and _key(nxt) != _key(model)
            alarm = _alarm(names, t, restarted)
            model, names = nxt, t
        out[step] = {"kept": round(_same(t0, names), 4), "topics": len(model.names), **alarm}
    fresh = fit(_gold(written, accepted), None)
    out["fresh_agreement"] = round(_same(names, _names(fresh, traffic)), 4)
    # hand edits of the written rows (no accepts), long-running replica given m0
    edits_out: dict[str, Any] = {}
    variants: dict[str, list[list[str]]] = {
        "sort": [sorted(written)], "reverse": [written[::-1]],
        "remove_one": [written[:i] + written[i + 1:] for i in rng.sample(range(len(written)),
                                                                          edits)],
        "add_one": [[*written, spare[-1 - j]] for j in range(edits)],
    }  # fmt: skip
    for name, golds in variants.items():
        kept, agree = [], []
        for texts in golds:
            edited = fit(_gold(texts, []), m0)
            t = _names(edited, traffic)
            kept.append(_same(t0, t))
            agree.append(_same(t, _names(fit(_gold(texts, []), None), traffic)))
        edits_out[name] = {"kept": round(statistics.mean(kept), 4),
                           "kept_min": round(min(kept), 4),
                           "fresh_agreement": round(statistics.mean(agree), 4)}  # fmt: skip
    out["edits"] = edits_out
    # a new subject arriving only through accepts
    subject = rng.sample(arrival, new)
    grown = fit(_gold(written, subject), m0)
    on_subject = Counter(_names(grown, subject))
    top, held = on_subject.most_common(1)[0]
    new_topic = top not in m0.names
    subject_traffic = Counter(_names(grown, arrival_traffic))
    out["new_subject"] = {
        "accepted": new, "own_topic": new_topic, "held": held,
        "traffic_share": round(subject_traffic[top] / len(arrival_traffic), 4),
        "old_traffic_kept": round(_same(t0, _names(grown, traffic)), 4),
    }  # fmt: skip
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--intents", type=int, default=8)
    parser.add_argument("--rows", type=int, default=4)
    parser.add_argument("--new", type=int, default=6)
    parser.add_argument("--edits", type=int, default=5)
    args = parser.parse_args()
    for seed in range(args.seeds):
        print(json.dumps(run(seed, args.intents, args.rows, args.new, args.edits)), flush=True)


if __name__ == "__main__":
    main()
