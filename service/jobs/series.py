"""Per-bucket counts of a replay over event time, for the "over time" charts of the report.

:class:`TimeSeries` folds each batch's events into fixed buckets of event time (``bucket_s``,
default one hour): per bucket, question counts by language and by topic (bounded label
values, as exported to Prometheus), answers and refusals. When the buckets exceed
``max_buckets`` the bucket width doubles and neighbours merge, so a long replay stays bounded
(at most ``max_buckets`` buckets, each at most ``max_labels`` labels + ``other``).

It is a pipeline stage (``"series"``, last in a replay's pipeline): its counts are
checkpointed with the other stages' state, so a replay resumed from ``--state`` reports the
buckets of every run on that state file, as its totals do.

>>> from datetime import UTC, datetime
>>> series = TimeSeries(bucket_s=3600)
>>> t = datetime(2026, 11, 29, 10, 5, tzinfo=UTC).timestamp()
>>> series.add(t, "en", "fees", refused=False)
>>> series.add(t + 3600, "hi-Latn", "exams", refused=True)
>>> [(b["languages"], b["answers"], b["refused"]) for b in series.report()["buckets"]]
[({'en': 1}, 1, 0), ({'hi-Latn': 1}, 1, 1)]
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from service.pipeline import Batch

__all__ = ["TimeSeries"]

_VERSION = 1

OTHER = "other"


def _empty() -> dict[str, Any]:
    return {"languages": Counter(), "topics": Counter(), "answers": 0, "refused": 0}


class TimeSeries:
    """Counts per event-time bucket (see the module docstring).

    Args:
        bucket_s: starting bucket width in seconds (> 0); doubles when needed.
        max_buckets: most buckets kept (>= 2).
        max_labels: most distinct labels per dimension (the rest count as ``other``).

    Raises:
        ValueError: a bound out of range.
    """

    name = "series"
    keeps_counts = True  # reads the annotations only (see service.pipeline.Stage)
    reads_records = False  # timestamps and annotations only (see service.pipeline.Stage)

    def __init__(self, bucket_s: float = 3600.0, max_buckets: int = 500, max_labels: int = 40
                 ) -> None:  # fmt: skip
        if bucket_s <= 0 or max_buckets < 2 or max_labels < 1:
            raise ValueError("need bucket_s > 0, max_buckets >= 2, max_labels >= 1")
        self.bucket_s = float(bucket_s)
        self.max_buckets, self.max_labels = max_buckets, max_labels
        self._start_bucket_s = self.bucket_s
        self._buckets: dict[int, dict[str, Any]] = {}
        self._labels: dict[str, set[str]] = {"languages": set(), "topics": set()}

    def process(self, batch: Batch) -> None:
        """Count the batch's events (:meth:`add_batch`) by their event time."""
        self.add_batch([e.timestamp.timestamp() for e in batch.events], batch.annotations)

    def state_snapshot(self) -> dict[str, Any]:
        """The buckets, their width and the labels seen (JSON-able, ``version`` 1)."""
        return {
            "version": _VERSION,
            "start_bucket_s": self._start_bucket_s,
            "bucket_s": self.bucket_s,
            "labels": {dim: sorted(seen) for dim, seen in self._labels.items()},
            "buckets": [
                [key, dict(b["languages"]), dict(b["topics"]), b["answers"], b["refused"]]
                for key, b in sorted(self._buckets.items())
            ],
        }

    def restore(self, state: Any) -> None:
        """Take the buckets of :meth:`state_snapshot` (``None``, another version, or one
        started at another bucket width: start empty)."""
        if (not isinstance(state, dict) or state.get("version") != _VERSION
                or state.get("start_bucket_s") != self._start_bucket_s):  # fmt: skip
            return
        self.bucket_s = float(state["bucket_s"])
        self._labels = {dim: set(state["labels"].get(dim, ())) for dim in self._labels}
        self._buckets = {
            int(key): {"languages": Counter(languages), "topics": Counter(topics),
                       "answers": int(answers), "refused": int(refused)}
            for key, languages, topics, answers, refused in state["buckets"]
        }  # fmt: skip

    def _label(self, dimension: str, value: str | None) -> str:
        label = value or "und"
        seen = self._labels[dimension]
        if label not in seen:
            if len(seen) >= self.max_labels:
                return OTHER
            seen.add(label)
        return label

    def add(self, timestamp: float, language: str | None, topic: str | None,
            refused: bool | None) -> None:  # fmt: skip
        """Count one event (Unix seconds; ``refused`` ``None``: no answer); a non-finite
        timestamp is ignored."""
        if not math.isfinite(timestamp):
            return
        key = math.floor(timestamp / self.bucket_s)
        while key not in self._buckets and len(self._buckets) >= self.max_buckets:
            self._coarsen()
            key = math.floor(timestamp / self.bucket_s)
        bucket = self._buckets.get(key)
        if bucket is None:
            bucket = self._buckets[key] = _empty()
        bucket["languages"][self._label("languages", language)] += 1
        bucket["topics"][self._label("topics", topic)] += 1
        if refused is not None:
            bucket["answers"] += 1
            bucket["refused"] += int(refused)

    def add_batch(self, timestamps: Sequence[float], annotations: Sequence[Mapping[str, Any]]
                  ) -> None:  # fmt: skip
        """Count a batch: ``annotations[i]`` gives ``language_label`` (else ``language``),
        ``topic`` and ``refused``."""
        for stamp, notes in zip(timestamps, annotations, strict=True):
            language = notes.get("language_label", notes.get("language"))
            self.add(stamp, language, notes.get("topic"), notes.get("refused"))

    def _coarsen(self) -> None:
        """Double the bucket width, merging neighbours."""
        self.bucket_s *= 2
        merged: dict[int, dict[str, Any]] = {}
        for key, bucket in self._buckets.items():
            target = merged.setdefault(key // 2, _empty())
            target["languages"].update(bucket["languages"])
            target["topics"].update(bucket["topics"])
            target["answers"] += bucket["answers"]
            target["refused"] += bucket["refused"]
        self._buckets = merged

    def report(self) -> dict[str, Any]:
        """``{"bucket_s", "buckets": [{"start", "languages", "topics", "answers",
        "refused"}]}``, buckets in time order, ``start`` in Unix seconds."""
        return {
            "bucket_s": self.bucket_s,
            "buckets": [
                {"start": key * self.bucket_s, "languages": dict(b["languages"]),
                 "topics": dict(b["topics"]), "answers": b["answers"], "refused": b["refused"]}
                for key, b in sorted(self._buckets.items())
            ],
        }  # fmt: skip
