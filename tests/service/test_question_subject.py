"""The subject of a scrubbed question (:func:`service.text.subject.subject`) and the stages
that read it (trial 12, F6 and F7).

F7: the same in-scope questions, each prefixed with a self-introduction the PII stage scrubs to
``My name is <NAME>, my email is <EMAIL> and my phone is <PHONE>. ``, were out of scope 30/60
vs 9/60 without it. F6: one accepted gold row written with that prefix drew 59 of 60 prefixed
live questions into its topic. The expected values here are the plain question's own verdicts:
who asked must not change what a question is about.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from service.data.corpus import load_corpus
from service.data.goldset import load_gold_set
from service.demo import demo_path
from service.events import QueryLogEvent
from service.harvest.labelling import placeholder_warning
from service.pipeline import Batch
from service.runtime.analytics import analysis_gold, build_analytics
from service.settings import AnalyticsConfig
from service.text.subject import has_placeholder, subject

PREFIX = ("My name is Alice Smith, my email is alice.smith@example.org and my phone is "
          "+1 415 555 0100. ")  # fmt: skip
SCRUBBED = "My name is <NAME>, my email is <EMAIL> and my phone is <PHONE>. "


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (SCRUBBED + "When is the hostel fee due?", "When is the hostel fee due?"),
        ("Call me at <PHONE>. Is the library open on Sunday?", "Is the library open on Sunday?"),
        ("<NAME> here - what is the MCA fee?", "what is the MCA fee?"),
        ("This is <NAME>, when do exams start?", "when do exams start?"),
        ("I am <NAME>. Who wrote Emma?", "Who wrote Emma?"),
        ("Who wrote Emma? Sent from my iPhone, <NAME>", "Who wrote Emma?"),
        ("Who wrote Emma? Regards, <NAME>", "Who wrote Emma?"),
        ("Me llamo <NAME> y mi correo es <EMAIL>. ¿Cuándo es el examen?", "¿Cuándo es el examen?"),
        ("Je m'appelle <NAME>, mon numéro est <PHONE>. Quand est l'examen?", "Quand est l'examen?"),
        (
            "Ich heiße <NAME> und meine Telefonnummer ist <PHONE>. Wann ist die Prüfung?",
            "Wann ist die Prüfung?",
        ),
        ("mera naam <NAME> hai, hostel fee kitni hai?", "hostel fee kitni hai?"),
        # a placeholder inside the question proper: removed alone, the question kept
        ("What did <NAME> say about the budget?", "What did say about the budget?"),
        ("Can you send the syllabus to <EMAIL>?", "Can you send the syllabus to?"),
        ("Is <NAME>'s thesis in the library?", "Is thesis in the library?"),
        # nothing but contact clauses: a request about the name itself, kept whole
        ("My name is <NAME>", "My name is <NAME>"),
        ("you can call me <NAME>", "you can call me <NAME>"),
    ],
)
def test_subject_of_hand_built_texts(text: str, expected: str) -> None:
    assert subject(text) == expected
    assert has_placeholder(text)


@pytest.mark.parametrize(
    "text", ["When is the hostel fee due?", "Is 3 < 4?", "a <b> tag", "Sent from my iPhone", ""]
)
def test_nothing_to_do_returns_the_same_object(text: str) -> None:
    assert subject(text) is text
    assert not has_placeholder(text)


def _questions() -> list[str]:
    """English questions of the demo log that carry no personal data, not gold questions."""
    gold = {q.question for q in load_gold_set(demo_path("gold.jsonl"))}
    seen: list[str] = []
    for line in demo_path("querylog.jsonl").read_text(encoding="utf-8").splitlines():
        question = json.loads(line)["question"]
        if (question not in gold and question not in seen and "<" not in question
                and question.isascii() and len(question.split()) >= 5):  # fmt: skip
            seen.append(question)
        if len(seen) == 40:
            break
    return seen


def _verdicts(gold_path: Path, questions: list[str]) -> list[tuple[object, object, object]]:
    """Per question ``(topic, out_of_scope, scope_score)`` through all the analytics stages."""
    analytics = build_analytics(AnalyticsConfig(), load_gold_set(gold_path),
                                load_corpus(demo_path("corpus.jsonl")))  # fmt: skip
    events = [QueryLogEvent(event_id=f"e-{i}", timestamp="2026-12-04T10:00:00Z", question=q)
              for i, q in enumerate(questions)]  # fmt: skip
    batch = Batch("file", events, [{} for _ in events])
    for stage in analytics.stages:
        stage.process(batch)
    return [(n.get("topic"), n.get("out_of_scope"), n.get("scope_score"))
            for n in batch.annotations]  # fmt: skip


def test_a_scrubbed_self_introduction_changes_neither_topic_nor_scope(tmp_path: Path) -> None:
    """F7 through the stages (PII scrub, language, topic, out-of-scope), then F6: with one
    accepted gold row carrying the scrubbed prefix, the prefixed questions still get the
    plain ones' topic and scope (before: the prefix drew them into the row's topic)."""
    questions = _questions()
    assert len(questions) == 40
    gold_path = tmp_path / "gold.jsonl"
    gold_path.write_bytes(demo_path("gold.jsonl").read_bytes())
    plain = _verdicts(gold_path, questions)
    prefixed = _verdicts(gold_path, [PREFIX + q for q in questions])
    assert prefixed == plain
    assert {topic for topic, _, _ in plain} - {"novel"}  # the check is not about one topic

    # an accepted suggestion written as scrubbed (F6), in a topic few questions are about
    row = {"id": "q-acc", "question": SCRUBBED + "Is there a cultural fest in March?",
           "gold": ["p-0001"], "topic": "events", "harvest_id": "c-0000000000000000"}  # fmt: skip
    with gold_path.open("a", encoding="utf-8") as handle:
        handle.write(json.dumps(row) + "\n")
    plain_after = _verdicts(gold_path, questions)
    prefixed_after = _verdicts(gold_path, [PREFIX + q for q in questions])
    assert prefixed_after == plain_after
    assert sum(topic == "events" for topic, _, _ in prefixed_after) <= 2
    # the gold-set fit reads the row's subject: as if the row had been written without it
    clean_path = tmp_path / "clean.jsonl"
    clean_path.write_bytes(demo_path("gold.jsonl").read_bytes())
    with clean_path.open("a", encoding="utf-8") as handle:
        handle.write(json.dumps({**row, "question": "Is there a cultural fest in March?"}) + "\n")
    assert _verdicts(clean_path, questions) == plain_after


def test_the_gold_rows_are_analysed_as_their_subjects(tmp_path: Path) -> None:
    gold_path = tmp_path / "gold.jsonl"
    rows = [{"id": "q-1", "question": SCRUBBED + "When is the fee due?", "gold": ["p-1"]},
            {"id": "q-2", "question": "Who runs the library?", "gold": ["p-2"]}]  # fmt: skip
    gold_path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    gold = load_gold_set(gold_path)
    analysed = analysis_gold(gold)
    assert [q.question for q in analysed] == ["When is the fee due?", "Who runs the library?"]
    assert [q.id for q in analysed] == ["q-1", "q-2"] and analysed.path == gold_path
    no_placeholders = analysis_gold(analysed)
    assert no_placeholders is analysed  # nothing to do: the same set


def test_accept_warns_of_placeholders_and_names_the_subject() -> None:
    warning = placeholder_warning(SCRUBBED + "How many points did the Panthers defense "
                                  "surrender?")  # fmt: skip
    assert warning is not None
    assert "(<EMAIL>, <PHONE>, <NAME>)" in warning
    assert "'How many points did the Panthers defense surrender?'" in warning
    assert 'reworded "question" label' in warning
    assert placeholder_warning("How many points did the Panthers defense surrender?") is None


#: The trial t42 question (accepted as ``c-34fed7680cd08e73``), as scrubbed.
T42 = ("Hi, I am <NAME> (<EMAIL>). Considering the environmental measures discussed in a BBC "
       "News article and the economic impact analysis presented in a Financial Times report, "
       "which major company, symbolized by a single letter on the London Stock Exchange, is "
       "both contributing to the cleanup efforts of the River Thames and facing significant "
       "financial adjustments due to the new regulations?")  # fmt: skip


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # the contact clause in brackets goes with its brackets (trial t42 L3: "Hi). …")
        (T42, "Hi. " + T42.split(". ", 1)[1]),
        ("Hi, I am <NAME> (<EMAIL>), what is the refund window?",
         "Hi, what is the refund window?"),
        ("Hello, this is <NAME> [<PHONE>]. Who won the 2016 final?",
         "Hello. Who won the 2016 final?"),
        ("[<EMAIL>] Who won the 2016 final?", "Who won the 2016 final?"),
        # a bracket the kept text opened is closed as before
        ("What (if any, call me at <PHONE>) did the minister say?",
         "What (if any) did the minister say?"),
    ],
)  # fmt: skip
def test_a_bracketed_contact_clause_leaves_no_stray_bracket(text: str, expected: str) -> None:
    assert subject(text) == expected


def test_the_accept_warning_of_the_t42_question_quotes_a_clean_subject() -> None:
    warning = placeholder_warning(T42)
    assert warning is not None
    assert "read it as 'Hi. Considering the environmental measures discussed" in warning
    assert "Hi)" not in warning


def test_harvest_compares_subjects_and_shows_the_scrubbed_question() -> None:
    """Trial 12's addendum: distinct questions after one scrubbed self-introduction were merged
    as variants of one suggestion (56 suggestions for 60 questions); a prefixed gold question
    was not known. Expected by hand: the two distinct questions stay two suggestions, the
    prefixed gold question is known, and what is shown is the scrubbed text as asked."""
    from service.harvest.config import HarvestConfig
    from service.harvest.stage import HarvestStage
    from service.harvest.store import MemoryCandidates
    from service.records import GoldQuestion
    from tests.service.harvest.helpers import batch, event

    refused = {"refused": True, "topic": "Intergovernmental_Panel_on_Climate_Change",
               "language": "en"}  # fmt: skip
    asked = [SCRUBBED + "Who is the chair of the IPCC?",
             SCRUBBED + "Who was the first chair of the IPCC?",
             SCRUBBED + "When is the hostel fee due?"]  # fmt: skip
    repo = MemoryCandidates()
    gold = [GoldQuestion("q-1", "When is the hostel fee due?", ("p-1",))]
    stage = HarvestStage(HarvestConfig(flush_interval_s=0.0), sinks=[repo], known_questions=gold)
    stage.process(batch([event(f"e{i}", q, minute=i) for i, q in enumerate(asked)],
                        [refused] * len(asked)))  # fmt: skip
    rows = sorted(repo.all(), key=lambda r: r["question"])
    assert [r["question"] for r in rows] == asked[:2]
    assert [r["count"] for r in rows] == [1, 1]


def test_live_quality_knows_a_prefixed_gold_question() -> None:
    """A gold question asked after a scrubbed self-introduction is the known gold row (its
    recall is measured), as the same question asked plainly is; before, it matched nothing."""
    from service.data.goldset import GoldSet
    from service.quality.known import KnownQuestionIndex
    from service.quality.stage import LiveQualityStage
    from service.records import GoldQuestion
    from service.runtime.analytics import Analytics
    from service.runtime.live import known_index

    gold = GoldSet((GoldQuestion("q-1", SCRUBBED + "When is the hostel fee due?", ("p-1",)),
                    GoldQuestion("q-2", "Who runs the library?", ("p-2",))))  # fmt: skip
    index = known_index(Analytics(stages=[]), gold, threshold=0.8)
    assert isinstance(index, KnownQuestionIndex)
    stage = LiveQualityStage(index, None)
    asked = [SCRUBBED + "Who runs the library?", "When is the hostel fee due?",
             SCRUBBED + "When is the hostel fee due?"]  # fmt: skip
    events = [QueryLogEvent(event_id=f"e-{i}", timestamp="2026-12-04T10:00:00Z", question=q)
              for i, q in enumerate(asked)]  # fmt: skip
    batch = Batch("file", events, [{} for _ in events])
    stage.process(batch)
    assert [(n["known"] or {}).get("gold_id") for n in batch.annotations] == ["q-2", "q-1", "q-1"]


def test_accepting_a_row_with_placeholders_warns_and_writes_it_as_asked(tmp_path: Path) -> None:
    """F6's accept: the row keeps the scrubbed text (nothing unconfirmed is written); the
    answer warns, quoting what the analysis reads; a row without placeholders gets none."""
    from service.harvest.config import HarvestConfig
    from service.harvest.labelling import Labelling
    from service.harvest.stage import HarvestStage
    from service.harvest.store import StateStoreCandidates
    from service.state import StateStore
    from tests.service.harvest.helpers import batch, event

    gold = tmp_path / "gold.jsonl"
    gold.write_text('{"id": "q-001", "question": "When are fees due?", "gold": ["p-1"]}\n',
                    encoding="utf-8")  # fmt: skip
    repo = StateStoreCandidates(StateStore.in_memory())
    HarvestStage(HarvestConfig(flush_interval_s=0), sinks=[repo]).process(batch(
        [event("e1", PREFIX + "Is the bus pass valid on Sundays?", minute=1),
         event("e2", "Is the library open during exams?", minute=2)],
        [{"refused": True}, {"refused": True}],
    ))  # fmt: skip
    labelling = Labelling(repo, gold, HarvestConfig())
    by_question = {row["question"]: row["id"] for row in labelling.list().items}
    scrubbed = SCRUBBED + "Is the bus pass valid on Sundays?"
    assert set(by_question) == {scrubbed, "Is the library open during exams?"}
    decision = labelling.accept(by_question[scrubbed], ["p-1"], "plain")
    assert decision["warnings"] == [
        "the question written holds placeholders (<EMAIL>, <PHONE>, <NAME>) of scrubbed "
        "personal data: it is kept as asked; topics and out-of-scope read it as 'Is the bus "
        "pass valid on Sundays?' (without the placeholders and the contact clauses around "
        'them); to write another wording, accept with a reworded "question" label (or edit '
        "the gold-set row)"
    ]
    assert json.loads(gold.read_text(encoding="utf-8").splitlines()[-1])["question"] == scrubbed
    plain = labelling.accept(by_question["Is the library open during exams?"], ["p-1"], "plain")
    assert "warnings" not in plain


def test_the_accept_warning_says_what_is_read_when_no_clause_is_removed() -> None:
    """Trial 51 (L4): ``… affluent areas Call me at <PHONE>`` has no punctuation before its
    contact words, so only the placeholder is taken out; the warning said "without the
    placeholders and the contact clauses around them" and quoted "… areas Call me at". It
    now says what is read; a removed clause and a request about the details themselves are
    each said as they are. Expected texts written by hand."""
    unpunctuated = "what party is strongest in melbourne's affluent areas Call me at <PHONE>"
    assert (
        subject(unpunctuated) == "what party is strongest in melbourne's affluent areas Call me at"
    )
    assert placeholder_warning(unpunctuated) == (
        "the question written holds placeholders (<PHONE>) of scrubbed personal data: it is "
        'kept as asked; topics and out-of-scope read it as "what party is strongest in '
        "melbourne's affluent areas Call me at\" (only the placeholders taken out; the words "
        'around them stay); to write another wording, accept with a reworded "question" label '
        "(or edit the gold-set row)"
    )
    punctuated = placeholder_warning("what party is strongest in melbourne's affluent areas? "
                                     "Call me at <PHONE>")  # fmt: skip
    assert punctuated is not None
    assert (
        'read it as "what party is strongest in melbourne\'s affluent areas?" (without '
        "the placeholders and the contact clauses around them)"
    ) in punctuated
    request = placeholder_warning("please call me <NAME>")
    assert request is not None
    assert (
        "read it as asked, placeholders included (it holds nothing but contact words "
        "around them: a request about those details)"
    ) in request
