"""Direct standardisation of the topic comparison by the language mix (service.drift.strata).

Every expected figure is worked by hand in the comments from the formulas of the module
docstring (Kitagawa's direct standardisation, shrinkage toward the pooled distribution,
Kish's effective sample size), not read off the code.
"""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np
import pytest

from service.drift.detectors import CategoricalDriftDetector
from service.drift.stage import DriftStage, detectable_change
from service.drift.strata import joint_key, split_joint, standardised_reference
from service.drift.windows import WindowConfig
from service.pipeline import Batch

# 2 languages, 3 topics. en: 10 rows (6 a, 3 b, 1 c); hi: 10 rows (2 a, 2 b, 6 c).
# Pooled: a 8/20 = .40, b 5/20 = .25, c 7/20 = .35.
REFERENCE = {"en": {"a": 6, "b": 3, "c": 1}, "hi": {"a": 2, "b": 2, "c": 6}}
# the current window: 20 en, 80 hi questions (w_en = .2, w_hi = .8)
MIX = {"en": 20, "hi": 80}


def test_unshrunk_standardisation_by_hand() -> None:
    # k = 0: expected = .2·(.6, .3, .1) + .8·(.2, .2, .6) = (.28, .22, .50);
    # β = (.2, .8): n_eff = 1 / (.2²/10 + .8²/10) = 1 / .068 = 14.71 -> 15 rows;
    # 15·(.28, .22, .50) = (4.2, 3.3, 7.5) -> floors 4, 3, 7 (14), the one row left to the
    # largest remainder (c, .5): (4, 3, 8)
    assert standardised_reference(REFERENCE, MIX, shrink=0.0) == {"a": 4, "b": 3, "c": 8}


def test_shrunk_standardisation_by_hand() -> None:
    # k = 10: each language has 10 rows, a_l = 10 / 20 = .5
    # P~(.|en) = ((6, 3, 1) + 10·(.4, .25, .35)) / 20 = (.5, .275, .225)
    # P~(.|hi) = ((2, 2, 6) + 10·(.4, .25, .35)) / 20 = (.3, .225, .475)
    # expected = .2·P~(.|en) + .8·P~(.|hi) = (.34, .235, .425)
    # β_en = (.2·.5 + .8·.5)·10/20 + .2·.5 = .35, β_hi = .25 + .8·.5 = .65
    # (check: .35·(.6, .3, .1) + .65·(.2, .2, .6) = (.34, .235, .425))
    # n_eff = 1 / (.35²/10 + .65²/10) = 1 / .0545 = 18.35 -> 18 rows;
    # 18·(.34, .235, .425) = (6.12, 4.23, 7.65) -> 6, 4, 7 (17), one more to c (.65)
    assert standardised_reference(REFERENCE, MIX, shrink=10.0) == {"a": 6, "b": 4, "c": 8}


def test_a_language_the_reference_lacks_uses_the_pooled_distribution() -> None:
    # all es (no reference row): β_j = n_j / N = .5 each -> expected = pooled (.4, .25, .35),
    # n_eff = 1 / (.25/10 + .25/10) = 20: the pooled counts themselves
    assert standardised_reference(REFERENCE, {"es": 50}) == {"a": 8, "b": 5, "c": 7}


def test_the_reference_own_mix_gives_its_own_distribution() -> None:
    # w = (.5, .5) = the reference's own mix, k = 0: β = (.5, .5), expected = pooled,
    # n_eff = 20: the reference unchanged
    assert standardised_reference(REFERENCE, {"en": 7, "hi": 7}, shrink=0.0) == {
        "a": 8, "b": 5, "c": 7}  # fmt: skip


def test_one_language_in_the_reference_or_no_current_leaves_it_unadjusted() -> None:
    assert standardised_reference({"en": {"a": 6, "b": 4}}, MIX) is None
    assert standardised_reference({"en": {"a": 6}, "hi": {}}, MIX) is None
    assert standardised_reference(REFERENCE, {}) is None
    with pytest.raises(ValueError, match="shrink"):
        standardised_reference(REFERENCE, MIX, shrink=-1.0)


def test_split_joint_reads_marginal_and_strata() -> None:
    counts = {joint_key("a", "en"): 3, joint_key("b", "en"): 1, joint_key("a", "hi"): 2, "c": 4}
    marginal, strata = split_joint(counts)
    assert marginal == {"a": 5, "b": 1, "c": 4}
    assert strata == {"en": {"a": 3, "b": 1}, "hi": {"a": 2}, "": {"c": 4}}


def _detector(strata: str | None) -> CategoricalDriftDetector:
    windows = WindowConfig(window_s=3600, reference_window_s=3600, test_every_s=600,
                           baseline="none")  # fmt: skip
    return CategoricalDriftDetector(
        {"a": 160, "b": 100, "c": 140}, windows=windows, min_count=100, strata=strata,
        reference_strata=None if strata is None else
        {"en": {"a": 120, "b": 60, "c": 20}, "hi": {"a": 40, "b": 40, "c": 120}},
    )  # fmt: skip


def _feed(det: CategoricalDriftDetector, strata: bool) -> None:
    # a window of 1,200 questions, 80 % hi, each language's topics exactly as in its gold
    # rows: en (.6, .3, .1)·240 = 144, 72, 24; hi (.2, .2, .6)·960 = 192, 192, 576
    cells = {("a", "en"): 144, ("b", "en"): 72, ("c", "en"): 24,
             ("a", "hi"): 192, ("b", "hi"): 192, ("c", "hi"): 576}  # fmt: skip
    values = [joint_key(t, g) if strata else t for (t, g), n in cells.items() for _ in range(n)]
    order = np.random.default_rng(0).permutation(len(values))
    det.update_many([values[i] for i in order], [0.45 * t for t in range(len(values))])
    det.update_many(["a"] if not strata else [joint_key("a", "en")], [700.0])  # a test time


def test_a_language_mix_change_alone_moves_the_plain_test_not_the_standardised_one() -> None:
    # plain: the gold set's pooled (.4, .25, .35) of 400 rows against the window's (.28,
    # .22, .50) of 1,200: c rises by 15 points -> drift. Standardised to the window's mix
    # (241 en of 1,201 with the event at the test time: w = (.2007, .7993); k = 10, 200 rows
    # each: a_l = 200/210 = .9524):
    # P~(.|en) = ((120, 60, 20) + 10·(.4, .25, .35)) / 210 = (.5905, .2976, .1119),
    # P~(.|hi) = ((40, 40, 120) + 10·(.4, .25, .35)) / 210 = (.2095, .2024, .5881),
    # expected = .2007·P~(.|en) + .7993·P~(.|hi) ≈ (.286, .222, .493): the window's own
    # (.281, .220, .500) within a point -> no drift. β_en = (1 − .9524)·200/400 + .2007·.9524
    # = .2149, β_hi = .0238 + .7993·.9524 = .7851; n_eff = 1 / ((.2149² + .7851²) / 200)
    # = 1 / .0033127 = 301.9 -> 302 rows
    plain = _detector(None)
    _feed(plain, strata=False)
    assert plain.reports["reference"].state == "drift"
    assert plain.reports["reference"].adjusted_for == ""
    adjusted = _detector("language")
    _feed(adjusted, strata=True)
    report = adjusted.reports["reference"]
    assert report.state == "ok" and report.adjusted_for == "language"
    assert report.n_reference == 302 and not report.rising and not report.falling
    assert report.to_dict()["adjusted_for"] == "language"
    assert "adjusted_for" not in plain.reports["reference"].to_dict()
    # the counts every reader sees are the topics' (marginals), whatever the keys kept
    current, reference = adjusted.counts("reference")
    assert current == {"a": 337, "b": 264, "c": 600} and reference == {"a": 160, "b": 100,
                                                                       "c": 140}  # fmt: skip


def test_und_is_pooled_and_no_language_of_its_own() -> None:
    # review s43: an English-only gold set with `und` questions is not two languages
    assert standardised_reference({"en": {"a": 6, "b": 4}, "und": {"a": 1}}, {"en": 90, "und": 10},
                                  pooled=("und",)) is None  # fmt: skip
    # en/hi reference, current 20 en + 80 und, k = 0: und uses the pooled (.4, .25, .35)
    # (a = 0), en its own (.6, .3, .1): expected = .2·(.6, .3, .1) + .8·(.4, .25, .35)
    # = (.44, .26, .30); β_en = .8·10/20 + .2 = .6, β_hi = .8·10/20 = .4:
    # n_eff = 1 / ((.36 + .16) / 10) = 19.23 -> 19: 19·(.44, .26, .30) = (8.36, 4.94, 5.7)
    # -> floors 8, 4, 5 (17), two rows to the largest remainders b (.94), c (.7): (8, 5, 6)
    got = standardised_reference(REFERENCE, {"en": 20, "und": 80}, shrink=0.0, pooled=("und",))
    assert got == {"a": 8, "b": 5, "c": 6}


def test_a_topic_the_reference_has_keeps_a_row() -> None:
    # en 99 rows (50 a, 49 b), hi 11 (5 a, 5 b, 1 c); the window all en, k = 10:
    # a_en = 99/109; β_en = (10/109)·99/110 + 99/109 = .99083, β_hi = (10/109)·11/110
    # = .00917; n_eff = 1 / (.99083²/99 + .00917²/11) = 100.76 -> 101;
    # expected a = .99083·50/99 + .00917·5/11 = .50459 (50.96 rows), b = .49458 (49.95),
    # c = .00917/11 = .00083 (0.08): floors 50, 49, 0, the two rows left to a and b; c,
    # which the gold set has, keeps 1 row (not reported as a new topic): 102 in all
    ref = {"en": {"a": 50, "b": 49}, "hi": {"a": 5, "b": 5, "c": 1}}
    assert standardised_reference(ref, {"en": 500}) == {"a": 51, "b": 50, "c": 1}


def test_min_reference_count_and_detectable_use_the_effective_reference() -> None:
    # gold 30 rows: en 25 (15 a, 8 b, 2 c), hi 5 (1 a, 1 b, 3 c); the window all hi, k = 10:
    # a_hi = 5/15; β_en = (2/3)·25/30 = .5556, β_hi = (2/3)·5/30 + 1/3 = .4444;
    # n_eff = 1 / (.5556²/25 + .4444²/5) = 1 / .051852 = 19.29 -> 19 rows, fewer than
    # min_reference_count 30; expected = .5556·(.6, .32, .08) + .4444·(.2, .2, .6)
    # = (.4222, .2667, .3111): 19· = (8.02, 5.07, 5.91) -> 8, 5, 5 and the last row to c: 6
    gold = {"en": {"a": 15, "b": 8, "c": 2}, "hi": {"a": 1, "b": 1, "c": 3}}
    windows = WindowConfig(window_s=3600, reference_window_s=3600, test_every_s=600,
                           baseline="none")  # fmt: skip
    det = CategoricalDriftDetector({"a": 16, "b": 9, "c": 5}, windows=windows, min_count=100,
                                   strata="language", reference_strata=gold)  # fmt: skip
    values = [joint_key(t, "hi") for t in "abc" for _ in range(100)]
    det.update_many(values, [10.0 * i for i in range(300)])
    det.update_many([joint_key("a", "hi")], [3500.0])  # a test time
    report = det.reports["reference"]
    assert report.state == "insufficient_data" and report.n_reference == 19
    assert report.adjusted_for == "language"
    current, compared, adjusted = det.compared("reference")
    assert compared == {"a": 8, "b": 5, "c": 6} and adjusted == "language"
    found = detectable_change("topic", "reference", det, 301, current, compared, adjusted)
    assert found is not None and found.get("cannot_alarm")
    assert "19 rows (effective, adjusted for the language mix)" in found["text"]
    assert "30 gold" not in found["text"]


def _stage_run(
    strata: dict[str, dict[str, int]] | None, batch: int, und: float = 0.0
) -> DriftStage:
    stage = DriftStage(
        {"language": {"en": 30}, "topic": {"a": 12, "b": 9, "c": 9}},
        windows=WindowConfig(window_s=3600, test_every_s=300, warmup_s=3600),
        min_count=50, terms=False, clock=lambda: 4e9, gold_topic_strata=strata,
    )  # fmt: skip
    rng = np.random.default_rng(7)
    n = 3000
    stamps = np.sort(rng.uniform(0, 6 * 3600, n)) + 1.8e9
    topics = rng.choice(["a", "b", "c"], n, p=[0.4, 0.3, 0.3])
    later = stamps > 1.8e9 + 3 * 3600  # b leaves the traffic 3 h in
    topics[later] = rng.choice(["a", "c"], int(later.sum()))
    languages = np.where(rng.random(n) < und, "und", "en")

    class Event:
        question = ""

        def __init__(self, t: float) -> None:
            self.timestamp = datetime.fromtimestamp(t, UTC)

    for start in range(0, n, batch):
        part = range(start, min(n, start + batch))
        stage.process(Batch(source="file", events=[Event(stamps[i]) for i in part],
                            annotations=[{"language": str(languages[i]), "topic": str(topics[i])}
                                         for i in part]))  # fmt: skip
    return stage


def test_one_language_is_exactly_the_unadjusted_test_whatever_the_batching() -> None:
    plain = _stage_run(None, 500)
    one = _stage_run({"en": {"a": 12, "b": 9, "c": 9}}, 500)
    small = _stage_run({"en": {"a": 12, "b": 9, "c": 9}}, 37)
    assert plain.alarms and plain.alarms == one.alarms == small.alarms
    reports = [s.report()["topic"]["comparisons"] for s in (plain, one, small)]
    assert reports[0] == reports[1] == reports[2]
    assert "adjusted_for" not in reports[0]["baseline"]


def test_one_language_and_und_is_exactly_the_unadjusted_test() -> None:
    # review s43: 4 % of the questions `und`, the gold set English only: the same tests,
    # figures and alarms as with no strata at all, nothing "adjusted"
    plain = _stage_run(None, 500, und=0.04)
    one = _stage_run({"en": {"a": 12, "b": 9, "c": 9}}, 500, und=0.04)
    assert plain.alarms and plain.alarms == one.alarms
    reports = [s.report()["topic"]["comparisons"] for s in (plain, one)]
    assert reports[0] == reports[1]
    assert "adjusted_for" not in reports[0]["baseline"]
    assert "adjusted_for" not in reports[0]["reference"]


def test_topic_strata_survive_a_snapshot() -> None:
    stage = _stage_run({"en": {"a": 12, "b": 9, "c": 9}, "hi": {"a": 1}}, 500)
    assert stage.topic_strata == ["en", "hi"]
    again = DriftStage({"topic": {"a": 12}}, windows=WindowConfig(window_s=3600), terms=False)
    again.restore(stage.state_snapshot())
    assert again.topic_strata == ["en", "hi"]
    kept = again.categorical["topic"].counts("baseline")
    assert kept == stage.categorical["topic"].counts("baseline")
