"""The count floor's hysteresis of rising terms (:meth:`TermsDriftDetector._held_terms`).

Trial 40: a surge of questions on two articles no gold row covered ("harvard", "warsaw") ran
for 27 h at 10–11 questions a window — at ``min_term_questions`` (10) — and the terms alarm
raised and cleared 7 times: a window with 9 took the term out of the tested ones, and the
clear rule judges tested terms only. A term of the open alarm is now judged by the clear rule
while it is in at least half the floor (5) of the current window's questions.

The stream, worked out by hand: one question every 5 s, so a 600 s window holds 120; the
baseline (3,000 s, 600 questions) never says "doctor"; a test every 300 s at a false-alarm
budget of 0.05 a day (288 tests a day, ~9 terms tested: a per-term level of ~1.9e-5; 12 of
~110 questions against 0 of ~240 is p ~2e-6). Phase A puts "doctor" in every 10th
question (12 a window, share 10 %, odds ratio infinite against a baseline of 0: the alarm
rule's 10 questions, OR ≥ 2 and 2.5 points are met); phase B in every 17th (7 a window: under
the floor of 10, above the hold floor of 5; share 5.8 % up from 0, OR infinite, so the clear
rule — OR ≥ 1.5 and 1.25 points — keeps it); phase C in every 60th (2 a window: under the
hold floor, so it ends).
"""

from __future__ import annotations

from service.drift.terms import TermsDriftDetector, question_terms
from service.drift.windows import WindowConfig

T0 = 1_790_000_000.0
STEP = 5.0
CONFIG = WindowConfig(window_s=600, bucket_s=60, reference_window_s=1800, test_every_s=300,
                      warmup_s=1200, allowed_lateness_s=300, future_tolerance_s=60,
                      max_ahead_s=1200, ahead_confirm=3, baseline="frozen")  # fmt: skip
WORDS = ["river", "castle", "engine", "museum", "planet", "football", "chlorine", "glacier"]


def _questions(n: int, start: int, every: int | None) -> list[str]:
    out = []
    for i in range(start, start + n):
        words = [WORDS[i % len(WORDS)], WORDS[(i * 3 + 1) % len(WORDS)]]
        if every is not None and i % every == 0:
            words.append("doctor")
        out.append(" ".join(words))
    return out


def _feed(det: TermsDriftDetector, questions: list[str], t: float) -> tuple[float, list[str]]:
    """Feed 10 questions at a time; the state after each chunk."""
    states = []
    for i in range(0, len(questions), 10):
        part = questions[i : i + 10]
        stamps = [t + STEP * k for k in range(len(part))]
        det.update_many([("en", question_terms(q)) for q in part], stamps)
        t = stamps[-1] + STEP
        states.append(det.reports["baseline"].state if "baseline" in det.reports else "none")
    return t, states


def test_a_surge_at_the_floor_keeps_one_alarm_and_ends_under_half_of_it() -> None:
    det = TermsDriftDetector(windows=CONFIG, min_count=50, min_reference_count=50, alpha=0.05)
    assert det.hold_min_questions == 5
    t, _ = _feed(det, _questions(600, 0, None), T0)  # 3,000 s of baseline
    t, states = _feed(det, _questions(480, 600, 10), t)  # phase A: 2,400 s, 12 a window
    report = det.reports["baseline"]
    assert report.state == "drift" and det.n_alarms == 1
    assert [c.term for c in report.rising] == ["doctor"]
    t, states = _feed(det, _questions(480, 1080, 17), t)  # phase B: 7 a window
    # once the window is all phase B (120 questions: after 12 chunks), every test holds it
    assert states[12:] and set(states[12:]) == {"drift"}
    assert det.n_alarms == 1  # one alarm, never cleared and raised again
    report = det.reports["baseline"]
    assert report.held_by_hysteresis and [c.term for c in report.rising] == ["doctor"]
    assert 5 <= report.rising[0].current_count < 10
    t, states = _feed(det, _questions(480, 1560, 60), t)  # phase C: 2 a window
    assert det.reports["baseline"].state == "ok" and det.n_alarms == 1
