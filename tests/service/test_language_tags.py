"""Language tags in their canonical case: a new user accepted a suggestion with
``"language": "hi-latn"`` and the gold set then had ``hi-latn`` (gold 1, live 0) beside the
live ``hi-Latn`` (live 342, "new: not in the gold set") in every language share."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from service.api.harvest_routes import AcceptBody
from service.data.corpus import Corpus
from service.data.goldset import load_gold_set
from service.jobs.replay import run_replay
from service.language.stage import LanguageStage
from service.language.tags import canonical_tag, language_key
from service.runtime.analytics import build_analytics
from service.settings import load_settings


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
            {"id": "q-2", "question": "fees?", "gold": ["p-1"], "language": "EN-us"},
            {"id": "q-3", "question": "fees?", "gold": ["p-1"]}]  # fmt: skip
    path = tmp_path / "gold.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    # ("English" is no label the language stage gives: refused, test_goldset)
    assert [q.language for q in load_gold_set(path)] == ["hi-Latn", "en", None]
    body = AcceptBody.model_validate({"gold": [], "kind": "unanswerable", "language": "hi-latn"})
    assert body.language == "hi-Latn"


@pytest.mark.parametrize(
    ("written", "key"),
    [  # RFC 5646 §2.2: language [-extlang] [-script] [-region] [-variant] [-extension] [-x-...]
        ("en-us", "en"), ("en-GB", "en"), ("EN", "en"), ("pt-BR", "pt"), ("es-419", "es"),
        ("hi-Latn", "hi-Latn"), ("hi-latn-IN", "hi-Latn"), ("hi", "hi"),
        ("zh-Hant-TW", "zh-Hant"), ("zh-hans", "zh-Hans"), ("zh-yue-HK", "zh-yue"),
        ("de-CH-1996", "de"), ("en-x-custom", "en"), ("x-Klingon", "x-klingon"),
        ("und", "und"), ("English", "English"), ("en_US", "en_US"),
    ],
)  # fmt: skip
def test_language_key_folds_the_region_and_keeps_the_script(written: str, key: str) -> None:
    assert language_key(written) == key


@pytest.mark.slow  # a replay with a topic fit: about 6 s
def test_gold_and_live_languages_are_compared_without_regions(tmp_path: Path) -> None:
    """Trial user 4: a gold set with ``en-us`` rows had them as ``en-US``, a language apart
    from live ``en`` (gold 14 %, live 0 %: "falling" English that was not real). Ten gold
    rows: ``en`` 2 + ``EN`` + ``en-us`` + ``en-GB`` = 5 English (share 5/10 = 0.5),
    ``hi-Latn`` 2 + ``hi-latn-IN`` = 3 (0.3), ``hi`` 1 (0.1, apart from ``hi-Latn``),
    ``zh-Hant-TW`` 1 → ``zh-Hant`` (0.1). The replay's gold counts, the coverage gap of its
    20 English live questions (live share 20/20 = 1.0 against gold 0.5; before the fix gold
    ``en`` was 3/10 = 0.3) and the metric labels all use these four; no region is left."""
    tags = ["en", "en", "EN", "en-us", "en-GB", "hi-Latn", "hi-Latn", "hi-latn-IN", "hi",
            "zh-Hant-TW"]  # fmt: skip
    questions = ["When are the library hours?", "How do I reset my password?",
                 "Where is the exam hall?", "What is the hostel fee?", "Who runs the canteen?",
                 "hostel ka fee kitna hai", "exam kab hai bhai", "library kab khulti hai",
                 "छात्रावास शुल्क कितना है", "圖書館幾點開門"]  # fmt: skip
    gold = tmp_path / "gold.jsonl"
    gold.write_text(
        "".join(
            json.dumps({"id": f"q-{i}", "question": q, "gold": [f"p-{i}"], "language": tag}) + "\n"
            for i, (q, tag) in enumerate(zip(questions, tags, strict=True))
        ),
        encoding="utf-8",
    )
    assert [q.language for q in load_gold_set(gold)] == [
        "en",
        "en",
        "en",
        "en",
        "en",
        "hi-Latn",
        "hi-Latn",
        "hi-Latn",
        "hi",
        "zh-Hant",
    ]
    settings = load_settings(gold_set=gold)
    analytics = build_analytics(settings.analytics, load_gold_set(gold), Corpus(()))
    labeler = next(s for s in analytics.stages if isinstance(s, LanguageStage)).labeler
    assert labeler is not None
    assert {"en", "hi-Latn", "hi", "zh-Hant"} <= set(labeler.labels())
    assert not [label for label in labeler.labels() if "-" in label and label != "hi-Latn"
                and label != "zh-Hant"]  # fmt: skip
    log = tmp_path / "log.jsonl"
    log.write_text("".join(
        json.dumps({"event_id": f"e-{i}", "timestamp": f"2026-11-20T10:{i:02d}:00Z",
                    "question": "What time does the library open on Sunday?"}) + "\n"
        for i in range(20)), encoding="utf-8")  # fmt: skip
    report = run_replay(settings, log, None, tmp_path / "dlq.jsonl")
    language = report["analytics"]["drift"]["language"]
    assert language["gold_counts"] == {"en": 5, "hi-Latn": 3, "hi": 1, "zh-Hant": 1}
    assert report["analytics"]["languages"] == {"en": 20}
    (gap,) = language["coverage_gaps"]
    assert (gap["category"], gap["live_share"], gap["gold_share"]) == ("en", 1.0, 0.5)
