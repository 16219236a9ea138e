"""Deterministic query-log streams for the live-path acceptance tests and benchmark.

Good events are schema-v1 query-log events (design.md, "Data contracts") built from real
questions: NQ-open's 3,610 search-engine questions (general knowledge, with short answers)
and CLINC150's assistant queries (10 domains, plus out-of-scope ones, which the simulated
assistant refuses). Poison pills cover every way a message can be unusable, in equal shares,
each with the dead-letter reason the decoder must give it (consumers/decoding.py)::

    >>> events = query_log_events(3, seed=7)
    >>> [e["event_id"] for e in events]
    ['e-7-0000000', 'e-7-0000001', 'e-7-0000002']
    >>> stream = mixed_stream(1_000, poison_share=0.016, seed=1)
    >>> from collections import Counter
    >>> Counter(reason for _, reason in stream if reason) == dict.fromkeys(POISON_KINDS, 2)
    True

Everything depends only on ``seed``: the same arguments give the same bytes on every
machine. The data root is ``$GOLDWATCH_SHARED_DATA`` or ``<checkout>/../shared/data``.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, datetime, timedelta
from functools import cache
from pathlib import Path
from typing import Any

from benchmarks.datasets import SHARED_DATA

#: Messages larger than this are ``too_large`` in the tests' configuration (64 KiB).
TEST_MAX_EVENT_BYTES = 64 * 1024

#: Poison kinds, each named by the dead-letter reason the decoder gives it.
POISON_KINDS: tuple[str, ...] = (
    "not_utf8",
    "not_json",
    "tombstone",
    "not_object",
    "missing_field",
    "wrong_type",
    "too_large",
    "invalid_value",
)
#: A file cannot hold a tombstone (a Kafka ``None`` value); every other kind can be a line.
FILE_POISON_KINDS: tuple[str, ...] = tuple(k for k in POISON_KINDS if k != "tombstone")

START = datetime(2026, 11, 29, 8, 0, 0, tzinfo=UTC)
TENANTS: dict[str, tuple[str, ...]] = {
    "college-a": ("student", "parent", "staff"),
    "legal-aid": ("client", "volunteer", "lawyer"),
    "shop-b": ("customer", "agent"),
}
CHANNELS: tuple[str, ...] = ("web", "web", "web", "mobile", "whatsapp", "api")
DOC_TYPES: tuple[str, ...] = ("html", "pdf", "scanned_pdf", "faq", "docx")
REFUSAL = "I'm sorry, I don't have information about that in my sources."

#: One message of a stream: the value (``None`` = tombstone) and the expected dead-letter
#: reason, ``None`` for a good event.
StreamItem = tuple[bytes | None, str | None]


@cache
def _questions(root: Path) -> tuple[tuple[str, str | None, str], ...]:
    """``(question, short answer or None, topic)``: NQ-open dev, then CLINC150 (all splits)."""
    rows: list[tuple[str, str | None, str]] = []
    with (root / "nq-open" / "NQ-open.dev.jsonl").open(encoding="utf-8") as lines:
        for line in lines:
            row = json.loads(line)
            rows.append((row["question"], row["answer"][0] if row["answer"] else None, "nq"))
    clinc = json.loads((root / "clinc150" / "data_full.json").read_text(encoding="utf-8"))
    for split in sorted(clinc):
        rows.extend((text, None, intent) for text, intent in clinc[split])
    return tuple(rows)


def questions(root: Path | None = None) -> tuple[tuple[str, str | None, str], ...]:
    """All real questions as ``(question, short answer or None, topic)`` (27,310 rows)."""
    return _questions(root or SHARED_DATA)


def _timestamp(i: int, rng: random.Random) -> str | int:
    """About two events a second; one producer in ten writes epoch milliseconds."""
    at = START + timedelta(milliseconds=500 * i + rng.randrange(500))
    if rng.random() < 0.1:
        return int(at.timestamp() * 1000)
    return at.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _retrieval(rng: random.Random) -> dict[str, Any]:
    k = rng.randint(3, 8)
    score = rng.uniform(8.0, 25.0)
    results = []
    for rank in range(1, k + 1):
        doc = rng.randrange(400)
        results.append(
            {
                "id": f"p-{doc * 10 + rng.randrange(10):05d}",
                "score": round(score, 3),
                "rank": rank,
                "doc": f"doc-{doc:03d}.pdf",
                "doc_type": DOC_TYPES[doc % len(DOC_TYPES)],
            }
        )
        score *= rng.uniform(0.7, 0.98)
    return {"retriever": "prod-v3", "latency_ms": round(rng.uniform(8, 180), 1), "results": results}


def _answer(
    question: str, short: str | None, topic: str, ids: list[str], rng: random.Random
) -> dict[str, Any]:
    if topic == "oos" or (short is None and rng.random() < 0.03):
        return {"text": REFUSAL, "refused": True, "citations": []}
    text = f"{short}." if short else f"Here is what I found about: {question}."
    return {"text": text, "refused": False, "citations": ids[: rng.randint(1, 2)]}


def make_event(
    i: int, rng: random.Random, pool: Sequence[tuple[str, str | None, str]], prefix: str
) -> dict[str, Any]:
    """One realistic event number ``i`` (event id ``{prefix}{i:07d}``)."""
    question, short, topic = pool[rng.randrange(len(pool))]
    tenant = rng.choice(sorted(TENANTS))
    retrieval = _retrieval(rng)
    ids = [r["id"] for r in retrieval["results"]]
    event: dict[str, Any] = {
        "event_id": f"{prefix}{i:07d}",
        "timestamp": _timestamp(i, rng),
        "question": question,
        "user": {
            "id": f"u-{rng.randrange(5000)}",
            "role": rng.choice(TENANTS[tenant]),
            "tenant": tenant,
        },
        "channel": rng.choice(CHANNELS),
        "retrieval": retrieval,
        "answer": _answer(question, short, topic, ids, rng),
    }
    if rng.random() < 0.15:
        event["feedback"] = {"rating": rng.choice((-1, 1, 1))}
    return event


def query_log_events(
    n: int, seed: int = 0, *, start: int = 0, id_prefix: str | None = None, root: Path | None = None
) -> list[dict[str, Any]]:
    """``n`` good events (dicts) with unique ids ``e-<seed>-<i>`` and increasing timestamps.

    :param start: number of the first event (ids and timestamps continue from there).
    :param id_prefix: event id prefix (default ``e-<seed>-``).
    :param root: data root (default ``../shared/data``).
    """
    pool = questions(root)
    rng = random.Random(f"events-{seed}-{start}")
    prefix = id_prefix if id_prefix is not None else f"e-{seed}-"
    return [make_event(i, rng, pool, prefix) for i in range(start, start + n)]


def encode(event: dict[str, Any]) -> bytes:
    """Compact UTF-8 JSON, as most producers write it."""
    return json.dumps(event, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


# -- poison pills -----------------------------------------------------------------------------


def _base(i: int, rng: random.Random) -> dict[str, Any]:
    return make_event(i, rng, questions(), "poison-")


def _not_utf8(i: int, rng: random.Random) -> bytes:
    raw = encode(_base(i, rng))
    cut = raw.index(b'"question":"') + len(b'"question":"')
    bad = rng.choice((b"\xff", b"\xc3\x28", b"\xe2\x82", b"\xed\xa0\x80", b"\x80abc"))
    return raw[:cut] + bad + raw[cut:]  # Latin-1 / truncated / surrogate bytes inside a string


def _not_json(i: int, rng: random.Random) -> bytes:
    raw = encode(_base(i, rng))
    choices = (
        raw[: rng.randrange(20, len(raw) - 1)],  # cut off mid-message
        raw.replace(b'","', b"',\"", 1),  # a stray quote
        raw[:-1] + b",}",  # trailing comma
        b"event_id=" + str(i).encode() + b"&question=hello",  # form-encoded, not JSON
        b"{'event_id': 'x', 'timestamp': 1, 'question': 'q'}",  # Python repr
    )
    return choices[i % len(choices)]


def _not_object(i: int, rng: random.Random) -> bytes:
    choices = (
        b"[1, 2, 3]",
        b'"just a question?"',
        b"42",
        b"null",
        b"true",
        b"[" + encode(_base(i, rng)) + b"]",
    )
    return choices[i % len(choices)]


def _missing_field(i: int, rng: random.Random) -> bytes:
    event = _base(i, rng)
    field = ("question", "event_id", "timestamp")[i % 3]
    if i % 4 == 3:
        event[field] = None  # null counts as missing
    else:
        del event[field]
    return encode(event)


def _wrong_type(i: int, rng: random.Random) -> bytes:
    event = _base(i, rng)
    field, value = (
        ("question", 5),
        ("timestamp", "yesterday"),
        ("event_id", 1.5),
        ("question", ["how", "much"]),
        ("timestamp", True),
        ("question", {"text": "how much"}),
    )[i % 6]
    event[field] = value
    return encode(event)


def _invalid_value(i: int, rng: random.Random) -> bytes:
    event = _base(i, rng)
    choice = i % 4
    if choice == 0:
        event["question"] = "   "
    elif choice == 1:
        event["timestamp"] = "2026-02-30T10:00:00Z"
    elif choice == 2:
        event["timestamp"] = "2026-11-31T10:00:00Z"
    else:
        # a bad optional field (latency -3, rank 0) no longer dead-letters its event: the
        # field is dropped and counted (issue 18 item 7); a pill is bad in a required field
        event["question"] = "\n\t "
    return encode(event)


def _too_large(i: int, rng: random.Random, max_event_bytes: int) -> bytes:
    event = _base(i, rng)
    filler = "lorem ipsum dolor sit amet " * (max_event_bytes // 27 + 2)
    event["answer"]["text"] = filler  # a valid event except for its size
    return encode(event)


def poison_pill(
    kind: str, i: int, rng: random.Random, max_event_bytes: int = TEST_MAX_EVENT_BYTES
) -> bytes | None:
    """One unusable message of ``kind`` (a :data:`POISON_KINDS` entry); ``i`` picks a variant."""
    if kind == "tombstone":
        return None
    if kind == "too_large":
        return _too_large(i, rng, max_event_bytes)
    makers: dict[str, Callable[[int, random.Random], bytes]] = {
        "not_utf8": _not_utf8,
        "not_json": _not_json,
        "not_object": _not_object,
        "missing_field": _missing_field,
        "wrong_type": _wrong_type,
        "invalid_value": _invalid_value,
    }
    return makers[kind](i, rng)


def poison_pills(
    n: int,
    seed: int = 0,
    *,
    kinds: Sequence[str] = POISON_KINDS,
    max_event_bytes: int = TEST_MAX_EVENT_BYTES,
) -> list[StreamItem]:
    """``n`` poison pills, the ``kinds`` in equal shares (round-robin), with expected reasons.

    Each item is ``(value, reason)``; the reason equals the kind.
    """
    rng = random.Random(f"poison-{seed}")
    return [
        (
            poison_pill(kinds[j % len(kinds)], j // len(kinds), rng, max_event_bytes),
            kinds[j % len(kinds)],
        )
        for j in range(n)
    ]


def mixed_stream(
    n: int = 20_000,
    poison_share: float = 0.01,
    seed: int = 0,
    *,
    kinds: Sequence[str] = POISON_KINDS,
    max_event_bytes: int = TEST_MAX_EVENT_BYTES,
) -> list[StreamItem]:
    """``n`` messages: ``round(n * poison_share)`` poison pills at seeded positions, the rest
    good events with unique ids, as ``(value, expected reason or None)``."""
    n_poison = round(n * poison_share)
    pills = poison_pills(n_poison, seed, kinds=kinds, max_event_bytes=max_event_bytes)
    good = iter(encode(e) for e in query_log_events(n - n_poison, seed))
    where = dict(
        zip(sorted(random.Random(f"where-{seed}").sample(range(n), n_poison)), pills, strict=True)
    )
    return [where[i] if i in where else (next(good), None) for i in range(n)]


def file_stream(
    n: int = 20_000,
    poison_share: float = 0.01,
    seed: int = 0,
    max_event_bytes: int = TEST_MAX_EVENT_BYTES,
) -> list[StreamItem]:
    """:func:`mixed_stream` for a JSONL file: no tombstones; every value is one line."""
    return mixed_stream(
        n, poison_share, seed, kinds=FILE_POISON_KINDS, max_event_bytes=max_event_bytes
    )


def write_jsonl(path: Path | str, items: Iterable[StreamItem | bytes | None]) -> list[StreamItem]:
    """Write one line per value to ``path`` and return what was written, line ``k`` (1-based)
    being item ``k - 1``.

    Tombstones (``None``) cannot be lines and are skipped; so is any value holding a newline
    byte (it would be two lines). A blank line is not a poison pill (the file source skips
    it), so none is written.
    """
    written: list[StreamItem] = []
    with open(path, "wb") as out:
        for item in items:
            value, reason = item if isinstance(item, tuple) else (item, None)
            if value is None or b"\n" in value or not value.strip():
                continue
            out.write(value + b"\n")
            written.append((value, reason))
    return written


def expected_counts(items: Iterable[StreamItem]) -> tuple[int, dict[str, int]]:
    """``(good events, {reason: dead letters})`` that consuming ``items`` must give."""
    good, dead = 0, {}
    for _, reason in items:
        if reason is None:
            good += 1
        else:
            dead[reason] = dead.get(reason, 0) + 1
    return good, dead
