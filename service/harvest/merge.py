"""Merge the suggestion records several replicas published into one record per question.

With Kafka, each replica publishes its own record of a suggestion under the key
``normalised + "\\n" + writer`` (:func:`consumers.harvest_sink.candidate_key`; ``writer`` is
the replica's writer id, kept in its state file), so the compacted topic keeps the latest
record of every (question, replica) pair, and each replica's record counts only the events
*it* processed (its partitions). A reader of the topic merges them with
:func:`merge_records` (``goldwatch candidates export --from-records``) into the record one
process reading every partition would hold:

* ``count``: the sum of the replicas' counts (each event is counted by the one replica whose
  partition it was on; an event redelivered to a second replica after a rebalance, before
  its offset was committed, is counted by both — Kafka's at-least-once);
* ``reasons``: each reason's counts summed (so the union of the reasons);
* ``first_seen`` / ``last_seen``: the earliest / latest;
* ``events``: the most recent ids of all replicas (at most ``RECENT_EVENTS``, by the replica
  whose ``last_seen`` is latest first);
* ``variants``: the distinct wordings, the first asker's first, at most ``max_variants``
  (``harvest.max_variants``; ``None``: all);
* ``pool``: every passage, each retriever's best (lowest) rank;
* ``gap`` and ``gap_dimension``: the largest gap and its dimension;
* ``id``, ``question``, ``language``, ``topic``, ``role``, ``source``, ``trace_id``: those of
  the record first seen (ties: the smaller writer id), the first asker's, as one process
  would keep them;
* ``writers``: the writer ids merged, sorted.

A record without ``writer`` was written by a version keying the topic by the question alone
(last writer wins): it is used only for a question no writer-keyed record has (otherwise it
would count the same events twice). Same records in, same records out (writers sorted).

Records of distinct writers are summed, whatever they counted: a replica that starts with a
new writer id (its state file lost, e.g. Helm's ``emptyDir``) *and* re-reads events an
earlier writer already counted (offsets reset to earliest, or its group's offsets expired
with ``auto_offset_reset: earliest``) counts those events twice in the merge. After such a
reset, start a new suggestions topic or leave the earlier writers' records out of the dump.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from service.harvest.suggestion import RECENT_EVENTS

__all__ = ["latest_per_writer", "merge_records", "merge_question"]


def latest_per_writer(
    records: Iterable[Mapping[str, Any]],
) -> dict[tuple[str, str], Mapping[str, Any]]:
    """The last record of each (``normalised``, ``writer``) pair in ``records`` (topic order,
    oldest first: what compaction keeps); ``writer`` ``""`` for a record without one.

    Raises:
        KeyError: a record has no ``normalised``.
    """
    latest: dict[tuple[str, str], Mapping[str, Any]] = {}
    for record in records:
        latest[(str(record["normalised"]), str(record.get("writer") or ""))] = record
    return latest


def merge_question(
    records: Iterable[Mapping[str, Any]], max_variants: int | None = None
) -> dict[str, Any]:
    """One record from the records of one question by distinct writers (module docstring).

    Raises:
        ValueError: ``records`` is empty.
    """
    ordered = sorted(
        records, key=lambda r: (r.get("first_seen") or "\uffff", str(r.get("writer") or ""))
    )
    if not ordered:
        raise ValueError("no record to merge")
    first = ordered[0]
    merged: dict[str, Any] = dict(first)
    merged["count"] = sum(int(r.get("count", 0)) for r in ordered)
    seen = [r["first_seen"] for r in ordered if r.get("first_seen")]
    last = [r["last_seen"] for r in ordered if r.get("last_seen")]
    merged["first_seen"] = min(seen) if seen else ""
    merged["last_seen"] = max(last) if last else ""
    reasons: dict[str, int] = {}
    variants: list[str] = []
    pool: dict[str, dict[str, int]] = {}
    gap, dimension = float(first.get("gap", 0.0)), first.get("gap_dimension")
    for r in ordered:
        for reason, n in dict(r.get("reasons") or {}).items():
            reasons[reason] = reasons.get(reason, 0) + int(n)
        for wording in r.get("variants") or ():
            if wording not in variants:
                variants.append(wording)
        for passage, by in dict(r.get("pool") or {}).items():
            ranks = pool.setdefault(passage, {})
            for retriever, rank in by.items():
                ranks[retriever] = min(rank, ranks.get(retriever, rank))
        if float(r.get("gap", 0.0)) > gap:
            gap, dimension = float(r["gap"]), r.get("gap_dimension")
    events: list[str] = []
    for r in sorted(ordered, key=lambda r: r.get("last_seen") or "", reverse=True):
        events.extend(e for e in reversed(list(r.get("events") or ())) if e not in events)
    merged.update(
        reasons=reasons, pool=pool, gap=gap, gap_dimension=dimension,
        events=list(reversed(events[:RECENT_EVENTS])),
        variants=variants if max_variants is None else variants[:max_variants],
        writers=sorted(str(r.get("writer") or "") for r in ordered),
    )  # fmt: skip
    merged.pop("writer", None)
    return merged


def merge_records(
    records: Iterable[Mapping[str, Any]], max_variants: int | None = None
) -> list[dict[str, Any]]:
    """One merged record per question from a topic's records (oldest first), ordered by
    ``normalised``: the last record of each writer (:func:`latest_per_writer`), merged
    (:func:`merge_question`); a question's writer-less (older version's) record only when
    it has no other.

    Raises:
        KeyError: a record has no ``normalised``.
    """
    by_question: dict[str, list[Mapping[str, Any]]] = {}
    for (question, _writer), record in sorted(latest_per_writer(records).items()):
        by_question.setdefault(question, []).append(record)
    merged = []
    for question in sorted(by_question):
        group = by_question[question]
        keyed = [r for r in group if r.get("writer")]
        merged.append(merge_question(keyed or group, max_variants))
    return merged
