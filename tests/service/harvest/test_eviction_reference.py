"""The harvest stage's eviction against the plain rule it implements (issue 22).

The stage keys for an eviction only the suggestions it noted as held without a key
(``_rekey``: changed since keyed, started unkeyed, restored), not every held one missing
from ``_order`` (a set difference over all ~5,500 held at each eviction). The reference
below keeps that set difference (the code before the change) and, to be plainer still,
ranks every held suggestion again at each eviction by :func:`eviction_keys`. On random
streams with exact repeats, near-duplicates, evictions, decisions, a redelivered event,
reasons given twice and a restore between batches, both stages hold the same suggestions,
records, keys and counts after every batch. The goldens never evict (too few suggestions).
"""

from __future__ import annotations

import random
from typing import Any

from service.harvest.config import HarvestConfig
from service.harvest.ranking import eviction_keys
from service.harvest.stage import HarvestStage
from service.harvest.suggestion import Occurrence
from tests.service.harvest.helpers import T0, batch, event

WORDS = ["hostel", "fee", "refund", "bus", "pass", "library", "hours", "exam", "date",
         "visa", "form", "parking", "permit", "wifi", "password"]  # fmt: skip
NOTES: list[dict[str, Any]] = [{"refused": True}, {"topic": "novel"}, {"acl_leaks": ["p"]},
                               {"refused": True, "topic": "novel"}, {}]  # fmt: skip


class _Reference(HarvestStage):
    """The eviction as a plain rule: every held suggestion ranked by its current key
    (:func:`eviction_keys`), the lowest dropped down to ``max_suggestions`` past 1.1 times
    it; the stage's bookkeeping (``_order``, ``_ranked``, the exact-text look-up) kept as the
    stage keeps it, so that everything but the choice of whom to key is the stage's."""

    def _evict(self) -> None:
        limit, suggestions = self.config.max_suggestions, self.suggestions
        if len(suggestions) <= limit * 1.1:
            return
        order = self._order
        for key in eviction_keys(list(suggestions.values()), self.config):
            order[key[2]] = key
        self._rekey.clear()
        self._unranked = []
        ranked = sorted(order[sid] for sid in suggestions)
        evicted = len(ranked) - limit
        check = self._exact_check
        for _, _, sid in ranked[:evicted]:
            del suggestions[sid], order[sid]
            self.index.remove(sid)
            self._dirty.discard(sid)
            self._stale.discard(sid)
            check.add(sid)
        self._ranked = ranked[evicted:]
        decided, exact, exact_of = self._decided, self._exact, self._exact_of
        for sid in check:
            if sid not in suggestions and sid not in decided:
                for text in exact_of.pop(sid, ()):
                    if exact.get(text) == sid:
                        del exact[text]
        check.clear()
        self._pending["evicted"]["suggestions"] += evicted
        self._evictions += evicted


def _question(rng: random.Random) -> str:
    """Two to four of a few words: exact repeats and near-duplicates are common."""
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(2, 4)))


def _state(stage: HarvestStage) -> tuple[Any, ...]:
    return (
        stage.records(),
        sorted(stage._order.items()),
        stage.pending_observations(),
        sorted(stage._exact.items()),
    )


def test_eviction_matches_the_plain_rule_on_random_streams() -> None:
    for seed in range(12):
        rng = random.Random(seed)
        config = HarvestConfig(max_suggestions=rng.choice([10, 12, 25]), flush_interval_s=0.0)
        stage, reference = HarvestStage(config), _Reference(config)
        serial = 0
        for round_ in range(30):
            events, notes = [], []
            for _ in range(rng.randint(1, 12)):
                serial += 1
                event_id = f"e{rng.randint(1, serial)}" if rng.random() < 0.05 else f"e{serial}"
                events.append(event(event_id, _question(rng), minute=serial))
                notes.append(dict(rng.choice(NOTES)))
            for target in (stage, reference):
                target.process(batch(events, notes))
            if rng.random() < 0.1 and stage.suggestions:  # a decision on a held one
                sid = rng.choice(sorted(stage.suggestions))
                stage.decided(sid)
                reference.decided(sid)
            if rng.random() < 0.1 and stage.suggestions:  # reasons given twice: kept unkeyed
                sid = rng.choice(sorted(stage.suggestions))
                twice = Occurrence(f"x{round_}", T0, "extra", "extra", ("refused", "refused"))
                for target in (stage, reference):
                    target._add(f"{sid}-x{round_}", twice)
            if rng.random() < 0.1:  # a restart from the checkpoint just taken
                snapshot = stage.state_snapshot()
                stage = HarvestStage(config)
                stage.restore(snapshot)
                reference = _Reference(config)
                reference.restore(snapshot)
            assert _state(stage) == _state(reference), (seed, round_)
            assert stage._rekey <= stage.suggestions.keys()
