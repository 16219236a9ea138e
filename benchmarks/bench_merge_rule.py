"""Measurement: harvest's merge rule (:mod:`service.text.wording`) vs similarity alone.

Finding F6 (trial 11, NQ-open): trigram Jaccard ≥ 0.6 merged questions with different
answers ("who won the oscar for best picture in 1976" / "... best actor in 1975"). The rule
lets a pair the index matched merge only when numbers, content words and question word agree.
Both are run here on the same questions, in the same run:

* NQ-open dev (3,610 real Google questions with their short answers), streamed as harvest
  does: each new normalised question joins its best match among the suggestions so far
  (:class:`~service.harvest.neardup.NearDupIndex`, ``matches``), else starts one. Printed:
  suggestions, questions merged, the merges the rule undoes (by reason) and keeps, and an
  independent check: a merge is *same-answer* when the two questions' answer lists share an
  answer (lower-cased, punctuation dropped). ``--pairs`` prints every merge undone and kept
  (for reading by hand). ``--embeddings`` adds harvest's OR rule (cosine ≥ 0.8, WordLlama +
  character block, ``harvest.embedding_similarity``) with and without the merge rule.
* The demo log (3,000 events of a college bot: English, Hinglish, Hindi; typos, chat
  spellings, greetings, added context such as "for 1st year" or "is saal", generated from
  known intents), streamed the same way: a merge is right when both are of one intent (a
  lenient truth: "fees for CSE" and "fees" are one intent).
* Pools (each question merged into its best match among the others, the same index; right
  when both ask the same): BANKING77 and CLINC150 test (same intent), Hinglish-TOP test
  (same intent *and* the same slot values: "weather in hawaii" is not "weather in texas"),
  XQuAD es/de/hi (every question differs from the others of its language: each merge is
  wrong unless both have the same answer). precision = right / merges; recall = right /
  the questions with a right match in the pool.

Usage: ``python -m benchmarks.bench_merge_rule [--pairs] [--embeddings]``.
"""

from __future__ import annotations

import argparse
import csv
import json
import random
import re
from collections import Counter
from collections.abc import Callable, Sequence

from benchmarks.datasets import SHARED_DATA
from service.harvest.neardup import NearDupIndex
from service.harvest.text import comparison_form
from service.text.wording import disagreement, may_merge, wording

POOL = 2000
_SLOT = re.compile(r"\[SL:(\w+) ([^\[\]]*?) \]")
_ANSWER_DROP = re.compile(r"[^\w ]+")

Rule = Callable[[str, str, bool], bool] | None


def _answers(values: Sequence[str]) -> frozenset[str]:
    return frozenset(" ".join(_ANSWER_DROP.sub(" ", v.lower()).split()) for v in values)


def _stream(texts: Sequence[str], rule: Rule, embedder: object | None = None
            ) -> tuple[int, dict[str, str]]:  # fmt: skip
    """Harvest's placement: ``(suggestions, {question: the suggestion's question it joined})``."""
    index = NearDupIndex(0.6, embedder=embedder, cosine=0.8, rule=rule)  # type: ignore[arg-type]
    seen: set[str] = set()
    joined: dict[str, str] = {}
    for k in range(0, len(texts), 48):  # batches of harvest.max_new_per_batch
        batch = [t for t in dict.fromkeys(texts[k : k + 48]) if t not in seen]
        for text, probe in zip(batch, index.probes(batch), strict=True):
            if text in seen:
                continue
            seen.add(text)
            found = index.matches(probe)
            if found:
                joined[text] = found[0][0]
            else:
                index.add(text, probe)
    return len(index), joined


def nq(pairs: bool, embeddings: bool) -> None:
    """The NQ-open stream (module docstring)."""
    path = SHARED_DATA / "nq-open" / "NQ-open.dev.jsonl"
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    texts = [comparison_form(r["question"]) for r in rows]
    answers: dict[str, frozenset[str]] = {}
    for text, row in zip(texts, rows, strict=True):
        answers[text] = answers.get(text, frozenset()) | _answers(row["answer"])
    print(f"NQ-open dev: {len(rows)} questions, {len(set(texts))} distinct normalised")
    variants: list[tuple[str, object | None]] = [("trigram Jaccard >= 0.6", None)]
    if embeddings:
        from service.embeddings.config import EmbeddingConfig
        from service.embeddings.model import build_embedder

        variants.append(("OR cosine >= 0.8", build_embedder(EmbeddingConfig(cache_size=0))))
    for label, embedder in variants:
        n_old, old = _stream(texts, None, embedder)
        n_new, new = _stream(texts, may_merge, embedder)

        def same(merges: dict[str, str]) -> str:
            hits = sum(bool(answers[a] & answers[b]) for a, b in merges.items())
            return f"{hits}/{len(merges)} same-answer"

        undone = {a: b for a, b in old.items() if new.get(a) != b}
        kept = {a: b for a, b in old.items() if new.get(a) == b}
        added = {a: b for a, b in new.items() if old.get(a) != b}
        reasons = Counter(
            disagreement(wording(a), wording(b), semantic=embedder is not None
                         and not _trigram_match(a, b)) or "agree"
            for a, b in undone.items()
        )  # fmt: skip
        print(f"\n{label}:")
        print(f"  suggestions        {n_old:5} -> {n_new:5} with the merge rule")
        print(f"  questions merged   {len(old):5} -> {len(new):5}")
        print(f"  merges undone      {len(undone):5}  ({same(undone)}; by reason: "
              f"{dict(sorted(reasons.items()))})")  # fmt: skip
        print(f"  merges kept        {len(kept):5}  ({same(kept)})")
        print(f"  merges new         {len(added):5}  ({same(added)}: into another suggestion)")
        print(f"  all merges, old    {same(old)};  with the rule {same(new)}")
        if pairs:
            for tag, merges in (("UNDONE", undone), ("KEPT", kept), ("NEW", added)):
                for a, b in merges.items():
                    agree = "=" if answers[a] & answers[b] else "x"
                    print(f"  {tag} {agree} | {a} | {b}")


def demo() -> None:
    """The demo log streamed (module docstring): merges right when of one intent."""
    from service.demo.querylog import generate_with_meta

    events, metas = generate_with_meta()
    texts = [comparison_form(e["question"]) for e in events]
    intent: dict[str, str] = {}
    for text, meta in zip(texts, metas, strict=True):
        intent.setdefault(text, f"{meta.topic}/{meta.intent}")
    n_intents = len(set(intent.values()))
    print(f"\ndemo log: {len(events)} events, {len(intent)} distinct normalised, "
          f"{n_intents} intents")  # fmt: skip
    for label, rule in (("similarity", None), ("+ merge rule", may_merge)):
        n, joined = _stream(texts, rule)
        right = sum(intent[a] == intent[b] for a, b in joined.items())
        print(f"  {label:13} suggestions {n:4}  merges {len(joined):4}  "
              f"same intent {right}/{len(joined)} = {right / max(1, len(joined)):.3f}")  # fmt: skip


def _trigram_match(a: str, b: str) -> bool:
    from service.harvest.text import jaccard, trigrams

    return jaccard(trigrams(a), trigrams(b)) >= 0.6


def _pool(name: str, rows: Sequence[tuple[str, object]]) -> None:
    """Merge each question into its best match among the others; precision and recall."""
    if len(rows) > POOL:
        rows = random.Random(0).sample(list(rows), POOL)
    texts = [comparison_form(t) for t, _ in rows]
    labels = [label for _, label in rows]
    possible = sum(
        any(labels[j] == labels[i] and j != i for j in range(len(rows))) for i in range(len(rows))
    )
    line = [f"{name:26} {len(rows):5} q, {possible:4} with a right match:"]
    for tag, rule in (("similarity", None), ("+ merge rule", may_merge)):
        index = NearDupIndex(0.6, rule=rule)
        keys = [str(i) for i in range(len(texts))]
        for key, probe in zip(keys, index.probes(texts), strict=True):
            index.add(key, probe)
        merges = right = 0
        for i, probe in enumerate(index.probes(texts)):
            found = [key for key, _ in index.matches(probe) if key != str(i)]
            if found:
                merges += 1
                right += labels[int(found[0])] == labels[i]
        precision = right / merges if merges else float("nan")
        line.append(f"{tag} {merges:4} merges P {precision:.3f} R {right / max(1, possible):.3f}")
    print("  ".join(line))


def pools() -> None:
    """The labelled pools (module docstring)."""
    print(f"\npools (at most {POOL} questions each, seed 0):")
    with (SHARED_DATA / "banking77" / "test.csv").open(encoding="utf-8", newline="") as handle:
        _pool("BANKING77 test", [(r["text"], r["category"]) for r in csv.DictReader(handle)])
    clinc = json.loads((SHARED_DATA / "clinc150" / "data_full.json").read_text(encoding="utf-8"))
    _pool("CLINC150 test", [(t, i) for t, i in clinc["test"]])
    with (SHARED_DATA / "hinglish-top" / "test.tsv").open(encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle, delimiter="\t"))
    _pool("Hinglish-TOP test (cs)", [
        (r["cs_query"], (r["cs_parse"].split()[0],
                         tuple(sorted((s, comparison_form(v))
                                      for s, v in _SLOT.findall(r["cs_parse"])))))
        for r in rows
    ])  # fmt: skip
    for language in ("es", "de", "hi"):
        data = json.loads((SHARED_DATA / "xquad" / f"xquad.{language}.json").read_text("utf-8"))
        questions = [
            (qa["question"], _answers([a["text"] for a in qa["answers"]]) or qa["id"])
            for article in data["data"] for paragraph in article["paragraphs"]
            for qa in paragraph["qas"]
        ]  # fmt: skip
        _pool(f"XQuAD {language}", questions)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", action="store_true", help="print the NQ merges")
    parser.add_argument("--embeddings", action="store_true", help="also the OR cosine rule")
    args = parser.parse_args()
    nq(args.pairs, args.embeddings)
    demo()
    pools()


if __name__ == "__main__":
    main()
