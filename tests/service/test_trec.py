"""TREC qrels / run / topics reading and writing."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from service.evaluation.trec import (
    TrecFormatError,
    read_qrels,
    read_run,
    read_topics,
    trec_order,
    write_qrels,
    write_run,
)
from service.records import ScoredDoc


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_read_qrels_keeps_graded_and_non_relevant(tmp_path: Path) -> None:
    path = write(tmp_path / "qrels", "301 0 d1 2\n\n# comment\n301\t0\td2   0\n302 0 d1 -1\n")
    assert read_qrels(path) == {"301": {"d1": 2, "d2": 0}, "302": {"d1": -1}}


@pytest.mark.parametrize(
    ("line", "what"),
    [
        ("301 0 d9", "expected 4 columns 'qid iter docno rel', got 3"),
        ("301 0 d9 1 extra", "expected 4 columns 'qid iter docno rel', got 5"),
        ("301 0 d9 yes", "rel (column 4) must be an integer"),
        ("301 0 d1 1", "duplicate judgment for 301 d1 (first on line 1)"),
    ],
)
def test_read_qrels_errors_name_file_and_line(tmp_path: Path, line: str, what: str) -> None:
    path = write(tmp_path / "qrels.txt", f"301 0 d1 1\n301 0 d2 0\n{line}\n")
    with pytest.raises(TrecFormatError) as info:
        read_qrels(path)
    assert info.value.problems == (f"{path}, line 3: {what}",)


def test_qrels_round_trip(tmp_path: Path) -> None:
    qrels = {"q2": {"b": 0, "a": 3}, "q1": {"z": 1, "c": -1}}
    write_qrels(qrels, tmp_path / "out.qrels")
    text = (tmp_path / "out.qrels").read_text(encoding="utf-8")
    assert text == "q1 0 c -1\nq1 0 z 1\nq2 0 a 3\nq2 0 b 0\n"
    assert read_qrels(tmp_path / "out.qrels") == qrels


def test_write_qrels_rejects_whitespace_ids(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="contains whitespace"):
        write_qrels({"q 1": {"a": 1}}, tmp_path / "x")


def test_read_run_keeps_repeated_docnos_for_the_metrics(tmp_path: Path) -> None:
    path = write(tmp_path / "run", "301 Q0 d1 1 3.0 t\n301 Q0 d1 2 1.0 t\n")
    assert read_run(path) == {"301": [ScoredDoc("d1", 3.0), ScoredDoc("d1", 1.0)]}


def test_read_run_tolerates_junk_after_sixth_column(tmp_path: Path) -> None:
    path = write(tmp_path / "run", "301 Q0 d1 1 2.5 tagA junk here\n301\tQ0\td2\t2\t 1.0\ttagA\n")
    assert read_run(path) == {"301": [ScoredDoc("d1", 2.5), ScoredDoc("d2", 1.0)]}


@pytest.mark.parametrize(
    ("line", "what"),
    [
        ("301 Q0 d9 1 2.0", "expected 6 columns 'qid Q0 docno rank score tag', got 5"),
        ("301 Q0 d9 x 2.0 t", "rank (column 4) must be an integer"),
        ("301 Q0 d9 1 high t", "score (column 5) a number"),
        ("301 Q0 d9 1 nan t", "score (column 5) must be finite"),
    ],
)
def test_read_run_errors_name_file_and_line(tmp_path: Path, line: str, what: str) -> None:
    path = write(tmp_path / "run.txt", f"301 Q0 d1 1 3.0 t\n\n{line}\n")
    with pytest.raises(TrecFormatError) as info:
        read_run(path)
    assert len(info.value.problems) == 1
    assert info.value.problems[0].startswith(f"{path}, line 3: ")
    assert what in info.value.problems[0]


def test_write_run_orders_by_score_then_doc_id_descending(tmp_path: Path) -> None:
    run = {
        "q2": [ScoredDoc("a", 1.0)],
        "q1": [
            ScoredDoc("d-b", 0.5),
            ScoredDoc("d-a", 2.0),
            ScoredDoc("d-c", 0.5),
            ScoredDoc("d-10", 0.5),
            ScoredDoc("d-z", -1.25),
        ],
    }
    write_run(run, tmp_path / "run", tag="bm25")
    # By hand: 2.0 first; the three 0.5 ties by doc id descending as strings: d-c > d-b > d-10.
    assert (tmp_path / "run").read_text(encoding="utf-8").splitlines() == [
        "q1 Q0 d-a 1 2.0 bm25",
        "q1 Q0 d-c 2 0.5 bm25",
        "q1 Q0 d-b 3 0.5 bm25",
        "q1 Q0 d-10 4 0.5 bm25",
        "q1 Q0 d-z 5 -1.25 bm25",
        "q2 Q0 a 1 1.0 bm25",
    ]


def test_write_run_validates_tag_and_scores(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="run tag"):
        write_run({}, tmp_path / "r", tag="my run")
    with pytest.raises(ValueError, match="not finite"):
        write_run({"q": [ScoredDoc("d", float("inf"))]}, tmp_path / "r", tag="t")


@given(
    st.dictionaries(
        st.text("abc123", min_size=1, max_size=4),
        st.dictionaries(
            st.text("xyz-9", min_size=1, max_size=5),
            st.floats(allow_nan=False, allow_infinity=False),
            max_size=6,
        ),
        max_size=4,
    )
)
def test_run_round_trip_keeps_scores_and_trec_order(scores: dict[str, dict[str, float]]) -> None:
    run = {qid: [ScoredDoc(d, s) for d, s in docs.items()] for qid, docs in scores.items()}
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "run"
        write_run(run, path, tag="t")
        back = read_run(path)
    expected = {qid: trec_order(docs) for qid, docs in run.items() if docs}
    assert back == expected


def test_read_topics_tsv(tmp_path: Path) -> None:
    path = write(tmp_path / "topics.tsv", "q1\tWhen are  fees due?\n\nq2\tHostel\trules\n")
    assert read_topics(path) == {"q1": "When are fees due?", "q2": "Hostel rules"}


SGML = """<top>

<num> Number: 301
<title> Topic: International Organized Crime

<desc> Description:
Identify organizations that participate in international
criminal activity.

<narr> Narrative:
A relevant document must as a minimum identify the organization.
</top>

<top>
<num> Number: 302 </num>
<title> Poliomyelitis and Post-Polio </title>
<desc> Is the disease of Poliomyelitis (polio) under control in the world?
</top>
"""


def test_read_topics_sgml(tmp_path: Path) -> None:
    path = write(tmp_path / "topics.301-302", SGML)
    assert read_topics(path) == {
        "301": "International Organized Crime",
        "302": "Poliomyelitis and Post-Polio",
    }
    assert read_topics(path, field="desc") == {
        "301": "Identify organizations that participate in international criminal activity.",
        "302": "Is the disease of Poliomyelitis (polio) under control in the world?",
    }


def test_read_topics_sgml_missing_field_names_block_line(tmp_path: Path) -> None:
    path = write(tmp_path / "topics", SGML)
    with pytest.raises(TrecFormatError) as info:
        read_topics(path, field="narr")
    assert info.value.problems == (f"{path}, line 14: topic block without <narr>",)


@pytest.mark.parametrize(
    ("text", "what"),
    [
        ("q1\tfine\nno tab here\n", "line 2: expected 'qid<TAB>text'"),
        ("q1\tfine\nq1\tagain\n", "line 2: duplicate topic q1 (first on line 1)"),
        ("q1\tfine\nq2\t  \n", "line 2: topic q2 has empty text"),
        ("<top><title> no number </top>", "line 1: topic block without <num>"),
        ("", "contains no topics"),
    ],
)
def test_read_topics_errors(tmp_path: Path, text: str, what: str) -> None:
    path = write(tmp_path / "topics", text)
    with pytest.raises(TrecFormatError) as info:
        read_topics(path)
    assert what in str(info.value)
    assert "fine" not in str(info.value) and "again" not in str(info.value)


def test_read_topics_rejects_unknown_field(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="field must be one of"):
        read_topics(write(tmp_path / "t", "q\tx\n"), field="body")
