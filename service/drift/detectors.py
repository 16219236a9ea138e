"""River-shaped drift detectors over event-time windows: categories and binary rates.

Each detector keeps per-minute buckets of event-time traffic (:class:`WindowConfig`) and,
every ``test_every_s`` seconds of event time (default 300 s; one test per period, whatever
the batching), compares a *current* window with

* ``reference`` — a fixed sample such as the gold set's counts (optional), using the last
  ``reference_window_s`` (default 24 h: "is the gold set still representative?"), and
* ``baseline`` — earlier traffic, using the last ``window_s`` (default 1 h: "did the traffic
  just change?"): ``"frozen"`` (exactly the events with event time in
  ``[start, start + warmup_s)``, ``start`` the first event's bucket, default 6 h, whatever
  ``test_every_s`` or the order partitions are read in; ready once the watermark is past it
  if it holds ``min_count`` events, else a new warm-up starts;
  :meth:`rebaseline` starts a new warm-up),
  ``"previous"`` (the window just before the current one), or ``"none"``.

Alarm rule, per comparison (state ``ok`` → ``drift``), all of:

1. enough data: ``n_current ≥ min_count`` and ``n_reference ≥ min_reference_count``
   (otherwise the state is ``insufficient_data``, never an alarm);
2. significance — chi-square test of homogeneity between the two samples (sparse categories
   pooled by Cochran's rule, never a category the reference lacks into one it has — too
   thin a one leaves the test conditional on the reference's categories;
   :func:`~service.drift.stats_tests.chi2_homogeneity`) or two-proportion test —
   ``p < alpha / (n_comparisons × n_dimensions × windows_per_period)`` —
   ``alpha`` (default 0.001) is the false-alarm budget per ``alpha_period_s`` (default one
   day) of a family of ``n_dimensions`` detectors, split by Bonferroni over their
   comparisons and over the disjoint windows of a period (24 one-hour windows, one 24-hour
   window); testing once per ``test_every_s`` keeps the overlapping tests few;
3. effect size: categorical — ``JSD ≥ min_jsd`` (0.05) or some category's share change ≥
   ``min_share_change`` (5 points); rate — the rate change ≥ ``min_change`` (5 points).
   Changes are judged by their 95 % Newcombe CI bound nearest zero, so a small window's
   noise cannot pass, and a huge window's tiny, significant change does not either.

A table too sparse for the chi-square even after pooling is resampled (Monte-Carlo, at most
20,000 draws): its p-value cannot go below ``1 / 20,001 = 5e-5``; when that floor is not
below the comparison's alpha the report says so (``cannot_alarm``, with ``p_floor``)
instead of a silent ``ok``.

Measured on seeded pilot-sized streams (a question every ~10 s; tests/service/drift):
4 new languages taking 30 % alarm after 100–190 events, 2 new topics taking 40 % after
100–130, refusals 5 % → 20 % after 160–280; 16 stationary streams of 100,000 events
(~185 days) raised 2 false alarms with 3 topics and 0 with 10 languages or refusals.

Hysteresis: ``drift`` clears only when the effect falls below the lower ``clear_*``
thresholds (significance plays no part in clearing) at every test, in a row, over one
short current window (``window_s``, or the comparison's window when shorter:
:meth:`_WindowedDetector.clear_span`; until then the report says ``clearing_since``). Unlike river
detectors, nothing resets after an alarm: the state says whether the drift is still there. A
report whose ``drift`` is held this way — its own test would not raise an alarm (effect below
``min_*`` or p not below alpha) but the effect has not fallen below ``clear_*`` — says
``held_by_hysteresis: true``. So does a test too short of events (``insufficient_data``)
while the comparison was in ``drift``: not tested is not cleared, and the next test with
enough events applies the clearing rule, not the alarm rule (:meth:`held_open`; before, a
quiet night's thin window ended an alarm and the morning's test raised it again) — for at
most :meth:`hold_untested_s` of event time since the comparison's latest test with enough
events (a day, or its window span when longer); a test too short of events after that holds
nothing (the alarm ends ``insufficient_data``).

>>> det = RateDriftDetector(reference=(5, 100), min_count=50,
...     windows=WindowConfig(window_s=600, test_every_s=60, baseline="none"))
>>> _ = det.update_many([True] * 8, [float(t) for t in range(8)])
>>> det.state  # a window of 8 events never alarms
'insufficient_data'
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal, Self, cast

import numpy as np
from numpy.typing import ArrayLike, NDArray

from service.drift.distances import (
    Counts,
    js_divergence_from_shares,
    js_divergence_lower_bound,
    psi_from_shares,
)
from service.drift.stats_tests import (
    ShareChange,
    auto_is_asymptotic,
    chi2_from_table,
    contingency_table,
    share_changes_from_table,
    two_proportion_test,
)
from service.drift.strata import split_joint, standardised_reference
from service.drift.windows import (
    CategoryWindow,
    ComparisonWindows,
    Now,
    Watermarks,
    WindowConfig,
)

#: A detector's tests during one update: ``(events of the update added before the test,
#: the latest report per comparison after it)``, in order.
TestLog = list[tuple[int, dict[str, Any]]]

__all__ = [
    "CategoricalDriftDetector",
    "CategoricalDriftReport",
    "RateDriftDetector",
    "RateDriftReport",
    "State",
    "WindowConfig",
    "newest_part",
]

State = Literal["ok", "drift", "insufficient_data"]
#: Tables whose JSD lower bound a categorical detector remembers (the latest ones).
JSD_BOUNDS_KEPT = 16
_INSUFFICIENT: State = "insufficient_data"
#: The least event time, seconds, an open alarm is held through tests too short of events
#: (counted from its comparison's latest test with enough events; the comparison's window
#: span when longer, :meth:`_WindowedDetector.hold_untested_s`): a night's thin windows keep
#: it, a lasting fall of the traffic under ``min_count`` ends it ``insufficient_data``
#: (review s39-rev-flap: held without a bound, an alarm stayed ``drift`` for good, through
#: restarts, on a stream that had gone back to its baseline mix but stayed thin).
HOLD_UNTESTED_S = 86_400.0
#: Windows the weak tests of an open alarm must span, in a row, before it clears
#: (:meth:`_WindowedDetector.clear_span`: of the shorter of the comparison's window and
#: ``window_s``, so a gold-set comparison's 24 h window adds no day to a clear).
CLEAR_SPAN = 1.0
#: ``clearing_since`` after :meth:`_WindowedDetector.rebaseline`: the next weak test clears.
_CLEAR_AT_ONCE = -1e308
_DEFAULT_WINDOWS = WindowConfig()


@dataclass(frozen=True)
class CategoricalDriftReport:
    """One comparison's latest test. Shares in [0, 1]; ``timestamp``: watermark, seconds."""

    comparison: str
    state: State
    timestamp: float
    n_reference: int
    n_current: int
    js_divergence: float = math.nan
    psi: float = math.nan
    p_value: float = 1.0
    alpha: float = 0.0
    method: str = "none"
    rising: tuple[ShareChange, ...] = ()  # CI of the share change above 0, largest first
    falling: tuple[ShareChange, ...] = ()
    new_categories: tuple[str, ...] = ()  # absent from the reference side
    held_by_hysteresis: bool = False  # drift kept only because the effect is not yet clear
    # event time (Unix seconds) of the first of the weak tests in a row (effect below the
    # clear_* thresholds) that have not yet spanned a window: the drift is held until they
    # do (CLEAR_SPAN; 0.0 when not clearing, and left out of to_dict)
    clearing_since: float = 0.0
    # why this test could not alarm whatever the data: its Monte-Carlo p-value cannot go
    # below p_floor = 1 / (resamples + 1) > alpha ("" and 0 otherwise; left out of to_dict)
    cannot_alarm: str = ""
    p_floor: float = 0.0
    # the dimension whose mix the reference was standardised to ("language": the reference
    # is the one it would have had under the current window's language mix,
    # service.drift.strata; "" when compared as it is, and left out of to_dict)
    adjusted_for: str = ""

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form (``ShareChange`` rows become dicts; ``cannot_alarm`` and
        ``p_floor`` only when the test could not alarm, ``adjusted_for`` only when the
        reference was standardised)."""
        skip = ("rising", "falling") + (() if self.cannot_alarm else ("cannot_alarm", "p_floor"))
        skip += () if self.adjusted_for else ("adjusted_for",)
        skip += () if self.clearing_since else ("clearing_since",)
        out = {k: v for k, v in self.__dict__.items() if k not in skip}
        out["rising"] = [s._asdict() for s in self.rising]
        out["falling"] = [s._asdict() for s in self.falling]
        out["new_categories"] = list(self.new_categories)
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CategoricalDriftReport:
        """The report back from :meth:`to_dict` (a state-store snapshot).

        Raises:
            TypeError: a field is missing or unknown (a malformed snapshot).
        """
        rows = {key: tuple(ShareChange(**row) for row in data.get(key, ()))
                for key in ("rising", "falling")}  # fmt: skip
        return cls(**{**data, **rows, "new_categories": tuple(data.get("new_categories", ()))})


@dataclass(frozen=True)
class RateDriftReport:
    """One comparison's latest test of a binary rate (e.g. refusals / questions)."""

    comparison: str
    state: State
    timestamp: float
    n_reference: int
    n_current: int
    rate_reference: float = math.nan
    rate_current: float = math.nan
    ci_low: float = math.nan  # Newcombe CI of rate_current − rate_reference
    ci_high: float = math.nan
    p_value: float = 1.0
    alpha: float = 0.0
    method: str = "none"
    held_by_hysteresis: bool = False  # drift kept only because the effect is not yet clear
    clearing_since: float = 0.0  # as CategoricalDriftReport's (left out of to_dict when 0)
    # a drift whose window is not one rate: its newest part since the change (newest_part)
    recent_s: float = 0.0  # the newest part's span, seconds (0: none found or not drift)
    window_s: float = 0.0  # the current window's span, seconds
    n_recent: int = 0
    rate_recent: float = math.nan
    #: the per-language tests of a :class:`LanguageRateDriftDetector` (each a dict: language,
    #: n_reference, n_current, rate_reference, rate_current, ci_low, ci_high, p_value, alpha
    #: (its Holm level), state); empty: none ran (fewer than two languages)
    languages: tuple[dict[str, Any], ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form (without the newest part's fields when there is none, nor
        ``languages`` when no per-language test ran)."""
        out = dict(self.__dict__)
        if not self.clearing_since:
            del out["clearing_since"]
        if not self.recent_s:
            for key in ("recent_s", "window_s", "n_recent", "rate_recent"):
                del out[key]
        if self.languages:
            out["languages"] = [dict(row) for row in self.languages]
        else:
            del out["languages"]
        return out


class _WindowedDetector:
    """State machine, counters and snapshots shared by both detectors."""

    def __init__(
        self,
        has_reference: bool,
        windows: WindowConfig,
        min_count: int,
        min_reference_count: int,
        alpha: float,
        n_dimensions: int,
        confidence: float,
    ) -> None:
        if not has_reference and windows.baseline == "none":
            raise ValueError("nothing to compare with: give a reference or a baseline")
        if not (0 < alpha < 1 and 0 < confidence < 1):
            raise ValueError("alpha and confidence must be in (0, 1)")
        if min(n_dimensions, min_count, min_reference_count) < 1:
            raise ValueError("n_dimensions, min_count and min_reference_count must be >= 1")
        names = ["reference"] * has_reference + ["baseline"] * (windows.baseline != "none")
        self._windows = ComparisonWindows(windows, min_count, has_reference)
        self.min_count, self.min_reference_count = min_count, min_reference_count
        self.alpha, self.confidence = alpha, confidence
        self._family = len(names) * n_dimensions
        self._states: dict[str, State] = dict.fromkeys(names, _INSUFFICIENT)
        self._reports: dict[str, Any] = {}
        self.n_alarms = 0  # transitions into drift, over all comparisons
        self.n_tests = 0  # test times (ticks) so far
        # comparison -> the most events a current window held at a test time (why a
        # comparison stays insufficient_data: the busiest window still fell short)
        self.busiest: dict[str, int] = dict.fromkeys(names, 0)
        # comparison -> [Σ n_current·Δt, Σ Δt] over the tests whose window lay wholly after
        # the first test (a full window of traffic), Δt the event time since the test before:
        # the time-weighted mean window (:meth:`mean_window`). The busiest alone sized the
        # advice to a lucky window (Poisson 53.5 an hour: "about 3 h" where 4 h are needed)
        self._window_time: dict[str, list[float]] = {name: [0.0, 0.0] for name in names}
        self._first_test: float | None = None
        self._last_test: float | None = None
        #: comparison -> the event time (Unix seconds) of its latest test with enough events
        self._tested_at: dict[str, float] = {}
        #: comparison -> its latest report with enough events (:meth:`last_tested`)
        self._last_tested: dict[str, Any] = {}
        #: the standardised reference each comparison's latest test compared with, when it
        #: was adjusted (:meth:`compared`; not kept in snapshots: the next test sets it)
        self._adjusted_refs: dict[str, tuple[dict[str, int], str]] = {}
        #: comparison -> event time of the first weak test of an open alarm's current run
        #: of weak tests (the clear rule needs them to span a window: :meth:`_confirm_clear`)
        self._clearing_since: dict[str, float] = {}
        #: the short window the clear span is capped at (:meth:`clear_span`; ``0.0``: this
        #: detector's own ``window_s``)
        self.clear_window_s = 0.0

    def hold_untested_s(self, comparison: str) -> float:
        """How long, seconds of event time since ``comparison``'s latest test with enough
        events, tests too short of events hold its open alarm (:meth:`held_open`):
        :data:`HOLD_UNTESTED_S`, or the comparison's window span when longer."""
        config = self.windows
        span = config.reference_window_s if comparison == "reference" else config.window_s
        return max(HOLD_UNTESTED_S, float(span))

    def last_tested(self, comparison: str) -> Any:
        """``comparison``'s latest report with enough events to test (the same type as
        :attr:`reports`' values; ``None`` before its first one, or after a restore of a
        snapshot written before it was kept while the latest report lacked events): what a
        report held open through tests too short of events (:meth:`held_open`) last measured
        (review s40: the held row read "JSD nan, p 1.000", the empty test's defaults)."""
        return self._last_tested.get(comparison)

    def held_open(self, comparison: str) -> bool:
        """Whether ``comparison``'s latest test lacked events (``insufficient_data``) while
        it was in ``drift`` or held open so (its report's ``held_by_hysteresis``): not tested
        is not cleared, so its next test with enough events judges it as still in ``drift``
        (the clear rule: the effect below the ``clear_*`` thresholds ends it), not as a new
        alarm. Before, a night's thin window ended an open alarm ("too few events to test")
        and the morning's test raised it again (the demo: language, topic and terms, 7 h
        apart). Kept in the report, so a restored snapshot keeps it too."""
        report = self._reports.get(comparison)
        return bool(report is not None and report.state == _INSUFFICIENT
                    and report.held_by_hysteresis)  # fmt: skip

    def _span(self, comparison: str) -> float:
        """The span (seconds) of ``comparison``'s current window."""
        config = self.windows
        return config.reference_window_s if comparison == "reference" else config.window_s

    def clear_span(self, comparison: str) -> float:
        """How long (seconds of event time) the weak tests of an open alarm on
        ``comparison`` must span, in a row, before it clears (:meth:`_confirm_clear`): one
        short current window — the shorter of the comparison's window and ``window_s``
        (24 h gold-set and ``known_*`` comparisons: ``window_s``, not a day more).
        :attr:`clear_window_s`, when set, stands for ``window_s`` (the drift stage sets the
        ``known_*`` detectors', whose own ``window_s`` is ``known_window_s``, to
        ``analytics.drift.window_s``)."""
        short = self.clear_window_s or self.windows.window_s
        return CLEAR_SPAN * min(self._span(comparison), short)

    def mean_window(self, comparison: str) -> float:
        """The mean count of ``comparison``'s current window over the events' times: the
        events this detector took per bucket from its first event's to the watermark's,
        times the window's buckets (:meth:`~service.drift.windows.ComparisonWindows.mean_held`),
        whatever the test cadence (trial 41: tests every ``test_every_s`` 999,999 s sized
        the advice by the one test at the first events). ``0.0`` before the events span a
        whole window. A snapshot written before session 41 keeps no first bucket: then the
        mean over the tests so far, weighted by the event time each test stands for, counting
        only windows wholly after the first test (``0.0`` before such a test). Events per
        window, not rounded."""
        held = self._windows.mean_held(self._span(comparison))
        if held or self._windows.first_bucket is not None:
            return held
        weighted, seconds = self._window_time.get(comparison, (0.0, 0.0))
        return weighted / seconds if seconds > 0 else 0.0

    def busiest_window(self, comparison: str) -> int:
        """The most events any of ``comparison``'s current windows held over the events'
        times (windows of whole buckets, ending at each bucket up to the watermark), tested
        or not (:attr:`~service.drift.windows.ComparisonWindows.busiest_held`); at least the
        busiest tested one (:attr:`busiest`, all a snapshot written before session 41
        has)."""
        held = self._windows.busiest_held.get(self._span(comparison), 0)
        return max(held, self.busiest.get(comparison, 0))

    def test_times(self) -> tuple[float | None, float | None]:
        """``(first, last)``: the watermark (event time, Unix seconds) at this detector's first
        and latest test (``None`` before any)."""
        return self._first_test, self._last_test

    def event_span_s(self) -> float:
        """Seconds of event time from the start of the first event's bucket to the end of
        the watermark's (0.0 before any event, or for a snapshot written before session 41)."""
        first, mark = self._windows.first_bucket, self.window.watermark
        if first is None or mark is None:
            return 0.0
        size = self.windows.bucket_s
        return (math.floor(mark / size) - first + 1) * size

    @property
    def drift_detected(self) -> bool:
        """True while some comparison is in ``drift`` (read-only)."""
        return "drift" in self._states.values()

    @property
    def state(self) -> State:
        """``drift`` if any comparison drifts, else ``ok`` if any is ok, else insufficient."""
        values = self._states.values()
        return "drift" if "drift" in values else "ok" if "ok" in values else _INSUFFICIENT

    @property
    def states(self) -> dict[str, State]:
        """State per comparison (``reference``, ``baseline``)."""
        return dict(self._states)

    @property
    def windows(self) -> WindowConfig:
        """The windowing (read-only)."""
        return self._windows.config

    @property
    def window(self) -> CategoryWindow:
        """The current window (read it, don't update it)."""
        return self._windows.window

    @property
    def short_warmups(self) -> tuple[int, int]:
        """``(n, held)``: how many warm-ups of the frozen baseline ended holding fewer than
        ``min_count`` events (each started a new one) since it last froze or was rebaselined,
        and how many the last of them held; ``(0, 0)`` when none did."""
        return self._windows.short_warmups, self._windows.short_warmup_count

    @property
    def warmup_held(self) -> int:
        """The events the frozen baseline's warm-up in progress holds so far (0 when none
        is)."""
        return self._windows.warmup_held

    def alpha_per_test(self, comparison: str) -> float:
        """The level a ``comparison``'s p-value is held to now (see the module docstring)."""
        periods = self._windows.windows_per_period(reference=comparison == "reference")
        return self.alpha / (self._family * periods)

    def counts(self, comparison: str) -> tuple[dict[str, int], dict[str, int] | None]:
        """``(current, compared)``: the counts of ``comparison``'s current window now and of
        what it is compared with (the fixed reference or the baseline; ``None`` while there
        is none, e.g. a frozen baseline still warming up). New dicts."""
        current = self._windows.current(reference=comparison == "reference")
        ref = self._reference if comparison == "reference" else self._windows.baseline()
        return self._marginal(current), None if ref is None else self._marginal(ref)

    def compared(self, comparison: str) -> tuple[dict[str, int], dict[str, int] | None, str]:
        """``(current, compared, adjusted_for)``: as :meth:`counts`, but ``compared`` is what
        a test of ``comparison`` would compare with now (a categorical detector with strata:
        the reference standardised to the current window's mix, of its effective size: the
        one the latest test compared with, as its ``n_reference`` says; ``adjusted_for`` its
        dimension, ``""`` when compared as it is). New dicts."""
        current = dict(self._windows.current(reference=comparison == "reference"))
        if comparison in self._adjusted_refs:
            tested, adjusted = self._adjusted_refs[comparison]
            return self._marginal(current), dict(tested), adjusted
        ref = self._reference if comparison == "reference" else self._windows.baseline()
        if ref is None:
            return self._marginal(current), None, ""
        return self._compared(comparison, current, dict(ref))

    def _marginal(self, counts: Mapping[str, int]) -> dict[str, int]:
        """The categories' counts of a window's ``counts`` (a categorical detector with
        strata keeps joint keys, :meth:`CategoricalDriftDetector._marginal`). A new dict."""
        return dict(counts)

    def decide(self, comparison: str, reference: Counts, current: Counts) -> Any:
        """The report this detector's test of ``comparison`` would give on these counts
        (``reference``: the gold set's or baseline's; a rate's ``{"1": positives, "0":
        negatives}``) as its first after ``ok``, at the comparison's level now
        (:meth:`alpha_per_test`): ``insufficient_data`` below ``min_count`` /
        ``min_reference_count``, else the alarm rule of the module docstring. The same code
        as a test (:mod:`service.drift.sizing` runs it on expected counts); the detector's
        state is left alone (a categorical one may remember the table's JSD bound, a
        cache)."""
        n_ref, n_cur = int(sum(reference.values())), int(sum(current.values()))
        if n_ref < self.min_reference_count or n_cur < self.min_count:
            return self._empty_report(comparison, 0.0, n_ref, n_cur)
        return self._assess(comparison, reference, current, "ok", 0.0,
                            self.alpha_per_test(comparison))  # fmt: skip

    def rebaseline(self) -> Self:
        """Start a new warm-up now (``frozen`` baseline), e.g. after accepting a drift. The
        first test against the new baseline applies the clear rule at once (no run of weak
        tests to wait for: it compares with traffic after the change)."""
        self._windows.rebaseline()
        self._clearing_since["baseline"] = _CLEAR_AT_ONCE
        return self

    def _ingest(
        self,
        categories: Sequence[str],
        timestamps: ArrayLike,
        now: Now,
        streams: Sequence[str] | None = None,
        watermarks: Watermarks | None = None,
        tests: TestLog | None = None,
        checks: Sequence[int] = (),
    ) -> None:
        def on_tick(after: int) -> None:
            self._evaluate()
            if tests is not None:
                tests.append((after, dict(self._reports)))

        self._windows.ingest(categories, timestamps, now, on_tick, streams,
                             watermarks=watermarks, checks=checks)  # fmt: skip

    def watermarks(self, timestamps: NDArray[np.float64], now: Now) -> Watermarks:
        """The running watermark (and who is future, held, released) an update with these
        ``timestamps`` (Unix seconds) and ``now`` (one reading or one per event) would give
        from the present state; pass it to ``update_many`` so it is not computed again."""
        return self._windows.watermarks(timestamps, now)

    def holds(self, watermarks: Watermarks) -> bool:
        """Whether events are held ahead of the watermark, or an update with these
        ``watermarks`` (:meth:`watermarks`) would hold or release some."""
        return self._windows.holds(watermarks)

    def kept_out_masks(self) -> tuple[NDArray[np.bool_], NDArray[np.bool_]]:
        """``(late, future)`` masks over the events of the last update."""
        return self._windows.kept_out_masks()

    def held_mask(self) -> NDArray[np.bool_]:
        """Which events of the last update were held ahead of the watermark when they came."""
        return self._windows.held_mask()

    def added_mask(self) -> NDArray[np.bool_]:
        """Which events of the last update the windows added to their buckets in their own
        update (neither late, future nor held then): a boolean mask over its events."""
        return self._windows.added_mask()

    def released(self) -> list[float]:
        """The timestamps (Unix seconds) of the events held by an earlier update (or an
        earlier part of the last one) that the last update or :meth:`finish` released."""
        return self._windows.released()

    def held_stamps(self) -> list[float]:
        """The timestamps (Unix seconds) of the events held ahead of the watermark now."""
        return [t for t, _ in self._windows.window.held]

    def count_ahead(self, n: int) -> None:
        """Add ``n`` to ``ahead``: known questions the ``language`` window newly holds
        (``n`` > 0) or released (< 0), which these windows follow
        (:class:`~service.drift.stage.DriftStage`)."""
        self._windows.window.count_ahead(n)

    def flush(self) -> bool:
        """Test again if events of a later-read stream came behind the last test (see
        :meth:`~service.drift.windows.ComparisonWindows.flush`); whether it tested."""
        return self._windows.flush(lambda _: self._evaluate())

    def finish(self) -> bool:
        """The input ended (a replay's end): release the held events no later event refuted
        and test if that reached a new test time (see
        :meth:`~service.drift.windows.ComparisonWindows.finish`); whether it tested."""
        return self._windows.finish(lambda _: self._evaluate())

    def _evaluate(self) -> None:
        self.n_tests += 1
        t = float(self.window.watermark or 0.0)
        first, last = self._first_test, self._last_test
        if first is None:
            self._first_test = first = t
        self._last_test = t
        config = self.windows
        for name, before in self._states.items():
            current = self._windows.current(reference=name == "reference")
            n_cur = sum(current.values())
            self.busiest[name] = max(self.busiest[name], n_cur)
            span = config.reference_window_s if name == "reference" else config.window_s
            if last is not None and t > last and t - span >= first:
                kept = self._window_time[name]
                kept[0] += n_cur * (t - last)
                kept[1] += t - last
            ref = self._reference if name == "reference" else self._windows.baseline()
            adjusted = ""
            if ref is not None:  # (min_reference_count holds for what is compared)
                current, ref, adjusted = self._compared(name, current, dict(ref))
            if adjusted:
                self._adjusted_refs[name] = (dict(ref), adjusted)  # type: ignore[arg-type]
            else:
                self._adjusted_refs.pop(name, None)
            n_ref = sum(ref.values()) if ref is not None else 0
            held = before == "drift" or self.held_open(name)
            if ref is None or n_ref < self.min_reference_count or n_cur < self.min_count:
                held = held and t - self._tested_at.get(name, t) < self.hold_untested_s(name)
                self._states[name] = _INSUFFICIENT
                empty = self._empty_report(name, t, n_ref, n_cur)
                empty = replace(empty, adjusted_for=adjusted) if adjusted else empty
                if held:  # (not tested is not cleared: a run of weak tests goes on)
                    since = max(self._clearing_since.get(name, 0.0), 0.0)
                    empty = replace(empty, held_by_hysteresis=True, clearing_since=since)
                else:
                    self._clearing_since.pop(name, None)
                self._reports[name] = empty
                continue
            before = "drift" if held else before
            self._tested_at[name] = t
            report = self._assess(name, ref, current, before, t, self.alpha_per_test(name))
            if before == "drift":
                report = self._confirm_clear(name, report, t)
            if adjusted:
                report = replace(report, adjusted_for=adjusted)
            self.n_alarms += report.state == "drift" and before != "drift"
            self._states[name], self._reports[name] = report.state, report
            self._last_tested[name] = report

    def _confirm_clear(self, name: str, report: Any, t: float) -> Any:
        """An open alarm's test (``report``, at event time ``t``) after the clear rule:
        ``ok`` (the effect below the ``clear_*`` thresholds) ends the alarm only once the
        weak tests in a row since the first of them span :meth:`clear_span` (one short
        current window: events the first weak test had not seen, and every test between,
        read weak); until then the report stays ``drift``,
        ``held_by_hysteresis``, with ``clearing_since`` that first weak test's time. A test
        that reads ``drift`` ends the run. The clear rule takes no p-value, so one window's
        noise could end an alarm whose change still stood (trial 43: Arabic+Chinese 9 %
        -> 15-19 % of the traffic, a 4 h window of ~160 events whose share-change bounds
        wander ±5 points, read weak once at 12-03 19:01 and was never weak again in a row).
        """
        if report.state != "ok":
            self._clearing_since.pop(name, None)
            return report
        since = self._clearing_since.setdefault(name, t)
        if t - since >= self.clear_span(name):
            del self._clearing_since[name]
            return report
        return replace(report, state="drift", held_by_hysteresis=True, clearing_since=since)

    _reference: dict[str, int] | None

    def _compared(
        self, name: str, current: dict[str, int], ref: dict[str, int]
    ) -> tuple[dict[str, int], dict[str, int], str]:
        """``(current, reference, adjusted_for)`` a test of ``name`` compares, from its
        windows' counts (a categorical detector with strata standardises the reference,
        :meth:`CategoricalDriftDetector._compared`); here as they are."""
        return current, ref, ""

    def _assess(
        self, name: str, ref: Counts, cur: Counts, before: State, t: float, alpha: float
    ) -> Any:
        raise NotImplementedError  # pragma: no cover - overridden

    def _empty_report(self, name: str, t: float, n_ref: int, n_cur: int) -> Any:
        raise NotImplementedError  # pragma: no cover - overridden

    def _report_from_dict(self, data: dict[str, Any]) -> Any:
        raise NotImplementedError  # pragma: no cover - overridden

    def snapshot(self) -> dict[str, Any]:
        """JSON-able state for the state store: windows, baseline, states, latest reports,
        counters."""
        return {
            "version": 1,
            "windows": self._windows.snapshot(),
            "states": dict(self._states),
            "reports": {name: report.to_dict() for name, report in self._reports.items()},
            "n_alarms": self.n_alarms,
            "n_tests": self.n_tests,
            "busiest": dict(self.busiest),
            "window_time": {name: list(kept) for name, kept in self._window_time.items()},
            "tests_at": [self._first_test, self._last_test],
            "tested_at": dict(self._tested_at),
            "clearing_since": dict(self._clearing_since),
            # only where the latest report lacked events (otherwise it is that report)
            "last_tested": {
                name: report.to_dict()
                for name, report in self._last_tested.items()
                if report is not self._reports.get(name)
            },
        }

    def _reports_from(self, saved: Any) -> dict[str, Any]:
        """The reports of a snapshot's ``{comparison: report dict}`` (``None``: none) for the
        comparisons this detector has (others are skipped).

        Raises:
            ValueError: a report is malformed."""
        out: dict[str, Any] = {}
        for name, data in (saved or {}).items():
            if name in self._states and isinstance(data, dict):
                try:
                    out[name] = self._report_from_dict(data)
                except TypeError as exc:
                    raise ValueError(f"detector snapshot has a malformed report: {exc}") from exc
        return out

    def restore(self, state: dict[str, Any] | None) -> Self:
        """Take back a :meth:`snapshot` (``None``: keep the fresh state), with the latest
        report of each comparison, so a restart reads no new event and reports the same
        tests (a snapshot written before reports were kept: rebuilt at the next test time).

        Raises:
            ValueError: another version, or a malformed snapshot.
        """
        if state is None:
            return self
        if state.get("version") != 1 or not isinstance(state.get("windows"), dict):
            raise ValueError("detector snapshot has another version or is malformed")
        self._windows.restore(state["windows"])
        for name, value in state.get("states", {}).items():
            if name in self._states and value in ("ok", "drift", _INSUFFICIENT):
                self._states[name] = value
        self._reports.update(self._reports_from(state.get("reports")))
        self.n_alarms, self.n_tests = int(state["n_alarms"]), int(state["n_tests"])
        for name, most in (state.get("busiest") or {}).items():  # (older snapshots: none)
            if name in self.busiest:
                self.busiest[name] = int(most)
        for name, report in self._reports.items():  # at least the restored reports' windows
            self.busiest[name] = max(self.busiest[name], int(report.n_current))
        for name, kept in (state.get("window_time") or {}).items():  # (older: none)
            if name in self._window_time:
                self._window_time[name] = [float(kept[0]), float(kept[1])]
        # (older snapshots: none; a restored report's test is the latest one known)
        tested = state.get("tested_at")
        if not isinstance(tested, dict):
            tested = {name: report.timestamp for name, report in self._reports.items()}
        self._tested_at = {str(k): float(v) for k, v in tested.items() if k in self._states}
        since = state.get("clearing_since") or {}  # (older snapshots: none)
        self._clearing_since = {str(k): float(v) for k, v in since.items() if k in self._states}
        # a report with enough events is its own latest test; older snapshots kept none else
        self._last_tested = {name: report for name, report in self._reports.items()
                             if report.state != _INSUFFICIENT}  # fmt: skip
        self._last_tested.update(self._reports_from(state.get("last_tested")))
        first, last = state.get("tests_at") or (None, None)
        self._first_test = None if first is None else float(first)
        self._last_test = None if last is None else float(last)
        return self


def _conservative(ci_low: float, ci_high: float) -> float:
    """Distance of a CI from 0 (0 when it contains 0)."""
    return max(ci_low, -ci_high, 0.0)


class CategoricalDriftDetector(_WindowedDetector):
    """Drift of a categorical distribution (languages, topics); see the module docstring.

    Args:
        reference: fixed reference counts, e.g. the gold set's ``{"en": 180, "hi": 20}``
            (counts, not shares: the test needs its size), or ``None``.
        windows: windowing, test schedule and baseline (:class:`WindowConfig`).
        min_count: events the current window and the baseline need (≥ 1).
        min_reference_count: events the reference needs (≥ 1).
        alpha: false-alarm budget per ``alpha_period_s``, (0, 1); n_dimensions: family size.
        min_jsd, clear_jsd: JSD (base 2, [0, 1]) alarm and clear thresholds.
        min_share_change, clear_share_change: share-change thresholds, [0, 1], judged on
            the CI bound nearest 0 of each category's share change.
        confidence: level of the share-change CIs, (0, 1).
        strata: the name of a second dimension (e.g. ``"language"``) whose mix the
            reference is standardised to (:mod:`service.drift.strata`); the categories fed
            are then joint keys (:func:`~service.drift.strata.joint_key`: category and
            stratum), the windows keep them, and every count read (:meth:`counts`, the
            tests' current window) is the categories' marginal. ``None``: plain categories.
        reference_strata: ``{stratum: {category: rows}}`` of the fixed reference (with
            ``strata``; its marginal should be ``reference``). ``None``: the reference
            comparison is not standardised.
        pooled_strata: strata kept out of the split (``"und"`` of ``"language"``): their
            events use the reference's pooled distribution and they do not count toward the
            two strata an adjustment needs (``standardised_reference``'s ``pooled``).

    Raises:
        ValueError: an argument is out of range, or a ``clear_*`` exceeds its ``min_*``.

    >>> det = CategoricalDriftDetector({"en": 90, "es": 10}, min_count=100,
    ...     windows=WindowConfig(window_s=600, test_every_s=60, baseline="none"))
    >>> _ = det.update_many(["hi"] * 90 + ["en"] * 90, [float(t) for t in range(180)])
    >>> det.drift_detected, [s.category for s in det.reports["reference"].rising]
    (True, ['hi'])
    """

    def __init__(
        self,
        reference: Counts | None = None,
        *,
        windows: WindowConfig = _DEFAULT_WINDOWS,
        min_count: int = 100,
        min_reference_count: int = 30,
        alpha: float = 0.001,
        n_dimensions: int = 1,
        min_jsd: float = 0.05,
        clear_jsd: float = 0.025,
        min_share_change: float = 0.05,
        clear_share_change: float = 0.025,
        confidence: float = 0.95,
        strata: str | None = None,
        reference_strata: Mapping[str, Counts] | None = None,
        pooled_strata: Collection[str] = (),
    ) -> None:
        if not (
            0 <= clear_jsd <= min_jsd <= 1 and 0 <= clear_share_change <= min_share_change <= 1
        ):
            raise ValueError("need 0 <= clear_jsd <= min_jsd <= 1, same for share changes")
        has_ref = reference is not None
        args = (min_count, min_reference_count, alpha, n_dimensions, confidence)
        super().__init__(has_ref, windows, *args)
        self._reference = {str(k): int(v) for k, v in (reference or {}).items() if v > 0}
        if not has_ref:
            self._reference = None
        self.min_jsd, self.clear_jsd = min_jsd, clear_jsd
        self.min_share_change, self.clear_share_change = min_share_change, clear_share_change
        #: the latest tables' JSD lower bounds (:meth:`_jsd_bound`), newest last
        self._bounds: dict[bytes, float] = {}
        self.strata = strata
        self.pooled_strata = frozenset(pooled_strata)
        self._reference_strata: dict[str, dict[str, int]] | None = None
        if reference_strata is not None:
            self.set_reference_strata(reference_strata)

    def set_reference_strata(self, reference_strata: Mapping[str, Counts] | None) -> None:
        """Replace the fixed reference's ``{stratum: {category: rows}}`` (``None``: its
        comparison is not standardised), e.g. with :meth:`set_reference`."""
        self._reference_strata = (
            None if reference_strata is None else
            {str(s): {str(k): int(v) for k, v in cells.items() if v > 0}
             for s, cells in reference_strata.items()}
        )  # fmt: skip

    def _marginal(self, counts: Mapping[str, int]) -> dict[str, int]:
        return split_joint(counts)[0] if self.strata else dict(counts)

    def _compared(
        self, name: str, current: dict[str, int], ref: dict[str, int]
    ) -> tuple[dict[str, int], dict[str, int], str]:
        """With :attr:`strata`: the current window's categories (its marginal) and the
        reference standardised to the current window's mix of strata
        (:func:`~service.drift.strata.standardised_reference`; the gold set's strata for
        ``reference``, the baseline window's own for ``baseline``), with ``adjusted_for``
        the strata's dimension; the reference as it is (and ``""``) when no adjustment
        applies (one stratum in the reference)."""
        if not self.strata:
            return current, ref, ""
        current, by_stratum = split_joint(current)
        mix = {stratum: sum(cells.values()) for stratum, cells in by_stratum.items()}
        if name == "reference":
            strata = self._reference_strata
        else:
            ref, strata = split_joint(ref)
        adjusted = (standardised_reference(strata, mix, pooled=self.pooled_strata)
                    if strata else None)  # fmt: skip
        if adjusted is None:
            return current, ref, ""
        return current, adjusted, self.strata

    def set_reference(self, reference: Counts) -> None:
        """Replace the fixed reference counts (e.g. the gold set after an accepted question).

        Raises:
            ValueError: the detector was built without a reference comparison.
        """
        if self._reference is None:
            raise ValueError("this detector has no reference comparison")
        self._reference = {str(k): int(v) for k, v in reference.items() if v > 0}

    @property
    def reports(self) -> dict[str, CategoricalDriftReport]:
        """The latest report per comparison."""
        return dict(self._reports)

    def update(self, x: str, timestamp: float, now: float | None = None) -> Self:
        """Add one event of category ``x`` at ``timestamp`` (Unix seconds)."""
        return self.update_many([x], [timestamp], now)

    def update_many(
        self,
        categories: Sequence[str],
        timestamps: ArrayLike,
        now: Now = None,
        streams: Sequence[str] | None = None,
        *,
        watermarks: Watermarks | None = None,
        tests: TestLog | None = None,
        checks: Sequence[int] = (),
    ) -> Self:
        """Add a micro-batch (``categories[i]`` at ``timestamps[i]``, Unix seconds); tests run
        as event time crosses each ``test_every_s`` mark. ``now`` (the wall clock, one reading
        or one per event) and ``streams`` (the stream each event was read from, for lateness):
        see :meth:`CategoryWindow.update_many`. ``watermarks``: :meth:`watermarks` of these
        timestamps and ``now`` (``None``: computed here). ``tests``: a list each test appends
        ``(events of this update added before it, latest report per comparison)`` to.
        ``checks`` (with ``streams``): after how many events a re-test is also due, as if
        the update ended there (:meth:`~service.drift.windows.ComparisonWindows.ingest`).

        Raises:
            ValueError: lengths differ or a timestamp is not finite.
        """
        self._ingest(list(categories), timestamps, now, streams, watermarks, tests, checks)
        return self

    def _report_from_dict(self, data: dict[str, Any]) -> CategoricalDriftReport:
        return CategoricalDriftReport.from_dict(data)

    def _empty_report(self, name: str, t: float, n_ref: int, n_cur: int) -> CategoricalDriftReport:
        return CategoricalDriftReport(
            name, _INSUFFICIENT, t, n_ref, n_cur, alpha=self.alpha_per_test(name)
        )

    def _jsd_bound(self, table: NDArray[np.float64]) -> float:
        """:func:`js_divergence_lower_bound` of ``table`` (2 × K counts) at the detector's
        confidence, remembered for the latest :data:`JSD_BOUNDS_KEPT` tables: the bound is a
        seeded bootstrap (400 draws, ~0.26 ms), and a window that took no event between two
        tests gives the same table again (18 % of the bounds of a trial's 21-day log of one
        question a minute and a half). Keyed by the table's exact values, so it is the very
        float the function returns."""
        key = table.tobytes()  # (2 rows: the length gives the shape)
        bound = self._bounds.get(key)
        if bound is None:
            bound = js_divergence_lower_bound(table, self.confidence)
            self._bounds[key] = bound
            if len(self._bounds) > JSD_BOUNDS_KEPT:
                del self._bounds[next(iter(self._bounds))]
        return bound

    def _bound_decides(
        self, table: NDArray[np.float64], p_plain: float, alpha: float, before: State,
        jsd: float, effect: float,
    ) -> bool:  # fmt: skip
        """Whether the JSD lower bound can change the report of a test whose share changes
        are not strong and whose JSD estimate reaches ``min_jsd`` (``table``: its 2 × K
        counts; ``p_plain``: its asymptotic chi-square p-value). The bound decides
        ``strong``, which decides the alarm (with ``p < alpha``), the hysteresis flag and,
        out of drift, whether the test is exact (``auto``) or asymptotic. It cannot change
        the report when

        * out of drift: ``auto`` would run the asymptotic test itself
          (:func:`~service.drift.stats_tests.auto_is_asymptotic`) and ``p_plain ≥ alpha``:
          the same test either way, no alarm either way;
        * in drift (the test is asymptotic either way): ``p_plain ≥ alpha`` (no alarm
          either way), or the effect fell below both ``clear_*`` thresholds (state ``ok``,
          not held by hysteresis either way).

        Trial 12's 21-day log of one question a minute and a half ran the bootstrap (~0.26
        ms) at 3,385 tests, none of which could alarm (its gold set too small for
        ``p < alpha``)."""
        if p_plain >= alpha and (before == "drift" or auto_is_asymptotic(table)):
            return False
        return before != "drift" or not (jsd < self.clear_jsd and effect < self.clear_share_change)

    def _assess(
        self, name: str, ref: Counts, cur: Counts, before: State, t: float, alpha: float
    ) -> CategoricalDriftReport:
        cats, table = contingency_table(ref, cur)
        p, q = table[0] / table[0].sum(), table[1] / table[1].sum()
        jsd = js_divergence_from_shares(p, q)
        changes = share_changes_from_table(cats, table, self.confidence)
        effect = max(_conservative(s.ci_low, s.ci_high) for s in changes)
        resamples = min(20_000, max(1999, math.ceil(20 / alpha)))  # only for tiny samples
        # the JSD's confidence bound nearest 0, as for the share changes: a small gold set's
        # own sampling noise must not cross min_jsd (clearing still uses the estimate)
        # (the bound is below the estimate: it is computed only when the estimate reaches
        # min_jsd, the share changes alone do not already make the change strong, and it can
        # change the report (:meth:`_bound_decides`), so the bootstrap runs only where it can
        # change the decision; its value is not reported)
        strong = effect >= self.min_share_change
        plain = None  # the asymptotic test, when worked out first
        if not strong and jsd >= self.min_jsd:
            plain = chi2_from_table(cats, table, "asymptotic", n_resamples=resamples)
            if self._bound_decides(table, plain.p_value, alpha, before, jsd, effect):
                strong = self._jsd_bound(table) >= self.min_jsd
        exact = strong and before != "drift"  # the p-value decides only then: exact test
        mode: Literal["auto", "asymptotic"] = "auto" if exact else "asymptotic"
        chi = (plain if plain is not None and mode == "asymptotic"
               else chi2_from_table(cats, table, mode, n_resamples=resamples))  # fmt: skip
        alarm = strong and chi.p_value < alpha
        cannot = ""
        if chi.p_floor >= alpha:  # (only a Monte-Carlo test has a floor above 0)
            cannot = (f"too few rows for the chi-square even after pooling; the Monte-Carlo "
                      f"test's smallest p-value, 1 / ({resamples:,} + 1) = {chi.p_floor:.1e}, "
                      f"is not below alpha {alpha:.1e}: no change can alarm (more gold "
                      "questions or a longer window would)")  # fmt: skip
        if before == "drift":
            weak = jsd < self.clear_jsd and effect < self.clear_share_change
            state: State = "ok" if weak else "drift"
        else:
            state = "drift" if alarm else "ok"
        rising = tuple(s for s in changes if s.ci_low > 0)
        falling = tuple(sorted((s for s in changes if s.ci_high < 0), key=lambda s: s.change))
        return CategoricalDriftReport(
            name, state, t, chi.n_reference, chi.n_current, jsd, psi_from_shares(p, q),
            chi.p_value, alpha, chi.method, rising, falling, chi.new_categories,
            held_by_hysteresis=state == "drift" and not alarm, cannot_alarm=cannot,
            p_floor=chi.p_floor if cannot else 0.0,
        )  # fmt: skip


class RateDriftDetector(_WindowedDetector):
    """Drift of a binary rate (e.g. refused yes/no); see the module docstring.

    Args:
        reference: a fixed sample ``(positives, total)``, or ``None``.
        min_change, clear_change: alarm and clear thresholds of the absolute rate change,
            [0, 1] (default 5 and 2.5 percentage points), judged on the Newcombe CI bound
            nearest 0.
        other arguments: as :class:`CategoricalDriftDetector`.

    Raises:
        ValueError: an argument is out of range.
    """

    def __init__(
        self,
        reference: tuple[int, int] | None = None,
        *,
        windows: WindowConfig = _DEFAULT_WINDOWS,
        min_count: int = 100,
        min_reference_count: int = 30,
        alpha: float = 0.001,
        n_dimensions: int = 1,
        min_change: float = 0.05,
        clear_change: float = 0.025,
        confidence: float = 0.95,
    ) -> None:
        if not 0 <= clear_change <= min_change <= 1:
            raise ValueError("need 0 <= clear_change <= min_change <= 1")
        if reference is not None and not 0 <= reference[0] <= reference[1]:
            raise ValueError("reference must be (positives, total), 0 <= positives <= total")
        args = (min_count, min_reference_count, alpha, n_dimensions, confidence)
        super().__init__(reference is not None, windows, *args)
        self._reference = None
        if reference is not None:
            self._reference = {"1": int(reference[0]), "0": int(reference[1] - reference[0])}
        self.min_change, self.clear_change = min_change, clear_change

    @property
    def reports(self) -> dict[str, RateDriftReport]:
        """The latest report per comparison."""
        return dict(self._reports)

    def update(self, x: bool, timestamp: float, now: float | None = None) -> Self:
        """Add one event (``x``: positive, e.g. refused) at ``timestamp`` (Unix seconds)."""
        return self.update_many([x], [timestamp], now)

    def update_many(
        self,
        values: ArrayLike,
        timestamps: ArrayLike,
        now: Now = None,
        streams: Sequence[str] | None = None,
        *,
        watermarks: Watermarks | None = None,
        tests: TestLog | None = None,
        checks: Sequence[int] = (),
    ) -> Self:
        """Add a micro-batch of booleans; see :meth:`CategoricalDriftDetector.update_many`.

        Raises:
            ValueError: lengths differ or a timestamp is not finite.
        """
        flags = np.asarray(values, dtype=bool).reshape(-1)
        self._ingest(np.where(flags, "1", "0").tolist(), timestamps, now, streams,
                     watermarks, tests, checks)  # fmt: skip
        return self

    def _report_from_dict(self, data: dict[str, Any]) -> RateDriftReport:
        if "languages" in data:
            data = {**data, "languages": tuple(dict(row) for row in data["languages"])}
        return RateDriftReport(**data)

    def _empty_report(self, name: str, t: float, n_ref: int, n_cur: int) -> RateDriftReport:
        return RateDriftReport(
            name, _INSUFFICIENT, t, n_ref, n_cur, alpha=self.alpha_per_test(name)
        )

    def _assess(
        self, name: str, ref: Counts, cur: Counts, before: State, t: float, alpha: float
    ) -> RateDriftReport:
        n_ref, n_cur = int(sum(ref.values())), int(sum(cur.values()))
        x_cur, x_ref = int(cur.get("1", 0)), int(ref.get("1", 0))
        test = two_proportion_test(x_cur, n_cur, x_ref, n_ref, self.confidence)
        effect = _conservative(test.ci_low, test.ci_high)
        alarm = effect >= self.min_change and test.p_value < alpha
        if before == "drift":
            state: State = "ok" if effect < self.clear_change else "drift"
        else:
            state = "drift" if alarm else "ok"
        report = RateDriftReport(
            name, state, t, n_ref, n_cur, test.rate_reference, test.rate_current,
            test.ci_low, test.ci_high, test.p_value, alpha, test.method,
            held_by_hysteresis=state == "drift" and not alarm,
        )  # fmt: skip
        if state != "drift":
            return report
        span = self.windows.reference_window_s if name == "reference" else self.windows.window_s
        part = newest_part(self.window, span, test.rate_reference)
        if part is None:
            return report
        return replace(report, recent_s=part[0], window_s=span, n_recent=part[1],
                       rate_recent=part[2])  # fmt: skip


#: Languages left out of the per-language tests (:class:`LanguageRateDriftDetector`): ``und``
#: (a question whose language was not told) and ``""`` (a window kept before joint keys).
UNSPLIT = ("", "und")


class LanguageRateDriftDetector(RateDriftDetector):
    """A binary rate tested pooled (exactly as :class:`RateDriftDetector`) and per language:
    its windows keep joint keys ``"1\\x1fde"`` (:func:`service.drift.strata.joint_key`, so
    lateness, held events, the frozen baseline and snapshots keep them), fed as such to
    :meth:`update_many` (a plain flag counts as language ``""``).

    At each test, when two or more languages (besides :data:`UNSPLIT`) have at least
    ``min_count`` events in the current window and ``min_reference_count`` in the compared
    one, each of them is tested as the pooled rate is (the two-proportion test and Newcombe
    interval of :func:`two_proportion_test`; with fewer, the report is the pooled test's
    alone, exactly a :class:`RateDriftDetector`'s); the family of those ``m`` tests is held
    to the comparison's level ``alpha`` by Holm's step-down procedure (:func:`holm_levels`):
    a language's own share, beside the pooled test's, which keeps its level (so a one-language
    service is tested exactly as before; the drift family's budget a day is then 8/4 of its
    ``alpha``, 7/4 without this family). A language alarms
    when Holm rejects it and its conservative effect (the Newcombe bound nearest 0) reaches
    ``min_change``; an open alarm is held while the pooled effect or any tested language's
    reaches ``clear_change``. The report's ``languages`` lists every language tested
    (trial 43, H1: German known-question hit@10 0.92 -> 0.31 at 12 % of the traffic moved the
    pooled rate by p 0.019, no alarm).
    """

    def update_many(
        self,
        values: ArrayLike,
        timestamps: ArrayLike,
        now: Now = None,
        streams: Sequence[str] | None = None,
        *,
        watermarks: Watermarks | None = None,
        tests: TestLog | None = None,
        checks: Sequence[int] = (),
    ) -> Self:
        """Add a micro-batch: joint keys ``joint_key("1" | "0", language)`` or plain flags.

        Raises:
            ValueError: lengths differ or a timestamp is not finite.
        """
        keys = [v if isinstance(v, str) else ("1" if v else "0")
                for v in np.asarray(values, dtype=object).reshape(-1).tolist()]  # fmt: skip
        self._ingest(keys, timestamps, now, streams, watermarks, tests, checks)
        return self

    def _marginal(self, counts: Mapping[str, int]) -> dict[str, int]:
        return split_joint(counts)[0]

    def _assess(
        self, name: str, ref: Counts, cur: Counts, before: State, t: float, alpha: float
    ) -> RateDriftReport:
        # (whole counts from the windows; sizing's expected counts come marginal, no language)
        ref_pooled, ref_by = split_joint(cast(Mapping[str, int], ref))
        cur_pooled, cur_by = split_joint(cast(Mapping[str, int], cur))
        pooled = super()._assess(name, ref_pooled, cur_pooled, before, t, alpha)
        seen = [lang for lang in dict.fromkeys([*ref_by, *cur_by]) if lang not in UNSPLIT]
        if len(seen) < 2:
            return pooled
        rows: list[dict[str, Any]] = []
        for lang in sorted(seen):
            r, c = ref_by.get(lang, {}), cur_by.get(lang, {})
            n_ref, n_cur = sum(r.values()), sum(c.values())
            if n_ref < self.min_reference_count or n_cur < self.min_count:
                continue
            test = two_proportion_test(int(c.get("1", 0)), n_cur, int(r.get("1", 0)), n_ref,
                                       self.confidence)  # fmt: skip
            rows.append({"language": lang, "n_reference": n_ref, "n_current": n_cur,
                         "rate_reference": test.rate_reference,
                         "rate_current": test.rate_current, "ci_low": test.ci_low,
                         "ci_high": test.ci_high, "p_value": test.p_value})  # fmt: skip
        if len(rows) < 2:  # one language tested: the pooled test is its test (main's)
            return pooled
        rejected = holm_levels([row["p_value"] for row in rows], alpha)
        order = sorted(range(len(rows)), key=lambda i: rows[i]["p_value"])
        any_alarm = any_held = False
        for rank, i in enumerate(order):
            row = rows[i]
            effect = _conservative(row["ci_low"], row["ci_high"])
            row["alpha"] = alpha / (len(rows) - rank)
            alarm = rejected[i] and effect >= self.min_change
            held = before == "drift" and effect >= self.clear_change
            row["state"] = "drift" if alarm or held else "ok"
            any_alarm, any_held = any_alarm or alarm, any_held or held
        pooled_alarm = pooled.state == "drift" and not pooled.held_by_hysteresis
        state: State = "drift" if pooled.state == "drift" or any_alarm or any_held else "ok"
        return replace(
            pooled,
            state=state,
            languages=tuple(rows),
            held_by_hysteresis=state == "drift" and not (pooled_alarm or any_alarm),
        )


#: Fewest events on each side of a window's split (:func:`newest_part`).
MIN_PART = 10
#: Splits tried per window (:func:`newest_part`): its span in this many steps.
PART_STEPS = 24
#: Family-wise level of "the window is not one rate" (:func:`newest_part`).
PART_LEVEL = 0.05


def _rate_counts(counts: Mapping[str, int]) -> tuple[int, int]:
    """``(events, positives)`` of a binary rate's window counts: keys ``"1"`` / ``"0"``, or
    joint keys ``"1\\x1fde"`` of a :class:`LanguageRateDriftDetector` (summed over languages).

    >>> _rate_counts({"1": 2, "0": 3}), _rate_counts({"1\x1fde": 2, "0\x1fen": 3, "1\x1fen": 1})
    ((5, 2), (6, 3))
    """
    marginal, _ = split_joint(counts)
    return sum(marginal.values()), marginal.get("1", 0)


def holm_levels(p_values: Sequence[float], alpha: float) -> list[bool]:
    """Holm's step-down procedure (Holm 1979, *Scand. J. Statist.* 6, 65–70): which of ``m``
    hypotheses are rejected at family-wise level ``alpha``. Sorted ascending, the ``i``-th
    smallest p-value (``i`` from 0) is rejected while each so far is below ``alpha / (m -
    i)``; the first that is not stops it (it and every larger one stand). Ties keep their
    order. Uniformly more powerful than Bonferroni's ``alpha / m``, the same family-wise
    error bound under any dependence.

    >>> holm_levels([0.01, 0.04, 0.03], 0.05)  # 0.01 < .05/3; 0.03 >= .05/2: stop
    [True, False, False]
    >>> holm_levels([0.001, 0.02, 0.04], 0.05)  # .001 < .0167, .02 < .025, .04 < .05
    [True, True, True]
    """
    order = sorted(range(len(p_values)), key=lambda i: p_values[i])
    rejected = [False] * len(p_values)
    for rank, i in enumerate(order):
        if not p_values[i] < alpha / (len(p_values) - rank):
            break
        rejected[i] = True
    return rejected


def newest_part(
    window: CategoryWindow, span_s: float, compared: float
) -> tuple[float, int, float] | None:
    """Whether the current window (the ``span_s`` seconds ending at ``window``'s watermark,
    a binary rate's counts under ``"1"`` / ``"0"``) holds two rates, the newer further from
    ``compared`` (the rate the alarm compares with) than the window's own: ``(newest span
    in seconds, its events, its rate)``, else ``None``.

    An alarm's window that began before the change holds both rates, and its rate is the
    mix: trial 41's known_miss alarm read 0.0 % -> 9.7 % over a 24 h window holding 5 h of
    a ~50 % miss rate. The split is the maximum-likelihood change point of a binomial
    sequence (Hinkley 1970, *Biometrika* 57; for binomial counts, Worsley 1986,
    *Biometrika* 73): among the splits at whole steps of ``span_s / PART_STEPS`` (rounded up
    to whole buckets) leaving :data:`MIN_PART` events or more on each side, the one of the
    largest likelihood-ratio statistic ``G = 2 (ℓ(older) + ℓ(newer) − ℓ(window))``. It is
    reported only when ``G``'s chi-square (1 df) p-value is below :data:`PART_LEVEL` over the
    splits tried (Bonferroni; conservative, Worsley 1982, *Biometrika* 69) and the newer
    part's rate is further from ``compared`` than the window's, on the same side: a true
    statement about a stated span, chosen by the data (so its rate is the largest contrast
    found, not an unbiased estimate).

    >>> w = CategoryWindow(window_s=86400.0, bucket_s=60.0)
    >>> for h in range(24):  # 10 events an hour; the newest 6 h half "1"
    ...     for i in range(10):
    ...         _ = w.update("1" if h >= 18 and i % 2 else "0", h * 3600.0 + i * 60.0)
    >>> newest_part(w, 86400.0, 0.0)
    (21600.0, 60, 0.5)
    """
    bounds = window.bucket_range(span_s)
    if bounds is None:
        return None
    first, last = bounds
    step = max(1, math.ceil(span_s / PART_STEPS / window.bucket_s))
    whole = window.counts_between(first, last) or {}
    n, x = _rate_counts(whole)
    if n < 2 * MIN_PART:
        return None
    rate = x / n
    best: tuple[float, int, int, int] | None = None
    splits = 0
    for k in range(1, math.ceil((last - first + 1) / step)):
        newer = window.counts_between(last - k * step + 1, last) or {}
        n_new, x_new = _rate_counts(newer)
        if n_new < MIN_PART or n - n_new < MIN_PART:
            continue
        splits += 1
        g = 2.0 * (_loglik(x_new, n_new) + _loglik(x - x_new, n - n_new) - _loglik(x, n))
        if best is None or g > best[0]:
            best = (g, k, n_new, x_new)
    if best is None:
        return None
    g, k, n_new, x_new = best
    newer_rate = x_new / n_new
    further = (newer_rate - rate) * (rate - compared) > 0
    from scipy import stats  # here: importing scipy.stats costs ~0.5 s of start-up

    if not further or float(stats.chi2.sf(g, 1)) >= PART_LEVEL / splits:
        return None
    return k * step * window.bucket_s, n_new, newer_rate


def _loglik(x: int, n: int) -> float:
    """The binomial log-likelihood of ``x`` of ``n`` at its own rate (0 log 0 = 0)."""
    out = 0.0
    for k in (x, n - x):
        if k:
            out += k * math.log(k / n)
    return out
