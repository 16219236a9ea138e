"""A gold-set change that moves the off-corpus cutoff says so (trial 11, finding F3: an accepted
scrubbed answerable row moved the cutoff 0.352 → 0.208 and the live counts 49 → 345 without a
word), and the scope totals name the detectors they were counted under (after a restart or a
refresh, ``/v1/refusals`` showed the new detector's bounds next to counts of the old)."""

from __future__ import annotations

import json
import types
from pathlib import Path

from service.data.corpus import load_corpus
from service.data.goldset import load_gold_set
from service.demo import demo_path
from service.pipeline.totals import AnnotationTotals
from service.refusals.stage import EmbeddingScopeStage
from service.runtime.analytics import (
    apply_scope_references,
    build_analytics,
    counted_under_text,
    scope_detector_name,
    scope_references,
)
from service.settings import AnalyticsConfig

ODD = "What did ESPN report? ask Tom Baker at <EMAIL> or <PHONE>"


def _batch(n: int) -> types.SimpleNamespace:
    notes = [{"refused": False, "out_of_scope": False, "over_refusal": False,
              "under_refusal": False} for _ in range(n)]  # fmt: skip
    return types.SimpleNamespace(annotations=notes, events=[None] * n, counted=None)


def _names(rows: list[dict[str, object]]) -> list[dict[str, object]]:
    """The rows' detector names and where each began (their ``from`` totals and the rates
    that judge them: tests/service/test_counted_by_version.py)."""
    return [{"detector": row["detector"], "from_scored": row["from_scored"]} for row in rows]


def test_an_accepted_odd_row_that_moves_the_cutoff_is_a_notice(tmp_path: Path) -> None:
    config = AnalyticsConfig()
    corpus = load_corpus(demo_path("corpus.jsonl"))
    gold_path = tmp_path / "gold.jsonl"
    gold_path.write_bytes(demo_path("gold.jsonl").read_bytes())
    analytics = build_analytics(config, load_gold_set(gold_path), corpus)
    stage = next(st for st in analytics.stages if isinstance(st, EmbeddingScopeStage))
    before = stage.detector.support.by_script["Latn"]
    assert analytics.totals is not None
    analytics.totals.process(_batch(3))  # type: ignore[arg-type]
    first = scope_detector_name(stage)
    assert _names(analytics.totals.counted_under) == [{"detector": first, "from_scored": 0}]

    # a user accepts the odd answerable row: a sports question to a college's corpus
    row = {"id": "q-odd", "question": ODD, "gold": ["p-0001"]}
    with gold_path.open("a", encoding="utf-8") as handle:
        handle.write(json.dumps(row) + "\n")
    refresh = scope_references(analytics, config, load_gold_set(gold_path), corpus)
    assert refresh is not None
    apply_scope_references(analytics, refresh)
    support = stage.detector.support
    after = support.by_script["Latn"]
    assert before - after > 0.02  # it sets the Latin cutoff: nothing to leave it out for
    # 62 rows: the demo's 61 and the accepted one
    notice = (f"off-corpus cutoffs moved: Latn {before:.3f} → {after:.3f} (gold-set refresh, "
              "62 rows)")  # fmt: skip
    assert support.change is not None and support.change.startswith(notice)
    assert analytics.scope_notice == support.change

    # the counts after it are labelled with the new detector
    analytics.totals.process(_batch(2))  # type: ignore[arg-type]
    second = scope_detector_name(stage)
    assert second != first and f"Latn {after:.4f}" in (second or "")
    rows = analytics.totals.counted_under
    assert _names(rows) == [{"detector": first, "from_scored": 0},
                    {"detector": second, "from_scored": 3}]  # fmt: skip
    assert counted_under_text(rows, 5) == (
        f"out-of-scope counts since the first start come from 2 detectors: 3 scored under "
        f"{first}, 2 under {second} (now): the bounds on what their error explains sum each "
        "one's own rates over its own counts; the quality shown is the last one's"
    )


def test_a_restart_with_another_detector_adds_a_label_to_the_restored_totals() -> None:
    totals = AnnotationTotals()
    totals.detector = "A"
    totals.process(_batch(4))  # type: ignore[arg-type]
    state = json.loads(json.dumps(totals.state_snapshot()))  # as the state store keeps it
    restarted = AnnotationTotals()
    restarted.restore(state)
    restarted.detector = "B"  # the new start's detector
    restarted.process(_batch(1))  # type: ignore[arg-type]
    assert _names(restarted.counted_under) == [{"detector": "A", "from_scored": 0},
                                       {"detector": "B", "from_scored": 4}]  # fmt: skip
    # the same detector after a restart: no new label, no notice
    same = AnnotationTotals()
    same.restore(state)
    same.detector = "A"
    same.process(_batch(1))  # type: ignore[arg-type]
    assert _names(same.counted_under) == [{"detector": "A", "from_scored": 0}]
    assert counted_under_text(same.counted_under, 5) is None
    # totals kept before the labels: their count is named as such
    old = AnnotationTotals()
    old.restore({"flags": {"scope_scored": 7}})
    old.detector = "B"
    old.process(_batch(1))  # type: ignore[arg-type]
    assert counted_under_text(old.counted_under, 8) == (
        "out-of-scope counts since the first start come from 2 detectors: 7 scored before "
        "the detector was recorded, 1 scored under B (now): the bounds on what their error "
        "explains sum each one's own rates over its own counts; the quality shown is the last "
        "one's"
    )
