"""Harvesting's acceptance on real data (issue 6), through ``goldwatch replay``'s full pipeline.

The set-up:

* **Gold set**: 60 CLINC150 *train* questions, 20 from each of three domains
  (:data:`GOLD_DOMAINS`, ``topic`` = domain, ``language: en``), plus 20 CLINC150 ``oos_val``
  questions as unanswerable rows (``gold: []``, ``topic: out_of_scope``). The unanswerable
  rows are there because the out-of-scope stage calibrates its threshold on answerable *and*
  unanswerable gold questions (without them it is off, and nothing could flag an out-of-scope
  question as such). Corpus: one passage per intent of the three domains (its name and five
  other train questions), as :func:`benchmarks.drift_streams._clinc_gold` builds it.
* **Live traffic** (~10,100 schema-v1 events, one every ~10 s of event time from 2026-01-01,
  shuffled): the 4,500 CLINC150 *test* questions of all 10 domains, its 1,000 ``oos_test``
  questions, the 3,080 BANKING77 test questions, and Hinglish-TOP ``cs_query`` lines making
  15 % of the whole. Every question is answered (the assistant never says "I don't know",
  so out-of-scope questions are *answered* out of scope).
* **Ground truth** per question, kept in the test: its domain (CLINC domain; ``banking77``;
  ``out_of_scope``; ``hinglish`` for Hinglish-TOP lines) and language (``hi-Latn`` for
  Hinglish-TOP, else ``en``), keyed by the question's text normalised independently
  (:func:`key`). Missing from the gold set: the seven other CLINC domains, ``banking77`` and
  the language ``hi-Latn`` (nine in all; out-of-scope questions have gold rows).

What is asserted:

* the top 100 suggestions, in the order ``GET /v1/gold-candidates`` lists them
  (:meth:`service.harvest.labelling.Labelling.list`), cover ≥ 90 % of the nine;
* no two of them are near-duplicates that ask the same question: of the pairs at
  character-trigram Jaccard ≥ 0.6, computed here on an independent normalisation, not with
  the harvest code's own index, none asks the same question by harvest's merge rule
  (:mod:`service.text.wording`: same numbers, negation, content words, question word);
  a pair it tells apart ("abhi" / "kal temperature kya hai") is two questions;
* out-of-scope questions are flagged as such. *Flagged* means the suggestion carries the
  reason ``answered_out_of_scope`` (the out-of-scope stage judged it unanswerable from the
  corpus and the assistant answered anyway), or its topic is ``out_of_scope`` (nearest to the
  gold set's unanswerable questions) or ``novel`` (far from every gold question). Every
  suggestion made from a CLINC out-of-scope question that the pipeline labels with a language
  of the gold set must be flagged; one labelled with another language gets no out-of-scope
  verdict (F1) and must be a coverage gap instead, and such are few. Out-of-scope events
  must end in a flagged suggestion at least twice as often as in-domain events do;
* replaying the same traffic again (the file replaced by the same events in another order,
  same state file) changes no suggestion: same ids, same records;
* two replicas (two independent pipelines over disjoint halves of the traffic, as two
  consumers of one group would split it) publishing to one compacted topic on a real Tansu
  broker leave one record per key and per suggestion id, and the top 100 read back from the
  topic have no near-duplicates that ask the same question.

Figures (``pytest -s``; deterministic): printed by each test, summed up in its docstring.
"""

from __future__ import annotations

import csv
import json
import random
import re
import uuid
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from itertools import combinations
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from benchmarks.datasets import SHARED_DATA
from benchmarks.drift_streams import _clinc, _clinc_gold, hinglish_queries, make_event, write_jsonl
from consumers.harvest_sink import KafkaCandidateSink
from service.events import QueryLogEvent
from service.harvest.config import HarvestConfig
from service.harvest.labelling import Labelling
from service.harvest.merge import merge_records
from service.harvest.store import MemoryCandidates, StateStoreCandidates
from service.harvest.text import comparison_form
from service.jobs.replay import run_replay
from service.runtime.live import build_live
from service.settings import Settings, load_settings
from service.settings.kafka import KafkaSourceConfig
from service.state import StateStore
from service.text.wording import disagreement, wording
from tests.acceptance.conftest import read_topic
from tests.kafka_broker import TansuBroker

pytestmark = pytest.mark.slow

GOLD_DOMAINS: tuple[str, ...] = ("travel", "kitchen_and_dining", "work")
GOLD_SIZE = 60
N_UNANSWERABLE = 20
HINGLISH_SHARE = 0.15
TOP = 100
#: Trigram Jaccard from which two questions count as near-duplicates (the issue's bar).
NEAR_DUPLICATE = 0.6
#: The assistant's answer to every question (not a refusal).
ANSWER = "Here is what I found about that."
OUT_OF_SCOPE = "out_of_scope"
#: Topic labels that say "unlike the answerable gold questions".
OUT_OF_SCOPE_TOPICS = frozenset({OUT_OF_SCOPE, "novel"})
PIPELINE: dict[str, Any] = {"max_batch_wait_ms": 0}
#: The live service's default bound on new questions per batch (48), which the figures below
#: were measured with.
SHEDDING: dict[str, Any] = {
    "max_new_per_batch": HarvestConfig.model_fields["max_new_per_batch"].default
}

Label = tuple[str, str]  # (domain, language)


def key(text: str) -> str:
    """The test's own normalisation: case-folded, runs of non-word characters → one space."""
    return re.sub(r"[\W_]+", " ", text.casefold()).strip()


def trigram_set(text: str) -> frozenset[str]:
    """Character trigrams of ``" " + key(text) + " "`` (the test's own, as ``str``)."""
    padded = f" {key(text)} "
    return frozenset(padded[i : i + 3] for i in range(len(padded) - 2))


def near_duplicate_pairs(texts: Sequence[str]) -> list[tuple[str, str, float]]:
    """Pairs of ``texts`` whose trigram Jaccard is at least :data:`NEAR_DUPLICATE`."""
    grams = [trigram_set(t) for t in texts]
    found = []
    for (i, a), (j, b) in combinations(enumerate(grams), 2):
        score = len(a & b) / len(a | b)
        if score >= NEAR_DUPLICATE:
            found.append((texts[i], texts[j], score))
    return found


def same_question(pairs: Sequence[tuple[str, str, float]]) -> list[tuple[str, str, float]]:
    """The near-duplicate ``pairs`` (:func:`near_duplicate_pairs`) that ask the same question
    by harvest's merge rule (:func:`service.text.wording.disagreement` of the two
    questions' ``comparison_form`` is ``None``: same numbers, negation, content words and
    question word). Those are duplicates; a pair the rule tells apart ("abhi" / "kal", "5
    baje" / "4 baje") asks two questions and both belong in a list of questions to label.

    Pairs of this traffic: two the stage merges into one suggestion (two suggestions when
    its near-duplicate merge is turned off), two it keeps apart.

    >>> kept = same_question([
    ...     ("abhi temperature kitna hai ?", "abhi temperature kya hai ?", 0.72),
    ...     ("my current location is what", "what is my current location", 0.86),
    ...     ("abhi temperature kya hai ?", "Kal ka temperature kya hai", 0.63),
    ...     ("subha 5 baje ke liye alarm set karen", "subah 4 baje ke liye alarm set kardo", 0.6),
    ... ])
    >>> [(a, b) for a, b, _ in kept]  # doctest: +NORMALIZE_WHITESPACE
    [('abhi temperature kitna hai ?', 'abhi temperature kya hai ?'),
     ('my current location is what', 'what is my current location')]
    """
    return [
        (a, b, score)
        for a, b, score in pairs
        if disagreement(wording(comparison_form(a)), wording(comparison_form(b))) is None
    ]


@dataclass(frozen=True)
class Traffic:
    """The live events with their ground-truth labels, the gold set and the corpus."""

    events: list[dict[str, Any]]
    labels: list[Label]  # labels[i] of events[i]
    gold: list[dict[str, Any]]
    corpus: list[dict[str, Any]]

    def label_of(self) -> dict[str, set[Label]]:
        """``{key(question): labels}`` (a text in two sources has both)."""
        found: dict[str, set[Label]] = {}
        for event, label in zip(self.events, self.labels, strict=True):
            found.setdefault(key(event["question"]), set()).add(label)
        return found

    def missing(self) -> set[str]:
        """Domains and languages of the traffic the gold set lacks (``lang:`` prefixed)."""
        gold_domains = {*GOLD_DOMAINS, OUT_OF_SCOPE}
        domains = {d for d, _ in self.labels if d != "hinglish"} - gold_domains
        languages = {f"lang:{lang}" for _, lang in self.labels} - {"lang:en"}
        return domains | languages


def build_traffic(seed: int = 0, root: Path = SHARED_DATA) -> Traffic:
    """The module docstring's gold set, corpus and traffic (deterministic in ``seed``)."""
    data, domain_of = _clinc(root)
    gold, corpus = _clinc_gold(GOLD_DOMAINS, [1 / len(GOLD_DOMAINS)] * len(GOLD_DOMAINS),
                               GOLD_SIZE, seed, root)  # fmt: skip
    gold += [{"id": f"oos-val-{k}", "question": text, "gold": [], "kind": "unanswerable",
              "source": "real", "language": "en", "topic": OUT_OF_SCOPE}
             for k, (text, _) in enumerate(data["oos_val"][:N_UNANSWERABLE])]  # fmt: skip
    items: list[tuple[str, Label]] = [(t, (domain_of[i], "en")) for t, i in data["test"]]
    items += [(text, (OUT_OF_SCOPE, "en")) for text, _ in data["oos_test"]]
    with (root / "banking77" / "test.csv").open(encoding="utf-8", newline="") as handle:
        items += [(row["text"], ("banking77", "en")) for row in csv.DictReader(handle)]
    rng = random.Random(f"harvest-acceptance-{seed}")
    n_hinglish = round(len(items) * HINGLISH_SHARE / (1 - HINGLISH_SHARE))
    items += [(q, ("hinglish", "hi-Latn"))
              for q in rng.sample(list(hinglish_queries(root)), n_hinglish)]  # fmt: skip
    rng.shuffle(items)
    events = [make_event("harvest", i, text, rng, answer=ANSWER)
              for i, (text, _) in enumerate(items)]  # fmt: skip
    return Traffic(events, [label for _, label in items], gold, corpus)


def settings_for(gold: Path, corpus: Path) -> Settings:
    """Default settings with the test's gold set and corpus, batches cut without waiting, and
    the live default load shedding set explicitly (a replay sheds nothing unless it is)."""
    return load_settings(None, gold_set=gold, corpus=corpus, pipeline=PIPELINE, harvest=SHEDDING)


@dataclass(frozen=True)
class Run:
    """The first replay: traffic, files, report, and the suggestions in the state file."""

    traffic: Traffic
    out: Path
    settings: Settings
    report: dict[str, Any]
    records: list[dict[str, Any]]
    top: list[dict[str, Any]]


def read_candidates(state_path: Path, settings: Settings, gold: Path
                    ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:  # fmt: skip
    """All records in a state file, and the top :data:`TOP` as the labelling API lists them."""
    store = StateStore.open(state_path)
    try:
        repository = StateStoreCandidates(store)
        top = Labelling(repository, gold, settings.harvest).list(limit=TOP).items
        return repository.all(), top
    finally:
        store.close()


@pytest.fixture(scope="module")
def harvested(tmp_path_factory: pytest.TempPathFactory) -> Run:
    out = tmp_path_factory.mktemp("harvest")
    traffic = build_traffic()
    events = write_jsonl(out / "events.jsonl", traffic.events)
    gold = write_jsonl(out / "gold.jsonl", traffic.gold)
    settings = settings_for(gold, write_jsonl(out / "corpus.jsonl", traffic.corpus))
    report = run_replay(settings, events, out / "state.sqlite", out / "dlq.jsonl")
    records, top = read_candidates(out / "state.sqlite", settings, gold)
    return Run(traffic, out, settings, report, records, top)


def labels_of(row: dict[str, Any], label_of: dict[str, set[Label]]) -> set[Label]:
    """Ground-truth labels of a suggestion: of its question, else of its first known variant."""
    for text in (row["question"], *row.get("variants", ())):
        found = label_of.get(key(text))
        if found:
            return found
    return set()


def is_flagged(row: dict[str, Any]) -> bool:
    """Flagged as out of scope (module docstring)."""
    return "answered_out_of_scope" in row["reasons"] or row["topic"] in OUT_OF_SCOPE_TOPICS


def test_top_100_cover_the_missing_domains_and_languages(harvested: Run) -> None:
    """Measured with the default load shedding (``harvest.max_new_per_batch`` 48: at most 48
    new questions of a 500-event batch are matched and may start a suggestion): 10,094 events
    give 999 suggestions (coverage_gap 575, answered_out_of_scope 538, novel 224; 974 before
    s26: F1 leaves Hinglish without an out-of-scope verdict, and the merge rule keeps apart
    wordings that ask other questions; before s26 without shedding 4,864). The top 100 cover 9
    of 9 (100 %, as before): Hinglish 50, BANKING77 13, small_talk 7, meta 6, home 5, utility
    5, credit_cards 3, CLINC banking 1, auto_and_commute 1; besides, 7 out-of-scope and 1 from
    the gold domains; 1 unlabelled (scrubbed: "call me <NAME> from now on")."""
    run = harvested
    assert run.report["processed"] == len(run.traffic.events)
    assert run.report["dead_lettered_total"] == 0
    label_of = run.traffic.label_of()
    assert len(run.top) == TOP
    per_domain: Counter[str] = Counter()
    per_language: Counter[str] = Counter()
    unknown = []
    for row in run.top:
        labels = labels_of(row, label_of)
        if not labels:
            unknown.append(row["question"])
        per_domain.update({d for d, _ in labels})
        per_language.update({lang for _, lang in labels})
    covered = {*per_domain, *(f"lang:{lang}" for lang in per_language)} & run.traffic.missing()
    share = len(covered) / len(run.traffic.missing())
    summary = run.report["gold_candidates"]
    reasons = Counter(r for row in run.top for r in row["reasons"])
    print(
        f"\n{len(run.traffic.events)} events -> {summary['n_suggestions']} suggestions, by "
        f"reason {summary['by_reason']}\ntop {TOP}: covers {len(covered)}/"
        f"{len(run.traffic.missing())} missing ({share:.0%}), not covered "
        f"{sorted(run.traffic.missing() - covered)}\n  by domain {dict(per_domain.most_common())}"
        f"\n  by language {dict(per_language)}; reasons {dict(reasons)}; "
        f"unlabelled {unknown}"
    )
    assert len(unknown) <= 2, unknown
    assert share >= 0.9


def test_top_100_has_no_near_duplicates(harvested: Run) -> None:
    """No two of the top 100 are near-duplicates that ask the same question: trigram Jaccard
    ≥ 0.6 (the test's own) *and* the same question by harvest's merge rule
    (:func:`same_question`). Since the merge rule (s26-merge, trial 11 F6), wordings that
    share most trigrams but ask another question stay two suggestions and both may be listed.
    Measured: 2 pairs at Jaccard ≥ 0.6, the highest 0.63, both asking two questions —
    "abhi temperature kya hai ?" / "Kal ka temperature kya hai" (0.63: now / tomorrow,
    ``words``) and "subha 5 baje ke liye alarm set karen" / "subah 4 baje ke liye alarm set
    kardo" (0.60: 5 / 4 o'clock, ``numbers``); 0 pairs asking the same question. Before the
    rule: 0 pairs at ≥ 0.6, the highest 0.56."""
    texts = [row["question"] for row in harvested.top]
    assert len({row["id"] for row in harvested.top}) == TOP
    pairs = near_duplicate_pairs(texts)
    duplicates = same_question(pairs)
    grams = [trigram_set(t) for t in texts]
    highest = max(len(a & b) / len(a | b) for a, b in combinations(grams, 2))
    print(f"\ntop {TOP}: {len(pairs)} pairs at Jaccard >= {NEAR_DUPLICATE} (highest "
          f"{highest:.2f}), {len(duplicates)} asking the same question; the others: "
          f"{[p for p in pairs if p not in duplicates]}")  # fmt: skip
    assert duplicates == []


def test_out_of_scope_questions_are_flagged(harvested: Run) -> None:
    """Every suggestion made from a CLINC out-of-scope question that the pipeline labels with
    a language of the gold set is flagged. One labelled with a language no gold row is
    written in gets no out-of-scope verdict (F1: the gold set cannot say what is in scope in
    that language), so it must carry no ``answered_out_of_scope`` and be suggested as that
    language's coverage gap instead; such rows are the language stage's mislabels of English
    and stay few (≤ 5 % of them).

    Measured: 77 suggestions from out-of-scope questions; 76 labelled ``en``, all flagged
    (all 76 by ``answered_out_of_scope``); 1 labelled ``hi-Latn`` ("has ko gone up or down":
    "ko" is a common Hinglish word), a ``coverage_gap`` (language) with topic ``work``, which
    before F1 was flagged ``answered_out_of_scope``. 8 % of out-of-scope events end in a
    flagged suggestion against 1 % of the gold domains' events (9 % of the other domains',
    which are out of this assistant's scope too). The shares are low because load shedding
    keeps 48 new questions a batch, most of them single questions asked once (measured
    before s26, without shedding: 569 suggestions, 57 % against 15 %). 7 reach the top 100:
    each is asked once, and the selection favours repeated questions and the larger gaps."""
    run = harvested
    label_of = run.traffic.label_of()
    gold_languages = {row["language"] for row in run.traffic.gold}
    oos = [row for row in run.records if (OUT_OF_SCOPE, "en") in labels_of(row, label_of)]
    judged = [row for row in oos if row["language"] in gold_languages]
    outside = [row for row in oos if row["language"] not in gold_languages]
    flagged = [row for row in judged if is_flagged(row)]
    by_reason = sum("answered_out_of_scope" in row["reasons"] for row in judged)
    # event level, through the ids each suggestion keeps (the last 8 merged events)
    in_flagged = {e for row in run.records if is_flagged(row) for e in row["events"]}
    totals: Counter[str] = Counter()
    hits: Counter[str] = Counter()
    for event, (domain, _) in zip(run.traffic.events, run.traffic.labels, strict=True):
        group = OUT_OF_SCOPE if domain == OUT_OF_SCOPE else (
            "gold domains" if domain in GOLD_DOMAINS else "other")  # fmt: skip
        totals[group] += 1
        hits[group] += event["event_id"] in in_flagged
    rate = {group: hits[group] / totals[group] for group in totals}
    top_oos = sum((OUT_OF_SCOPE, "en") in labels_of(row, label_of) for row in run.top)
    print(
        f"\nout-of-scope suggestions: {len(oos)}; in a gold language {len(judged)}, "
        f"{len(flagged)} flagged ({by_reason} by answered_out_of_scope); in another "
        f"{[(r['question'], r['language'], r['topic'], r['reasons']) for r in outside]}; "
        f"in the top {TOP}: {top_oos}; events in a flagged "
        f"suggestion: { {g: f'{r:.0%}' for g, r in sorted(rate.items())} }"
    )
    assert judged, "no suggestion from an out-of-scope question in a gold language"
    assert flagged == judged
    assert len(outside) <= 0.05 * len(oos)
    assert all("answered_out_of_scope" not in row["reasons"] for row in outside)
    assert all("coverage_gap" in row["reasons"] for row in outside)
    assert rate[OUT_OF_SCOPE] >= 2 * rate["gold domains"]


def test_replaying_the_same_traffic_adds_no_suggestion(harvested: Run) -> None:
    """The events file replaced by the same events in reverse order (so the source reads it
    from the top again), replayed with the same state file. Measured: 10,094 consumed, all
    duplicates, 0 processed; the 999 records unchanged, no normalised question twice."""
    run = harvested
    again = write_jsonl(run.out / "events.jsonl", run.traffic.events[::-1])
    report = run_replay(run.settings, again, run.out / "state.sqlite", run.out / "dlq.jsonl")
    records, top = read_candidates(run.out / "state.sqlite", run.settings, run.out / "gold.jsonl")
    normalised = Counter(row["normalised"] for row in records)
    print(
        f"\nreplay: {report['consumed']} consumed, {report['duplicates']} duplicates, "
        f"{report['processed']} processed; suggestions {len(run.records)} -> {len(records)}; "
        f"repeated keys {sum(n > 1 for n in normalised.values())}"
    )
    assert report["consumed"] == len(run.traffic.events)
    assert report["duplicates"] == len(run.traffic.events)
    assert max(normalised.values()) == 1
    assert records == run.records
    assert [row["id"] for row in top] == [row["id"] for row in run.top]


def replica(settings: Settings, events: Sequence[QueryLogEvent], sink: KafkaCandidateSink,
            batch: int = 500) -> list[dict[str, Any]]:  # fmt: skip
    """One replica's pipeline (``build_live``, as the service builds it) over ``events``,
    publishing to ``sink`` as well; return the replica's own records."""
    live = build_live(settings, CollectorRegistry())
    assert live.harvest is not None
    live.harvest.sinks.append(sink)
    try:
        for start in range(0, len(events), batch):
            live.pipeline.process(events[start : start + batch], "kafka")
        live.harvest.flush(force=True)
        return live.harvest.records()
    finally:
        live.close()


@pytest.fixture
def sink(broker: TansuBroker) -> Iterator[KafkaCandidateSink]:
    topic = f"gw-harvest-{uuid.uuid4().hex[:10]}"
    config = KafkaSourceConfig(bootstrap_servers=broker.bootstrap_servers, topic="unused",
                               consumer_group="unused")  # fmt: skip
    made = KafkaCandidateSink(config, topic, "w-a", partitions=2)
    try:
        yield made
    finally:
        made.close()


@pytest.mark.kafka
def test_two_replicas_publish_no_duplicate_suggestion(
    harvested: Run, broker: TansuBroker, sink: KafkaCandidateSink
) -> None:
    """The traffic split as four partitions shared by two consumers (events ``i % 4 < 2`` to
    replica A, the rest to B). Measured: A 517 + B 510 suggestions, 3 by both (kept once):
    1,028 messages, 1,024 keys, 1,024 ids (before s26, without load shedding: A 2,592 + B
    2,512, 5,100 keys). The keyed topic merges only identical normalised questions: wordings
    each replica clustered on its own stay apart; the listing's distinct check keeps those
    that ask the same question out of the top 100 (0 pairs; 1 pair at trigram Jaccard ≥ 0.6
    asks two questions, "subha 5 baje ke liye alarm set karen" / "subah 4 baje ke liye alarm
    set kardo", 0.60, and both are listed since the merge rule, s26-merge; before it 0)."""
    run = harvested
    events = [QueryLogEvent.model_validate(e) for e in run.traffic.events]
    own_a = replica(run.settings, [e for i, e in enumerate(events) if i % 4 < 2], sink)
    sink.writer = "w-b"  # replica B: its own writer id, so its records keep their own keys
    own_b = replica(run.settings, [e for i, e in enumerate(events) if i % 4 >= 2], sink)
    messages = read_topic(broker, sink.topic)
    latest: dict[bytes, dict[str, Any]] = {}
    for message in messages:
        latest[message.key] = json.loads(message.value)
    merged = merge_records(latest.values())
    ids = Counter(row["id"] for row in merged)
    both = {row["id"] for row in own_a} & {row["id"] for row in own_b}
    repository = MemoryCandidates()
    repository.publish(merged)
    top = Labelling(repository, run.out / "gold.jsonl", run.settings.harvest).list(limit=TOP)
    pairs = near_duplicate_pairs([row["question"] for row in top.items])
    duplicates = same_question(pairs)
    print(
        f"\nreplicas: A {len(own_a)} + B {len(own_b)} suggestions, {len(both)} suggested by "
        f"both; topic: {len(messages)} messages, {len(latest)} keys, {len(ids)} ids merged; "
        f"top {TOP} from the topic: {len(pairs)} pairs at Jaccard >= {NEAR_DUPLICATE}, "
        f"{len(duplicates)} asking the same question; the others: "
        f"{[p for p in pairs if p not in duplicates]}"
    )
    assert len(messages) == sink.published
    assert len(latest) == len(own_a) + len(own_b)  # one key per (question, writer)
    assert len(merged) == len(ids) == len({row["id"] for row in own_a + own_b})
    counts = Counter[str]()
    for row in own_a + own_b:
        counts[row["id"]] += row["count"]
    assert {row["id"]: row["count"] for row in merged} == dict(counts)
    assert max(ids.values()) == 1
    assert len(top.items) == TOP
    assert duplicates == []
