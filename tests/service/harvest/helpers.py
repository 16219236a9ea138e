"""Hand-built events and batches for the harvest tests."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from service.events import QueryLogEvent
from service.pipeline import Batch

T0 = datetime(2026, 11, 29, 10, 0, tzinfo=UTC)


def event(
    event_id: str,
    question: str,
    *,
    minute: int = 0,
    results: Sequence[tuple[str, float]] = (("p-1", 5.0), ("p-2", 4.0)),
    citations: Sequence[str] = (),
    rating: float | None = None,
    role: str | None = "student",
    channel: str | None = "web",
    retrieval: bool = True,
) -> QueryLogEvent:
    data: dict[str, Any] = {
        "event_id": event_id,
        "timestamp": (T0 + timedelta(minutes=minute)).isoformat(),
        "question": question,
        "user": {"role": role},
        "channel": channel,
        "answer": {"text": "an answer", "citations": list(citations)},
    }
    if retrieval:
        data["retrieval"] = {
            "retriever": "prod",
            "results": [
                {"id": pid, "score": score, "rank": i} for i, (pid, score) in enumerate(results, 1)
            ],
        }
    if rating is not None:
        data["feedback"] = {"rating": rating}
    return QueryLogEvent.model_validate(data)


def batch(events: Sequence[QueryLogEvent], notes: Sequence[dict[str, Any]] | None = None) -> Batch:
    out = Batch.of(events, "test")
    for target, extra in zip(out.annotations, notes or [{} for _ in events], strict=True):
        target.update(extra)
    return out
