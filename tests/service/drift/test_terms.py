"""Rising terms (:mod:`service.drift.terms`): the CMH test by hand, the terms of a question,
the Space-Saving bounds, the alarm on a new subject but not on a language shift, and the
stage's snapshot (a split replay gives the one replay's report).

The two-stratum CMH case, by hand (stratum ``(a, n1, c, n2)``; ``N = n1 + n2``, ``m = a + c``)::

    en (20, 100, 5, 200): N 300, m 25, E = 100·25/300 = 8.33333,
        V = 100·200·25·275 / (300²·299) = 137 500 000 / 26 910 000 = 5.10963,
        a·d/N = 20·195/300 = 13, b·c/N = 80·5/300 = 1.33333
    es (6, 50, 1, 100):   N 150, m 7,  E = 50·7/150 = 2.33333,
        V = 50·100·7·143 / (150²·149) = 5 005 000 / 3 352 500 = 1.49292,
        a·d/N = 6·99/150 = 3.96, b·c/N = 44·1/150 = 0.29333
    Σa − ΣE = 26 − 10.66667 = 15.33333, ΣV = 6.60255
    Z = (15.33333 − 0.5) / √6.60255 = 14.83333 / 2.56954 = 5.77275
    CMH = 14.83333² / 6.60255 = 33.325;  p = 1 − Φ(5.77275) ≈ 3.90e-9
    OR_MH = (13 + 3.96) / (1.33333 + 0.29333) = 16.96 / 1.62667 = 10.426
    pooled shares: 26/150 = 0.17333, 6/300 = 0.02
"""

from __future__ import annotations

import json
import math
import random
from datetime import UTC, datetime
from typing import Any

import pytest
from scipy.stats import norm

from service.drift.stage import DriftStage
from service.drift.terms import TermsDriftDetector, _Tally, cmh_test, question_terms
from service.drift.windows import WindowConfig
from service.events import QueryLogEvent
from service.pipeline import Batch

T0 = 1_790_000_000.0
CONFIG = WindowConfig(window_s=600, bucket_s=60, reference_window_s=1800, test_every_s=60,
                      warmup_s=1200, allowed_lateness_s=300, future_tolerance_s=60,
                      max_ahead_s=1200, ahead_confirm=3)  # fmt: skip
EN = ["river", "castle", "engine", "museum", "harvard", "planet", "football", "chlorine"]
ES = ["ciudad", "rio", "castillo", "motor", "museo", "planeta", "futbol", "cloro"]


def test_cmh_two_strata_by_hand() -> None:
    r = cmh_test([(20, 100, 5, 200), (6, 50, 1, 100)])
    assert r.statistic == pytest.approx(33.325, rel=1e-4)
    assert r.odds_ratio == pytest.approx(10.426, rel=1e-4)
    assert r.p_value == pytest.approx(norm.sf(14.833333 / math.sqrt(6.60255)), rel=1e-4)
    assert r.p_value == pytest.approx(3.90e-9, rel=2e-3)
    assert (r.share_current, r.share_reference) == pytest.approx((26 / 150, 6 / 300))
    assert (r.count_current, r.count_reference) == (26, 6)


def test_cmh_uninformative_and_falling() -> None:
    # a stratum with one side empty informs nothing: p 1, statistic 0
    assert cmh_test([(5, 10, 0, 0)]).p_value == 1.0
    # a fall is not a rise: Z = (−9.5 − 0.5 ... ) < 0, p above 1/2
    assert cmh_test([(0, 100, 10, 100)]).p_value > 0.5
    # absent from the baseline: OR infinite
    assert cmh_test([(10, 100, 0, 100)]).odds_ratio == math.inf
    with pytest.raises(ValueError):
        cmh_test([(11, 10, 0, 10)])


def test_question_terms() -> None:
    terms = question_terms("Who played the Doctors in 1963 and 2005? Write to <EMAIL> now")
    # function words (who, the, in, and, to, now...) and numbers go; placeholders go
    assert "email" not in terms and "1963" not in terms
    assert terms["doctor"] == "doctors" and terms["play"] == "played"
    assert all(len(stem) >= 3 for stem in terms)
    assert question_terms("Is it 42?") == {}


def test_space_saving_bounds() -> None:
    tally = _Tally(1)
    for terms in (["b"], ["c"], ["a"], ["c"]):
        tally.add(terms)
    # three terms > 2 × 1: the most counted stays (all 1: the smallest, a); the largest count
    # dropped, 1, is the floor; c comes back at floor + 1 = 2 with error 1
    assert tally.cells == {"a": (1, 0), "c": (2, 1)} and tally.floor == 1
    # true counts: a 1, b 1, c 2 — c's upper bound 2 ≥ 2 ≥ its lower bound 2 − 1; b, not
    # kept, was counted at most the floor 1
    assert _Tally.from_text(1, tally.text()).cells == tally.cells


def _question(rng: random.Random, language: str, extra: str | None = None) -> str:
    words = rng.sample(EN if language == "en" else ES, 2)
    return " ".join([*words, *([extra] if extra else [])])


def _feed(det: TermsDriftDetector, questions: list[tuple[str, str]], start: float,
          step: float = 1.0) -> float:  # fmt: skip
    t = start
    for i in range(0, len(questions), 50):
        part = questions[i : i + 50]
        stamps = [t + step * k for k in range(len(part))]
        det.update_many([(lang, question_terms(q)) for lang, q in part], stamps)
        t = stamps[-1] + step
    return t


def test_a_language_shift_is_quiet_a_new_subject_alarms() -> None:
    rng = random.Random(3)
    det = TermsDriftDetector(windows=CONFIG, min_count=100, min_reference_count=100)
    base = [(lang, _question(rng, lang)) for lang in rng.choices(["en", "es"], [8, 2], k=1500)]
    t = _feed(det, base, T0)
    # the language mix moves (es 20 % → 60 %), the words within each language do not
    shifted = [(lang, _question(rng, lang)) for lang in rng.choices(["en", "es"], [4, 6], k=900)]
    t = _feed(det, shifted, t)
    report = det.reports["baseline"]
    assert report.state == "ok" and det.n_alarms == 0 and report.terms_tested > 0
    # unstratified, the Spanish words would rise: one stratum of all the questions
    n1, n2 = report.n_current, report.n_reference
    spanish = sum(1 for lang, _ in shifted[-600:] if lang == "es")
    base_es = sum(1 for lang, _ in base if lang == "es")
    pooled = cmh_test([(spanish // 4, n1, base_es // 4 * n2 // len(base), n2)])
    assert pooled.p_value < report.alpha
    # a new subject: "doctor" in 30 % of the English questions
    new = [(lang, _question(rng, lang, "doctor" if lang == "en" and rng.random() < 0.3
                            else None))
           for lang in rng.choices(["en", "es"], [4, 6], k=600)]  # fmt: skip
    _feed(det, new, t)
    report = det.reports["baseline"]
    assert report.state == "drift"
    assert [c.term for c in report.rising] == ["doctor"]
    assert report.rising[0].reference_count == 0 and report.rising[0].surface == "doctor"


def test_truncation_only_hides() -> None:
    """With one term kept per bucket and language, the stationary stream stays quiet (the
    baseline's counts are upper bounds, the current ones lower bounds)."""
    rng = random.Random(5)
    det = TermsDriftDetector(windows=CONFIG, min_count=100, min_reference_count=100,
                             max_terms=1, min_term_questions=1)  # fmt: skip
    stream = [(lang, _question(rng, lang)) for lang in rng.choices(["en", "es"], [1, 1], k=4000)]
    _feed(det, stream, T0)
    assert det.n_tests > 40 and det.n_alarms == 0


def _events(n: int, seed: int, gap: int) -> tuple[list[QueryLogEvent], list[dict[str, Any]]]:
    """``n`` questions about 1 s apart; "doctor" in 30 % of them from 60 % of the stream; two
    events 1300 s ahead (held for good), a gap of 5000 s before event ``gap`` (the last of a
    batch: it is held, and released by the next batch's, which confirm the jump) and 2 %
    late ones."""
    rng = random.Random(seed)
    events, notes = [], []
    t = T0
    for i in range(n):
        t += rng.expovariate(1.0) + (5000 if i == gap else 0)  # a gap: a jump
        language = rng.choice(["en", "en", "es"])
        extra = "doctor" if i > 0.6 * n and rng.random() < 0.3 else None
        stamp = t + 1300 if i in (int(0.5 * n), int(0.5 * n) + 10) else t  # held for good
        if rng.random() < 0.02:
            stamp = t - 900  # late
        events.append(QueryLogEvent(event_id=str(i), question=_question(rng, language, extra),
                                    timestamp=datetime.fromtimestamp(stamp, UTC)))  # fmt: skip
        notes.append({"language": language, "topic": "a"})
    return events, notes


def _replay(stage: DriftStage, events: list[QueryLogEvent], notes: list[dict[str, Any]],
            size: int = 137) -> None:  # fmt: skip
    for start in range(0, len(events), size):
        batch = Batch.of(events[start : start + size], "file")
        batch.annotations = [dict(note) for note in notes[start : start + size]]
        stage.process(batch)


def _stage() -> DriftStage:
    return DriftStage({}, windows=CONFIG, min_count=100, clock=lambda: T0 + 86_400)


def test_split_replay_equals_one_replay() -> None:
    events, notes = _events(4000, seed=9, gap=137 * 16 - 1)
    whole = _stage()
    _replay(whole, events, notes)
    first = _stage()
    _replay(first, events[:2055], notes[:2055])
    restored = _stage()
    restored.restore(json.loads(json.dumps(first.state_snapshot())))
    _replay(restored, events[2055:], notes[2055:])
    one, split = whole.report(), restored.report()
    assert one["terms"]["state"] == "drift"  # the stream's doctor rose
    assert [a for a in one["alarms"] if a["dimension"] == "terms"][0]["rising_terms"][0][
        "term"
    ] == "doctor"
    assert json.dumps(split, sort_keys=True) == json.dumps(one, sort_keys=True)
    assert json.dumps(restored.state_snapshot(), sort_keys=True) == json.dumps(
        whole.state_snapshot(), sort_keys=True
    )


def test_terms_can_be_turned_off_and_need_a_baseline() -> None:
    stage = DriftStage({}, windows=CONFIG, terms=False)
    assert stage.terms is None and "terms" not in stage.report()
    none = WindowConfig(window_s=600, bucket_s=60, test_every_s=60, baseline="none")
    with pytest.raises(ValueError):
        TermsDriftDetector(windows=none)


def test_at_once_equals_chunk_by_chunk(monkeypatch: pytest.MonkeyPatch) -> None:
    """The terms follow the windows' events either way (the batch fed at once, or chunk by
    chunk as with held events): the same report and state."""
    events, notes = _events(3000, seed=4, gap=1499)
    at_once = _stage()
    _replay(at_once, events, notes, size=500)
    chunked = _stage()
    monkeypatch.setattr(chunked, "_process_at_once", lambda *args: False)
    _replay(chunked, events, notes, size=500)
    assert at_once.report()["terms"]["comparisons"]["baseline"]["terms_tested"] > 0
    assert json.dumps(at_once.report(), sort_keys=True) == json.dumps(
        chunked.report(), sort_keys=True
    )
    assert json.dumps(at_once.state_snapshot(), sort_keys=True) == json.dumps(
        chunked.state_snapshot(), sort_keys=True
    )


def test_the_exact_conditional_p_by_scipy_and_by_hand() -> None:
    """A review: the normal approximation read (10, 120, 2, 480) as p 1.2e-7 where the exact
    conditional p is 3.4e-6 (false alarms ~13× the budget at trial 14's sizes). One stratum:
    the hypergeometric tail, scipy's ``hypergeom.sf(9, 600, 12, 120)``; two strata: the
    convolution, summed here over every pair of counts by hand."""
    from scipy.stats import hypergeom

    from service.drift.terms import cmh_test, exact_rise_p

    one = exact_rise_p([(10, 120, 2, 480)])
    assert math.isclose(one, hypergeom.sf(9, 600, 12, 120), rel_tol=1e-9)
    assert cmh_test([(10, 120, 2, 480)]).p_value < one / 10  # the approximation: far smaller
    first, second = hypergeom(50, 4, 20), hypergeom(65, 7, 40)  # (N, m = a + c, n1)
    by_hand = sum(first.pmf(i) * second.pmf(j)
                  for i in range(5) for j in range(8) if i + j >= 3 + 5)  # fmt: skip
    assert math.isclose(exact_rise_p([(3, 20, 1, 30), (5, 40, 2, 25)]), by_hand, rel_tol=1e-9)
    assert exact_rise_p([(0, 20, 5, 30)]) == 1.0  # no rise at all
    assert exact_rise_p([(3, 0, 1, 30)]) == 1.0  # no informative stratum
