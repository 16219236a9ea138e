"""What a user sees when the language candidates leave languages out: the start-up notice,
the reports' ``analytics.language_candidates`` (JSON, text, HTML), ``/v1/status`` and the
metric. Expected values by construction: a log of 100 questions of which exactly 20 are
Spanish (XQuAD; ``tests/service/test_language_excluded.py`` checks them against plain
langdetect), the thresholds worked out by hand.
"""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from benchmarks.datasets import load_xquad
from service.data.goldset import GoldSet
from service.html.replay_page import render_replay_html
from service.jobs.replay import render_text, run_replay
from service.language.detector import LanguageConfig, LanguageDetector
from service.language.excluded import MATERIAL_SHARE, excluded_report, excluded_text
from service.language.stage import LanguageStage
from service.records import GoldQuestion
from service.runtime.analytics import Analytics, apply_gold_references, language_detector
from service.settings import load_settings
from tests.service.api.test_app import TOKEN, Server, _free_port

EN_DE = {"language": {"candidates": ["en", "de"]}}


@pytest.fixture(scope="module")
def questions(shared_data: Path) -> list[str]:
    """100 questions: four NQ-open (English) ones, then an XQuAD Spanish one, 20 times."""
    with (shared_data / "nq-open" / "NQ-open.dev.jsonl").open(encoding="utf-8") as handle:
        english = [json.loads(next(handle))["question"] for _ in range(80)]
    spanish = [q for _, q, _ in load_xquad("es", root=shared_data)[1]][:20]
    return [q for i in range(20) for q in (*english[4 * i : 4 * i + 4], spanish[i])]


def _log(path: Path, questions: list[str]) -> Path:
    path.write_text("".join(
        json.dumps({"event_id": f"e-{i}", "timestamp": f"2026-11-20T10:{i // 60:02d}:{i % 60:02d}Z",
                    "question": q}, ensure_ascii=False) + "\n"
        for i, q in enumerate(questions)), encoding="utf-8")  # fmt: skip
    return path


def test_the_share_is_material_from_5_percent_of_at_least_min_n_questions() -> None:
    """By hand: 5 of 100 is 5 % (material), 4 of 100 is not; 9 of 9 is under min_n 10."""
    assert MATERIAL_SHARE == 0.05
    at = excluded_report(["en"], ["es", "fr"], 100, {"es": 3, "fr": 2}, min_n=10)
    below = excluded_report(["en"], ["es", "fr"], 100, {"es": 4}, min_n=10)
    few = excluded_report(["en"], ["es", "fr"], 9, {"es": 9}, min_n=10)
    assert at is not None and below is not None and few is not None
    assert (at["excluded"], at["share"]) == (5, 0.05) and at["unreliable"] is not None
    assert "5 of 100 questions (5.0%) read as es (3) or fr (2)" in at["unreliable"]
    assert "add es, fr to analytics.language.candidates" in at["unreliable"]
    assert below["unreliable"] is None and few["unreliable"] is None
    assert "too few questions to judge" in str(excluded_text(few))
    assert "under the 5%" in str(excluded_text(below))
    assert excluded_report(["en"], [], 100, {}, min_n=10) is None  # nothing left out
    none = excluded_report(["en"], ["es"], 0, {}, min_n=10)
    assert none is not None and none["share"] is None
    assert excluded_text(none) == ("analytics.language.candidates leaves out 1 language (es): "
                                   "no question judged yet")  # fmt: skip


def test_the_most_frequent_left_out_languages_are_named_first() -> None:
    report = excluded_report(["en"], ["es", "fr", "it", "pt"], 100,
                             {"fr": 2, "es": 30, "pt": 1, "it": 2}, min_n=10)  # fmt: skip
    assert report is not None and list(report["by_language"]) == ["es", "fr", "it", "pt"]
    assert "read as es (30), fr (2) or it (2) and 1 more" in report["unreliable"]


def test_the_notice_names_the_gold_sets_languages_as_candidates() -> None:
    """``candidates: [en]`` with a gold set that has German rows: German is a candidate
    (gold tags are folded in), so it is not named as left out; Spanish is."""
    gold = GoldSet([
        GoldQuestion("q-1", "Wie hoch ist die Gebühr?", ("p-1",), language="de"),
        GoldQuestion("q-2", "How high is the fee?", ("p-1",), language="en"),
    ])  # fmt: skip
    config = load_settings(analytics={"language": {"candidates": ["en"]}}).analytics
    detector = language_detector(config, gold)
    assert detector.config.candidates == ("en", "de")
    analytics = Analytics(stages=[LanguageStage(detector)], language_stage=None)
    apply_gold_references(analytics, None, {}, detector)
    notice = str(analytics.language_notice)
    # the 20 default Latin-script languages less en and de, and hi-Latn: 19
    assert "gold set's languages, if any: en, de) leave out 19 languages" in notice
    left_out = notice.split("tell apart: ")[1].split(".")[0].split(", ")
    assert "es" in left_out and "de" not in left_out and "en" not in left_out
    wider = LanguageDetector(LanguageConfig())
    apply_gold_references(analytics, None, {}, wider)  # a refresh to the default candidates
    assert analytics.language_notice is None


def test_replay_says_the_language_figures_are_unreliable(
    tmp_path: Path, questions: list[str]
) -> None:
    """Candidates ``[en, de]``, no gold set: the 20 Spanish questions of 100 are labelled
    en, de or und, and every report says so."""
    settings = load_settings(analytics=EN_DE)
    report = run_replay(settings, _log(tmp_path / "log.jsonl", questions), None,
                        tmp_path / "dlq.jsonl")  # fmt: skip
    notice = next(n for n in report["notices"] if "analytics.language.candidates" in n)
    assert "leave out 19 languages" in notice and ", es, " in notice
    analytics = report["analytics"]
    assert analytics is not None
    assert set(analytics["languages"]) <= {"en", "de", "und"}  # Spanish is nowhere
    left_out = analytics["language_candidates"]
    assert {k: left_out[k] for k in ("candidates", "judged", "excluded", "share", "by_language",
                                     "min_n")} == {
        "candidates": ["en", "de"], "judged": 100, "excluded": 20, "share": 0.2,
        "by_language": {"es": 20}, "min_n": 10}  # fmt: skip
    assert left_out["unreliable"].startswith("the language figures are unreliable: "
                                             "analytics.language.candidates excludes languages "
                                             "seen in traffic — 20 of 100 questions (20.0%) "
                                             "read as es (20)")  # fmt: skip
    keys = list(analytics)
    assert keys.index("language_candidates") == keys.index("language_quality") + 1
    text = render_text(report)
    assert ("languages (UNRELIABLE, not facts: the candidates leave out es, read in 20.0% of "
            "the questions): ") in text  # fmt: skip
    assert f"  {left_out['unreliable']}" in text.splitlines()
    page = render_replay_html(report)
    assert '<p class="warn">These language shares are UNRELIABLE and not facts: ' in page


def test_replay_with_the_default_candidates_says_nothing(
    tmp_path: Path, questions: list[str]
) -> None:
    report = run_replay(load_settings(), _log(tmp_path / "log.jsonl", questions), None,
                        tmp_path / "dlq.jsonl")  # fmt: skip
    assert report["analytics"] is not None
    assert "language_candidates" not in report["analytics"]
    assert not [n for n in report["notices"] if "analytics.language.candidates" in n]
    assert report["analytics"]["languages"]["es"] == 20
    assert "UNRELIABLE" not in render_text(report)


def test_replay_below_min_n_and_below_the_share(tmp_path: Path, questions: list[str]) -> None:
    """5 questions (1 Spanish): too few to judge. 80 English and 3 Spanish (3.6 %): counted,
    under 5 %, no warning."""
    settings = load_settings(analytics=EN_DE)
    few = run_replay(settings, _log(tmp_path / "few.jsonl", questions[:5]), None,
                     tmp_path / "dlq.jsonl")  # fmt: skip
    assert few["analytics"] is not None
    assert few["analytics"]["language_candidates"]["unreliable"] is None
    assert ("5 questions read as one of them (es 1); too few questions to judge (fewer than 10, "
            "analytics.quality_min_class)") in render_text(few)  # fmt: skip
    mostly = [q for i, q in enumerate(questions) if i % 5 != 4 or i < 15]
    small = run_replay(settings, _log(tmp_path / "small.jsonl", mostly), None,
                       tmp_path / "dlq2.jsonl")  # fmt: skip
    assert small["analytics"] is not None
    left_out = small["analytics"]["language_candidates"]
    assert (left_out["judged"], left_out["excluded"]) == (83, 3)
    assert left_out["unreliable"] is None
    text = render_text(small)
    assert "languages: " in text and "UNRELIABLE" not in text
    assert "3 of 83 questions (3.6%) read as one of them (es 3), under the 5%" in text


def test_status_and_metrics_name_the_left_out_languages(
    tmp_path: Path, questions: list[str]
) -> None:
    settings = load_settings(state={"path": tmp_path / "state.sqlite"}, analytics=EN_DE,
                             api={"port": _free_port(), "token": TOKEN})  # fmt: skip
    events = [{"event_id": f"e-{i}", "timestamp": "2026-11-29T10:00:00Z", "question": q}
              for i, q in enumerate(questions)]  # fmt: skip
    with Server(settings) as server:
        before = httpx.get(server.base + "/v1/status").json()["notices"]
        assert server.post(events).status_code == 200
        after = httpx.get(server.base + "/v1/status").json()["notices"]
        metrics = httpx.get(server.base + "/metrics").text
    (notice,) = [n for n in before if "leave out 19 languages" in n]
    assert not [n for n in before if "unreliable:" in n]
    assert notice in after  # still there, after the warning
    (warning,) = [n for n in after if n.startswith("the language figures are unreliable")]
    assert after.index(warning) < after.index(notice)
    assert "20 of 100 questions (20.0%) read as es (20)" in warning
    assert 'goldwatch_questions_excluded_language_total{language="es"} 20.0' in metrics
