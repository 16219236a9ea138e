"""Priority of a suggestion and a balanced selection of the best ones.

Priority (unitless, ≥ 0)::

    priority = W · (1 + log2(count)) · (1 + gap)

``W`` is the sum of the weights of the reasons the suggestion has had (each once), ``count``
the events merged into it (≥ 1), ``gap`` its coverage gap in [0, 1]. A question asked 4 times
counts 3× one asked once: frequency matters, but less than what went wrong.

Selection (:func:`select`) spreads a budget of ``limit`` suggestions over the gaps instead of
repeating the commonest question:

1. Rank by priority (descending; ties by id). Group into strata by ``(topic, language)``,
   strata ordered by their best suggestion.
2. Round robin over the strata, one suggestion per stratum per round, best first; a
   suggestion whose *primary* reason (its heaviest; ties in ``REASONS`` order) has used its
   quota (``floor(quota · limit)``, at least 1) is set aside.
3. If the budget is not used up, fill it with the set-aside ones by priority.
4. With ``distinct``, a suggestion whose trigram Jaccard with one already chosen is at least
   ``config.similarity`` and that asks the same question (the stage's merge rule,
   :func:`service.text.wording.may_merge`) is dropped (the stage's LSH misses a few
   near-duplicate pairs, about 1 in 500 suggestions on the demo log); checked among the
   first :data:`DISTINCT_CHECKED` chosen, O(n²).

>>> from service.harvest.config import HarvestConfig
>>> s = Suggestion("c-1", "q", "q", count=4, reasons={"refused": 4, "novel": 1}, gap=0.5)
>>> priority(s, HarvestConfig())  # (2.0 + 1.5) * (1 + 2) * (1 + 0.5)
15.75
>>> primary_reason(s, HarvestConfig())
'refused'
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Iterable
from typing import NamedTuple

from service.harvest.config import REASONS, HarvestConfig
from service.harvest.suggestion import Suggestion
from service.harvest.text import jaccard, trigrams
from service.text.wording import may_merge

__all__ = ["DISTINCT_CHECKED", "eviction_keys", "primary_reason", "priority", "select"]

#: How many chosen suggestions ``select(distinct=True)`` compares each candidate with.
DISTINCT_CHECKED = 200


class _Weights(NamedTuple):
    """A config's ``{reason: weight}`` and, by a suggestion's reasons (in its order), their
    weight sum and heaviest reason, remembered: records are built for every changed
    suggestion at each flush and checkpoint, and a suggestion's reasons are one of a few
    combinations."""

    config: HarvestConfig
    weight: dict[str, float]
    sums: dict[tuple[str, ...], float]
    primary: dict[tuple[str, ...], str | None]


#: id(config) -> its :class:`_Weights` (configs are frozen)
_WEIGHTS: dict[int, _Weights] = {}
#: Most combinations of reasons remembered per config (then forgotten, recomputed).
_COMBINATIONS = 4_096


def _of(config: HarvestConfig) -> _Weights:
    """The :class:`_Weights` of ``config`` (``config.weight`` called once per reason)."""
    entry = _WEIGHTS.get(id(config))
    if entry is None or entry.config is not config:
        if len(_WEIGHTS) >= 64:
            _WEIGHTS.clear()
        entry = _WEIGHTS[id(config)] = _Weights(
            config, {r: config.weight(r) for r in REASONS}, {}, {}
        )
    return entry


def priority(suggestion: Suggestion, config: HarvestConfig) -> float:
    """The priority of ``suggestion`` (formula in the module docstring); ``W`` summed in
    the order of ``suggestion.reasons`` (so the same float whether remembered or not).

    Raises:
        KeyError: a reason of ``suggestion`` is not one of :data:`REASONS`.
    """
    entry = _of(config)
    reasons = tuple(suggestion.reasons)
    weight = entry.sums.get(reasons)
    if weight is None:
        weight = sum(map(entry.weight.__getitem__, reasons))
        if len(entry.sums) >= _COMBINATIONS:
            entry.sums.clear()
        entry.sums[reasons] = weight
    frequency = 1.0 + math.log2(max(1, suggestion.count))
    return weight * frequency * (1.0 + suggestion.gap)


def eviction_keys(
    suggestions: Iterable[Suggestion], config: HarvestConfig
) -> list[tuple[float, str, str]]:
    """``(priority(s, config), s.last_seen, s.id)`` of each suggestion, in order: the key the
    harvest stage evicts by (lowest first). The same floats as :func:`priority` (the same
    operations in the same order), in one loop: an eviction keys ~1,000 suggestions, and a
    call of :func:`priority` each (its config's weights looked up each time) was a third of
    it on ``benchmarks.bench_production``'s stream.

    Raises:
        KeyError: a reason of a suggestion is not one of :data:`REASONS`.
    """
    entry = _of(config)
    sums, weight = entry.sums, entry.weight.__getitem__
    log2 = math.log2
    keys = []
    for suggestion in suggestions:
        reasons = tuple(suggestion.reasons)
        total = sums.get(reasons)
        if total is None:
            total = sum(map(weight, reasons))
            if len(sums) >= _COMBINATIONS:
                sums.clear()
            sums[reasons] = total
        count = suggestion.count
        frequency = 1.0 + log2(count if count > 1 else 1)  # max(1, count)
        keys.append((total * frequency * (1.0 + suggestion.gap), suggestion.last_seen,
                     suggestion.id))  # fmt: skip
    return keys


def primary_reason(suggestion: Suggestion, config: HarvestConfig) -> str | None:
    """The heaviest reason of ``suggestion`` (ties in :data:`REASONS` order; ``None`` when
    it has none; a reason not in :data:`REASONS` is ignored)."""
    entry = _of(config)
    reasons = tuple(suggestion.reasons)
    if reasons in entry.primary:
        return entry.primary[reasons]
    present = [r for r in REASONS if r in suggestion.reasons]
    found = max(present, key=entry.weight.__getitem__) if present else None
    if len(entry.primary) >= _COMBINATIONS:
        entry.primary.clear()
    entry.primary[reasons] = found
    return found


def select(
    suggestions: Iterable[Suggestion],
    config: HarvestConfig,
    limit: int | None = None,
    distinct: bool = True,
    first: int | None = None,
) -> list[Suggestion]:
    """The best ``limit`` suggestions (all when ``None``), balanced over strata and capped by
    reason quotas as the module docstring describes, in selection order.

    With ``first`` (≥ 0), only the first ``first`` of that selection: the same list as
    ``select(...)[:first]`` (the quotas still those of the whole ``limit``), without
    choosing the rest. The chosen list only grows, so its first ``first`` are settled
    once that many are chosen: a report's top 20 of ~5,000 suggestions held no longer
    checks every one of them for a near-duplicate (``benchmarks.bench_production``: most
    of the replay's report time).

    Raises:
        ValueError: ``limit < 0`` or ``first < 0``.
    """
    ranked = sorted(suggestions, key=lambda s: (-priority(s, config), s.id))
    budget = len(ranked) if limit is None else limit
    if budget < 0:
        raise ValueError(f"limit must be >= 0, got {limit}")
    if first is not None and first < 0:
        raise ValueError(f"first must be >= 0, got {first}")
    wanted = budget if first is None else min(budget, first)
    strata: dict[tuple[str, str], deque[Suggestion]] = {}
    for suggestion in ranked:
        key = (suggestion.topic or "und", suggestion.language or "und")
        strata.setdefault(key, deque()).append(suggestion)
    caps = {r: max(1, math.floor(q * budget)) for r, q in config.quotas.items()}
    used: dict[str, int] = dict.fromkeys(caps, 0)
    chosen: list[Suggestion] = []
    aside: list[Suggestion] = []
    grams: list[frozenset[bytes]] = []
    texts: list[str] = []  # the normalised questions of grams

    def duplicate(candidate: Suggestion) -> bool:
        if not distinct or len(grams) >= DISTINCT_CHECKED:
            return False
        mine, text = trigrams(candidate.normalised), candidate.normalised
        if any(
            jaccard(mine, other) >= config.similarity and may_merge(text, other_text)
            for other, other_text in zip(grams, texts, strict=True)
        ):
            return True
        grams.append(mine)
        texts.append(text)
        return False

    queues = list(strata.values())
    while queues and len(chosen) < wanted:
        for queue in queues:
            while queue and len(chosen) < wanted:
                candidate = queue.popleft()
                reason = primary_reason(candidate, config)
                if reason in caps and used[reason] >= caps[reason]:
                    aside.append(candidate)
                    continue
                if duplicate(candidate):
                    continue
                if reason in used:
                    used[reason] += 1
                chosen.append(candidate)
                break
        queues = [queue for queue in queues if queue]
    aside.sort(key=lambda s: (-priority(s, config), s.id))
    for candidate in aside:
        if len(chosen) >= wanted:
            break
        if not duplicate(candidate):
            chosen.append(candidate)
    return chosen
