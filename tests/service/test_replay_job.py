"""``service.jobs.replay``: the harvest summary of a replay (suggestions, shed events) in the
JSON, text and HTML reports, and a replay's default of no harvest load shedding.

The hand-made log has one distinct, clearly different question per event, each refused (so
each is picked by harvesting, with reason ``refused``) and none a gold question. With
``harvest.max_new_per_batch`` = 1 every batch keeps one new question and sheds the others,
so ``shed`` = events - batches and one suggestion is started per batch; without a bound
every question becomes a suggestion and nothing is shed.
"""

from __future__ import annotations

import copy
import html
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

import pytest

from service.demo import demo_data, demo_path
from service.html import render_replay_html
from service.jobs.replay import render_text, run_replay
from service.runtime.analytics import NOVELTY_OFF_NO_GOLD, SCOPE_OFF_NO_GOLD
from service.settings import load_settings

ENV = "GOLDWATCH_HARVEST__MAX_NEW_PER_BATCH"
#: Distinct questions sharing no wording (no near-duplicates of each other or of the demo
#: gold set), with characters HTML must escape.
QUESTIONS = (
    "Can I bring my <guitar> & amp to the concert hall?",
    'Who repairs the "broken" treadmill in gym block B?',
    "zebra crossing near gate 4 painted when",
    "parking sticker for electric scooter lost, what now",
    "quantum computing elective offered by physics dept?",
    "canteen serves jain food on fridays or not",
    "wifi password for seminar room 12",
    "lost umbrella found near auditorium, whom to give",
    "drone club meeting venue this month",
    "yoga mats available for borrowing at sports office?",
    "photocopier jammed in library basement again",
    "how to adopt the campus stray dog officially",
    "bicycle repair workshop timings saturday",
    "chess tournament registration closing date",
    "rooftop garden volunteers needed contact person",
    "solar panels on hostel roof who maintains",
    "blood donation camp certificate download link",
    "vending machine ate my coins near lab 3",
    "theatre society auditions monologue length",
    "astronomy night telescope booking procedure",
)
BATCH = 5


def _log(path: Path) -> Path:
    rows = [
        {"event_id": f"h-{i:03d}", "timestamp": f"2026-11-20T10:{i:02d}:00Z", "question": q,
         "answer": {"text": "Sorry, I cannot help with that.", "refused": True}}
        for i, q in enumerate(QUESTIONS)
    ]  # fmt: skip
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _replay(out: Path, log: Path, **harvest: Any) -> dict[str, Any]:
    overrides: dict[str, Any] = {"pipeline": {"max_batch_size": BATCH},
                                 "gold_set": demo_path("gold.jsonl"),
                                 "corpus": demo_path("corpus.jsonl")}  # fmt: skip
    if harvest:
        overrides["harvest"] = harvest
    settings = load_settings(None, **overrides)
    return run_replay(settings, log, None, out / "dlq.jsonl")


@pytest.fixture(scope="module")
def out(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    with pytest.MonkeyPatch.context() as patch:
        patch.delenv(ENV, raising=False)  # the defaults under test
        yield tmp_path_factory.mktemp("replay")


@pytest.fixture(scope="module")
def small(out: Path) -> dict[str, Any]:
    """The hand-made log replayed with the defaults (no bound for a replay)."""
    return _replay(out, _log(out / "small.jsonl"))


@pytest.fixture(scope="module")
def small_bounded(out: Path) -> dict[str, Any]:
    """The hand-made log replayed with ``harvest.max_new_per_batch`` = 1, set explicitly."""
    return _replay(out, _log(out / "small.jsonl"), max_new_per_batch=1)


def test_a_replay_sheds_nothing_by_default(small: dict[str, Any]) -> None:
    summary = small["gold_candidates"]
    assert small["processed"] == len(QUESTIONS)
    assert (summary["shed"], summary["max_new_per_batch"]) == (0, None)
    assert summary["n_suggestions"] == len(QUESTIONS)
    assert summary["by_reason"]["refused"] == len(QUESTIONS)


def test_an_explicit_bound_sheds_and_the_report_counts_it(
    small_bounded: dict[str, Any],
) -> None:
    summary, batches = small_bounded["gold_candidates"], small_bounded["batches"]
    assert len(QUESTIONS) / BATCH <= batches < len(QUESTIONS)  # each batch has new questions
    assert summary["max_new_per_batch"] == 1
    assert summary["shed"] == len(QUESTIONS) - batches
    assert summary["n_suggestions"] == batches


def test_text_report_says_what_was_shed_and_what_to_raise(
    small: dict[str, Any], small_bounded: dict[str, Any]
) -> None:
    text = render_text(small_bounded)
    shed = len(QUESTIONS) - small_bounded["batches"]
    batches = small_bounded["batches"]
    # every question is refused; off-topic ones are also novel (the order is by count)
    assert re.search(rf"harvested gold-question suggestions: {batches} \(.*refused {batches}", text)
    assert f"  shed: {shed} picked events whose new question was over " in text
    assert "harvest.max_new_per_batch (1 new questions per batch)" in text
    assert "GOLDWATCH_HARVEST__MAX_NEW_PER_BATCH" in text
    assert "  shed: 0 (no bound on new questions per batch in this run" in render_text(small)


def test_html_lists_the_replayed_suggestions_escaped(small: dict[str, Any]) -> None:
    page = render_replay_html(small)
    assert "No suggestion yet." not in page
    for question in QUESTIONS:
        assert f'<td class="text">{html.escape(question)}</td>' in page, question
    assert "<guitar>" not in page
    meta = rf'<p class="meta">{len(QUESTIONS)} suggestions \(by reason: [^)]*refused 20'
    assert re.search(meta, page)
    assert "Shed: 0 (no bound on new questions per batch in this run" in page


def test_html_shows_the_shed_count(small_bounded: dict[str, Any]) -> None:
    page = render_replay_html(small_bounded)
    shed = len(QUESTIONS) - small_bounded["batches"]
    assert f"Shed: {shed} picked events whose new question was over" in page


@pytest.fixture(scope="module")
def demo(out: Path, demo_replay: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The demo log replayed with the demo configuration: by default (the session's
    ``demo_replay``, tests/conftest.py), and with harvest load shedding turned off explicitly
    (``max_new_per_batch: null``)."""
    log = demo_path("querylog.jsonl")
    data = {"gold_set": demo_path("gold.jsonl"), "corpus": demo_path("corpus.jsonl")}
    unbounded = load_settings(demo_path("goldwatch.yaml"), harvest={"max_new_per_batch": None},
                              **data)  # fmt: skip
    return demo_replay, run_replay(unbounded, log, None, out / "demo-unbounded.dlq.jsonl")


@pytest.mark.slow  # a second replay of the whole demo log (the first is the session's)
def test_demo_replay_keeps_as_many_suggestions_as_with_shedding_off(
    demo: tuple[dict[str, Any], dict[str, Any]],
) -> None:
    default, unbounded = demo[0]["gold_candidates"], demo[1]["gold_candidates"]
    assert default["shed"] == unbounded["shed"] == 0
    assert default["n_suggestions"] == unbounded["n_suggestions"]
    assert default["by_reason"] == unbounded["by_reason"]
    assert [r["id"] for r in default["top"]] == [r["id"] for r in unbounded["top"]]


def test_demo_replay_html_lists_its_top_suggestions(demo_replay: dict[str, Any]) -> None:
    report = demo_replay
    page = render_replay_html(report)
    top = report["gold_candidates"]["top"]
    assert len(top) == 20
    assert "No suggestion yet." not in page
    for row in top:
        assert f'<td class="text">{html.escape(row["question"])}</td>' in page
        assert f'<td class="nowrap">{row["id"]}</td>' in page  # the whole id, unwrapped


def test_without_a_gold_set_every_output_says_so_first(out: Path) -> None:
    """Issue 18 item 1: no stand-in gold set; what needs none still runs, and the JSON, text
    and HTML reports open with the notice naming the setting that turns comparisons on."""
    settings = load_settings(None, pipeline={"max_batch_size": BATCH})
    assert settings.gold_set is None
    doc = run_replay(settings, _log(out / "nogold.jsonl"), None, out / "nogold.dlq.jsonl")
    assert list(doc)[0] == "notices" and len(doc["notices"]) == 1
    notice = doc["notices"][0]
    assert "gold-set comparisons are off" in notice
    assert "gold_set:" in notice and "GOLDWATCH_GOLD_SET" in notice
    # what needs no gold set ran on all 20 events: languages and the 20 planted refusals
    analytics = doc["analytics"]
    assert sum(analytics["languages"].values()) == len(QUESTIONS)
    by_language = analytics["refusals"].pop("by_language")
    # every answer sets answer.refused and has a text: the patterns, measured against the
    # flag, read all 20 as the refusals they are (trial 23's per-language check)
    against = analytics["refusals"].pop("against_flag")
    assert (
        analytics["refusals"]
        .pop("against_flag_text")
        .startswith("the phrase patterns against answer.refused")
    )
    assert sum(row["checked"] for row in against) == 20
    assert all(row["both"] == row["flagged"] == row["detected"] == row["checked"]
               for row in against)  # fmt: skip
    assert analytics["refusals"] == {
        "answers": 20,
        "refused": 20,
        "rate": 1.0,
        "by_flag": 20,
        "by_patterns": 0,
        "refused_by_flag": 20,
        "refused_by_patterns": 0,
        "method": "answer.refused decided all 20 answers (20 refused)",
        "by_language_answers": 20,  # no known_over_refusal: no gold set, no known question
    }
    assert sum(row["n"] for row in by_language) == 20
    assert all(row["x"] == row["n"] for row in by_language)
    # nothing was measured against a gold set or topics fitted on one
    assert analytics["topics"] == {"und": len(QUESTIONS)}
    assert analytics["drift"]["language"]["gold_counts"] == {}
    assert "quality" not in doc and "gold_candidates" not in doc
    text = render_text(doc)
    assert text.splitlines()[0] == f"NOTE: {notice}"
    assert "topics: off" in text and "drift now (baseline comparisons):" in text
    # no topic model: the topic drift is off too, not short of data (trial 9), and is not
    # listed among the dimensions not tested
    drift_line = next(line for line in text.splitlines() if line.startswith("drift now"))
    assert "topic off" in drift_line and "topic insufficient_data" not in drift_line
    assert "known_refusal off" in drift_line  # no gold set: no known question to refuse
    assert not any(" topic vs " in line or "topic vs " in line.split(",")[-1]
                   for line in text.splitlines() if "not tested" in line)  # fmt: skip
    page = render_replay_html(doc)
    first_p = page.index("<p")
    assert page[first_p:].startswith('<p class="notice">')
    assert html.escape(notice, quote=False) in page


def test_without_a_gold_set_topics_on_the_corpus_have_no_novelty_and_no_gold_columns(
    out: Path,
) -> None:
    """Topics fitted on the corpus's passages (no gold set): questions are not passages, so
    no question is ``novel`` and no novelty quality is claimed (it would be measured on the
    passages and called "gold questions"); the reports say so, and the HTML shows no gold
    columns, gold-share lines or gold-set sentences."""
    settings = load_settings(None, pipeline={"max_batch_size": BATCH},
                             corpus=demo_path("corpus.jsonl"))  # fmt: skip
    assert settings.gold_set is None
    doc = run_replay(settings, _log(out / "corpus-only.jsonl"), None, out / "co.dlq.jsonl")
    analytics = doc["analytics"]
    assert sum(analytics["topics"].values()) == len(QUESTIONS)
    assert "novel" not in analytics["topics"] and "und" not in analytics["topics"]
    assert "novelty" not in analytics["detector_quality"]
    assert analytics["novelty"] == {"novel": 0, "share": 0.0, "quality": None,
                                    "uncalibrated": None, "off": NOVELTY_OFF_NO_GOLD}  # fmt: skip
    assert analytics["drift"]["suppressed_dimensions"] == {}
    topics = next(x for x in render_text(doc).splitlines() if x.startswith("topics:"))
    assert topics.endswith(f"; {NOVELTY_OFF_NO_GOLD}") and "novel " not in topics
    # out-of-scope has no detector without a gold set: "off" with why, not zeros
    assert analytics["out_of_scope"]["off"] == SCOPE_OFF_NO_GOLD
    assert f"out of scope: off: {SCOPE_OFF_NO_GOLD}" in render_text(doc).splitlines()
    assert "out_of_scope off" in render_text(doc)
    page = render_replay_html(doc)
    for gold_only in ("gold n", "gold share", "live − gold", "dashed: the gold set",
                      "against the gold set", "measured on the gold set"):  # fmt: skip
        assert gold_only not in page, gold_only
    assert "<th>live share</th>" in page
    assert html.escape(f"No question is called novel: {NOVELTY_OFF_NO_GOLD}.") in page


def test_a_calibrated_novel_share_shows_its_quality_and_is_never_cut_from_the_topics_line(
    demo_replay: dict[str, Any],
) -> None:
    """A new user saw a trusted novelty detector's ROC AUC only in the JSON, and ``novel``
    (5.4 %) cut from a text line that listed 6 topics. Here the demo's report with its novelty
    made calibrated (quality above the floor) and ``novel`` ranked 8th of 9 topics."""
    doc = copy.deepcopy(demo_replay)
    analytics = doc["analytics"]
    quality = {**analytics["novelty"]["quality"], "auc": 0.861, "auc_low": 0.789,
               "auc_high": 0.921, "trusted": True, "uncalibrated": None}  # fmt: skip
    analytics["novelty"] = {**analytics["novelty"], "quality": quality, "uncalibrated": None}
    # calibrated, the topics are no longer the nearest gold topics (test_novelty_gate)
    analytics["drift"]["topic"].pop("categories_are")
    analytics["topics"] = {**{f"t{i}": 100 - i for i in range(7)}, "novel": 20, "t7": 10}
    topics = next(x for x in render_text(doc).splitlines() if x.startswith("topics:"))
    # shares are of the questions given a topic (the topics' sum: 100 + 99 + ... + 94 = 679,
    # + 20 + 10 = 709; a question in a language without gold rows is given none): 20 / 709 -> 3 %
    # the demo gold set's 61 rows and 13 topic labels; at its threshold 15 of the 61 held out
    # read novel (the golden's tpr 0.24590 = 15 / 61), 3 of 61 with every topic kept (0.04918),
    # balanced accuracy (15 / 61 + 1 - 3 / 61) / 2 = 73 / 122 = 0.598
    assert (
        "; novel 3% (novelty detector ROC AUC 0.861 [0.789, 0.921] on 61 gold questions, "
        "each of 13 topics held out in turn; at its threshold gold questions read novel with "
        "their topic held out 15 of 61 (TPR 0.246); read novel with every topic kept 3 of 61 "
        "(FPR 0.049); balanced accuracy 0.598); "
    ) in topics
    assert "t6" not in topics and topics.endswith("; 2 more in the JSON report")  # t6, t7
    page = render_replay_html(doc)
    assert "The novel share comes from a detector of ROC AUC 0.861 [0.789, 0.921]" in page


def test_an_empty_log_says_no_events_not_no_model(tmp_path: Path) -> None:
    """An empty log with the demo gold set and corpus (13 topic labels: ``jq -r .topic
    service/demo/gold.jsonl | sort -u | wc -l``): the text said "topics: off (no topic model:
    set gold_set: ...)" with both set, "languages: " with nothing after, and
    "harvested gold-question suggestions: 0 ()"."""
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"")
    settings = load_settings(gold_set=demo_path("gold.jsonl"), corpus=demo_path("corpus.jsonl"))
    text = render_text(run_replay(settings, empty, None, tmp_path / "dlq.jsonl"))
    lines = text.splitlines()
    assert "languages: none (no events processed)" in lines
    assert "topics: none (no events processed; 13 topics in the model)" in lines
    assert "harvested gold-question suggestions: 0" in lines
    assert "no topic model" not in text
    without = render_text(run_replay(load_settings(), empty, None, tmp_path / "dlq.jsonl"))
    assert (
        "topics: off (no topic model: set gold_set:, corpus: or analytics.topics_model to "
        "have one)" in without.splitlines()
    )


def test_gold_ids_missing_from_the_corpus_are_a_notice(tmp_path: Path) -> None:
    """``goldwatch eval`` warned that gold passages were missing from the corpus; replay and
    serve said nothing. Two demo questions made to cite ids the demo corpus lacks: 2 ids of
    2 questions, named in the report's notices."""
    rows = [json.loads(line) for line in demo_path("gold.jsonl").read_text("utf-8").splitlines()]
    rows[0]["gold"] = ["p-missing-1"]
    rows[1]["gold"] = ["p-missing-2", *rows[1]["gold"]]
    gold = tmp_path / "gold.jsonl"
    gold.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"")
    settings = load_settings(gold_set=gold, corpus=demo_path("corpus.jsonl"))
    notices = run_replay(settings, empty, None, tmp_path / "dlq.jsonl")["notices"]
    missing = [n for n in notices if "not in corpus" in n]
    assert len(missing) == 1
    assert missing[0].startswith("2 gold id(s) of 2 question(s) are not in corpus ")
    assert "'p-missing-1', 'p-missing-2'" in missing[0]
    clean = load_settings(gold_set=demo_path("gold.jsonl"), corpus=demo_path("corpus.jsonl"))
    assert not [n for n in run_replay(clean, empty, None, tmp_path / "d2.jsonl")["notices"]
                if "not in corpus" in n]  # fmt: skip


def test_a_question_asked_by_two_gold_rows_is_a_notice(tmp_path: Path) -> None:
    """Trial 13: a gold set holding one question twice with different gold passages loaded
    without a word. The demo gold set with its first row's question copied (re-cased, extra
    spaces) into a new row citing another row's passage, and that row copied for role
    ``staff`` (the ACL's own case: not a repeat): one repeated question, named by its ids."""
    rows = [json.loads(line) for line in demo_path("gold.jsonl").read_text("utf-8").splitlines()]
    first = rows[0]
    second = next(r for r in rows if r["gold"] and r["gold"] != first["gold"])
    assert first["gold"]
    twin = {**first, "id": "twin-1", "question": "  " + first["question"].upper() + " ",
            "gold": second["gold"]}  # fmt: skip
    staff = {**second, "id": "staff-1", "role": "staff"}
    assert second.get("role") != "staff"
    gold = tmp_path / "gold.jsonl"
    gold.write_text("".join(json.dumps(r) + "\n" for r in [*rows, twin, staff]), "utf-8")
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"")
    settings = load_settings(gold_set=gold, corpus=demo_path("corpus.jsonl"))
    notices = run_replay(settings, empty, None, tmp_path / "dlq.jsonl")["notices"]
    repeated = [n for n in notices if "more than one gold-set row" in n]
    assert repeated == [
        f"1 question appears in more than one gold-set row (rows {first['id']!r}, 'twin-1'), "
        "1 of them with different gold passages: each row is scored on its own, so a "
        "retriever cannot meet both; merge such rows into one with all their gold passages"
    ]
    clean = load_settings(gold_set=demo_path("gold.jsonl"), corpus=demo_path("corpus.jsonl"))
    assert not [n for n in run_replay(clean, empty, None, tmp_path / "d2.jsonl")["notices"]
                if "more than one gold-set row" in n]  # fmt: skip


def _exported(settings: Any, log: Path, workdir: Path) -> tuple[list[str], list[Any]]:
    """The ids of every record the state's suggestion store holds, and the export."""
    from service.harvest.export import export_rows
    from service.harvest.store import StateStoreCandidates
    from service.state import StateStore

    state = workdir / "state.sqlite"
    run_replay(settings, log, state, workdir / "dlq.jsonl")
    with StateStore.open(state) as store:
        repository = StateStoreCandidates(store)
        ids = sorted(row["id"] for row in repository.all())
        return ids, export_rows(repository, settings.harvest, None)


def test_exported_suggestions_do_not_depend_on_when_checkpoints_fall(tmp_path: Path) -> None:
    """A sink keeps the records of suggestions evicted later (``harvest.max_suggestions``),
    so what it holds depended on when flushes and checkpoints ran: by the wall clock, two
    replays of the same 20,000 production-shaped lines exported 6,884 and 6,641
    suggestions. Here the demo log in batches of 100 with at most 10 suggestions held:
    checkpointing after every batch (``commit_interval_s: 0``, as a slow machine's clock
    would) must leave exactly the records and export the default cadence does (fails on the
    code before: each checkpoint wrote the held suggestions' records, and those evicted
    after it stayed: 24 records against 20; now 18 both ways)."""
    base = load_settings(demo_path("goldwatch.yaml")).model_copy(update=demo_data())
    small = base.harvest.model_copy(update={"max_suggestions": 10})
    runs = []
    for i, interval in enumerate((5.0, 0.0)):
        pipeline = base.pipeline.model_copy(
            update={"commit_interval_s": interval, "max_batch_size": 100}
        )
        settings = base.model_copy(update={"harvest": small, "pipeline": pipeline})
        (tmp_path / str(i)).mkdir()
        runs.append(_exported(settings, demo_path("querylog.jsonl"), tmp_path / str(i)))
    assert runs[0] == runs[1]
    assert len(runs[0][0]) >= 10  # the 10 held, and any published before their eviction


def test_optional_fields_dropped_are_in_the_json_and_text_reports(tmp_path: Path) -> None:
    """Trial user 3: ``"feedback": {"rating": "bad"}`` and ``"results": "mh-0001"`` (not a
    list) in ``retrieval`` were dropped and counted in ``goldwatch_event_fields_dropped_total``
    by ``serve``, but the replay report said ``"dropped": {}``. Three events: one with both
    fields mistyped, one with only the rating mistyped, one clean; all three processed, so
    ``feedback.rating`` twice and ``retrieval.results`` once, both ``wrong_type``."""
    rows = [
        {"event_id": "d-1", "timestamp": "2026-11-20T10:00:00Z", "question": "hostel fee?",
         "feedback": {"rating": "bad"}, "retrieval": {"results": "mh-0001"}},
        {"event_id": "d-2", "timestamp": "2026-11-20T10:01:00Z", "question": "library hours?",
         "feedback": {"rating": "terrible"}},
        {"event_id": "d-3", "timestamp": "2026-11-20T10:02:00Z", "question": "bus timings?",
         "feedback": {"rating": -1}},
    ]  # fmt: skip
    log = tmp_path / "log.jsonl"
    log.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    settings = load_settings(gold_set=demo_path("gold.jsonl"), corpus=demo_path("corpus.jsonl"))
    doc = run_replay(settings, log, None, tmp_path / "dlq.jsonl")
    assert doc["processed"] == 3 and doc["dead_lettered_total"] == 0
    assert doc["dropped"] == {"feedback.rating: wrong_type": 2,
                              "retrieval.results: wrong_type": 1}  # fmt: skip
    assert ("dropped (the events kept): feedback.rating: wrong_type 2, "
            "retrieval.results: wrong_type 1") in render_text(doc).splitlines()  # fmt: skip


def test_the_refusal_rate_says_how_it_is_determined(small: dict[str, Any]) -> None:
    """Trial user 3: the refusal rate was printed as a fact while the other detectors show
    their measured quality. The hand-made log's 20 answers all carry ``refused: true``: 20 of
    20, all decided by the flag (trial user 4: the line spoke of phrase patterns that had
    decided none), and no caveat about patterns that decided nothing."""
    assert ("refusals: 20/20 (100.0%; answer.refused decided all 20 answers (20 refused))"
            in render_text(small).splitlines())  # fmt: skip
    assert (small["analytics"]["refusals"]["by_flag"],
            small["analytics"]["refusals"]["by_patterns"]) == (20, 0)  # fmt: skip
    assert (
        "Refused answers: answer.refused decided all 20 answers (20 refused)."
        in render_replay_html(small)
    )


def test_the_refusal_line_counts_flag_and_pattern_decisions_and_stays_without_answers(
    tmp_path: Path,
) -> None:
    """Six events: 3 set ``answer.refused`` (2 true, 1 false), 2 only have text (one a
    refusal phrase, "I'm sorry, I couldn't find that.", one an answer), 1 has no answer.
    Answers 5, refused 3 (2 flagged + 1 by phrase), by flag 3 (2 refused), by patterns 2 (1
    refused: trial user6 could not reconcile its refused count). A log without
    answers keeps the line and says so (it vanished silently)."""
    answers: list[dict[str, Any] | None] = [
        {"text": "No.", "refused": True}, {"text": "Sorry.", "refused": True},
        {"text": "It is 5 pm.", "refused": False}, {"text": "I'm sorry, I couldn't find that."},
        {"text": "The library opens at 9 am."}, None,
    ]  # fmt: skip
    rows = [{"event_id": f"r-{i}", "timestamp": f"2026-11-20T10:{i:02d}:00Z",
             "question": QUESTIONS[i], **({"answer": a} if a else {})}
            for i, a in enumerate(answers)]  # fmt: skip
    log = tmp_path / "log.jsonl"
    log.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    doc = run_replay(load_settings(), log, None, tmp_path / "dlq.jsonl")
    refusals = doc["analytics"]["refusals"]
    assert (refusals["answers"], refusals["refused"]) == (5, 3)
    assert (refusals["by_flag"], refusals["by_patterns"]) == (3, 2)
    assert (refusals["refused_by_flag"], refusals["refused_by_patterns"]) == (2, 1)
    # (session 40: the three flagged answers with a text measure the patterns against the
    # flag, too few flagged refusals for a recall: said so, not "not measured on this traffic")
    assert (
        "refusals: 3/5 (60.0%; answer.refused decided 3 answers (2 refused), phrase patterns 2 "
        "(1 refused) (phrase patterns measured against answer.refused on this traffic "
        "(against_flag): too few flagged refusals to measure recall in en; not measured in "
        "any other language; precision 0.99, recall 1.00 on NoMIRACL's "
        "LLM replies to English and Hindi questions (the replies mostly English), against "
        "NoMIRACL's own reading of each reply: \"I don't know\" is a refusal, and a reply "
        'that also says "Yes, answer is present" is an answer or, with the other replies '
        "it reads as neither (1,809 of 11,000), left out; a reply "
        'with no answer in it (empty, "Unable to generate response.", an '
        'error message such as "Internal server error") counts as a refusal; set '
        "answer.refused for exact counts))"
    ) in render_text(doc).splitlines()
    empty = tmp_path / "no-answers.jsonl"
    empty.write_text("".join(json.dumps({k: v for k, v in r.items() if k != "answer"}) + "\n"
                             for r in rows), encoding="utf-8")  # fmt: skip
    none = run_replay(load_settings(), empty, None, tmp_path / "dlq2.jsonl")
    assert "refusals: none (no answers in this log)" in render_text(none).splitlines()
    assert "Refused answers: no answers in this log." in render_replay_html(none)


#: Replies a help desk labelled (True: a refusal) to fit a :class:`RefusalModel` on.
MODEL_REPLIES = (
    ("Please contact the registrar's office about that.", True),
    ("Please ask the front desk, I cannot say.", True),
    ("That is for the warden to answer, please contact them.", True),
    ("The concert hall allows instruments after 6 pm.", False),
    ("Gym block B's treadmills are repaired by the sports office.", False),
    ("The library opens at 9 am.", False),
)


@pytest.mark.parametrize("combine", ["model", "any"])
def test_the_refusal_line_names_a_refusal_model_that_read_the_texts(
    tmp_path: Path, combine: Literal["model", "any"]
) -> None:
    """Session 39: with a :class:`RefusalModel` in the refusal stage the method sentence
    still said "phrase patterns" (and quoted their NoMIRACL figures) for answers the model
    had read. The same six events as above through a live pipeline whose detector has a
    model: the report's sentence names the model (alone, or with the patterns) and the
    languages it is measured in against ``answer.refused`` (the three flagged answers with a
    text), and the replay text and HTML print it; without a model the patterns' sentence,
    as before. The model's own verdicts are not asserted, only that the counts reconcile."""
    from prometheus_client import CollectorRegistry

    from service.events import QueryLogEvent
    from service.refusals.detector import RefusalDetector, RefusalModel, refusal_rate_method
    from service.refusals.stage import RefusalStage
    from service.runtime.live import build_live
    from service.runtime.reports import analytics_report

    answers: list[dict[str, Any] | None] = [
        {"text": "No.", "refused": True}, {"text": "Sorry.", "refused": True},
        {"text": "It is 5 pm.", "refused": False}, {"text": "Please contact the office."},
        {"text": "The library opens at 9 am."}, None,
    ]  # fmt: skip
    rows = [{"event_id": f"m-{i}", "timestamp": f"2026-11-20T10:{i:02d}:00Z",
             "question": QUESTIONS[i], **({"answer": a} if a else {})}
            for i, a in enumerate(answers)]  # fmt: skip
    log = tmp_path / "log.jsonl"
    log.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    doc = run_replay(load_settings(), log, None, tmp_path / "dlq.jsonl")
    assert "phrase patterns 2" in doc["analytics"]["refusals"]["method"]  # no model
    texts, labels = zip(*MODEL_REPLIES, strict=True)
    model = RefusalModel.fit(list(texts), list(labels))
    live = build_live(load_settings(), CollectorRegistry())
    try:
        stage = next(st for st in live.analytics.stages if isinstance(st, RefusalStage))
        stage.detector = RefusalDetector(model=model, combine=combine)
        live.pipeline.process([QueryLogEvent.model_validate(r) for r in rows], "file")
        report = analytics_report(live)
    finally:
        live.close()
    assert report is not None
    refusals = report["refusals"]
    assert (refusals["by_flag"], refusals["by_patterns"], refusals["refused_by_flag"]) == (3, 2, 2)
    languages = [row["language"] for row in refusals["against_flag"]]
    assert languages and sum(row["checked"] for row in refusals["against_flag"]) == 3
    reader = "model" if combine == "model" else "model or patterns"
    method = refusal_rate_method(3, 2, 5, (2, refusals["refused_by_patterns"]),
                                 refusals["refused"], reader, languages)  # fmt: skip
    assert refusals["method"] == method
    name = "the refusal model" if combine == "model" else "the refusal model or phrase patterns"
    assert method.startswith(f"answer.refused decided 3 answers (2 refused), {name} 2 (")
    assert f"on this traffic in {', '.join(languages)} only" in method
    assert ("NoMIRACL" in method) is (combine == "any")  # the patterns' figures: theirs only
    assert refusals["against_flag_text"] is not None
    assert refusals["against_flag_text"].startswith(f"{name} against answer.refused")
    doc["analytics"]["refusals"] = refusals
    rate = f"{refusals['refused'] / 5:.1%}"
    assert (f"refusals: {refusals['refused']}/5 ({rate}; {method})"
            in render_text(doc).splitlines())  # fmt: skip
    assert f"Refused answers: {html.escape(method)}." in render_replay_html(doc)


def test_the_language_line_adds_the_languages_not_shown_as_other(small: dict[str, Any]) -> None:
    """Trial user 4: the line showed six languages summing to 96 % and nothing else. Its
    counts (4,000 events): en 3208, hi-Latn 322, es 89, hi 78, zh 78, ru 77 shown; de 74 +
    ar 72 + bg 2 = 148 not shown: 148/4000 = 3.7 % → 4 %, named (trial 10: a lone ``zh`` read
    ``other 1%``, the name /metrics gives unlabelled languages). With six or fewer languages
    there is no rest; a rest of one language is named alone."""
    doc = copy.deepcopy(small)
    doc["analytics"]["languages"] = {"en": 3208, "hi-Latn": 322, "es": 89, "hi": 78, "zh": 78,
                                     "ru": 77, "de": 74, "ar": 72, "bg": 2}  # fmt: skip
    assert ("languages: en 80%, hi-Latn 8%, es 2%, hi 2%, zh 2%, ru 2%, 3 more 4% (de, ar, bg)"
            in render_text(doc).splitlines())  # fmt: skip
    doc["analytics"]["languages"] = {"en": 1394, "hi-Latn": 111, "ru": 89, "es": 71, "de": 65,
                                     "hi": 54, "zh": 19}  # fmt: skip  # 1803 events: zh 1.05 %
    assert ("languages: en 77%, hi-Latn 6%, ru 5%, es 4%, de 4%, hi 3%, zh 1%"
            in render_text(doc).splitlines())  # fmt: skip
    doc["analytics"]["languages"] = {"en": 3, "hi": 1}
    assert "languages: en 75%, hi 25%" in render_text(doc).splitlines()


def test_the_shadow_line_gives_every_agreement_mean_its_n() -> None:
    """Trial user6: Kendall's tau was left out of the text and shown bare in the HTML,
    though the JSON said it was over 132 of 2,712 results. The line gives each mean its n,
    "few" under the analytics' ``quality_min_class``: of 9 compared results 9 have overlap
    and RBO, 3 a Kendall's tau, none a citation recall."""
    from service.jobs.replay import _shadow_lines
    from tests.service.html import samples

    (line,) = _shadow_lines(samples.shadow(), 5)  # type: ignore[arg-type]
    assert line == (
        "shadow bm25-v2: 9 compared of 12 offered; overlap@k 0.800 (n 9), RBO 0.750 (n 9), "
        "Kendall's tau 0.500 (n 3, few), citation recall – (n 0, few); skipped: queue_full 2; "
        "errors: timeout 1"
    )


def test_the_text_report_lists_the_coverage_gaps(small: dict[str, Any]) -> None:
    """Trial 9: German 11.1 % and Spanish 10.1 % of the live questions, none of the 42 gold
    rows; the text report never named a coverage gap. It lists the drift view's, per
    dimension with gold counts ("none" when it has none), topics by their names, a
    category left out as uncalibrated as such."""
    doc = copy.deepcopy(small)
    drift = doc["analytics"]["drift"]
    drift["language"]["gold_counts"] = {"en": 42}
    drift["language"]["coverage_gaps"] = [
        {"category": "de", "live_share": 0.111, "gold_share": 0.0},
        {"category": "es", "live_share": 0.101, "gold_share": 0.0},
    ]
    drift["topic"]["gold_counts"] = {"topic-1": 20, "topic-2": 22}
    drift["topic"]["coverage_gaps"] = []
    drift["topic"].pop("coverage_gaps_left_out", None)
    rule = "live share ≥ 2 × gold share, its 95 % lower bound ≥ gold share + 2 points"
    expected = (f"  coverage gaps vs gold ({rule}): language de 11.1% live / 0.0% gold, "
                "es 10.1% live / 0.0% gold; topic none")  # fmt: skip
    lines = render_text(doc).splitlines()
    assert expected in lines
    # session 41: what the gaps count, unlike the document shares, is said under them
    assert lines[lines.index(expected) + 1] == (
        "    (questions judged out of scope count in the language and topic gaps (their "
        "language and topic are their own: gold rows there, unanswerable ones among them, "
        "measure the scope detector and the refusals on them) but in no document share (their "
        "document, production's first passage, does not cover them))"
    )
    doc["analytics"]["topic_labels"] = {"topic-1": "topic-1: warsaw"}
    drift["topic"]["coverage_gaps"] = [
        {"category": "topic-1", "live_share": 0.6, "gold_share": 0.25}
    ]
    drift["topic"]["coverage_gaps_left_out"] = {"novel": "uncalibrated: AUC 0.7"}
    del drift["language"]["gold_counts"]  # no gold counts: no comparison to state
    assert (
        f"  coverage gaps vs gold ({rule}): topic topic-1: warsaw 60.0% live / 25.0% gold, "
        "novel left out (its share is not a fact: above)"
    ) in render_text(doc).splitlines()


def test_a_fresh_replay_leaves_serves_dead_letters_alone(tmp_path: Path) -> None:
    """A tenth trial: serve's ``<file>.dlq.jsonl`` held its dead letters, and the next replay
    without ``--state`` emptied it (it started its own dead-letter file afresh at the same
    path). A fresh replay writes ``<file>.replay.dlq.jsonl``; with ``--state`` it appends to
    the state's own ``<state>.dlq.jsonl``, as serve does (trial 50, L2), and serve's file
    stays as it was."""
    log = tmp_path / "q.jsonl"
    good = '{"event_id": "e1", "timestamp": "2026-11-20T10:00:00Z", "question": "hostel fee?"}'
    log.write_text(good + "\nnot json\n", encoding="utf-8")
    serves = tmp_path / "q.jsonl.dlq.jsonl"
    serves.write_bytes(b'{"reason": "not_json", "from": "serve"}\n')
    settings = load_settings(None)
    for _ in range(2):  # the second run starts its own file afresh: one letter, not two
        doc = run_replay(settings, log, None, None)
        own = tmp_path / "q.jsonl.replay.dlq.jsonl"
        assert doc["dlq_path"] == str(own)
        assert [json.loads(x)["reason"] for x in own.read_text().splitlines()] == ["not_json"]
        assert serves.read_bytes() == b'{"reason": "not_json", "from": "serve"}\n'
    resumed = run_replay(settings, log, tmp_path / "state.sqlite", None)
    assert resumed["dlq_path"] == str(tmp_path / "state.sqlite.dlq.jsonl")
    assert [json.loads(x)["reason"] for x in Path(resumed["dlq_path"]).read_text().splitlines()
            ] == ["not_json"]  # fmt: skip
    assert serves.read_bytes() == b'{"reason": "not_json", "from": "serve"}\n'


def test_a_clean_replay_leaves_no_dead_letter_file_and_a_held_one_stops_the_next(
    tmp_path: Path,
) -> None:
    """The dead-letter lock (:class:`~service.jobs.replay.DeadLetterLock`): a replay with no
    bad line leaves no empty file it created; one whose file another replay holds stops
    before emptying it (the letters in it survive)."""
    from service.jobs.replay import DeadLetterLock

    settings = load_settings(None, pipeline={"max_batch_size": BATCH})
    log = _log(tmp_path / "clean.jsonl")
    dlq = tmp_path / "clean.dlq.jsonl"
    assert run_replay(settings, log, None, dlq)["processed"] == len(QUESTIONS)
    assert not dlq.exists()
    dlq.write_text('{"reason": "not_json"}\n', encoding="utf-8")
    held = DeadLetterLock(dlq)
    try:
        with pytest.raises(ValueError, match="another replay is writing the dead-letter file"):
            run_replay(settings, log, None, dlq)
    finally:
        held.release()
    assert dlq.read_text(encoding="utf-8") == '{"reason": "not_json"}\n'
    run_replay(settings, log, None, dlq)  # released: this one empties it, as documented
    assert dlq.read_text(encoding="utf-8") == ""


def test_the_out_of_scope_fit_says_which_gold_rows_hid_which(tmp_path: Path) -> None:
    """The review of s30-pscope2: the README says the quality line names the unit the fit
    grouped the gold rows by, but only the JSON held it. The demo's gold rows cite passages
    of 10 documents (its corpus's ``doc``): the text and the HTML report say so."""
    log = tmp_path / "log.jsonl"  # the demo log's first 200 events: some are scored
    lines = demo_path("querylog.jsonl").read_text("utf-8").splitlines(keepends=True)
    log.write_text("".join(lines[:200]), encoding="utf-8")
    settings = load_settings(gold_set=demo_path("gold.jsonl"), corpus=demo_path("corpus.jsonl"))
    report = run_replay(settings, log, None, tmp_path / "dlq.jsonl")
    fit = [line for line in render_text(report).splitlines()
           if line.startswith("  out-of-scope fit: ")]  # fmt: skip
    assert len(fit) == 1
    assert "gold similarities and folds by document: the answerable rows ask about 10" in fit[0]
    page = render_replay_html(report)
    assert "scope calibration: fit" in page
    assert "folds by document: the answerable rows ask about 10" in html.unescape(page)


def test_the_novel_caveat_names_novelty_when_the_topics_line_names_the_kappa_gate(
    demo_replay: dict[str, Any],
) -> None:
    """Two gates, two reasons: while novelty is uncalibrated the topics line says so once
    and ``novel`` points "above"; but when the topic assignment is uncalibrated too, the
    topics line gives the kappa's reason, so "above" named the wrong one and novelty's own
    reason was missing from the line. The demo's report (its novelty uncalibrated) with its
    topic model's kappa made to fail."""
    doc = copy.deepcopy(demo_replay)
    analytics = doc["analytics"]
    assert analytics["novelty"]["uncalibrated"] and analytics["drift"]["topic"]["categories_are"]
    analytics["topic_quality"] = {**analytics["topic_quality"], "uncalibrated": "kappa 0.1 < 0.4"}
    analytics["topics"] = {"t0": 50, "novel": 20}
    line = next(x for x in render_text(doc).splitlines() if x.startswith("topics ("))
    assert line.startswith("topics (UNCALIBRATED, the model's reading, not facts: kappa 0.1")
    assert "(UNCALIBRATED: above)" not in line
    # the detector labels nothing: a novel count is history (session 51), and novelty's own
    # reason is on the line
    # 20 / 70 = 0.286: 29%, the 20 of all 70 questions counted, not of those counted before
    assert ("novel 29% (20 of all 70 questions so far, counted before the novelty detector "
            "turned uncalibrated; none since)") in line  # fmt: skip
    assert f"; no question is labelled novel: {analytics['novelty']['uncalibrated']}" in line


def test_a_log_that_ends_a_few_events_after_a_pause_counts_them_as_before(tmp_path: Path) -> None:
    """100 questions a minute apart, a 1 h pause, 3 more (s41 review): the drift windows' gap
    rule holds the 3 (over 4 × 60 s and the 300 s lateness ahead) until 5 confirm the jump,
    and the log ends first. A replay's end releases them (no later event refuted them): 103
    accepted, none ahead, as before the rule."""
    rows = [{"event_id": f"p-{i:03d}", "timestamp": 1_795_000_000 + 60 * i + (3_600 if i >= 100
             else 0), "question": QUESTIONS[i % len(QUESTIONS)]} for i in range(103)]  # fmt: skip
    log = tmp_path / "pause.jsonl"
    log.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    report = run_replay(load_settings(), log, None, tmp_path / "dlq.jsonl")
    timing = report["analytics"]["drift"]["event_time"]
    assert (timing["late"], timing["future"], timing["ahead"]) == (0, 0, 0)
