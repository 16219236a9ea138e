"""Values written as the text they carry (:class:`EncodedObject`), and ``_dumps``'s
lists of strings written without the decode-and-compare check (issue 22, checkpoint cost)."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any

import pytest

from service.state import EncodedObject, StateStore, _dumps, encoded_object


def test_checkpoint_writes_the_carried_text_not_the_dictionary_encoded_again() -> None:
    store = StateStore.in_memory()
    # a text that differs from the dictionary's own encoding only in the number's type, so
    # what is read back tells which one was written (encoded_object never builds such a pair)
    store.checkpoint({"k": EncodedObject({"a": 1}, '{"a":1.0}')})
    assert store.get("k") == {"a": 1.0} and type(store.get("k")["a"]) is float
    store.write_unless({"w": EncodedObject({"a": 1}, '{"a":2}')}, {})
    assert store.get("w") == {"a": 2}


def test_encoded_object_text_worked_out_by_hand() -> None:
    value = encoded_object(
        {"version": 2, "ids": ["c-1", "é"], "rows": [{"x": 1}], "gap": math.nan},
        {"rows": '[{"x":1}]'},
    )
    assert value.text == '{"version":2,"ids":["c-1","é"],"rows":[{"x":1}],"gap":NaN}'
    assert value == {"version": 2, "ids": ["c-1", "é"], "rows": [{"x": 1}], "gap": value["gap"]}
    store = StateStore.in_memory()
    store.checkpoint({"k": value})
    got = store.get("k")
    assert got["rows"] == [{"x": 1}] and math.isnan(got["gap"])


def test_encoded_object_keys_are_strings() -> None:
    with pytest.raises(TypeError):
        encoded_object({1: "a"}, {})  # type: ignore[dict-item]
    with pytest.raises(TypeError):
        encoded_object({"a": {1, 2}}, {})  # _dumps refuses a set, as json.dumps does


@pytest.mark.parametrize(
    "change, want",
    [
        (lambda v: v.__setitem__("b", 2), {"a": [1], "b": 2}),
        (lambda v: v.__delitem__("a"), {}),
        (lambda v: v.update(a=[3]), {"a": [3]}),
        (lambda v: v.setdefault("c", None), {"a": [1], "c": None}),
        (lambda v: v.pop("a"), {}),
        (lambda v: v.popitem(), {}),
        (lambda v: v.clear(), {}),
        (lambda v: v.__ior__({"d": "x"}), {"a": [1], "d": "x"}),
    ],
)
def test_changing_an_encoded_object_drops_its_text(
    change: Callable[[EncodedObject], Any], want: dict[str, Any]
) -> None:
    value = encoded_object({"a": [1]}, {})
    assert value.text == '{"a":[1]}'
    change(value)
    assert value.text is None and value == want
    store = StateStore.in_memory()
    store.checkpoint({"k": value})
    assert store.get("k") == want  # the dictionary as it is now, not the old text


@pytest.mark.parametrize(
    "value, want",
    [
        (["a", "é", 'q"\n'], '["a","é","q\\"\\n"]'),
        ([], "[]"),
        # msgspec refuses a lone surrogate: json.dumps's text, escaped (SQLite takes UTF-8 only)
        (["a\ud800"], '["a\\ud800"]'),
        (("a", "b"), '["a","b"]'),  # a tuple reads back as a list: json.dumps's text
        (["a", 1.0, None], '["a",1.0,null]'),  # not all strings: checked, equal
        (["a", math.inf], '["a",Infinity]'),  # msgspec would write null: json.dumps's text
    ],
)
def test_dumps_lists_of_strings(value: Any, want: str) -> None:
    assert _dumps(value) == want
    assert json.loads(want) == json.loads(json.dumps(value))
