"""Load shedding of new questions: bounded per batch, deterministic, stratified, exact-text
merges never shed, shed events counted."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from service.harvest.config import HarvestConfig
from service.harvest.shedding import choose, rank_hash
from service.harvest.stage import HarvestStage
from service.harvest.text import comparison_form as normalise
from service.records import GoldQuestion
from tests.service.harvest.helpers import batch, event

BUDGET = 5
CONFIG = HarvestConfig(flush_interval_s=0.0, max_new_per_batch=BUDGET)
WORDS = ("alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india",
         "juliet", "kilo", "lima", "mike", "november", "oscar", "papa")  # fmt: skip


def question(i: int) -> str:
    """A question far (trigram Jaccard) from every other ``question(j)``."""
    a, b = WORDS[i % len(WORDS)], WORDS[(i // len(WORDS) + 3 * i + 1) % len(WORDS)]
    return f"{a} {b} zz{i:03d}qq {i * 7919 % 1000:03d}"


def refused(topic: str = "fees", language: str = "en") -> dict[str, Any]:
    return {"refused": True, "topic": topic, "language": language}


def flood(n: int, start: int = 0, notes: dict[str, Any] | None = None) -> Any:
    events = [event(f"e{start + i}", question(start + i)) for i in range(n)]
    return batch(events, [dict(notes or refused()) for _ in range(n)])


def test_questions_are_distinct() -> None:
    stage = HarvestStage(HarvestConfig(flush_interval_s=0.0, max_new_per_batch=None))
    stage.process(flood(60))
    assert len(stage.suggestions) == 60


def test_new_questions_are_bounded_per_batch_and_the_rest_counted_as_shed() -> None:
    stage = HarvestStage(CONFIG)
    stage.process(flood(40))
    assert len(stage.suggestions) == BUDGET
    observed = stage.pending_observations()
    assert observed["shed"] == 40 - BUDGET
    assert observed["new_suggestions"] == BUDGET
    assert observed["reasons"] == {"refused": BUDGET}
    stage.process(flood(40, start=40))  # the bound is per batch
    assert len(stage.suggestions) == 2 * BUDGET
    assert stage.pending_observations()["shed"] == 40 - BUDGET


def test_no_shedding_at_or_under_the_bound_or_without_one() -> None:
    stage = HarvestStage(CONFIG)
    stage.process(flood(BUDGET))
    assert len(stage.suggestions) == BUDGET
    assert stage.pending_observations()["shed"] == 0
    unbounded = HarvestStage(HarvestConfig(flush_interval_s=0.0, max_new_per_batch=None))
    unbounded.process(flood(40))
    assert len(unbounded.suggestions) == 40
    assert unbounded.pending_observations()["shed"] == 0


def test_the_choice_is_deterministic_and_independent_of_order() -> None:
    first, second, reordered = HarvestStage(CONFIG), HarvestStage(CONFIG), HarvestStage(CONFIG)
    first.process(flood(40))
    second.process(flood(40))
    events = [event(f"e{i}", question(i)) for i in reversed(range(40))]
    reordered.process(batch(events, [refused() for _ in events]))
    assert sorted(first.suggestions) == sorted(second.suggestions) == sorted(reordered.suggestions)
    # same score and stratum: the lowest rank hashes are kept
    texts = sorted((normalise(question(i)) for i in range(40)), key=rank_hash)
    assert {s.normalised for s in first.suggestions.values()} == set(texts[:BUDGET])


def test_every_stratum_gets_a_question_before_any_gets_a_second() -> None:
    strata = [("fees", "en"), ("fees", "hi-Latn"), ("hostel", "en"), ("exams", "es")]
    events, notes = [], []
    for i in range(40):  # 37 in the commonest stratum, one in each of the three others
        topic, language = strata[0] if i >= 3 else strata[i + 1]
        events.append(event(f"e{i}", question(i)))
        notes.append(refused(topic, language))
    stage = HarvestStage(CONFIG)
    stage.process(batch(events, notes))
    kept = Counter((s.topic, s.language) for s in stage.suggestions.values())
    assert kept == {strata[0]: BUDGET - 3, strata[1]: 1, strata[2]: 1, strata[3]: 1}


def test_heavier_reasons_are_kept_first_within_a_stratum() -> None:
    heavy = {7, 19, 23, 31}  # refused and answered out of scope: 4.5 against 2.0
    events = [event(f"e{i}", question(i)) for i in range(40)]
    notes = [{**refused(), "under_refusal": True} if i in heavy else refused() for i in range(40)]
    stage = HarvestStage(CONFIG)
    stage.process(batch(events, notes))
    kept = {s.normalised for s in stage.suggestions.values()}
    assert {normalise(question(i)) for i in heavy} <= kept
    assert stage.pending_observations()["reasons"]["answered_out_of_scope"] == len(heavy)


def test_known_texts_and_existing_suggestions_merge_and_are_never_shed() -> None:
    stage = HarvestStage(CONFIG)
    stage.process(flood(BUDGET))  # five suggestions
    existing = [s.question for s in stage.suggestions.values()]
    stage.pending_observations()
    # a flood of new questions, with the five existing ones asked again twice each
    events = [event(f"x{i}", question(100 + i)) for i in range(40)]
    events += [event(f"r{k}{i}", text.upper() + "?") for k in range(2)
               for i, text in enumerate(existing)]  # fmt: skip
    stage.process(batch(events, [refused() for _ in events]))
    observed = stage.pending_observations()
    assert observed["shed"] == 40 - BUDGET
    counts = {s.normalised: s.count for s in stage.suggestions.values()}
    assert all(counts[normalise(text)] == 3 for text in existing)
    assert len(stage.suggestions) == 2 * BUDGET


def test_known_gold_questions_are_still_skipped_not_shed() -> None:
    gold = [GoldQuestion("q-1", question(500), ("p-1",))]
    stage = HarvestStage(CONFIG, known_questions=gold)
    stage.process(batch([event("g0", question(500))], [refused()]))  # learnt as known
    assert stage.pending_observations()["known"] == {"gold_set": 1}
    events = [event(f"e{i}", question(i)) for i in range(40)] + [event("g1", question(500))]
    stage.process(batch(events, [refused() for _ in events]))
    observed = stage.pending_observations()
    assert observed["known"] == {"gold_set": 1}
    assert observed["shed"] == 40 - BUDGET


def test_repeats_of_a_kept_new_text_in_the_batch_all_count() -> None:
    stage = HarvestStage(CONFIG)
    kept = min((normalise(question(i)) for i in range(40)), key=rank_hash)
    i = next(i for i in range(40) if normalise(question(i)) == kept)
    events = [event(f"e{j}", question(j)) for j in range(40)]
    events += [event(f"again{k}", question(i)) for k in range(3)]
    stage.process(batch(events, [refused() for _ in events]))
    assert {s.normalised: s.count for s in stage.suggestions.values()}[kept] == 4
    assert stage.pending_observations()["shed"] == 40 - BUDGET


def test_choose_rules() -> None:
    rows = [(f"t{i}", ("a", "en") if i % 2 else ("b", "hi"), float(i % 3)) for i in range(12)]
    kept = choose(rows, 4)
    assert kept == choose(list(reversed(rows)), 4)
    assert len(kept) == 4
    assert Counter(("a" if int(t[1:]) % 2 else "b") for t in kept) == {"a": 2, "b": 2}
    assert all(float(int(t[1:]) % 3) == 2.0 for t in kept)  # the best score of each stratum
    assert choose(rows, None) == {t for t, _, _ in rows}
    assert choose(rows, 0) == set()
    with pytest.raises(ValueError):
        choose(rows, -1)


def test_config_bound_is_validated() -> None:
    assert HarvestConfig().max_new_per_batch is not None
    with pytest.raises(ValueError):
        HarvestConfig(max_new_per_batch=0)
