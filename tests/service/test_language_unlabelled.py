"""A live language without its own ``language`` metric label (exported as ``other``) is named,
with the setting that labels it: the rule, the replay reports (JSON, text, HTML) and
``/v1/status``. Expected values worked out by hand: the 95 % Wilson lower bound
``(p + z²/2n − z √(p(1−p)/n + z²/4n²)) / (1 + z²/n)`` with ``z = 1.959964`` (``z² = 3.841459``),
e.g. 89 of 1,835: ``p = 0.0485014``, centre ``0.0485014 + 0.0010467 = 0.0495481``, half-width
``1.959964 × √(2.51493e-5 + 2.8521e-7) = 0.0098847``, ``(0.0495481 − 0.0098847) / 1.0020934 =
0.039581``. The trial (trial 10, 89 Russian questions of 1,803 processed) exported
``goldwatch_coverage_gap_ratio{category="other",dimension="language"} 0.0403``: the same bound,
``0.040286``, as the rule here gives.
"""

from __future__ import annotations

import html
import json
from pathlib import Path

import httpx
import pytest

from benchmarks.datasets import load_xquad
from service.html.replay_page import render_replay_html
from service.jobs.replay import coverage_gap_lines, render_text, run_replay
from service.language.detector import DEFAULT_FREQUENT, LanguageLabeler
from service.language.unlabelled import (
    UNLABELLED_MIN_COUNT,
    UNLABELLED_MIN_SHARE,
    unlabelled_fix,
    unlabelled_languages,
    unlabelled_text,
)
from service.settings import load_settings
from tests.service.api.test_app import TOKEN, Server, _free_port

#: The trial's gold-set languages with the built-in list: en, es, de, hi + hi-Latn, fr, pt,
#: zh, ar (9 of 16); Russian has no label.
TRIAL = LanguageLabeler(["en", "es", "de", "hi"], DEFAULT_FREQUENT, 16)


def test_89_russian_questions_of_1835_are_named_with_their_share() -> None:
    counts = {"en": 1500, "ru": 89, "es": 100, "hi-Latn": 110, "und": 36}  # 1,835 in all
    ((ru,),) = [unlabelled_languages(counts, TRIAL)]
    assert ru["language"] == "ru" and ru["n"] == 89
    assert ru["share"] == pytest.approx(0.0485014, abs=1e-7)  # 89 / 1835
    assert ru["share_low"] == pytest.approx(0.039581, abs=1e-6)  # module docstring
    assert unlabelled_text([ru], TRIAL) == (
        'ru 4.9% of the questions (89 of 1,835) is exported as language="other" on /metrics '
        "(its count and coverage gap): add it to analytics.language_labels "
        "(analytics.language_labels: [ru]; the label set is fixed at start, so it takes a "
        "restart)"
    )
    trial = unlabelled_languages({"en": 1714, "ru": 89}, TRIAL)  # 1,803 as processed
    assert trial[0]["share_low"] == pytest.approx(0.040286, abs=1e-6)  # the trial's 0.0403


def test_the_rule_is_a_lower_bound_of_2_points_and_10_questions() -> None:
    """29 of 1,000: bound 0.020266 ≥ 0.02, named; 28 of 1,000: 0.019442, not. 9 of 9:
    bound 0.70 but under 10 questions. Labelled languages, ``und`` and ``other`` never."""
    assert (UNLABELLED_MIN_SHARE, UNLABELLED_MIN_COUNT) == (0.02, 10)
    named = unlabelled_languages({"en": 971, "ru": 29}, TRIAL)
    assert [u["language"] for u in named] == ["ru"]
    assert named[0]["share_low"] == pytest.approx(0.020266, abs=1e-6)
    assert unlabelled_languages({"en": 972, "ru": 28}, TRIAL) == []
    assert unlabelled_languages({"ru": 9}, TRIAL) == []
    assert unlabelled_languages({"pt": 50, "und": 500, "other": 500, "en": 50}, TRIAL) == []
    assert unlabelled_languages({"ru": 50}, None) == [] and unlabelled_languages({}, TRIAL) == []
    assert unlabelled_text([], TRIAL) is None


def test_several_are_named_most_first_with_the_configured_labels_kept() -> None:
    labeler = LanguageLabeler(["en"], DEFAULT_FREQUENT, 16, configured=["pl"])
    named = unlabelled_languages({"en": 800, "uk": 60, "ru": 100, "pl": 40}, labeler)
    assert [(u["language"], u["n"]) for u in named] == [("ru", 100), ("uk", 60)]
    text = unlabelled_text(named, labeler)
    assert text is not None
    assert text.startswith('ru 10.0% of the questions (100 of 1,000), uk 6.0% (60) are '
                           'exported as language="other" on /metrics (their counts and gaps): '
                           "add them to analytics.language_labels "
                           "(analytics.language_labels: [pl, ru, uk];")  # fmt: skip


def test_the_fix_raises_the_limit_when_the_gold_sets_languages_fill_it() -> None:
    """Gold en, de, fr with a limit of 3: every gold language is kept, so ru needs a 4th."""
    full = LanguageLabeler(["en", "de", "fr", "und"], DEFAULT_FREQUENT, 3)
    assert unlabelled_fix(["ru"], full) == (
        "analytics.language_labels: [ru] and analytics.language_label_limit: 4"
    )
    assert unlabelled_fix(["ru"], TRIAL) == "analytics.language_labels: [ru]"


def test_the_coverage_gap_line_marks_a_language_exported_as_other() -> None:
    drift = {"language": {"gold_counts": {"en": 10},
                          "coverage_gaps": [{"category": "ru", "live_share": 0.049,
                                             "gold_share": 0.0}]}}  # fmt: skip
    line, _ = coverage_gap_lines(drift, {}, ["ru"])
    assert line.endswith('language ru 4.9% live / 0.0% gold (language="other" on /metrics)')
    plain, _ = coverage_gap_lines(drift, {})
    assert plain.endswith("language ru 4.9% live / 0.0% gold")


@pytest.fixture(scope="module")
def questions(shared_data: Path) -> list[str]:
    """1,835 questions: 1,746 NQ-open (English) and 89 XQuAD Russian ones, one in 20 or so
    (the first 91 but two short ones the detector reads as bg, 48 'Что пела Леди Гага?' and
    60 'Кто потерял мяч на 3rd-and-9?')."""
    with (shared_data / "nq-open" / "NQ-open.dev.jsonl").open(encoding="utf-8") as handle:
        english = [json.loads(next(handle))["question"] for _ in range(1746)]
    xquad = [q for _, q, _ in load_xquad("ru", root=shared_data)[1]][:91]
    russian = [q for i, q in enumerate(xquad) if i not in (48, 60)]
    out = list(english)
    for i, q in enumerate(russian):
        out.insert(i * 20, q)
    return out


def _log(path: Path, questions: list[str]) -> Path:
    path.write_text("".join(
        json.dumps({"event_id": f"e-{i}", "timestamp": f"2026-11-20T{i // 3600:02d}:"
                    f"{i // 60 % 60:02d}:{i % 60:02d}Z", "question": q}, ensure_ascii=False)
        + "\n" for i, q in enumerate(questions)), encoding="utf-8")  # fmt: skip
    return path


def test_replay_names_russian_traffic_and_the_fix(tmp_path: Path, questions: list[str]) -> None:
    report = run_replay(load_settings(), _log(tmp_path / "log.jsonl", questions), None,
                        tmp_path / "dlq.jsonl")  # fmt: skip
    analytics = report["analytics"]
    assert analytics is not None
    assert sum(analytics["languages"].values()) == 1835
    assert analytics["languages"]["ru"] == 89  # the log's construction: each read as ru
    labels = analytics["language_labels"]
    assert labels is not None and "ru" not in labels["labels"] and labels["limit"] == 16
    assert [(u["language"], u["n"]) for u in labels["unlabelled"]] == [("ru", 89)]
    assert labels["unlabelled"][0]["share_low"] == pytest.approx(0.039581, abs=1e-6)
    notice = labels["notice"]
    assert notice is not None and notice.startswith("ru 4.9% of the questions (89 of 1,835)")
    assert "analytics.language_labels: [ru]" in notice
    lines = render_text(report).splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("languages: "))
    assert lines[at + 1] == f"  {notice}"  # right under the language shares
    page = render_replay_html(report)
    assert f'<p class="warn">{html.escape(notice)}.</p>' in page
    fixed = run_replay(load_settings(analytics={"language_labels": ["ru"]}),
                       tmp_path / "log.jsonl", None, tmp_path / "dlq.jsonl")  # fmt: skip
    assert fixed["analytics"] is not None
    fixed_labels = fixed["analytics"]["language_labels"]
    assert fixed_labels is not None and "ru" in fixed_labels["labels"]
    assert fixed_labels["unlabelled"] == [] and fixed_labels["notice"] is None
    assert "/metrics" not in render_text(fixed)


def test_status_names_the_language_exported_as_other(tmp_path: Path, shared_data: Path) -> None:
    """80 English and 20 Russian questions: ru 20.0% (bound 0.1334), named on /v1/status once
    counted, while /metrics counts it under ``other``."""
    with (shared_data / "nq-open" / "NQ-open.dev.jsonl").open(encoding="utf-8") as handle:
        english = [json.loads(next(handle))["question"] for _ in range(80)]
    russian = [q for _, q, _ in load_xquad("ru", root=shared_data)[1]][:20]
    mixed = [q for i in range(20) for q in (*english[4 * i : 4 * i + 4], russian[i])]
    settings = load_settings(state={"path": tmp_path / "state.sqlite"},
                             api={"port": _free_port(), "token": TOKEN})  # fmt: skip
    events = [{"event_id": f"e-{i}", "timestamp": "2026-11-29T10:00:00Z", "question": q}
              for i, q in enumerate(mixed)]  # fmt: skip
    with Server(settings) as server:
        before = httpx.get(server.base + "/v1/status").json()["notices"]
        assert server.post(events).status_code == 200
        after = httpx.get(server.base + "/v1/status").json()["notices"]
        metrics = httpx.get(server.base + "/metrics").text
    with Server(settings) as server:  # restarted on the same state: named before any batch
        restarted = httpx.get(server.base + "/v1/status").json()["notices"]
    assert not [n for n in before if "/metrics" in n]
    (notice,) = [n for n in after if 'exported as language="other"' in n]
    assert notice.startswith("ru 20.0% of the questions (20 of 100) is exported")
    assert "analytics.language_labels: [ru]" in notice
    assert 'goldwatch_questions_by_language_total{language="other"} 20.0' in metrics
    assert notice in restarted
