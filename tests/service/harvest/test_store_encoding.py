"""Harvest records reach the state store as ``json.dumps`` wrote them, only encoded faster.

``record_json`` (msgspec, with the record's floats written by ``json``) must give the very
text ``json.dumps(record, separators=(",", ":"), ensure_ascii=False)`` gives, so the state
file, ``goldwatch candidates ...`` and a restore read what they read before.
"""

from __future__ import annotations

import json
import math
import random

import pytest

from service.harvest.store import StateStoreCandidates, record_json
from service.state import JsonText, StateStore


def _dumps(value: object) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _record(**changes: object) -> dict[str, object]:
    row: dict[str, object] = {
        "id": "c-0003e25eb37c2542", "question": "Hostel ka fee — कब? \"quoted\"\n\t\x1f\u2028 😀",
        "normalised": "hostel ka fee कब quoted", "language": "hi", "topic": None, "role": None,
        "source": "real", "count": 2, "first_seen": "2026-11-02T06:05:51.484000Z",
        "last_seen": "2026-11-02T06:44:19.536000Z", "events": ["e-1", "e-2"],
        "reasons": {"refused": 2, "novel": 1}, "variants": ["a\\b", "c/d"],
        "pool": {"Geology#2": {"production": 8, "cand": 1}, "x": {}}, "gap": 0.18467518262432125,
        "trace_id": None, "priority": 15.75, "primary_reason": "refused",
    }  # fmt: skip
    row.update(changes)
    return row


def test_a_small_record_is_written_as_worked_out_by_hand() -> None:
    row = {"id": "c-1", "question": "é\n", "gap": 1e-05, "pool": {"p": {"production": 1}},
           "trace_id": None, "priority": 1e16, "ok": True}  # fmt: skip
    want = ('{"id":"c-1","question":"é\\n","gap":1e-05,"pool":{"p":{"production":1}},'
            '"trace_id":null,"priority":1e+16,"ok":true}')  # fmt: skip
    assert record_json(row) == want


@pytest.mark.parametrize(
    "gap, priority",
    [(0.0, 0.0), (1e-05, 1e-07), (0.5, 1.2345678901234568e17), (1.0, 1e22),
     (math.nan, math.inf), (2.5e-300, -math.inf), (-0.0, 1e-320)],
)  # fmt: skip
def test_record_json_is_json_dumps_text(gap: float, priority: float) -> None:
    # msgspec alone writes 1e-05 as 0.00001, 1e16 as 1e16 and NaN as null
    row = _record(gap=gap, priority=priority)
    assert record_json(row) == _dumps(row)


def test_a_lone_surrogate_falls_back_to_json_dumps() -> None:
    row = _record(question="broken \ud800 text")
    assert record_json(row) == _dumps(row)  # msgspec refuses it; json writes it as before


def test_state_store_candidates_store_json_dumps_text_and_read_it_back() -> None:
    rows = [_record(), _record(id="c-2", gap=1e-05, priority=math.nan)]
    with StateStore.in_memory() as store:
        StateStoreCandidates(store).publish(rows)
        stored = dict(store._conn.execute("SELECT key, value FROM state").fetchall())
        assert stored == {f"harvest/candidate/{r['id']}": _dumps(r) for r in rows}
        got = StateStoreCandidates(store).get_many(["c-0003e25eb37c2542", "c-2"])
    assert got["c-0003e25eb37c2542"] == rows[0]
    assert got["c-2"]["gap"] == 1e-05 and math.isnan(got["c-2"]["priority"])


def test_json_text_is_written_as_it_is() -> None:
    with StateStore.in_memory() as store:
        store.checkpoint({"a": JsonText('{"b": [1, 2.50]}'), "c": {"d": 1.5}})
        stored = dict(store._conn.execute("SELECT key, value FROM state").fetchall())
        assert stored == {"a": '{"b": [1, 2.50]}', "c": '{"d":1.5}'}
        assert store.get("a") == {"b": [1, 2.5]}


@pytest.mark.parametrize(
    "value",
    [1e-4, 9.999999999999999e-05, -1e-4, 1.0001e-4, 9999999999999998.0, 1e16, -1e16,
     1.2345678901234567e15, 123456.789, 2.0, -0.0, 5e-324, 1.7976931348623157e308],
)  # fmt: skip
def test_record_json_at_the_edges_of_fixed_notation(value: float) -> None:
    # json writes 1e-4 as 0.0001 and 9.999999999999999e-05 with an exponent; 1e16 as 1e+16
    row = _record(gap=value, priority=0.25)
    assert record_json(row) == _dumps(row)
    row = _record(gap=0.5, priority=value)
    assert record_json(row) == _dumps(row)


def test_record_json_on_many_floats_of_every_magnitude() -> None:
    rng = random.Random(7)
    for _ in range(4_000):
        gap = rng.random() * 10 ** rng.uniform(-7, 19) * rng.choice((1, -1))
        priority = round(rng.random() * 10 ** rng.uniform(-8, 8), 6)
        row = _record(gap=gap, priority=priority)
        assert record_json(row) == _dumps(row), (gap, priority)
