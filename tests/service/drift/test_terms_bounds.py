"""Rising terms: "the memory bound can hide a rise, never invent one" (s33 review, rev5).

Two breakages passed every test of ``test_terms.py`` (its author's report): dropping the
baseline's upper-bound padding (a term the frozen baseline's summary no longer keeps counted
0 there instead of the summary's floor) and dropping the terms of events released after being
held ahead (their questions counted, their words not). Each test below feeds a perfectly
stationary stream (round robin: every term's true share is the same in the baseline and the
current window), so no term rose and any alarm is an invented one; and each fails with one of
the two breakages (checked by reverting each line by hand, see the s33 rev5 report).

Worked out by hand, not from the code's output:

* padding: 30 terms (10 "filler" terms each in 1/10 of the questions, 20 "victim" terms each
  in 1/20), 8 questions a minute. A minute bucket holds at most 16 distinct terms, under
  2 × ``max_terms`` = 20, so the current window's counts are exact; the baseline's one
  summary sees all 30 and keeps at most 20, so at least 10 victims are not kept. Unpadded,
  such a victim has ``c = 0`` of 960 baseline questions against ``a = 24`` of 480 current
  ones: E = 480·24/1440 = 8, V = 480·960·24·1416/(1440²·1439) = 5.25, Z = (16 − 0.5)/2.29 =
  6.8, p ≈ 6e-12, far below the level 0.001/24/30 = 1.4e-6, OR infinite, share up 5 points:
  an alarm on a stationary stream. Padded with the floor (≥ its true count), no rise.
* released terms: in the warm-up, bursts of 3 questions 1 s apart every 200 s with
  ``max_ahead_s`` 120 and ``ahead_confirm`` 3, fed one question an update, so the first two
  of each burst are held and released by the third (2 of 3 baseline questions come through
  ``last_released``). "x" is in every second question. Without their terms the baseline's
  share of "x" is about 1/6 (only the third of each burst counts it) against 1/2 now:
  an alarm. With them, 1/2 against 1/2.
"""

from __future__ import annotations

from service.drift.terms import TermsDriftDetector
from service.drift.windows import WindowConfig

T0 = 1_790_000_040.0  # a bucket start (multiple of 60)
FILLERS = [f"filler{chr(97 + k)}" for k in range(10)]
VICTIMS = [f"victim{chr(97 + k)}" for k in range(20)]


def _terms(*words: str) -> dict[str, str]:
    return {w: w for w in words}


def test_an_untracked_baseline_term_is_padded_with_the_floor() -> None:
    config = WindowConfig(window_s=3600, bucket_s=60, warmup_s=7200, reference_window_s=7200,
                          test_every_s=600, max_ahead_s=1e9, ahead_confirm=1)  # fmt: skip
    det = TermsDriftDetector(windows=config, min_count=100, min_reference_count=100,
                             max_terms=10, min_term_questions=10)  # fmt: skip
    n = 8 * 60 * 5  # 5 hours at 8 questions a minute: 2 h baseline, 3 h after
    for start in range(0, n, 40):
        rows = range(start, min(n, start + 40))
        det.update_many([("en", _terms(FILLERS[i % 10], VICTIMS[i % 20])) for i in rows],
                        [T0 + 7.5 * i for i in rows])  # fmt: skip
    report = det.reports["baseline"]
    # every victim (24 of 480 questions) and filler (48) is tested: 30 terms
    assert report.state == "ok" and report.terms_tested == 30
    # the baseline's summary really lost terms (else this test would test nothing)
    base = det._base["en"]
    assert base.floor > 0 and len(base.counts) <= 20
    assert det.n_tests >= 15 and det.n_alarms == 0


def test_released_held_questions_keep_their_terms() -> None:
    config = WindowConfig(window_s=3600, bucket_s=60, warmup_s=7200, reference_window_s=7200,
                          test_every_s=600, max_ahead_s=120, ahead_confirm=3,
                          allowed_lateness_s=60)  # fmt: skip
    det = TermsDriftDetector(windows=config, min_count=100, min_reference_count=50,
                             max_terms=2000, min_term_questions=10)  # fmt: skip
    i, t = 0, T0
    stamps: list[float] = []
    while t < T0 + 7200:  # the warm-up: bursts of 3, 1 s apart, a jump of 198 s between
        stamps += [t, t + 1, t + 2]
        t += 200
    while t < T0 + 7200 + 3 * 3600:  # then steady traffic, no jump
        stamps.append(t)
        t += 7.5
    for i, stamp in enumerate(stamps):  # one question an update: held across updates
        words = ("x", FILLERS[i % 10]) if i % 2 == 0 else (FILLERS[i % 10],)
        det.update_many([("en", _terms(*words))], [stamp], now=stamp)
    window = det._windows.window
    assert window.ahead == 0  # every held event was released
    report = det.reports["baseline"]
    assert report.state == "ok" and report.n_reference >= 100 and report.terms_tested >= 1
    assert det.n_tests >= 15 and det.n_alarms == 0
