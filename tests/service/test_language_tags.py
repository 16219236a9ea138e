"""Language tags in their canonical case: a new user accepted a suggestion with
``"language": "hi-latn"`` and the gold set then had ``hi-latn`` (gold 1, live 0) beside the
live ``hi-Latn`` (live 342, "new: not in the gold set") in every language share."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from service.api.harvest_routes import AcceptBody
from service.data.goldset import load_gold_set
from service.language.tags import canonical_tag


@pytest.mark.parametrize(
    ("written", "canonical"),
    [  # RFC 5646 §2.1.1 and its examples: "mn-Cyrl-MN", "en-CA-x-ca", "sgn-BE-FR", "az-Latn-x-latn"
        ("hi-latn", "hi-Latn"), ("HI-LATN", "hi-Latn"), ("EN", "en"), ("pt-br", "pt-BR"),
        ("MN-cYRL-mn", "mn-Cyrl-MN"), ("en-ca-X-CA", "en-CA-x-ca"), ("SGN-be-fr", "sgn-BE-FR"),
        ("az-latn-x-LATN", "az-Latn-x-latn"), ("es-419", "es-419"), ("de-CH-1996", "de-CH-1996"),
        ("x-Klingon", "x-klingon"), ("hi-Latn", "hi-Latn"), ("und", "und"),
        # not tags of that shape: as written
        ("English", "English"), ("hindi-roman", "hindi-roman"), ("", ""), ("en_US", "en_US"),
    ],
)  # fmt: skip
def test_canonical_case(written: str, canonical: str) -> None:
    assert canonical_tag(written) == canonical


def test_gold_set_rows_and_accepted_labels_take_the_canonical_case(tmp_path: Path) -> None:
    rows = [{"id": "q-1", "question": "hostel fees kitni hai", "gold": ["p-1"],
             "language": "hi-latn"},
            {"id": "q-2", "question": "fees?", "gold": ["p-1"], "language": "English"},
            {"id": "q-3", "question": "fees?", "gold": ["p-1"]}]  # fmt: skip
    path = tmp_path / "gold.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    assert [q.language for q in load_gold_set(path)] == ["hi-Latn", "English", None]
    body = AcceptBody.model_validate({"gold": [], "kind": "unanswerable", "language": "hi-latn"})
    assert body.language == "hi-Latn"
