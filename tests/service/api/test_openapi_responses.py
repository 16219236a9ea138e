"""Every operation of ``/openapi.json`` documents the body of its success answer: a 2xx
response whose content has a non-empty schema, and for JSON bodies the fields (issue 21,
item 3: before, ``/v1/drift``, ``/v1/refusals``, ``/v1/quality``, ``/v1/shadow*``,
``/v1/gold-candidates*``, ``/v1/traces`` and ``/metrics`` documented none)."""

from __future__ import annotations

from functools import cache
from typing import Any

import pytest

from service.api.app import create_app
from service.settings import Settings


@cache
def _spec() -> dict[str, Any]:
    return create_app(Settings()).openapi()


def _operations() -> list[tuple[str, str, dict[str, Any]]]:
    return [(method.upper(), path, op) for path, ops in _spec()["paths"].items()
            for method, op in ops.items()]  # fmt: skip


def _resolve(spec: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    ref = schema.get("$ref")
    if ref is None:
        return schema
    node: Any = spec
    for part in ref.removeprefix("#/").split("/"):
        node = node[part]
    return node  # type: ignore[no-any-return]


@pytest.mark.parametrize(("method", "path", "op"), _operations(),
                         ids=lambda v: v if isinstance(v, str) else "")  # fmt: skip
def test_success_answer_has_a_schema(method: str, path: str, op: dict[str, Any]) -> None:
    spec = _spec()
    success = {code: body for code, body in op["responses"].items() if code.startswith("2")}
    assert success, f"{method} {path}: no 2xx response documented"
    for code, body in success.items():
        content = body.get("content") or {}
        assert content, f"{method} {path} {code}: no content documented"
        for media, entry in content.items():
            schema = _resolve(spec, entry.get("schema") or {})
            assert schema, f"{method} {path} {code} {media}: empty schema"
            if media == "application/json":
                assert schema.get("properties"), f"{method} {path} {code}: no fields documented"


def test_report_fields_are_documented() -> None:
    """Spot checks that the documented fields are the served ones (names from the route
    docstrings and the bodies served on the demo data)."""
    spec = _spec()
    schemas = spec["components"]["schemas"]
    assert list(schemas["RefusalsReport"]["properties"]) == [
        "refusals", "out_of_scope", "drift", "detector_quality", "quality_floor",
        "quality_min_class", "refusals_method"]  # fmt: skip
    assert {
        "rate",
        "answers",
        "refused",
        "by_flag",
        "by_patterns",
        "refused_by_flag",
        "refused_by_patterns",
        "method",
        "by_language",
        "by_language_answers",
        "against_flag",
        "against_flag_text",
        "known_over_refusal",
        "text_recall",
    } == set(schemas["RefusalCounts"]["properties"])
    assert {
        "total",
        "offset",
        "limit",
        "items",
        "shed",
        "max_new_per_batch",
        "live",
        "shadow_not_compared",
    } == set(schemas["CandidatePage"]["properties"])
    item = schemas["CandidateItem"]["properties"]
    assert {"id", "question", "status", "decision", "reasons", "reason_counts", "pool"} <= set(item)
    assert "normalised" not in item and "events" not in item  # kept from labellers' view
    assert {"language", "topic", "refusal", "out_of_scope", "alarms", "event_time"} <= set(
        schemas["DriftReport"]["properties"])  # fmt: skip
    gold = schemas["GoldRunStatus"]["properties"]
    assert list(gold) == ["enabled", "running", "runs", "last_error", "latest"]
