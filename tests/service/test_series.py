"""TimeSeries: bucketing by event time, bounded labels and buckets, and the replay's series."""

from __future__ import annotations

import json
import math
import random
from typing import Any

import pytest

from service.jobs.series import TimeSeries

HOUR = 3600.0


def test_buckets_by_event_time_with_answers_and_refusals() -> None:
    series = TimeSeries(bucket_s=HOUR)
    series.add_batch(
        [10 * HOUR + 5, 10 * HOUR + 3599, 11 * HOUR, 9 * HOUR],
        [{"language_label": "en", "topic": "fees", "refused": False},
         {"language": "hi-Latn", "topic": "fees", "refused": True},
         {"language_label": "en", "topic": "exams"},  # no answer: refused None
         {"topic": None, "refused": False}],
    )  # fmt: skip
    report = series.report()
    assert [b["start"] for b in report["buckets"]] == [9 * HOUR, 10 * HOUR, 11 * HOUR]
    first, second, third = report["buckets"]
    assert first == {"start": 9 * HOUR, "languages": {"und": 1}, "topics": {"und": 1},
                     "answers": 1, "refused": 0, "agreement": {},
                     "known": {"n": 0, "recall": 0.0, "hit": 0, "rr": 0.0, "recall_sq": 0.0,
                               "rr_sq": 0.0}, "known_questions": {},
                     "agreement_questions": {}}  # fmt: skip
    assert second["languages"] == {"en": 1, "hi-Latn": 1} and second["topics"] == {"fees": 2}
    assert (second["answers"], second["refused"]) == (2, 1)
    assert (third["answers"], third["refused"]) == (0, 0)


def test_buckets_and_labels_stay_bounded() -> None:
    series = TimeSeries(bucket_s=HOUR, max_buckets=4, max_labels=2)
    for hour in range(10):  # 10 hours into at most 4 buckets: 1 h -> 2 h -> 4 h wide
        series.add(hour * HOUR, ["en", "hi", "fr"][hour % 3], "t", refused=False)
    report = series.report()
    assert report["bucket_s"] == 4 * HOUR and len(report["buckets"]) == 3
    assert sum(b["answers"] for b in report["buckets"]) == 10
    assert [b["start"] for b in report["buckets"]] == [0.0, 4 * HOUR, 8 * HOUR]
    languages = {k for b in report["buckets"] for k in b["languages"]}
    assert languages == {"en", "hi", "other"}  # the third label counts as other


def test_bad_bounds() -> None:
    with pytest.raises(ValueError):
        TimeSeries(bucket_s=0)


def test_the_demo_replay_series_shows_the_planted_hinglish_rise(
    demo_replay: dict[str, Any],
) -> None:
    # what ``goldwatch replay --demo --format json`` prints, replayed once per session
    report = json.loads(json.dumps(demo_replay, default=str, allow_nan=False))
    analytics = report["analytics"]
    buckets = analytics["series"]["buckets"]
    assert sum(sum(b["languages"].values()) for b in buckets) == report["processed"]
    assert sum(b["refused"] for b in buckets) == analytics["refusals"]["refused"]

    def share(rows: list[dict[str, object]]) -> float:
        total = sum(sum(b["languages"].values()) for b in rows)  # type: ignore[union-attr]
        return sum(b["languages"].get("hi-Latn", 0) for b in rows) / total  # type: ignore[union-attr]

    # service/demo/querylog.py CHANGES: Hinglish rises to ~35 % part-way through the log.
    assert share(buckets[-24:]) > share(buckets[:24]) + 0.1


def test_add_batch_counts_as_add_one_by_one_through_coarsening_and_other() -> None:
    # 2 labels at most, 3 buckets at most: the batch coarsens twice and meets a third label
    stamps = [0.0, 10.0, HOUR, 2 * HOUR + 1, 3 * HOUR, 5 * HOUR, 5 * HOUR + 9, 6 * HOUR,
              6 * HOUR + 5]  # fmt: skip
    notes: list[dict[str, Any]] = [
        {"language": "en", "topic": "fees", "refused": False},
        {"language_label": "hi-Latn", "language": "hi", "topic": "fees", "refused": True},
        {"language": "en", "topic": None},
        {"language": "fr", "topic": "exams", "refused": False},  # third language: other
        {"language": "en", "topic": "exams", "refused": True},
        {"language_label": None, "language": "en", "topic": "fees"},  # label None: und
        {"language": "en", "topic": "fees", "refused": False},
        {"language": "hi-Latn", "topic": "visa", "refused": False},  # third topic: other
        {"language": "en", "topic": "bus"},  # a bucket that exists, a new topic: other
    ]
    batch, one_by_one = (TimeSeries(bucket_s=HOUR, max_buckets=3, max_labels=2)
                         for _ in range(2))  # fmt: skip
    batch.add_batch(stamps, notes)
    for stamp, n in zip(stamps, notes, strict=True):
        one_by_one.add(stamp, n.get("language_label", n.get("language")), n.get("topic"),
                       n.get("refused"))  # fmt: skip
    assert batch.report() == one_by_one.report()
    # by hand: 1 h buckets 0-6 h; the 4th bucket (3 h) makes them 2 h wide, the 6 h event
    # (a 4th 2 h bucket) 4 h wide: [0, 4 h) holds the first five events, [4 h, 8 h) the rest
    report = batch.report()
    assert report["bucket_s"] == 4 * HOUR
    first, second = report["buckets"]
    assert first["languages"] == {"en": 3, "hi-Latn": 1, "other": 1}
    assert first["topics"] == {"fees": 2, "und": 1, "other": 2}  # "und" took a label
    assert (first["answers"], first["refused"]) == (4, 2)
    assert second["languages"] == {"other": 1, "en": 2, "hi-Latn": 1}
    assert second["topics"] == {"fees": 2, "other": 2}
    assert (second["answers"], second["refused"]) == (2, 0)


def test_add_batch_counts_as_add_and_add_known_on_a_mixed_stream() -> None:
    # events back and forth across buckets (coarsening on the way), non-finite times, no
    # topic for an unjudged language, known questions scored: add_batch keeps the previous
    # event's bucket only while the next falls in it, and counts as add and add_known do
    rng = random.Random(7)
    stamps: list[float] = []
    notes: list[dict[str, Any]] = []
    for i in range(400):
        stamps.append(rng.choice([math.nan, math.inf]) if i % 97 == 5
                      else rng.choice([stamps[-1] if stamps and math.isfinite(stamps[-1])
                                       else 0.0, rng.uniform(0, 40 * HOUR)]))  # fmt: skip
        row: dict[str, Any] = {"language": rng.choice(["en", "hi", "fr", None]),
                               "topic": rng.choice(["fees", "exams", "visa", None]),
                               "refused": rng.choice([True, False, None])}  # fmt: skip
        if rng.random() < 0.2:
            row["topic_unjudged_language"] = True
        if rng.random() < 0.3:
            row["known"] = {"gold_id": f"g{i % 5}", "scores": {"recall": 0.5, "hit": 1.0,
                                                                 "rr": 0.25}}  # fmt: skip
        notes.append(row)
    batch, one_by_one = (TimeSeries(bucket_s=HOUR, max_buckets=6, max_labels=3)
                         for _ in range(2))  # fmt: skip
    batch.add_batch(stamps, notes)
    for stamp, n in zip(stamps, notes, strict=True):
        one_by_one.add(stamp, n.get("language"), n.get("topic"), n.get("refused"),
                       n.get("topic_unjudged_language") is not True)  # fmt: skip
        if "known" in n:
            one_by_one.add_known(stamp, n["known"]["scores"], n["known"]["gold_id"])
    assert json.dumps(batch.report()) == json.dumps(one_by_one.report())
    assert batch.report()["bucket_s"] > HOUR  # it coarsened
