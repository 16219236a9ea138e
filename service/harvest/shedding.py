"""Load shedding of new questions: which of a batch's new questions harvesting considers.

A *new* question is one whose normalised text is neither a suggestion's nor a known
question's (exact lookups, which cost nothing and are never shed). Each new one costs 60 to
80 µs (MinHash signature, LSH lookup, exact Jaccard checks, a suggestion, its records) —
with ``harvest.embedding_similarity`` also its embedding and cosines with every stored key,
~90 µs more with 1,000 keys stored, ~210 µs with 5,000
(``python -m benchmarks.bench_neardup_embeddings``). A flood of them (80 % of the events
of a high-novelty stream have a reason, mostly a coverage gap) would make harvesting cost
more than the analytics pipeline it follows. Per batch, :func:`choose` keeps at most
``HarvestConfig.max_new_per_batch`` of them; the others are *shed*: counted
(``pending_observations()["shed"]``), not matched, not kept. A shed question is considered
again when it recurs in a later batch.

The choice, deterministic (a replay of the same batch, or another replica seeing the same
texts, keeps the same ones):

1. Score each new text ``W · (1 + gap)`` — ``W`` the sum of the weights of the reasons it
   had in the batch (each once), ``gap`` its coverage gap: the priority of a suggestion seen
   once (:func:`service.harvest.ranking.priority`).
2. Group by stratum ``(topic, language)``; within one, order by score (descending), then by
   :func:`rank_hash` of the text (CRC-32 of its UTF-8: the same in every process, so under a
   sustained flood a stratum admits the same texts in every replica and replay — a
   consistent sample — rather than whichever came first), then the text.
3. Round robin over the strata (ordered by their best text, same key), one text per stratum
   per round, until the budget is used: every stratum of the batch gets a text before any
   gets a second one, so a rare topic or language is not crowded out by the commonest one.

>>> sorted(choose([("a b", ("t", "en"), 1.0), ("c d", ("t", "en"), 1.0),
...                ("e f", ("u", "hi"), 1.0)], 2))
['c d', 'e f']
"""

from __future__ import annotations

import zlib
from collections.abc import Hashable, Iterable

__all__ = ["choose", "rank_hash"]


def rank_hash(text: str) -> int:
    """CRC-32 of ``text``'s UTF-8 (stable across processes, unlike ``hash``)."""
    return zlib.crc32(text.encode("utf-8"))


def choose(candidates: Iterable[tuple[str, Hashable, float]], budget: int | None) -> set[str]:
    """The texts kept among ``candidates`` — ``(normalised text, stratum, score)``, texts
    distinct — at most ``budget`` of them (all when ``None``), chosen as the module
    docstring describes.

    Raises:
        ValueError: ``budget < 0``.
    """
    rows = list(candidates)
    if budget is None or len(rows) <= budget:
        if budget is not None and budget < 0:
            raise ValueError(f"budget must be >= 0, got {budget}")
        return {text for text, _, _ in rows}
    if budget < 0:
        raise ValueError(f"budget must be >= 0, got {budget}")
    strata: dict[Hashable, list[tuple[float, int, str]]] = {}
    for text, stratum, score in rows:
        strata.setdefault(stratum, []).append((-score, rank_hash(text), text))
    queues = [sorted(queue, reverse=True) for queue in strata.values()]  # best last: pop()
    queues.sort(key=lambda queue: queue[-1])
    kept: set[str] = set()
    while len(kept) < budget:
        for queue in queues:
            kept.add(queue.pop()[2])
            if len(kept) >= budget:
                break
        queues = [queue for queue in queues if queue]
    return kept
