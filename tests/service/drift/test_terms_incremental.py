"""Rising terms: the sums kept between tests equal the sums made afresh (issue 22 item 2).

The detector keeps, between its tests, the current window's lower bounds per language and
pooled (``_RangeCounts``: only the buckets that came into the window, changed or left are
read again) and how many of the recent buckets' summaries hold each term (``_holders``: the
surface forms a test may forget). Each test below feeds a stream that exercises every path —
late events into closed buckets, summaries truncated (``max_terms`` 4: a bucket's summary
of up to 8 terms), buckets leaving the window, a snapshot restored mid-stream — and after
every update compares them with the definitions, computed from the buckets by brute force:

* ``sums[language][term]`` = Σ over the buckets of the current window of ``count − error``
  where positive (the Space-Saving lower bound), no zero entries, no empty language;
* ``pooled[term]`` = Σ over the languages of ``sums``;
* ``holders[term]`` = the number of (bucket, language) summaries of the recent store whose
  kept terms include ``term``;
* as of the last test, the terms tested (pooled ≥ ``min_term_questions``) and the family's
  terms the baseline alone does not put in it (below ``min_term_questions`` there, at least
  that with the current window's).
"""

from __future__ import annotations

import random
from collections import Counter

from service.drift.terms import TermsDriftDetector, exact_rise_p
from service.drift.windows import WindowConfig

T0 = 1_790_000_040.0
WORDS = [f"term{chr(97 + k)}" for k in range(14)]


def _brute_sums(det: TermsDriftDetector) -> dict[str, dict[str, int]]:
    rng = det._windows.window.bucket_range(det.windows.window_s)
    sums: dict[str, Counter[str]] = {}
    assert rng is not None
    for bucket, by_language in det._recent.items():
        if not rng[0] <= bucket <= rng[1]:
            continue
        for language, tally in by_language.items():
            for term, count in tally.counts.items():
                low = count - tally.errors.get(term, 0)
                if low > 0:
                    sums.setdefault(language, Counter())[term] += low
    return {language: dict(c) for language, c in sums.items() if c}


def _brute_holders(det: TermsDriftDetector) -> dict[str, int]:
    holders: Counter[str] = Counter()
    for by_language in det._recent.values():
        for tally in by_language.values():
            holders.update(tally.counts.keys())
    return dict(holders)


def _check(det: TermsDriftDetector, tested_since: bool) -> bool:
    """Compare; True when the current window had a range to sum (a test could run).
    ``tested_since``: a test ran since the last check (so the sums are as it read them)."""
    assert det._holders == _brute_holders(det)
    if tested_since and det._family_state is not None:  # as of the last test
        ref_total, tested, extra = det._family_state
        pooled, least = det._current.pooled, det.min_term_questions
        assert tested == {t for t, n in pooled.items() if n >= least}
        assert extra == {t for t, n in pooled.items()
                         if ref_total.get(t, 0) < least <= n + ref_total.get(t, 0)}  # fmt: skip
    if det._windows.window.bucket_range(det.windows.window_s) is None:
        return False
    sums = det._current.update(det._recent, *det._windows.window.bucket_range(det.windows.window_s))
    assert sums == _brute_sums(det)
    pooled: Counter[str] = Counter()
    for counts in sums.values():
        pooled.update(counts)
    assert det._current.pooled == dict(pooled)
    return True


def _stream(seed: int, n: int) -> list[tuple[float, str, dict[str, str]]]:
    rnd = random.Random(seed)
    rows = []
    for i in range(n):
        t = T0 + 5.0 * i
        if rnd.random() < 0.1:  # a late event, up to 5 minutes back (into a closed bucket)
            t -= rnd.uniform(60, 300)
        language = rnd.choice(["en", "en", "en", "es", "hi"])
        words = rnd.sample(WORDS, rnd.randint(0, 4))
        if rnd.random() < 0.3:  # a rare word (200 of them): in and out of the family
            words.append(f"rare{rnd.randrange(200)}")
        rows.append((t, language, {w: w for w in words}))
    return rows


def _detector() -> TermsDriftDetector:
    config = WindowConfig(window_s=1800, bucket_s=60, warmup_s=3600, reference_window_s=3600,
                          test_every_s=300, allowed_lateness_s=600, max_ahead_s=1e9,
                          ahead_confirm=1)  # fmt: skip
    return TermsDriftDetector(windows=config, min_count=20, min_reference_count=20,
                              max_terms=4, min_term_questions=3)  # fmt: skip


def test_kept_sums_equal_the_sums_made_afresh() -> None:
    det = _detector()
    rows = _stream(7, 2400)
    checked = truncated = tests = 0
    extras: list[set[str]] = []
    for start in range(0, len(rows), 37):
        chunk = rows[start : start + 37]
        det.update_many([(language, terms) for _, language, terms in chunk],
                        [t for t, _, _ in chunk])  # fmt: skip
        checked += _check(det, det.n_tests > tests)
        tests = det.n_tests
        truncated += any(t.floor for by in det._recent.values() for t in by.values())
        state = det._family_state
        extras.append(set() if state is None else set(state[2]))
    # the stream really exercised the paths: summaries truncated, buckets left, tests ran,
    # terms came into the family by the current window's count alone and left it
    assert truncated >= 50 and checked >= 50
    assert any(a - b for a, b in zip(extras, extras[1:], strict=False))
    assert any(b - a for a, b in zip(extras, extras[1:], strict=False))
    assert det.n_tests >= 20


def test_kept_sums_survive_a_restore() -> None:
    det = _detector()
    rows = _stream(11, 2400)
    tests = 0
    for start in range(0, len(rows), 53):
        chunk = rows[start : start + 53]
        det.update_many([(language, terms) for _, language, terms in chunk],
                        [t for t, _, _ in chunk])  # fmt: skip
        if start and start % (53 * 9) == 0:  # a restart: snapshot, restore into a new one
            state = det.snapshot()
            det = _detector().restore(state)
            assert det._holders == _brute_holders(det)
            tests = -1  # (the restored detector's sums are made afresh at its first test)
        _check(det, det.n_tests > tests)
        tests = det.n_tests
    assert det.n_tests >= 20


def test_a_bucket_past_its_lateness_keeps_no_copy_and_a_change_to_it_is_still_counted() -> None:
    from service.drift.terms import _RangeCounts, _Tally

    store: dict[int, dict[str, _Tally]] = {}
    for bucket in range(10):
        for language, words in (("en", ("alpha", "beta")), ("es", ("gamma",))):
            tally = store.setdefault(bucket, {}).setdefault(language, _Tally(4))
            tally.add(words[: 1 + bucket % 2])
    sums = _RangeCounts()
    # by hand: en alpha in every bucket (10), beta in the odd ones (5); es gamma 10
    assert sums.update(store, 0, 9, keep_from=7) == {"en": {"alpha": 10, "beta": 5},
                                                      "es": {"gamma": 10}}  # fmt: skip
    # buckets 0..6 keep no copy; 7..9 do
    assert [key[0] for key, part in sums.parts.items() if part[2] is not None] == [7, 7, 8, 8, 9, 9]
    # a bucket leaving without a change: its tally's own counts are taken out
    assert sums.update(store, 1, 9, keep_from=7) == {"en": {"alpha": 9, "beta": 5},
                                                      "es": {"gamma": 9}}  # fmt: skip
    # an old bucket (2) changed all the same, and one replaced (3): counted afresh
    store[2]["en"].add(("delta",))
    store[3]["es"] = _Tally(4)
    store[3]["es"].add(("gamma", "eps"))
    assert sums.update(store, 1, 9, keep_from=7) == {"en": {"alpha": 9, "beta": 5, "delta": 1},
                                                      "es": {"gamma": 9, "eps": 1}}  # fmt: skip
    assert sums.pooled == {"alpha": 9, "beta": 5, "delta": 1, "gamma": 9, "eps": 1}
    assert {"delta", "eps"} <= sums.touched


def test_exact_p_counts_the_languages_without_the_term() -> None:
    """The exact p of a term is taken over every language's stratum, those where neither
    window has the term included: scipy's hypergeometric pmf of such a stratum is not always
    exactly 1 (``hypergeom.pmf(0, 10, 0, 1)`` is 1 − 2⁻⁵³), so leaving it out moved the p in
    its last bits (a review of the thirty-fourth session's rising-terms speed-up found it:
    0.0021032127092407197 here, where the test before it gave …192)."""
    config = WindowConfig(window_s=600, bucket_s=60, warmup_s=600, reference_window_s=600,
                          test_every_s=600, allowed_lateness_s=0, max_ahead_s=1e9,
                          ahead_confirm=1)  # fmt: skip
    det = TermsDriftDetector(windows=config, min_count=1, min_reference_count=1,
                             min_term_questions=1)  # fmt: skip
    t0 = 1_790_000_400.0  # a multiple of 600: the baseline is t0..t0+600, tested at t0+1200
    rows: list[tuple[float, str, dict[str, str]]] = []
    # baseline: Spanish 30 questions, 1 with "bolsa"; English 9, none with it
    rows += [(t0 + 10 + 10 * k, "es", {"bolsa": "bolsa", "hola": "hola"} if k == 0
              else {"hola": "hola"}) for k in range(30)]  # fmt: skip
    rows += [(t0 + 15 + 10 * k, "en", {}) for k in range(9)]
    # current window: Spanish 21 questions, 8 with it; English 1, without it
    rows += [(t0 + 700 + 5 * k, "es", {"bolsa": "bolsa", "hola": "hola"} if k < 8
              else {"hola": "hola"}) for k in range(20)]  # fmt: skip
    rows += [(t0 + 705, "en", {})]
    rows.sort(key=lambda row: row[0])
    rows += [(t0 + 1210, "es", {"hola": "hola"})]
    det.update_many([(language, terms) for _, language, terms in rows],
                    [t for t, _, _ in rows])  # fmt: skip
    report = det.reports["baseline"]
    assert (report.n_reference, report.n_current, report.terms_tested) == (39, 22, 2)
    assert report.p_value == exact_rise_p([(8, 21, 1, 30), (0, 1, 0, 9)])
