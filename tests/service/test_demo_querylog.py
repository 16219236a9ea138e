"""The demo query log: determinism, schema, planted changes, planted personal data, ACL leaks.

Counts are checked against the generator's own ground truth (``generate_with_meta``), never
against a detector: these tests pin the data set, the detector tests measure the detectors.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections import Counter
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from consumers.base import Origin, RawMessage
from consumers.decoding import decode
from service.data.corpus import load_corpus
from service.demo import demo_path
from service.demo import querylog as ql
from service.demo.questions import LANGUAGES, question_bank
from service.events import FieldMapping
from service.refusals.detector import RefusalDetector

Events = list[dict[str, Any]]


@pytest.fixture(scope="module")
def generated() -> tuple[Events, list[ql.EventMeta]]:
    return ql.generate_with_meta()


@pytest.fixture(scope="module")
def events(generated: tuple[Events, list[ql.EventMeta]]) -> Events:
    return generated[0]


@pytest.fixture(scope="module")
def meta(generated: tuple[Events, list[ql.EventMeta]]) -> list[ql.EventMeta]:
    return generated[1]


def _share(rows: list[ql.EventMeta], predicate: Any) -> float:
    return sum(1 for m in rows if predicate(m)) / len(rows)


def _phase(meta: list[ql.EventMeta], phase: str) -> list[ql.EventMeta]:
    return [m for m in meta if m.phase == phase]


# -- the committed file ---------------------------------------------------------------------


@pytest.mark.slow
def test_committed_file_is_the_default_output_byte_for_byte(events: Events) -> None:
    committed = demo_path("querylog.jsonl").read_bytes()
    assert ql.render(events) == committed, (
        "service/demo/querylog.jsonl is stale: run "
        "python -m service.demo.querylog --out service/demo/querylog.jsonl"
    )


def test_committed_file_size_and_event_count() -> None:
    path = demo_path("querylog.jsonl")
    assert path.stat().st_size < 3_000_000
    assert 3_000 <= len(path.read_bytes().splitlines()) <= 4_000


def test_every_line_decodes_with_the_default_mapping() -> None:
    path = demo_path("querylog.jsonl")
    mapping = FieldMapping()
    for lineno, line in enumerate(path.read_bytes().splitlines(), start=1):
        event = decode(RawMessage(line, Origin(file=str(path), line=lineno)), mapping, 1_000_000)
        assert event.retrieval is not None and event.answer is not None and event.user is not None


def test_cli_writes_the_same_bytes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "log.jsonl"
    assert ql.main(["--out", str(out), "--n", "120", "--seed", "3", "--summary"]) == 0
    assert out.read_bytes() == ql.render(ql.generate(seed=3, n=120))
    assert json.loads(capsys.readouterr().out)["A"]["events"] == 54


def test_write_returns_the_count(tmp_path: Path) -> None:
    assert ql.write(tmp_path / "x.jsonl", seed=1, n=30) == 30
    assert len((tmp_path / "x.jsonl").read_bytes().splitlines()) == 30


def test_same_seed_same_log_other_seed_other_log() -> None:
    assert ql.render(ql.generate(seed=7, n=200)) == ql.render(ql.generate(seed=7, n=200))
    assert ql.generate(seed=7, n=200) != ql.generate(seed=8, n=200)


def test_n_must_be_positive() -> None:
    with pytest.raises(ValueError, match="n must be >= 1"):
        ql.generate(n=0)


# -- event shape ------------------------------------------------------------------------------


def test_ids_unique_and_in_order(events: Events) -> None:
    assert [e["event_id"] for e in events] == [f"e-{k:06d}" for k in range(1, len(events) + 1)]


def test_timestamps_strictly_increase_over_three_days(events: Events) -> None:
    stamps = [e["timestamp"] for e in events]
    assert all(re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", s) for s in stamps)
    times = [datetime.fromisoformat(s) for s in stamps]
    assert all(a < b for a, b in zip(times, times[1:], strict=False))
    assert ql.START <= times[0] and times[-1] < ql.START + timedelta(days=ql.DAYS)
    # a daily rhythm: India-time nights (01:00-06:00) are quieter than evenings (18:00-23:00)
    hours = Counter((t + timedelta(hours=5, minutes=30)).hour for t in times)
    assert sum(hours[h] for h in range(1, 6)) * 4 < sum(hours[h] for h in range(18, 23))


def test_users_channels_and_explicit_refusal_flags(
    events: Events, meta: list[ql.EventMeta]
) -> None:
    roles: dict[str, str] = {}
    for event, truth in zip(events, meta, strict=True):
        user = event["user"]
        assert re.fullmatch(r"u-\d{3}", user["id"]) and user["tenant"] == "sunrise"
        assert roles.setdefault(user["id"], user["role"]) == user["role"]  # one role per user
        assert user["role"] == truth.role
        assert event["channel"] in ("web", "whatsapp", "app")
        refused = event["answer"]["refused"]
        assert refused is (truth.refused if event["channel"] == "app" else None)
    flagged = sum(e["answer"]["refused"] is not None for e in events)
    assert 0.05 < flagged / len(events) < 0.35  # null mostly
    assert set(Counter(e["user"]["role"] for e in events)) == {"student", "parent", "staff"}
    assert len(roles) < len(events) / 2  # users come back


def test_retrieval_is_top5_bm25_with_consistent_fields(events: Events) -> None:
    corpus = load_corpus(demo_path("corpus.jsonl")).by_id
    for event in events:
        retrieval = event["retrieval"]
        assert retrieval["retriever"] == "prod-bm25" and retrieval["latency_ms"] > 0
        results = retrieval["results"]
        assert len(results) <= 5
        assert [r["rank"] for r in results] == list(range(1, len(results) + 1))
        scores = [r["score"] for r in results]
        assert scores == sorted(scores, reverse=True) and all(s > 0 for s in scores)
        for r in results:
            assert (r["doc"], r["doc_type"]) == (corpus[r["id"]].doc, corpus[r["id"]].doc_type)
        answer = event["answer"]
        returned = {r["id"] for r in results}
        assert set(answer["citations"]) <= returned


def test_feedback_sometimes(events: Events) -> None:
    ratings = [e["feedback"]["rating"] for e in events if "feedback" in e]
    assert 0.05 < len(ratings) / len(events) < 0.25
    assert set(ratings) == {1, -1}


_ANSWER_PREFIX = re.compile(r"^(?:As per [^:]+: |Ji, [^:]+ ke hisaab se: |जी, [^:]+ के अनुसार: )")
_ANSWER_SUFFIX = re.compile(r" Please check [^.]+ for details\.$")


def test_answers_come_from_the_cited_passage(events: Events, meta: list[ql.EventMeta]) -> None:
    corpus = load_corpus(demo_path("corpus.jsonl")).by_id
    for event, truth in zip(events, meta, strict=True):
        answer = event["answer"]
        if truth.refused:
            assert answer["citations"] == []
            continue
        first = corpus[answer["citations"][0]].text
        body = _ANSWER_SUFFIX.sub("", _ANSWER_PREFIX.sub("", answer["text"]))
        assert body.rstrip(".") in first, event["event_id"]


def test_refusal_texts_are_what_goldwatch_calls_refusals(
    events: Events, meta: list[ql.EventMeta]
) -> None:
    detector = RefusalDetector()
    wrong = [
        e["event_id"]
        for e, m in zip(events, meta, strict=True)
        if detector.is_refusal(e["answer"]["text"]) != m.refused
    ]
    assert wrong == []


# -- planted changes ----------------------------------------------------------------------------


def test_change_points_constant_matches_the_log(events: Events, meta: list[ql.EventMeta]) -> None:
    for change in ql.CHANGES:
        index = change["index"]
        assert meta[index].phase == change["phase"]
        assert index == 0 or meta[index - 1].phase != change["phase"]
        assert events[index]["event_id"] == change["event_id"]
        assert events[index]["timestamp"] == change["timestamp"]
    assert [m.phase for m in meta] == sorted(m.phase for m in meta)
    assert Counter(m.phase for m in meta) == {"A": 1350, "B": 900, "C": 750}


@pytest.mark.parametrize(
    ("phase", "expected"),
    [
        ("A", {"en": 0.90, "hi-Latn": 0.08, "hi": 0.02}),
        ("B", {"en": 0.62, "hi-Latn": 0.35, "hi": 0.03}),
        ("C", {"en": 0.62, "hi-Latn": 0.35, "hi": 0.03}),
    ],
)
def test_language_shares_per_phase(
    meta: list[ql.EventMeta], phase: str, expected: dict[str, float]
) -> None:
    rows = _phase(meta, phase)
    for language, share in expected.items():
        got = _share(rows, lambda m, lang=language: m.language == lang)
        assert got == pytest.approx(share, abs=0.035), (phase, language, got)


def test_topic_shares_per_phase(meta: list[ql.EventMeta]) -> None:
    a, b, c = (_phase(meta, p) for p in "ABC")
    heavy = ("fees", "hostel", "admissions")
    assert _share(a, lambda m: m.topic in heavy) > 0.45
    assert _share(a, lambda m: m.topic == "exams") < 0.2
    for rows in (b, c):
        assert _share(rows, lambda m: m.topic == "exams") == pytest.approx(0.40, abs=0.04)
        assert _share(rows, lambda m: m.schedule) > 0.25
        assert _share(rows, lambda m: m.topic == "admissions") < 0.06
    assert _share(a, lambda m: m.schedule) < 0.1
    # every phase still has all the gold set's main topics
    for rows in (a, b, c):
        assert {"fees", "hostel", "admissions", "exams", "salary", "out-of-scope"} <= {
            m.topic for m in rows
        }


def test_refusal_shares_per_phase(meta: list[ql.EventMeta]) -> None:
    a, b, c = (_phase(meta, p) for p in "ABC")
    assert _share(a, lambda m: m.refused) == pytest.approx(0.05, abs=0.02)
    assert _share(b, lambda m: m.refused) == pytest.approx(0.07, abs=0.02)
    assert _share(c, lambda m: m.refused) == pytest.approx(0.25, abs=0.025)
    # phase A: refusals mostly go to questions that should be refused
    should = _share([m for m in a if m.refused], lambda m: m.scope != "in")
    assert should > 0.5
    # phase C: the jump is the exam-schedule questions, with the timetable out of the index
    causes = Counter(m.refusal_cause for m in c if m.refused)
    assert causes.most_common(1)[0][0] == "index-gap"
    assert all(m.schedule for m in c if m.refusal_cause == "index-gap")
    assert not any(m.refusal_cause == "index-gap" for m in a + b)
    # out-of-scope questions are refused nearly always, everywhere
    assert _share([m for m in meta if m.scope == "out"], lambda m: m.refused) > 0.8


def test_phase_c_index_lacks_the_timetable(events: Events, meta: list[ql.EventMeta]) -> None:
    def timetable_hits(phase: str) -> int:
        return sum(
            r["doc"] == ql.REMOVED_DOC
            for e, m in zip(events, meta, strict=True)
            if m.phase == phase
            for r in e["retrieval"]["results"]
        )

    assert timetable_hits("A") > 50 and timetable_hits("B") > 100
    assert timetable_hits("C") == 0


def test_summary_counts(meta: list[ql.EventMeta]) -> None:
    summary = ql.summary(meta)
    assert sum(s["events"] for s in summary.values()) == len(meta)
    assert summary["C"]["refused"] == sum(m.refused for m in meta if m.phase == "C")
    assert summary["B"]["language"]["hi-Latn"] == sum(
        m.language == "hi-Latn" for m in meta if m.phase == "B"
    )


# -- questions --------------------------------------------------------------------------------


def _normal(text: str) -> str:
    text = unicodedata.normalize("NFKC", text).casefold()
    return " ".join(re.findall(r"\w+", text))


def test_questions_are_not_copies_of_the_gold_set(events: Events) -> None:
    gold = {
        _normal(json.loads(line)["question"])
        for line in demo_path("gold.jsonl").read_text(encoding="utf-8").splitlines()
    }
    intents = question_bank().intents
    written = {_normal(q) for i in intents for qs in i.questions.values() for q in qs}
    assert not gold & written
    assert not gold & {_normal(e["question"]) for e in events}


def test_questions_repeat_like_real_traffic(events: Events, meta: list[ql.EventMeta]) -> None:
    questions = [e["question"] for e in events]
    distinct = len(set(questions))
    assert 0.4 * len(questions) < distinct < 0.8 * len(questions)
    assert _share(meta, lambda m: m.repeat) > 0.2
    lowered = sum(q == q.lower() for q in questions)
    assert lowered > 0.3 * len(questions)  # WhatsApp style


def test_every_topic_can_be_asked_in_every_language() -> None:
    groups: dict[tuple[str, bool], set[str]] = {}
    for intent in question_bank().intents:
        assert intent.questions, intent.name
        groups.setdefault((intent.topic, intent.schedule), set()).update(intent.questions)
    for group, languages in groups.items():
        assert languages == set(LANGUAGES), group
    for phase in ("A", "B", "C"):
        assert sum(ql.PHASE_TOPICS[phase].values()) == pytest.approx(1.0)
        assert sum(ql.PHASE_LANGUAGES[phase].values()) == pytest.approx(1.0)
        assert set(ql.PHASE_TOPICS[phase]) == {topic for topic, _ in groups}


# -- personal data and roles ---------------------------------------------------------------------

_EMAIL = re.compile(r"[\w.+-]+@[\w-]+\.[\w.]+")
_DIGITS10 = re.compile(r"(?<!\d)(?:\+?91[\s-]?|0)?[6-9]\d{4}[\s-]?\d{5}(?!\d)")
_PAN = re.compile(r"\b[A-Z]{5}\d{4}[A-Z]\b")
_AADHAAR = re.compile(r"\b[2-9]\d{3}\s?\d{4}\s?\d{4}\b")


def _regex_pii(text: str) -> set[str]:
    found = set()
    for kind, rx in (("email", _EMAIL), ("phone", _DIGITS10), ("pan", _PAN), ("aadhaar", _AADHAAR)):
        if rx.search(text):
            found.add(kind)
    return found


def test_pii_only_in_the_planted_events(events: Events, meta: list[ql.EventMeta]) -> None:
    planted = {m.event_id: m.pii for m in meta if m.pii}
    assert planted == ql.PII_EVENT_IDS
    assert len(planted) == len(question_bank().planted_pii)
    for event in events:
        in_question = _regex_pii(event["question"])
        assert in_question == set(planted.get(event["event_id"], ())), event["event_id"]
        assert not _regex_pii(event["answer"]["text"]), event["event_id"]
        assert not _regex_pii(json.dumps(event["retrieval"]))


def test_the_scrubber_finds_exactly_the_planted_pii(events: Events) -> None:
    pii = pytest.importorskip("service.pii")
    for event in events:
        counts = Counter(pii.scrub(event["question"]).counts)
        counts.update(pii.scrub(event["answer"]["text"]).counts)
        assert set(counts) == set(ql.PII_EVENT_IDS.get(event["event_id"], ())), event["event_id"]


def test_acl_leaks_are_a_few_staff_only_citations(events: Events, meta: list[ql.EventMeta]) -> None:
    corpus = load_corpus(demo_path("corpus.jsonl")).by_id
    leaks = []
    for event, truth in zip(events, meta, strict=True):
        role = event["user"]["role"]
        hidden = [c for c in event["answer"]["citations"] if role not in corpus[c].acl]
        assert bool(hidden) == truth.acl_leak
        if hidden:
            leaks.append(event["event_id"])
            assert role in ("student", "parent")
            assert truth.topic in ("salary", "exam-duty")
    assert tuple(leaks) == ql.ACL_LEAK_EVENT_IDS
    assert 5 <= len(leaks) <= 0.02 * len(events)
    salary_leaks = [
        e for e, m in zip(events, meta, strict=True) if m.acl_leak and m.topic == "salary"
    ]
    assert any(e["user"]["role"] == "student" for e in salary_leaks)
    assert any(
        r["doc"] == "salary-circular-2026.pdf"
        for e in salary_leaks
        for r in e["retrieval"]["results"]
    )
