"""``goldwatch eval`` details a CI user trips over (issue 18, item 5), through the CLI.

Expected values come from outside the code: trec_eval's own printed per-topic output
(``../shared/data/trec_eval-tests/out.test.aqc``: ``trec_eval -q -c`` on ``results.trunc``),
and, for qrels + topics with a built-in retriever, the same questions scored from the
equivalent gold-set JSONL.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from service.cli import main
from service.data.corpus import MAX_CORPUS_ROW_BYTES
from service.data.goldset import MAX_GOLD_ROW_BYTES
from service.demo import demo_path

#: trec_eval measure name -> goldwatch label, for the measures both print.
TREC_NAMES = {"map": "map", "recip_rank": "mrr", "P_5": "precision@5", "recall_10": "recall@10",
              "ndcg_cut_10": "ndcg@10", "success_10": "hit_rate@10", "ndcg": "ndcg"}  # fmt: skip


def invoke(args: list[str], tmp_path: Path) -> Result:
    extra = ["--misses", str(tmp_path / "m.jsonl"), "--history", str(tmp_path / "h.jsonl")]
    return CliRunner().invoke(main, ["eval", "--no-progress", *args, *extra])


def trec_eval_rows(path: Path) -> dict[str, dict[str, float]]:
    """``{qid or "all": {goldwatch label: value}}`` from a trec_eval ``-q`` output file."""
    rows: dict[str, dict[str, float]] = {}
    for line in path.read_text().splitlines():
        name, qid, value = line.split()
        if name in TREC_NAMES:
            rows.setdefault(qid, {})[TREC_NAMES[name]] = float(value)
    return rows


def test_trec_mean_is_trec_eval_c_over_every_judged_topic(
    tmp_path: Path, shared_data: Path
) -> None:
    fixtures = shared_data / "trec_eval-tests"
    expected = trec_eval_rows(fixtures / "out.test.aqc")
    # trec_eval -c on qrels.test: 3 topics, 302 missing from results.trunc (scored 0)
    result = invoke(["--qrels", str(fixtures / "qrels.test"), "--run",
                     str(fixtures / "results.trunc"), "--k", "5,10", "--trec-mean",
                     "--format", "json"], tmp_path)  # fmt: skip
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)["retrievers"]["results.trunc"]
    assert report["n_missing_from_run"] == 1
    assert report["mean"] == "trec_eval -c"
    assert report["n_averaged"] == 3
    for label, value in expected["all"].items():
        assert report["overall"][label] == pytest.approx(value, abs=5e-5), label
    # A fourth topic judged but with no relevant document: trec_eval -c averages over 4
    # topics, the fourth scoring 0 in every measure (its m_*.c return 0 when num_rel == 0).
    qrels = tmp_path / "qrels.txt"
    qrels.write_text((fixtures / "qrels.test").read_text() + "304 0 FT944-128 0\n")
    per_topic = [expected[qid] for qid in ("301", "302", "303")]
    result = invoke(["--qrels", str(qrels), "--run", str(fixtures / "results.trunc"),
                     "--k", "5,10", "--trec-mean", "--format", "json"], tmp_path)  # fmt: skip
    report = json.loads(result.stdout)["retrievers"]["results.trunc"]
    assert report["n_averaged"] == 4
    for label in expected["all"]:
        trec_c = sum(row[label] for row in per_topic) / 4
        assert report["overall"][label] == pytest.approx(trec_c, abs=1e-4), label
    # without --trec-mean the topic with no relevant document is left out of the means
    result = invoke(["--qrels", str(qrels), "--run", str(fixtures / "results.trunc"),
                     "--k", "5,10", "--format", "json"], tmp_path)  # fmt: skip
    report = json.loads(result.stdout)["retrievers"]["results.trunc"]
    assert (report["mean"], report["n_averaged"]) == ("answerable", 3)
    assert report["overall"]["map"] == pytest.approx(expected["all"]["map"], abs=5e-5)


def test_text_states_topics_without_relevant_document_and_missing_from_run(
    tmp_path: Path, shared_data: Path
) -> None:
    fixtures = shared_data / "trec_eval-tests"
    qrels = tmp_path / "qrels.txt"
    qrels.write_text((fixtures / "qrels.test").read_text() + "304 0 FT944-128 0\n")
    result = invoke(["--qrels", str(qrels), "--run", str(fixtures / "results.trunc"),
                     "--k", "10"], tmp_path)  # fmt: skip
    assert result.exit_code == 0, result.output
    assert ("4 topics, 4 judged, 1 of them with no relevant document (left out of the means"
            in result.stdout)  # fmt: skip
    assert "means over 3 answerable questions; 1 missing from the run (scored 0)" in (result.stdout)
    result = invoke(["--qrels", str(qrels), "--run", str(fixtures / "results.trunc"),
                     "--k", "10", "--trec-mean"], tmp_path)  # fmt: skip
    assert "means over all 4 judged questions (trec_eval -c: 1 with no relevant passage " \
           "scored 0; breakdowns over the 3 answerable); 1 missing from the run (scored 0)" \
           in result.stdout  # fmt: skip


def _demo_as_trec(tmp_path: Path) -> tuple[Path, Path]:
    """The demo gold set written by hand as TREC qrels and a ``qid<TAB>text`` topics file
    (its unanswerable rows are topics without judgments)."""
    rows = [json.loads(line) for line in demo_path("gold.jsonl").read_text().splitlines()]
    qrels, topics = tmp_path / "demo.qrels", tmp_path / "demo.topics"
    qrels.write_text("".join(f"{r['id']} 0 {g} 1\n" for r in rows for g in r["gold"]))
    topics.write_text("".join(f"{r['id']}\t{' '.join(r['question'].split())}\n" for r in rows))
    return qrels, topics


def test_qrels_and_topics_are_a_gold_set_for_a_built_in_retriever(tmp_path: Path) -> None:
    qrels, topics = _demo_as_trec(tmp_path)
    corpus = str(demo_path("corpus.jsonl"))
    from_trec = invoke(["--qrels", str(qrels), "--topics", str(topics), "--corpus", corpus,
                        "--retriever", "bm25", "--format", "json"], tmp_path)  # fmt: skip
    assert from_trec.exit_code == 0, from_trec.output
    from_gold = invoke(["--gold", str(demo_path("gold.jsonl")), "--corpus", corpus,
                        "--retriever", "bm25", "--format", "json"], tmp_path)  # fmt: skip
    assert from_gold.exit_code == 0, from_gold.output
    trec_report = json.loads(from_trec.stdout)["retrievers"]["bm25"]
    gold_report = json.loads(from_gold.stdout)["retrievers"]["bm25"]
    assert trec_report["n_questions"] == gold_report["n_questions"] == 49  # 61 - 12 unanswerable
    assert trec_report["overall"] == pytest.approx(gold_report["overall"])


def test_qrels_without_run_or_topics_says_what_is_missing(tmp_path: Path) -> None:
    qrels, topics = _demo_as_trec(tmp_path)
    result = invoke(["--qrels", str(qrels)], tmp_path)
    assert result.exit_code == 2
    assert "--topics" in result.stderr and "--run" in result.stderr
    result = invoke(["--qrels", str(qrels), "--topics", str(topics)], tmp_path)
    assert result.exit_code == 2
    assert "add --corpus" in result.stderr


@pytest.mark.parametrize("which", ["qrels", "run", "topics"])
@pytest.mark.parametrize("content", [b"301 0 doc\xe9 1\n", b"\x7fELF\x02\x01\x01\x00\x00\n"])
def test_binary_or_non_utf8_trec_file_names_file_and_line(
    tmp_path: Path, shared_data: Path, which: str, content: bytes
) -> None:
    fixtures = shared_data / "trec_eval-tests"
    files = {"qrels": fixtures / "qrels.test", "run": fixtures / "results.test"}
    bad = tmp_path / f"bad.{which}"
    bad.write_bytes(b"# a comment line\n" + content)
    files[which] = bad
    args = ["--qrels", str(files["qrels"]), "--run", str(files["run"])]
    if which == "topics":
        args += ["--topics", str(bad)]
    result = invoke(args, tmp_path)
    assert result.exit_code == 2
    assert f"{bad}, line 2:" in result.stderr
    assert "Traceback" not in result.stderr


def test_gold_set_and_qrels_word_a_binary_file_alike(tmp_path: Path, shared_data: Path) -> None:
    # the same file given as --gold and as --qrels: one wording; byte 4 of line 1 is 0xff
    bad = tmp_path / "bad.bin"
    bad.write_bytes(b"301 \xff\x00\x01 doc 1\n")
    expected = f"{bad}, line 1: not UTF-8 (byte 4 of the line): a binary file, or another encoding"
    as_gold = invoke(["--gold", str(bad), "--corpus", str(demo_path("corpus.jsonl"))], tmp_path)
    run = shared_data / "trec_eval-tests" / "results.test"
    as_qrels = invoke(["--qrels", str(bad), "--run", str(run)], tmp_path)
    for result in (as_gold, as_qrels):
        assert result.exit_code == 2
        assert expected in result.stderr


@pytest.mark.parametrize("flag", ["--k", "--format", "--fail-under"])
def test_compare_does_not_swallow_the_next_flag(tmp_path: Path, flag: str) -> None:
    result = invoke(["--compare", "bm25", flag, "x"], tmp_path)
    assert result.exit_code == 2
    assert f"got the flag {flag!r} as a name" in result.stderr


def test_gold_row_over_the_cap_names_the_line(tmp_path: Path) -> None:
    gold = tmp_path / "gold.jsonl"
    small = {"id": "q-1", "question": "When are fees due?", "gold": ["p-0001"]}
    big = {"id": "q-2", "question": "fees " * (MAX_GOLD_ROW_BYTES // 5), "gold": ["p-0001"]}
    gold.write_text(json.dumps(small) + "\n" + json.dumps(big) + "\n")
    size = len(json.dumps(big).encode())
    result = invoke(["--gold", str(gold), "--corpus", str(demo_path("corpus.jsonl"))], tmp_path)
    assert result.exit_code == 2
    assert f"{gold}, line 2: row is {size:,} bytes, over the limit of 65,536 bytes" in (
        result.stderr
    )
    assert "fees fees" not in result.stderr


def test_corpus_row_over_the_cap_names_the_line(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus.jsonl"
    rows = [{"id": "p-1", "text": "Fees are due in July."},
            {"id": "p-2", "text": "x" * MAX_CORPUS_ROW_BYTES}]  # fmt: skip
    corpus.write_text("".join(json.dumps(r) + "\n" for r in rows))
    gold = tmp_path / "gold.jsonl"
    gold.write_text('{"id": "q-1", "question": "When are fees due?", "gold": ["p-1"]}\n')
    result = invoke(["--gold", str(gold), "--corpus", str(corpus)], tmp_path)
    assert result.exit_code == 2
    size = MAX_CORPUS_ROW_BYTES + len('{"id": "p-2", "text": ""}')  # 25 bytes around the text
    assert f"{corpus}, line 2: row is {size:,} bytes, over the limit of 1,048,576 bytes" in (
        result.stderr
    )


def test_html_breakdowns_use_the_gate_cut_off_and_state_the_counts(
    tmp_path: Path, shared_data: Path
) -> None:
    page = tmp_path / "eval.html"
    result = invoke(["--gold", str(demo_path("gold.jsonl")), "--corpus",
                     str(demo_path("corpus.jsonl")), "--retriever", "bm25",
                     "--fail-under", "bm25:recall@5=0", "--html", str(page)], tmp_path)  # fmt: skip
    assert result.exit_code == 0, result.output
    html = page.read_text(encoding="utf-8")
    assert "recall@5 by kind" in html and "recall@20 by kind" not in html
    fixtures = shared_data / "trec_eval-tests"
    qrels = tmp_path / "qrels.txt"
    qrels.write_text((fixtures / "qrels.test").read_text() + "304 0 FT944-128 0\n")
    result = invoke(["--qrels", str(qrels), "--run", str(fixtures / "results.trunc"),
                     "--html", str(page)], tmp_path)  # fmt: skip
    assert result.exit_code == 0, result.output
    html = page.read_text(encoding="utf-8")
    assert ("4 topics, 4 judged, 1 of them with no relevant document (left out of the means"
            in html)  # fmt: skip
    assert "<tr><td>missing from the run (scored 0)</td><td>1</td></tr>" in html


#: Three questions by hand: q1 finds its passage first, q2 second, q3 has none relevant.
#: Per question recall@1 = 1, 0 and MRR = 1, 1/2 (q3: 0 in both under trec_eval -c).
HAND_RUN = "q1 Q0 p1 1 2.0 r\nq1 Q0 p9 2 1.0 r\nq2 Q0 p9 1 2.0 r\nq2 Q0 p2 2 1.0 r\n" \
           "q3 Q0 p9 1 2.0 r\nq4 Q0 p9 1 2.0 r\n"  # fmt: skip


def _text_all_row(output: str) -> list[str]:
    return next(line.split() for line in output.splitlines() if line.startswith("all "))


@pytest.mark.parametrize("source", ["gold", "qrels"])
def test_trec_mean_header_n_and_means_agree(tmp_path: Path, source: str) -> None:
    """--trec-mean: means over the judged questions (q1, q2, q3), q3 scoring 0: recall@1
    1/3, MRR 1.5/3 = 0.5, n = 3; without it over the answerable (q1, q2): 1/2, 0.75, n = 2.
    With qrels, topic q4 of the topics file has no judgment: in no mean, as in trec_eval."""
    run = tmp_path / "hand.run"
    run.write_text(HAND_RUN)
    if source == "gold":
        gold = tmp_path / "gold.jsonl"
        gold.write_text(
            '{"id": "q1", "question": "one?", "gold": ["p1"], "kind": "plain"}\n'
            '{"id": "q2", "question": "two?", "gold": ["p2"], "kind": "plain"}\n'
            '{"id": "q3", "question": "three?", "gold": [], "kind": "unanswerable"}\n'
        )
        args = ["--gold", str(gold), "--run", str(run), "--k", "1"]
        headers = ("3 questions, 1 unanswerable (no gold passage: scored apart, left out of "
                   "the means)", "3 questions, 1 unanswerable (no gold passage: scored 0 in "
                   "the means: --trec-mean, as trec_eval -c)")  # fmt: skip
    else:
        qrels, topics = tmp_path / "q.qrels", tmp_path / "t.tsv"
        qrels.write_text("q1 0 p1 1\nq2 0 p2 1\nq3 0 p5 0\n")
        topics.write_text("q1\tone?\nq2\ttwo?\nq3\tthree?\nq4\tfour?\n")
        args = ["--qrels", str(qrels), "--topics", str(topics), "--run", str(run), "--k", "1"]
        unjudged = "; 1 not in the qrels (in no mean, as in trec_eval)"
        headers = ("4 topics, 3 judged, 1 of them with no relevant document (left out of the "
                   "means; --trec-mean counts them as 0)" + unjudged,
                   "4 topics, 3 judged, 1 of them with no relevant document (scored 0 in the "
                   "means: --trec-mean, as trec_eval -c)" + unjudged)  # fmt: skip
    for flags, header, n, recall1, mrr in (
        ([], headers[0], 2, 0.5, 0.75),
        (["--trec-mean"], headers[1], 3, 1 / 3, 0.5),
    ):
        text = invoke([*args, *flags], tmp_path)
        assert text.exit_code == 0, text.output
        assert header in text.stdout
        row = _text_all_row(text.stdout)  # questions n recall@1 hit_rate@1 mrr ndcg@1 map
        assert int(row[1]) == n
        assert float(row[2]) == pytest.approx(recall1, abs=5e-5)
        assert float(row[4]) == pytest.approx(mrr, abs=5e-5)
        report = json.loads(invoke([*args, *flags, "--format", "json"], tmp_path).stdout)
        scored = report["retrievers"]["hand.run"]
        assert scored["n_averaged"] == n
        assert scored["overall"]["recall@1"] == pytest.approx(recall1)
        assert scored["overall"]["mrr"] == pytest.approx(mrr)
        assert report["gold_set"]["mean"] == ("trec_eval -c" if flags else "answerable")
        assert report["gold_set"]["n_unjudged"] == (1 if source == "qrels" else 0)
        page = tmp_path / "eval.html"
        assert invoke([*args, *flags, "--html", str(page)], tmp_path).exit_code == 0
        html = page.read_text(encoding="utf-8")
        assert header in html
        assert f"<tr><td>questions averaged over</td><td>{n}</td></tr>" in html
        assert f"<tr><td>recall@1</td><td>{recall1:.3f}</td></tr>" in html


def test_qrels_topics_get_no_made_up_kind_breakdown(tmp_path: Path, shared_data: Path) -> None:
    """Trial 13: ``eval --qrels --run`` printed "kind=plain (n=…)" for every topic, a label
    that no qrels file carries (the loader's default). trec_eval's qrels.test judges 3
    topics with relevant documents: one kind, so no kind breakdown, in JSON and text."""
    fixtures = shared_data / "trec_eval-tests"
    args = ["--qrels", str(fixtures / "qrels.test"), "--run", str(fixtures / "results.trunc"),
            "--k", "10"]  # fmt: skip
    result = invoke([*args, "--format", "json"], tmp_path)
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)["retrievers"]["results.trunc"]
    assert "kind" not in report["by"]
    text = invoke([*args, "--format", "text"], tmp_path)
    assert text.exit_code == 0, text.output
    assert "kind=" not in text.stdout
