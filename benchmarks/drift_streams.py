"""Deterministic drift scenarios from ``../shared/data``: query logs, gold sets and corpora.

Each scenario is a schema-v1 query log (design.md, "Data contracts") of real questions, one
every :data:`GAP_S` seconds of event time on average (pilot traffic, ~360 an hour; each
timestamp jittered within its slot, so neighbours may arrive slightly out of order), with the
gold set and corpus the analytics are built against:

* :func:`language_shift` — English XQuAD questions, then 30 % of the traffic becomes Hindi,
  Spanish and Chinese XQuAD questions and Hinglish-TOP ``cs_query`` lines (equal parts).
  Gold set: English XQuAD questions (``language: en``) over the English XQuAD paragraphs.
* :func:`topic_shift` / :func:`stationary_topics` — CLINC150 in-scope questions of three
  domains in a fixed mixture, then two other domains take 40 % (or never, stationary).
  Gold set: CLINC150 *train* questions of the three domains in the same mixture, ``topic`` =
  the domain name (the stream draws from *val* and *test*, so no gold question is replayed).
* :func:`refusal_shift` — NoMIRACL English questions with the real reply of one of 11 LLMs
  as the answer (``answer.refused`` left out, so goldwatch reads the text): refusals first
  5 %, then 20 % (or constant). A reply is a refusal as NoMIRACL's own evaluation reads it
  (:func:`nomiracl_label`), never as goldwatch's detector does.
* :func:`out_of_domain_shift` / :func:`stationary_out_of_domain` — CLINC150 questions of
  three domains, 5 % of them from domains the gold set does not cover or from CLINC150's
  out-of-scope set, then 30 % (or 5 % throughout). Gold set: 20 *train* questions from each
  of the three domains (``topic`` = domain) and 20 out-of-scope *train* questions as
  unanswerable rows; corpus: one passage per intent of the three domains.
* :func:`sparse_stream` — 8 events a day, all Chinese and all refused: every window holds
  8 events.

Planted personal data (synthetic e-mail addresses and Indian mobile numbers appended to a few
questions, listed in :attr:`Scenario.planted_pii`) checks that the PII scrubber ran.

Everything depends only on the arguments and ``seed``: the same call gives the same bytes::

    >>> a = language_shift(n_before=20, n_after=20, seed=3)
    >>> b = language_shift(n_before=20, n_after=20, seed=3)
    >>> a.events == b.events and a.change_at == 20 and len(a.gold) == 200
    True
    >>> sorted(a.rising)
    ['es', 'hi', 'hi-Latn', 'zh']

The data root is ``$GOLDWATCH_SHARED_DATA`` or ``<checkout>/../shared/data``.
"""

from __future__ import annotations

import csv
import json
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from functools import cache
from pathlib import Path
from typing import Any, NamedTuple

from benchmarks.datasets import SHARED_DATA, load_xquad

#: Event time of the first event of every scenario.
# In the past: the drift windows reject events stamped ahead of the wall clock.
START = datetime(2026, 1, 1, 0, 0, 0, tzinfo=UTC)
#: Mean seconds between two questions (360 an hour).
GAP_S = 10.0
#: The scenario's non-English languages and the label goldwatch gives each.
NEW_LANGUAGES: dict[str, str] = {"hi": "hi", "es": "es", "zh": "zh", "hinglish": "hi-Latn"}
#: Topic scenario defaults: three domains in a fixed mixture, two domains that take over.
DOMAINS: tuple[str, ...] = ("banking", "travel", "kitchen_and_dining")
MIXTURE: tuple[float, ...] = (0.5, 0.3, 0.2)
NEW_DOMAINS: tuple[str, ...] = ("auto_and_commute", "home")
CHANNELS: tuple[str, ...] = ("web", "web", "mobile", "whatsapp")

Event = dict[str, Any]
Row = dict[str, Any]


class ScenarioFiles(NamedTuple):
    """Where :meth:`Scenario.write` put the query log, the gold set and the corpus."""

    events: Path
    gold: Path
    corpus: Path


@dataclass(frozen=True)
class Scenario:
    """A query log with the gold set and corpus to watch it against.

    Attributes:
        name: scenario name (file names).
        events: schema-v1 events, event ids ``<name>-<i>``, timestamps ``GAP_S`` apart.
        gold: gold-set rows (JSONL shape of ``service.data.goldset``).
        corpus: corpus rows.
        change_at: index of the first event after the change (``None``: no change).
        rising: what the change adds: language labels, topic names, or ``{"refused"}``.
        planted_pii: the personal data planted in questions (must never be stored).
    """

    name: str
    events: list[Event]
    gold: list[Row]
    corpus: list[Row]
    change_at: int | None
    rising: frozenset[str] = frozenset()
    planted_pii: tuple[str, ...] = field(default=())

    def write(self, out: Path) -> ScenarioFiles:
        """Write ``<name>.events.jsonl``, ``<name>.gold.jsonl`` and ``<name>.corpus.jsonl``
        into ``out`` (created if missing) and return their paths."""
        out.mkdir(parents=True, exist_ok=True)
        return ScenarioFiles(
            write_jsonl(out / f"{self.name}.events.jsonl", self.events),
            write_jsonl(out / f"{self.name}.gold.jsonl", self.gold),
            write_jsonl(out / f"{self.name}.corpus.jsonl", self.corpus),
        )


def write_jsonl(path: Path, rows: Sequence[Row]) -> Path:
    """One compact UTF-8 JSON object a line; return ``path``."""
    with path.open("w", encoding="utf-8") as handle:
        for row in rows:
            handle.write(json.dumps(row, ensure_ascii=False, separators=(",", ":")) + "\n")
    return path


# -- the real data ------------------------------------------------------------------------------


@cache
def _xquad(lang: str, root: Path) -> tuple[tuple[str, str, str], ...]:
    """``(question id, question, gold paragraph id)`` of XQuAD ``lang``, file order."""
    return tuple(load_xquad(lang, root)[1])


@cache
def xquad_corpus(root: Path = SHARED_DATA) -> tuple[Row, ...]:
    """The 240 English XQuAD paragraphs as corpus rows (ids ``title#index``)."""
    passages, _ = load_xquad("en", root)
    return tuple(
        {"id": p.id, "text": p.text, "doc": p.doc, "doc_type": "wikipedia"} for p in passages
    )


@cache
def hinglish_queries(root: Path = SHARED_DATA) -> tuple[str, ...]:
    """Distinct Hinglish-TOP ``cs_query`` lines of ``test.tsv``, first-seen order."""
    path = root / "hinglish-top" / "test.tsv"
    with path.open(encoding="utf-8", newline="") as handle:
        rows = csv.DictReader(handle, delimiter="\t", quoting=csv.QUOTE_NONE)
        return tuple(dict.fromkeys(row["cs_query"].strip() for row in rows if row["cs_query"]))


@cache
def _clinc(root: Path) -> tuple[dict[str, list[list[str]]], dict[str, str]]:
    """CLINC150 splits and ``{intent: domain}``."""
    data = json.loads((root / "clinc150" / "data_full.json").read_text(encoding="utf-8"))
    domains = json.loads((root / "clinc150" / "domains.json").read_text(encoding="utf-8"))
    return data, {intent: domain for domain, intents in domains.items() for intent in intents}


def clinc_questions(
    domain: str, splits: Sequence[str], root: Path = SHARED_DATA
) -> list[tuple[str, str]]:
    """``(question, intent)`` of the in-scope CLINC150 ``splits`` in ``domain``."""
    data, domain_of = _clinc(root)
    return [(text, intent) for s in splits for text, intent in data[s]
            if domain_of.get(intent) == domain]  # fmt: skip


def nq_questions(root: Path = SHARED_DATA) -> list[str]:
    """NQ-open's 3,610 dev questions (real search-engine queries)."""
    with (root / "nq-open" / "NQ-open.dev.jsonl").open(encoding="utf-8") as lines:
        return [json.loads(line)["question"] for line in lines]


_YES, _NO = "yes, answer is present", "i don't know"


def nomiracl_label(reply: str) -> bool | None:
    """NoMIRACL's own reading of a reply (``VanillaTemplate.postprocess``): ``True`` declines,
    ``False`` answers, ``None`` invalid (both or neither canonical phrase)."""
    text = reply.replace("\n", " ").replace("\t", " ").lower()
    if _NO in text and _YES in text:
        return False if text.count(_YES) > 1 else None
    if _NO in text:
        return True
    if "answer is present" in text:
        return False
    if "answer is not present" in text:
        return True
    return None


class NomiraclRow(NamedTuple):
    """One NoMIRACL query: its question, passages, replies, and whether ≥ 1 passage is
    relevant (``relevant/``) or none is (``non_relevant/``)."""

    query_id: str
    question: str
    passages: tuple[tuple[str, str], ...]  # (docid, "Title: text")
    replies: tuple[tuple[str, bool], ...]  # (reply, NoMIRACL label), valid replies only
    relevant: bool


def _split_prompt(prompt: str, docids: Sequence[str]) -> tuple[str, tuple[tuple[str, str], ...]]:
    head, _, contexts = prompt.partition("\n\nCONTEXTS:\n")
    question = head.split("QUESTION:\n", 1)[1].strip()
    passages = []
    for k, docid in enumerate(docids, start=1):
        start = contexts.find(f"[{k}] ")
        end = contexts.find(f"\n\n[{k + 1}] ", start)
        text = contexts[start + len(f"[{k}] ") : end if end > 0 else None].strip()
        if start >= 0 and text:
            passages.append((docid, text))
    return question, tuple(passages)


@cache
def nomiracl_rows(lang: str = "en", root: Path = SHARED_DATA) -> tuple[NomiraclRow, ...]:
    """NoMIRACL ``lang`` queries that have their prompt (question and passages), relevant
    subset first, file order."""
    rows = []
    for subset in ("relevant", "non_relevant"):
        path = root / "nomiracl-baselines" / subset / f"{lang}.test.vanilla_prompt.jsonl"
        for line in path.read_text(encoding="utf-8").splitlines():
            record = json.loads(line)
            if not record.get("prompt"):
                continue
            question, passages = _split_prompt(record["prompt"], record["docids"])
            replies = tuple(
                (reply, label)
                for _, reply in sorted(record["results"].items())
                if reply and reply.strip() and (label := nomiracl_label(reply)) is not None
            )
            rows.append(NomiraclRow(record["query_id"], question, passages, replies,
                                    subset == "relevant"))  # fmt: skip
    return tuple(rows)


# -- events -------------------------------------------------------------------------------------


def timestamp(i: int, rng: random.Random, gap_s: float = GAP_S) -> str:
    """Event time of event ``i``: slot ``i`` of ``gap_s`` seconds, jittered within it."""
    at = START + timedelta(seconds=i * gap_s + rng.uniform(0, gap_s))
    return at.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def make_event(
    name: str, i: int, question: str, rng: random.Random, *,
    answer: str | None = None, gap_s: float = GAP_S,
) -> Event:  # fmt: skip
    """Event ``i`` of scenario ``name``; ``answer`` (text only, no ``refused`` flag)."""
    event: Event = {
        "event_id": f"{name}-{i:07d}",
        "timestamp": timestamp(i, rng, gap_s),
        "question": question,
        "user": {"id": f"u-{rng.randrange(3000)}", "role": "user", "tenant": "pilot"},
        "channel": rng.choice(CHANNELS),
    }
    if answer is not None:
        event["answer"] = {"text": answer, "citations": []}
    return event


def planted_pii(n: int, seed: int) -> list[str]:
    """``n`` synthetic personal items, alternately an e-mail address and an Indian mobile."""
    rng = random.Random(f"pii-{seed}")
    out = []
    for k in range(n):
        if k % 2 == 0:
            out.append(f"asha.verma{rng.randrange(10_000):04d}@example.org")
        else:
            digits = f"{rng.choice('6789')}{rng.randrange(10**9):09d}"
            out.append(f"+91 {digits[:5]} {digits[5:]}")
    return out


def _plant(events: list[Event], n: int, seed: int, before: int) -> tuple[str, ...]:
    """Append a planted item to ``n`` questions among the first ``before`` events."""
    if n == 0:
        return ()
    items = planted_pii(n, seed)
    where = sorted(random.Random(f"pii-where-{seed}").sample(range(before), n))
    for item, index in zip(items, where, strict=True):
        events[index]["question"] += f" Please reply to {item}"
    return tuple(items)


# -- scenarios ----------------------------------------------------------------------------------


def xquad_gold(n: int, seed: int, root: Path = SHARED_DATA) -> tuple[list[Row], set[str]]:
    """``n`` English XQuAD questions as gold rows (``language: en``) and their ids."""
    english = _xquad("en", root)
    picked = sorted(random.Random(f"gold-{seed}").sample(range(len(english)), n))
    rows = [{"id": english[i][0], "question": english[i][1], "gold": [english[i][2]],
             "kind": "plain", "source": "written", "language": "en"} for i in picked]  # fmt: skip
    return rows, {row["id"] for row in rows}


def language_shift(
    n_before: int = 3000,
    n_after: int = 3000,
    share: float = 0.30,
    *,
    gold_size: int = 200,
    n_pii: int = 0,
    seed: int = 0,
    root: Path = SHARED_DATA,
) -> Scenario:
    """English XQuAD questions, then ``share`` of them Hindi/Spanish/Chinese XQuAD and
    Hinglish-TOP in equal parts. Questions of gold ids are never replayed."""
    rng = random.Random(f"language-{seed}")
    gold, gold_ids = xquad_gold(gold_size, seed, root)
    pools: dict[str, list[str]] = {
        lang: [q for qid, q, _ in _xquad(lang, root) if qid not in gold_ids]
        for lang in ("en", "hi", "es", "zh")
    }
    pools["hinglish"] = list(hinglish_queries(root))
    new = sorted(NEW_LANGUAGES)
    events = []
    for i in range(n_before + n_after):
        lang = "en"
        if i >= n_before and rng.random() < share:
            lang = new[rng.randrange(len(new))]
        pool = pools[lang]
        events.append(make_event("language", i, pool[rng.randrange(len(pool))], rng))
    pii = _plant(events, n_pii, seed, n_before)
    rising = frozenset(NEW_LANGUAGES.values())
    return Scenario("language", events, gold, list(xquad_corpus(root)), n_before, rising, pii)


def _clinc_gold(
    domains: Sequence[str], mixture: Sequence[float], size: int, seed: int, root: Path
) -> tuple[list[Row], list[Row]]:
    """Gold rows (train questions, ``topic`` = domain, ``size`` split by ``mixture``) and a
    corpus of one passage per intent (its name and five other train questions)."""
    rng = random.Random(f"clinc-gold-{seed}")
    gold: list[Row] = []
    corpus: list[Row] = []
    for domain, weight in zip(domains, mixture, strict=True):
        train = clinc_questions(domain, ["train"], root)
        order = rng.sample(range(len(train)), len(train))
        picked, rest = order[: round(size * weight)], order[round(size * weight) :]
        gold += [{"id": f"clinc-train-{i}-{domain}", "question": train[i][0],
                  "gold": [f"intent-{train[i][1]}"], "kind": "plain", "source": "written",
                  "language": "en", "topic": domain} for i in sorted(picked)]  # fmt: skip
        examples: dict[str, list[str]] = {}
        for i in rest:
            examples.setdefault(train[i][1], []).append(train[i][0])
        corpus += [{"id": f"intent-{intent}", "doc": domain, "doc_type": "faq",
                    "text": intent.replace("_", " ") + ": " + "; ".join(texts[:5])}
                   for intent, texts in sorted(examples.items())]  # fmt: skip
    return gold, corpus


def topic_shift(
    n_before: int = 3000,
    n_after: int = 3000,
    new_share: float = 0.40,
    *,
    domains: Sequence[str] = DOMAINS,
    mixture: Sequence[float] = MIXTURE,
    new_domains: Sequence[str] = NEW_DOMAINS,
    gold_size: int = 900,
    n_pii: int = 0,
    seed: int = 0,
    root: Path = SHARED_DATA,
    name: str = "topic",
) -> Scenario:
    """CLINC150 val/test questions of ``domains`` drawn by ``mixture``; after ``n_before``
    events, ``new_share`` of them come from ``new_domains`` (equal parts)."""
    if len(domains) != len(mixture) or abs(sum(mixture) - 1) > 1e-9:
        raise ValueError("need one mixture weight per domain, summing to 1")
    rng = random.Random(f"{name}-{seed}")
    gold, corpus = _clinc_gold(domains, mixture, gold_size, seed, root)
    pools = {d: [t for t, _ in clinc_questions(d, ["val", "test"], root)]
             for d in (*domains, *new_domains)}  # fmt: skip
    events = []
    for i in range(n_before + n_after):
        if i >= n_before and rng.random() < new_share:
            domain = new_domains[rng.randrange(len(new_domains))]
        else:
            domain = rng.choices(domains, weights=mixture)[0]
        pool = pools[domain]
        events.append(make_event(name, i, pool[rng.randrange(len(pool))], rng))
    pii = _plant(events, n_pii, seed, n_before)
    change_at = n_before if n_after else None
    rising = frozenset(new_domains) if n_after else frozenset()
    return Scenario(name, events, gold, corpus, change_at, rising, pii)


def stationary_topics(n: int = 100_000, *, seed: int = 0, root: Path = SHARED_DATA) -> Scenario:
    """``n`` events of :func:`topic_shift`'s fixed three-domain mixture (no change)."""
    return topic_shift(n, 0, seed=seed, root=root, name="topic-stationary")


def _clinc_out_of_domain(root: Path, covered: Sequence[str], splits: Sequence[str]) -> list[str]:
    """Questions of ``splits`` from the CLINC150 domains outside ``covered``, then the
    out-of-scope questions of the same splits."""
    data, domain_of = _clinc(root)
    other = [text for s in splits for text, intent in data[s]
             if domain_of.get(intent) not in covered]  # fmt: skip
    return other + [text for s in splits for text, _ in data[f"oos_{s}"]]


def out_of_domain_shift(
    n_before: int = 3000,
    n_after: int = 3000,
    share_before: float = 0.05,
    share_after: float = 0.30,
    *,
    domains: Sequence[str] = DOMAINS,
    mixture: Sequence[float] = MIXTURE,
    per_domain: int = 20,
    n_unanswerable: int = 20,
    seed: int = 0,
    root: Path = SHARED_DATA,
    name: str = "out-of-domain",
) -> Scenario:
    """CLINC150 val/test questions: ``share_before`` of them from outside the gold set's
    domains (the other 7 domains and the out-of-scope set, pooled), the rest from
    ``domains`` by ``mixture``; after ``n_before`` events that share is ``share_after``.

    Gold set: ``per_domain`` train questions of each of ``domains`` (answerable, ``topic`` =
    domain; 60 by default, the size practitioners keep) plus ``n_unanswerable`` out-of-scope
    train questions (``gold: []``, ``kind: unanswerable``), so out-of-scope can be
    calibrated. Corpus: one passage per intent of ``domains`` (:func:`_clinc_gold`).
    """
    rng = random.Random(f"{name}-{seed}")
    gold, corpus = _clinc_gold(domains, [1 / len(domains)] * len(domains),
                               per_domain * len(domains), seed, root)  # fmt: skip
    data, _ = _clinc(root)
    picked = random.Random(f"oos-gold-{seed}").sample(range(len(data["oos_train"])),
                                                      n_unanswerable)  # fmt: skip
    gold += [{"id": f"clinc-oos-train-{i}", "question": data["oos_train"][i][0], "gold": [],
              "kind": "unanswerable", "source": "written", "language": "en"}
             for i in sorted(picked)]  # fmt: skip
    pools = {d: [t for t, _ in clinc_questions(d, ["val", "test"], root)] for d in domains}
    outside = _clinc_out_of_domain(root, domains, ["val", "test"])
    events = []
    for i in range(n_before + n_after):
        share = share_before if i < n_before else share_after
        if rng.random() < share:
            question = outside[rng.randrange(len(outside))]
        else:
            pool = pools[rng.choices(domains, weights=mixture)[0]]
            question = pool[rng.randrange(len(pool))]
        events.append(make_event(name, i, question, rng))
    changed = n_after > 0 and share_after != share_before
    return Scenario(name, events, gold, corpus, n_before if changed else None,
                    frozenset({"out_of_scope"}) if changed else frozenset())  # fmt: skip


def stationary_out_of_domain(
    n: int = 100_000, share: float = 0.05, *, seed: int = 0, root: Path = SHARED_DATA
) -> Scenario:
    """``n`` events of :func:`out_of_domain_shift`'s fixed mixture (``share`` outside)."""
    return out_of_domain_shift(n, 0, share, share, seed=seed, root=root,
                               name="out-of-domain-stationary")  # fmt: skip


def refusal_shift(
    n_before: int = 3000,
    n_after: int = 3000,
    rate_before: float = 0.05,
    rate_after: float = 0.20,
    *,
    gold_size: int = 200,
    seed: int = 0,
    root: Path = SHARED_DATA,
    name: str = "refusal",
) -> Scenario:
    """NoMIRACL English questions answered by real LLM replies: refusals at ``rate_before``,
    then ``rate_after`` (equal rates: no change). Each event takes a random valid reply of the
    wanted kind with that reply's own question.

    Gold set: ``gold_size`` NoMIRACL questions (``language: en``); a ``relevant/`` one has its
    10 passages as gold (NoMIRACL: at least one is relevant), a ``non_relevant/`` one has
    ``gold: []`` (none is). Corpus: the passages of the gold questions' prompts.
    """
    rng = random.Random(f"{name}-{seed}")
    rows = nomiracl_rows("en", root)
    picked = sorted(random.Random(f"gold-{seed}").sample(range(len(rows)), gold_size))
    gold = [{"id": f"nomiracl-{rows[i].query_id}", "question": rows[i].question,
             "gold": [d for d, _ in rows[i].passages] if rows[i].relevant else [],
             "kind": "plain" if rows[i].relevant else "unanswerable", "source": "real",
             "language": "en"} for i in picked]  # fmt: skip
    passages = {d: text for i in picked for d, text in rows[i].passages}
    corpus = [{"id": d, "text": text, "doc_type": "wikipedia"} for d, text in passages.items()]
    pools: dict[bool, list[tuple[str, str]]] = {True: [], False: []}
    for row in rows:
        for reply, label in row.replies:
            pools[label].append((row.question, reply))
    events = []
    for i in range(n_before + n_after):
        refused = rng.random() < (rate_before if i < n_before else rate_after)
        question, reply = pools[refused][rng.randrange(len(pools[refused]))]
        events.append(make_event(name, i, question, rng, answer=reply))
    changed = rate_after != rate_before and n_after > 0
    return Scenario(name, events, gold, corpus, n_before if changed else None,
                    frozenset({"refused"}) if changed else frozenset())  # fmt: skip


def sparse_stream(
    days: int = 5, per_day: int = 8, *, seed: int = 0, root: Path = SHARED_DATA
) -> Scenario:
    """``per_day`` events a day (10 minutes apart, then nothing), every question Chinese and
    every answer a refusal: drifted in every dimension, but each window holds ``per_day``.
    Gold set and corpus as :func:`language_shift`."""
    rng = random.Random(f"sparse-{seed}")
    gold, _ = xquad_gold(200, seed, root)
    chinese = [q for _, q, _ in _xquad("zh", root)]
    refusals = [r for row in nomiracl_rows("en", root) for r, label in row.replies if label]
    events = []
    for day in range(days):
        for k in range(per_day):
            i = day * per_day + k
            event = make_event("sparse", i, chinese[rng.randrange(len(chinese))], rng,
                               answer=refusals[rng.randrange(len(refusals))])  # fmt: skip
            at = START + timedelta(days=day, minutes=10 * k)
            event["timestamp"] = at.isoformat(timespec="milliseconds").replace("+00:00", "Z")
            events.append(event)
    return Scenario("sparse", events, gold, list(xquad_corpus(root)), None)
