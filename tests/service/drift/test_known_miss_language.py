"""``known_miss`` per language (trial 43, H1): a German-only retrieval collapse (German 12 %
of the traffic, its known-question hit@10 0.92 -> 0.31) moved the pooled miss rate by p 0.019
and raised nothing. Each language with enough known questions in both windows is tested too,
the family held to the comparison's level by Holm's step-down procedure (Holm 1979); a
one-language service is tested exactly as before."""

from __future__ import annotations

import json
import math
import types
from datetime import UTC, datetime, timedelta
from typing import Any

from service.drift.detectors import (
    LanguageRateDriftDetector,
    RateDriftDetector,
    RateDriftReport,
    holm_levels,
)
from service.drift.stage import KNOWN_MISS, KNOWN_MISS_STATE, DriftStage, rate_moves
from service.drift.strata import joint_key
from service.drift.windows import WindowConfig

START = datetime(2026, 11, 28, tzinfo=UTC)
KNOWN = WindowConfig(window_s=6 * 3600, warmup_s=6 * 3600, test_every_s=1800)


def _joint(misses: dict[str, tuple[int, int]]) -> dict[str, int]:
    """``{language: (misses, events)}`` as the detector's joint window counts."""
    out: dict[str, int] = {}
    for lang, (x, n) in misses.items():
        out[joint_key("1", lang)], out[joint_key("0", lang)] = x, n - x
    return out


def test_holm_rejects_step_down_by_hand() -> None:
    # m = 4 at 0.05: levels .0125, .0167, .025, .05 in p order; .011 < .0125, .015 < .0167,
    # .03 >= .025 stops it (so .001-ordered first two only)
    assert holm_levels([0.03, 0.011, 0.04, 0.015], 0.05) == [False, True, False, True]
    assert holm_levels([], 0.05) == []


def test_one_language_collapse_alarms_where_the_pooled_rate_does_not() -> None:
    ref = {"de": (3, 40), "en": (10, 400), "es": (5, 200), "ru": (5, 200)}
    cur = {"de": (28, 45), "en": (10, 400), "es": (5, 200), "ru": (5, 200)}
    args: dict[str, Any] = {"windows": KNOWN, "min_count": 30, "min_reference_count": 30}
    split = LanguageRateDriftDetector(None, **args).decide("baseline", _joint(ref), _joint(cur))
    # main's test of the pooled counts: 23 of 840 (2.7 %) -> 48 of 845 (5.7 %), a rise of
    # 3 points, below min_change 0.05: no alarm
    pooled = RateDriftDetector(None, **args).decide(
        "baseline", {"1": 23, "0": 817}, {"1": 48, "0": 797}
    )
    assert pooled.state == "ok"
    assert (split.rate_reference, split.rate_current) == (23 / 840, 48 / 845)
    assert split.p_value == pooled.p_value  # the pooled figures are main's
    assert split.state == "drift"
    rows = {row["language"]: row for row in split.languages}
    assert sorted(rows) == ["de", "en", "es", "ru"]
    de = rows["de"]
    assert (de["rate_reference"], de["rate_current"]) == (3 / 40, 28 / 45)
    # by hand: pooled p̂ = 31/85, se = sqrt(p̂(1-p̂)(1/40 + 1/45)) = 0.1046,
    # z = (0.6222 - 0.075) / 0.1046 = 5.23, two-sided p ≈ 1.7e-7
    assert math.isclose(de["p_value"], 1.7e-7, rel_tol=0.15)
    # Holm: the smallest p is held to alpha / m (m = 4 languages tested), the next to / 3 ...
    assert math.isclose(de["alpha"], split.alpha / 4)
    assert de["state"] == "drift"
    assert [rows[lang]["state"] for lang in ("en", "es", "ru")] == ["ok"] * 3


def test_languages_short_of_events_are_not_tested() -> None:
    # English and a French 3 % of the traffic (12 known questions, under 30): one language
    # meets the minimums, so no per-language family runs: exactly main's pooled test
    args: dict[str, Any] = {"windows": KNOWN, "min_count": 30, "min_reference_count": 30}
    for ref, cur in (
        ({"fr": (1, 12), "en": (10, 400)}, {"fr": (10, 12), "en": (10, 400)}),
        ({"de": (1, 20), "en": (10, 400)}, {"de": (15, 20), "en": (10, 400)}),
    ):
        report = LanguageRateDriftDetector(None, **args).decide("baseline", _joint(ref),
                                                                _joint(cur))  # fmt: skip
        x_ref, n_ref = (sum(v[k] for v in ref.values()) for k in (0, 1))
        x_cur, n_cur = (sum(v[k] for v in cur.values()) for k in (0, 1))
        main = RateDriftDetector(None, **args).decide(
            "baseline", {"1": x_ref, "0": n_ref - x_ref}, {"1": x_cur, "0": n_cur - x_cur}
        )
        assert report.languages == ()
        assert report.to_dict() == main.to_dict()


def _notes(i: int, collapsed: bool, lang_of: Any, broken: str) -> dict[str, Any]:
    lang = lang_of(i)
    missed = collapsed and lang == broken and (i // 10) % 5 != 0  # 80 % of its known questions
    return {"language": lang, "topic": "t", "refused": False, "known_missed": missed}


def _stage() -> DriftStage:
    return DriftStage(
        {},
        windows=WindowConfig(test_every_s=1800),
        min_count=50,
        terms=False,
        known_windows=KNOWN,
        known_min_count=20,
        clock=lambda: (START + timedelta(days=30)).timestamp(),
    )


def _feed(drift: DriftStage, lang_of: Any, broken: str, minutes: range) -> None:
    for start in range(minutes.start, minutes.stop, 50):
        idx = range(start, min(minutes.stop, start + 50))
        events = [types.SimpleNamespace(timestamp=START + timedelta(minutes=i)) for i in idx]
        notes = [_notes(i, i >= 7 * 60, lang_of, broken) for i in idx]
        drift.process(types.SimpleNamespace(events=events, annotations=notes, streams=None))


def _run(lang_of: Any, broken: str = "de") -> DriftStage:
    """60 known questions an hour for 14 h; ``broken``'s collapse after 7 h."""
    drift = _stage()
    _feed(drift, lang_of, broken, range(14 * 60))
    return drift


def _main_detector(drift: DriftStage) -> RateDriftDetector:
    """Main's ``known_miss`` detector (a plain :class:`RateDriftDetector`) as ``_stage``'s."""
    return RateDriftDetector(
        None,
        windows=KNOWN,
        min_count=20,
        min_reference_count=20,
        alpha=drift.rates[KNOWN_MISS].alpha,
        n_dimensions=4,
        min_change=0.05,
        clear_change=0.025,
    )


def _feed_main(main: RateDriftDetector, minutes: range) -> None:
    """The flags ``_feed`` gives an all-English stream whose English collapses."""
    for start in range(minutes.start, minutes.stop, 50):
        idx = range(start, min(minutes.stop, start + 50))
        main.update_many(
            [(i // 10) % 5 != 0 and i >= 7 * 60 for i in idx],
            [(START + timedelta(minutes=i)).timestamp() for i in idx],
            (START + timedelta(days=30)).timestamp(),
        )


def test_the_alarm_names_the_language_through_the_alarm_path() -> None:
    # every 10th question German: 36 German known questions in each 6 h window, 0 missed
    # before; after the collapse 80 % of them (29 of 36): the pooled rate 0 -> 8 %
    drift = _run(lambda i: "de" if i % 10 == 0 else ("en" if i % 2 else "es"))
    alarms = [a for a in drift.alarms if a["dimension"] == KNOWN_MISS]
    assert alarms and alarms[0]["state"] == "drift"
    assert [row["language"] for row in alarms[0]["languages"]] == ["de"]
    assert "rising in de: 0.0% of 36 -> " in rate_moves(alarms[0])
    assert drift.take_alarms().get((KNOWN_MISS, "baseline")) == 1  # the metric's counter


def test_a_one_language_service_gets_exactly_mains_numbers() -> None:
    # the same stream, all English: the known_miss detector's reports equal main's plain
    # RateDriftDetector fed the same flags (no ``languages`` in them)
    drift = _run(lambda i: "en", "en")
    main = _main_detector(drift)
    _feed_main(main, range(14 * 60))
    got = {k: v.to_dict() for k, v in drift.rates[KNOWN_MISS].reports.items()}
    assert got == {k: v.to_dict() for k, v in main.reports.items()}
    assert "languages" not in got["baseline"]


def test_a_downgrade_finds_no_known_miss_state_and_warms_up_afresh() -> None:
    # main reads a known_miss snapshot as plain flags (a joint key "1\x1fde" as no miss) and
    # its report takes no ``languages``: the per-language state is under a key of its own
    drift = _run(lambda i: "de" if i % 10 == 0 else ("en" if i % 2 else "es"))
    assert drift.rates[KNOWN_MISS].reports["baseline"].languages  # tested per language
    state = json.loads(json.dumps(drift.state_snapshot()))
    assert KNOWN_MISS not in state["detectors"]
    assert KNOWN_MISS_STATE in state["detectors"]
    # main's restore: each of its dimensions takes detectors.get(dim); known_miss: None
    main = _main_detector(drift).restore(state["detectors"].get(KNOWN_MISS))
    assert main.n_tests == 0 and main.reports == {}
    for dim in ("refusal", "known_refusal"):  # main's own rate reports read back as main does
        for data in state["detectors"][dim]["reports"].values():
            assert "languages" not in data
            RateDriftReport(**data)
    # the branch reads its own snapshot back: the same reports, languages and all
    again = _stage()
    again.restore(state)
    assert again.rates[KNOWN_MISS].reports == drift.rates[KNOWN_MISS].reports


def test_a_snapshot_of_main_is_restored_and_tested_pooled() -> None:
    # main kept plain flags under known_miss; restored here they count in no language, and
    # an English stream's tests go on with main's very figures
    drift = _run(lambda i: "en", "en")
    main = _main_detector(drift)
    _feed_main(main, range(14 * 60))
    state = drift.state_snapshot()
    del state["detectors"][KNOWN_MISS_STATE]
    state["detectors"][KNOWN_MISS] = main.snapshot()
    upgraded = _stage()
    upgraded.restore(json.loads(json.dumps(state)))
    _feed(upgraded, lambda i: "en", "en", range(14 * 60, 18 * 60))
    _feed_main(main, range(14 * 60, 18 * 60))
    got = {k: v.to_dict() for k, v in upgraded.rates[KNOWN_MISS].reports.items()}
    assert got == {k: v.to_dict() for k, v in main.reports.items()}
    assert got["baseline"]["n_current"] > 0
