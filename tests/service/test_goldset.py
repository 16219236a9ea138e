"""Gold-set JSONL loading, validation errors, TREC gold sets, versioning and corpus checks."""

from __future__ import annotations

import json
import logging
import re
from pathlib import Path

import pytest

from service.data.corpus import Corpus
from service.data.goldset import (
    GoldSet,
    GoldSetError,
    load_gold_set,
    load_trec_gold_set,
    validate_against_corpus,
    write_gold_set,
)
from service.records import GoldQuestion, Passage

SECRET = "My Aadhaar is 1234 5678 9012, when is my fee due?"


def write_lines(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def row(**fields: object) -> str:
    return json.dumps(fields)


def load_error(tmp_path: Path, lines: list[str]) -> GoldSetError:
    path = write_lines(tmp_path / "gold.jsonl", lines)
    with pytest.raises(GoldSetError) as info:
        load_gold_set(path)
    return info.value


def test_loads_plain_rows_with_optional_fields(tmp_path: Path) -> None:
    path = write_lines(
        tmp_path / "gold.jsonl",
        [
            row(
                id="q-1",
                question="When is the fee due?",
                gold=["p-1", "p-2"],
                kind="multi-passage",
                answer_contains=["July"],
                reference_answer="In July.",
                source="real",
                doc_type="pdf",
                role="parent",
                language="en",
                topic="fees",
            ),
            "",
            row(id="q-2", question="Hostel rules?", gold=["p-3"]),
        ],
    )
    gold = load_gold_set(path)
    q1 = gold.by_id["q-1"]
    assert q1 == GoldQuestion(
        "q-1",
        "When is the fee due?",
        ("p-1", "p-2"),
        "multi-passage",
        {},
        ("July",),
        "In July.",
        "real",
        "pdf",
        "parent",
        "en",
        "fees",
    )
    assert gold.by_id["q-2"].kind == "plain"
    assert len(gold) == 2 and [q.id for q in gold] == ["q-1", "q-2"]
    assert gold.path == path
    assert gold.qrels() == {"q-1": {"p-1": 1, "p-2": 1}, "q-2": {"p-3": 1}}


def test_relevant_docs_shape_maps_to_gold_and_answer_contains(tmp_path: Path) -> None:
    path = write_lines(
        tmp_path / "gold.jsonl",
        [row(id="q-1", question="Q?", relevantDocs=["p-1"], answerContains=["a", "b"], extra=3)],
    )
    question = load_gold_set(path).by_id["q-1"]
    assert question.gold == ("p-1",)
    assert question.answer_contains == ("a", "b")
    assert question.kind == "plain"


def test_empty_gold_is_unanswerable_and_kept_out_of_qrels(tmp_path: Path) -> None:
    path = write_lines(
        tmp_path / "gold.jsonl",
        [
            row(id="q-1", question="Q?", gold=["p-1"]),
            row(id="q-2", question="Who won in 1990?", gold=[]),
            row(id="q-3", question="Staff salary?", gold=[], kind="role-restricted"),
        ],
    )
    gold = load_gold_set(path)
    assert gold.by_id["q-2"].kind == "unanswerable"
    assert gold.by_id["q-3"].kind == "role-restricted"
    assert [q.id for q in gold.unanswerable()] == ["q-2", "q-3"]
    assert [q.id for q in gold.answerable()] == ["q-1"]
    assert gold.qrels() == {"q-1": {"p-1": 1}}


def test_graded_gold_object_keeps_relevance(tmp_path: Path) -> None:
    path = write_lines(
        tmp_path / "g.jsonl", [row(id="q-1", question="Q?", gold={"p-1": 3, "p-2": 1})]
    )
    gold = load_gold_set(path)
    assert gold.by_id["q-1"].relevance == {"p-1": 3, "p-2": 1}
    assert gold.qrels() == {"q-1": {"p-1": 3, "p-2": 1}}


def test_bad_json_names_file_and_line(tmp_path: Path) -> None:
    err = load_error(tmp_path, [row(id="q-1", question="Q?", gold=[]), "", '{"id": "q-3", '])
    assert "gold.jsonl" in str(err) and "line 3" in str(err) and "invalid JSON" in str(err)
    assert len(err.problems) == 1
    assert isinstance(err, ValueError)


@pytest.mark.parametrize(
    ("fields", "field", "what"),
    [
        ({"id": "q-1", "gold": []}, "question", "is required"),
        ({"id": "q-1", "question": "  ", "gold": []}, "question", "must not be empty"),
        ({"id": 7, "question": "Q?", "gold": []}, "id", "valid string"),
        ({"id": "q-1", "question": "Q?"}, "gold", "is required"),
        ({"id": "q-1", "question": "Q?", "gold": "p-1"}, "gold", "must be a list"),
        ({"id": "q-1", "question": "Q?", "gold": ["p-1", 2]}, "gold", "item 1"),
        ({"id": "q-1", "question": "Q?", "gold": ["p-1", "p-1"]}, "gold", "repeats"),
        ({"id": "q-1", "question": "Q?", "gold": {"p-1": 0}}, "gold", "> 0"),
        ({"id": "q-1", "question": "Q?", "gold": [], "source": "scraped"}, "source", "unknown"),
        (
            {"id": "q-1", "question": "Q?", "gold": [], "answer_contains": "x"},
            "answer_contains",
            "",
        ),
        (
            {"id": "q-1", "question": "Q?", "gold": ["p-1"], "kind": "unanswerable"},
            "kind",
            "not empty",
        ),
        ({"id": "q-1", "question": "Q?", "gold": [], "language": 3}, "language", "valid string"),
    ],
)
def test_row_errors_name_line_and_field(
    tmp_path: Path, fields: dict[str, object], field: str, what: str
) -> None:
    err = load_error(tmp_path, [row(id="q-0", question="fine", gold=[]), json.dumps(fields)])
    assert len(err.problems) == 1, err.problems
    problem = err.problems[0]
    assert "gold.jsonl, line 2" in problem
    assert f"field '{field}'" in problem
    assert what in problem


def test_non_object_rows_are_errors(tmp_path: Path) -> None:
    err = load_error(tmp_path, ["[1, 2]", "null"])
    assert "line 1: expected a JSON object, got array" in err.problems[0]
    assert "line 2: expected a JSON object, got null" in err.problems[1]


def test_duplicate_ids_name_both_lines(tmp_path: Path) -> None:
    lines = [row(id="q-1", question="A?", gold=[]), row(id="q-2", question="B?", gold=[])]
    err = load_error(tmp_path, [*lines, row(id="q-1", question="C?", gold=["p-1"])])
    assert err.problems == (
        f"{tmp_path / 'gold.jsonl'}, line 3 (id 'q-1'), field 'id': duplicate id "
        "(first on line 1, again on line 3)",
    )


def test_all_errors_collected_and_capped_at_20(tmp_path: Path) -> None:
    err = load_error(tmp_path, ["{oops"] * 25)
    assert len(err.problems) == 25
    message = str(err)
    assert message.startswith(f"25 problem(s) in {tmp_path / 'gold.jsonl'}:")
    assert "line 20:" in message and "line 21:" not in message
    assert message.endswith("... and 5 more")


def test_errors_never_echo_question_text(tmp_path: Path) -> None:
    bad_rows = [
        row(id="q-1", question=SECRET, gold="p-1", kind=""),
        row(id="q-2", question=SECRET, gold=["p-1"], kind="unanswerable", source="x"),
        row(id="q-1", question=SECRET, gold=[]),
        json.dumps({"id": "q-4", "question": SECRET})[:-3],
        json.dumps({"id": ["q-5"], "question": [SECRET], "gold": {SECRET: "x"}}),
    ]
    err = load_error(tmp_path, bad_rows)
    assert len(err.problems) >= 5
    for fragment in ("Aadhaar", "1234", "fee due"):
        assert fragment not in str(err)


def test_empty_file_is_an_error(tmp_path: Path) -> None:
    err = load_error(tmp_path, ["", "   "])
    assert "contains no questions" in str(err)


def test_version_ignores_order_shape_and_whitespace(tmp_path: Path) -> None:
    a = write_lines(
        tmp_path / "a.jsonl",
        [row(id="q-1", question="Q?", gold=["p-1", "p-2"]), row(id="q-2", question="R?", gold=[])],
    )
    b = write_lines(
        tmp_path / "b.jsonl",
        [
            '{"id":"q-2","question":"R?","gold":[]}',
            '{"question": "Q?", "relevantDocs": ["p-2", "p-1"], "id": "q-1", "kind": "plain"}',
        ],
    )
    c = write_lines(tmp_path / "c.jsonl", [row(id="q-1", question="Q?", gold=["p-1"])])
    va, vb, vc = (load_gold_set(p).version for p in (a, b, c))
    assert va == vb != vc
    assert len(va) == 12 and int(va, 16) >= 0


def test_write_then_load_round_trips(tmp_path: Path) -> None:
    questions = (
        GoldQuestion(
            "q-1",
            "Fee dates?",
            ("p-1", "p-2"),
            "multi-passage",
            {"p-1": 2, "p-2": 1},
            ("July",),
            "July",
            "written",
            "pdf",
            "parent",
            "hi-Latn",
            "fees",
        ),
        GoldQuestion("q-2", "Who won?", (), "unanswerable", source="generated"),
        GoldQuestion("q-3", "Hostel?", ("p-3",)),
    )
    original = GoldSet(questions)
    write_gold_set(original, tmp_path / "out.jsonl")
    loaded = load_gold_set(tmp_path / "out.jsonl")
    assert loaded.questions == original.questions
    assert loaded.version == original.version
    first = json.loads((tmp_path / "out.jsonl").read_text(encoding="utf-8").splitlines()[0])
    assert first["gold"] == {"p-1": 2, "p-2": 1}


def test_goldset_rejects_duplicate_ids() -> None:
    with pytest.raises(ValueError, match="duplicate question id 'q-1'"):
        GoldSet((GoldQuestion("q-1", "A?", ()), GoldQuestion("q-1", "B?", ())))


def test_validate_against_corpus_warns_and_logs(caplog: pytest.LogCaptureFixture) -> None:
    gold = GoldSet(
        (
            GoldQuestion("q-1", "A?", ("p-1", "p-9", "p-10")),
            GoldQuestion("q-2", "B?", ("p-2",)),
            GoldQuestion("q-3", "C?", ()),
            GoldQuestion("q-4", "D?", ("p-11",)),
        )
    )
    corpus = Corpus((Passage("p-1", "one"), Passage("p-2", "two")))
    with caplog.at_level(logging.INFO, logger="service.data.goldset"):
        warnings = validate_against_corpus(gold, corpus)
    # an in-memory corpus has no path, so it is named by its version hash
    assert warnings == [
        f"question 'q-1': gold id(s) not in corpus {corpus.version}: 'p-9', 'p-10'",
        f"question 'q-4': gold id(s) not in corpus {corpus.version}: 'p-11'",
    ]
    # returned to the caller (the CLI prints them); logged at INFO so they are not shown twice
    assert [r.levelname for r in caplog.records] == ["INFO"]
    assert "2 gold question(s)" in caplog.text and "'p-11'" in caplog.text


def test_validate_against_corpus_silent_when_all_present(caplog: pytest.LogCaptureFixture) -> None:
    gold = GoldSet((GoldQuestion("q-1", "A?", ("p-1",)),))
    with caplog.at_level(logging.WARNING):
        assert validate_against_corpus(gold, Corpus((Passage("p-1", "x"),))) == []
    assert caplog.records == []


def test_trec_gold_set_from_qrels_and_topics(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    qrels = write_lines(
        tmp_path / "qrels",
        ["401 0 d1 2", "401 0 d2 0", "401 0 d3 1", "402 0 d1 0", "402 0 d4 -1"],
    )
    topics = write_lines(tmp_path / "topics.tsv", ["401\tfee dates", "402\thostel", "403\tbus"])
    with caplog.at_level(logging.WARNING, logger="service.data.goldset"):
        gold = load_trec_gold_set(qrels, topics)
    assert [q.id for q in gold] == ["401", "402", "403"]
    q401 = gold.by_id["401"]
    assert (q401.question, q401.gold, q401.kind) == ("fee dates", ("d1", "d3"), "plain")
    assert gold.qrels() == {"401": {"d1": 2, "d3": 1}}
    assert gold.by_id["402"].kind == "unanswerable" and gold.by_id["402"].gold == ()
    assert gold.by_id["403"].kind == "unanswerable"
    assert "1 topic(s) have no judgments" in caplog.text


def test_trec_gold_set_rejects_judged_topics_without_text(tmp_path: Path) -> None:
    qrels = write_lines(tmp_path / "qrels", ["401 0 d1 1", "499 0 d1 1"])
    topics = write_lines(tmp_path / "topics.tsv", ["401\tfee dates"])
    with pytest.raises(GoldSetError, match="topic '499' is judged but missing"):
        load_trec_gold_set(qrels, topics)


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ({"id": "q1", "question": "Fee?", "gold": ["p1"], "kind": "weird"},
         "field 'kind': must be one of plain, expert, multi-passage, unanswerable"),
        ({"id": "q1", "question": "Fee?", "gold": [], "kind": "plain"},
         "field 'gold': empty (unanswerable) but kind is 'plain'"),
    ],
)  # fmt: skip
def test_kind_is_checked(tmp_path: Path, row: dict[str, object], message: str) -> None:
    path = tmp_path / "gold.jsonl"
    path.write_text(json.dumps(row) + "\n")
    with pytest.raises(GoldSetError, match=re.escape(message)):
        load_gold_set(path)


def test_missing_kind_is_inferred_and_role_restricted_may_be_empty(tmp_path: Path) -> None:
    path = tmp_path / "gold.jsonl"
    rows = [{"id": "a", "question": "Fee?", "gold": ["p1"]},
            {"id": "b", "question": "Salary?", "gold": [], "kind": "role-restricted"},
            {"id": "c", "question": "Weather?", "gold": []}]  # fmt: skip
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert [q.kind for q in load_gold_set(path)] == ["plain", "role-restricted", "unanswerable"]


def test_gold_file_check_parses_only_when_the_file_changed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One answer for readiness and accepts: a stat per check, a parse per change; an append
    known to keep the file whole moves the answer without a parse."""
    import os

    import service.data.goldset as goldset

    path = tmp_path / "gold.jsonl"
    path.write_text('{"id": "q-1", "question": "Fees?", "gold": ["p-1"]}\n', encoding="utf-8")
    parses: list[Path] = []
    real = goldset.load_gold_set
    monkeypatch.setattr(goldset, "load_gold_set", lambda p: parses.append(p) or real(p))
    check = goldset.GoldFileCheck(path)
    assert check.problem() is None and check.problem() is None
    assert len(parses) == 1
    before = os.stat(path)
    with path.open("ab") as handle:
        handle.write(b'{"id": "q-2", "question": "Bus?", "gold": ["p-2"]}\n')
    check.appended(before, os.stat(path))
    assert check.problem() is None and len(parses) == 1
    with path.open("ab") as handle:  # a hand edit: parsed again, line 3 named
        handle.write(b'{"id": "q-3", "question": "zq-secret", "gold": 5}\n')
    problem = check.problem()
    assert problem is not None and f"{path}, line 3" in problem and "zq-secret" not in problem
    assert len(parses) == 2
    before = os.stat(path)
    with path.open("ab") as handle:
        handle.write(b'{"id": "q-4", "question": "Library?", "gold": ["p-4"]}\n')
    check.appended(before, os.stat(path))  # it did not load before: not taken as whole
    assert check.problem() is not None and len(parses) == 3


@pytest.mark.parametrize("language", ["Deutsch (Schweiz)", "de_CH", "en US", "d", "de-", "x" * 36])
def test_a_language_that_is_no_tag_names_file_line_and_field(tmp_path: Path, language: str) -> None:
    """Trial user6: ``"language": "Deutsch (Schweiz)"`` passed ``config check`` and became a
    gold language of its own, though the accept API refuses the same value. Loading the gold
    set refuses it as the API does (a BCP 47 tag: subtags of letters/digits joined by
    hyphens, the first 2–8 letters), naming file, line, id and field, not the value."""
    bad = row(id="q-1", question="Q?", gold=[], language=language)
    err = load_error(tmp_path, [row(id="q-0", question="fine", gold=[]), bad])
    assert err.problems == (
        f"{tmp_path / 'gold.jsonl'}, line 2 (id 'q-1'), field 'language': must be a BCP 47 "
        "language tag such as 'de', 'de-CH' or 'hi-Latn'",
    )


def test_language_tags_the_api_takes_load_in_their_key(tmp_path: Path) -> None:
    """What the accept API takes loads, folded to the key live traffic is labelled with."""
    tags = ["de-CH", "hi-latn", "EN", "zh-Hant-TW", "und"]
    path = write_lines(tmp_path / "gold.jsonl",
                       [row(id=f"q-{i}", question="Q?", gold=[], language=tag)
                        for i, tag in enumerate(tags)])  # fmt: skip
    assert [q.language for q in load_gold_set(path)] == ["de", "hi-Latn", "en", "zh-Hant", "und"]


@pytest.mark.parametrize("language", ["english", "gsw", "tlh"])
def test_a_tag_the_language_stage_never_labels_names_file_line_and_field(
    tmp_path: Path, language: str
) -> None:
    """Trial 12 F10: ``"language": "english"`` is a well-formed tag, so it loaded and
    became a gold language of its own (a ``language=english`` breakdown) that live traffic,
    labelled ``en``, never has; the accept API refuses such tags. So does the file now."""
    bad = row(id="q-1", question="Q?", gold=[], language=language)
    err = load_error(tmp_path, [row(id="q-0", question="fine", gold=[]), bad])
    assert err.problems == (
        f"{tmp_path / 'gold.jsonl'}, line 2 (id 'q-1'), field 'language': is not a language "
        "the language stage labels: use a langdetect code such as 'en', 'de' or 'es' (or "
        "'hi-Latn', 'und')",
    )


def test_the_remembered_answer_reads_no_file_and_a_deep_row_is_a_problem(tmp_path: Path) -> None:
    """A review of the gold-refresh gauge: the scrape re-read a changed file on the HTTP event
    loop (a 100,000-row file held /metrics and /healthz ~2 s) and a row nested 30,000 deep
    raised RecursionError (/metrics 500). The gauge reads :meth:`GoldFileCheck.last_problem`
    (no I/O), and a too-deep row is a problem named by line."""
    from service.data.goldset import GoldFileCheck

    path = tmp_path / "gold.jsonl"
    good = '{"id": "q-1", "question": "When is the fee due?", "gold": ["p-1"]}\n'
    path.write_text(good, encoding="utf-8")
    check = GoldFileCheck(path)
    assert check.last_problem() is None  # nothing checked yet
    assert check.problem() is None
    path.write_text(good + "[" * 30_000 + "]" * 30_000 + "\n", encoding="utf-8")
    assert check.last_problem() is None  # the file changed, but no check ran: no I/O here
    problem = check.problem()
    assert problem is not None and problem.endswith("line 2: invalid JSON (nested too deeply)")
    assert check.last_problem() == problem
