"""``goldwatch eval`` end to end, through the real console entry point (subprocess).

Expected values come from outside the code: trec_eval's own printed output
(``../shared/data/trec_eval-tests/out.test.aq`` / ``out.test.aqc``) and the demo gold set's
documented composition (``service/demo/README.md``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

GOLDWATCH = [sys.executable, "-m", "service.cli"]


def run(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*GOLDWATCH, *args], cwd=cwd, capture_output=True, text=True, timeout=300, check=False
    )


@pytest.mark.slow
def test_demo_eval_json_schema_history_and_misses(tmp_path: Path) -> None:
    result = run(["eval", "--demo", "--format", "json", "--no-progress", "--k", "1,5,10"], tmp_path)
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    assert doc["schema_version"] == 1
    assert doc["k"] == [1, 5, 10]
    assert set(doc["retrievers"]) == {"bm25", "tfidf", "hybrid"}
    bm25 = doc["retrievers"]["bm25"]
    # the demo gold set: 61 rows, 12 with gold: [] (9 unanswerable + 3 role-restricted)
    assert doc["gold_set"]["n_questions"] == 61
    assert (bm25["n_questions"], bm25["n_unanswerable"]) == (49, 12)
    assert set(bm25["by"]) == {"kind", "doc_type", "source", "language", "role", "topic"}
    assert set(bm25["by"]["source"]) == {"real", "written", "generated"}
    assert "unanswerable" not in bm25["by"]["kind"]
    for name in ("recall@10", "hit_rate@10", "precision@10", "mrr@10", "ndcg@10", "mrr", "map"):
        assert 0.0 <= bm25["overall"][name] <= 1.0
    history = [json.loads(line) for line in (tmp_path / "goldwatch-runs.jsonl").open()]
    assert [row["retriever"] for row in history] == ["bm25", "tfidf", "hybrid"]
    assert len({row["config_hash"] for row in history}) == 3
    misses = [json.loads(line) for line in (tmp_path / "goldwatch-misses.jsonl").open()]
    assert len(misses) == sum(r["n_misses"] for r in doc["retrievers"].values())
    assert all(set(m) >= {"question", "gold", "gold_ranks", "instead"} for m in misses)


@pytest.mark.slow
def test_second_run_appends_a_row(tmp_path: Path) -> None:
    for _ in range(2):
        args = ["eval", "--demo", "--retriever", "bm25", "--no-progress"]
        assert run(args, tmp_path).returncode == 0
    assert len((tmp_path / "goldwatch-runs.jsonl").read_text().splitlines()) == 2


@pytest.mark.slow
def test_fail_under_gate_exit_codes(tmp_path: Path) -> None:
    ok = run(["eval", "--demo", "--retriever", "bm25", "--fail-under", "recall@10=0.5"],
             tmp_path)  # fmt: skip
    assert ok.returncode == 0, ok.stderr
    failed = run(["eval", "--demo", "--retriever", "bm25", "--fail-under", "bm25:recall@1=1.0"],
                 tmp_path)  # fmt: skip
    assert failed.returncode == 1
    assert "FAIL bm25: recall@1" in failed.stderr
    unknown = run(["eval", "--demo", "--retriever", "bm25", "--fail-under", "prod:recall@1=0.1"],
                  tmp_path)  # fmt: skip
    assert unknown.returncode == 2
    assert "not evaluated" in unknown.stderr


@pytest.mark.slow
def test_compare_and_answers(tmp_path: Path) -> None:
    demo = Path(__file__).resolve().parents[2] / "service" / "demo"
    answers_file = tmp_path / "answers.jsonl"
    answers_file.write_text((demo / "answers.jsonl").read_text(encoding="utf-8")
                            + '{"id": "ghost-1", "answer": "boo"}\n', encoding="utf-8")  # fmt: skip
    result = run(
        [
            "eval",
            "--demo",
            "--compare",
            "bm25",
            "tfidf",
            "--answers",
            str(answers_file),
            "--format",
            "json",
            "--no-progress",
        ],
        tmp_path,
    )
    assert result.returncode == 0, result.stderr
    # trial 12 F4: an answer for an id the gold set lacks is named on stderr and in the JSON
    assert ("goldwatch: warning: 1 answer is for an id not in the gold set, ignored: ghost-1"
            in result.stderr)  # fmt: skip
    doc = json.loads(result.stdout)
    recall = next(c for c in doc["comparison"] if c["metric"] == "recall@10")
    assert recall["wins"] + recall["losses"] + recall["ties"] == recall["n"] == 49
    assert 0.0 <= recall["p_value"] <= 1.0
    answers = doc["answers"]
    # demo/README.md: 44 of 49 answerable answers hold their substrings (5 planted wrong,
    # but one of those, q-028, is a refusal without answer_contains miss counted separately)
    assert answers["n_answers"] == 61
    assert answers["unknown"] == ["ghost-1"] and answers["missing"] == []
    # 12 no-gold questions: 8 refused, 4 answered anyway (3 hallucinations + 1 ACL leak)
    assert answers["unanswerable_refusal_rate"] == pytest.approx(8 / 12)


@pytest.mark.slow
def test_trec_files_match_trec_eval_all_row(tmp_path: Path, shared_data: Path) -> None:
    fixtures = shared_data / "trec_eval-tests"
    result = run(
        [
            "eval",
            "--qrels",
            str(fixtures / "qrels.test"),
            "--run",
            str(fixtures / "results.test"),
            "--run",
            str(fixtures / "results.trunc"),
            "--k",
            "5,10",
            "--format",
            "json",
        ],
        tmp_path,
    )
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    # `all` rows printed by trec_eval -q (out.test.aq) and -q -c on results.trunc (out.test.aqc)
    expected = {
        "results.test": {"map": 0.1785, "mrr": 0.4064, "precision@5": 0.2667, "recall@10": 0.0317,
                    "ndcg": 0.4021, "ndcg@10": 0.3016, "hit_rate@10": 0.6667},
        "results.trunc": {"map": 0.1016, "mrr": 0.1667, "precision@5": 0.2000,
                          "recall@10": 0.1347, "ndcg": 0.2105, "ndcg@10": 0.1717,
                          "hit_rate@10": 0.6667},
    }  # fmt: skip
    for run_name, values in expected.items():
        overall = doc["retrievers"][run_name]["overall"]
        for metric, value in values.items():
            assert overall[metric] == pytest.approx(value, abs=5e-5), (run_name, metric)


@pytest.mark.slow
def test_bad_gold_file_names_file_line_and_never_echoes_text(tmp_path: Path) -> None:
    gold = tmp_path / "gold.jsonl"
    gold.write_text(
        '{"id": "q1", "question": "call me at alice@example.com", "gold": ["p-0001"]}\n'
        '{"id": "q1", "question": "my PAN is ABCDE1234F", "gold": 5}\n',
        encoding="utf-8",
    )
    result = run(["eval", "--gold", str(gold)], tmp_path)
    assert result.returncode == 2
    assert "gold.jsonl, line 2" in result.stderr
    assert "alice@example.com" not in result.stderr
    assert "ABCDE1234F" not in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.slow
@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--k", "0,5"], "every k must be"),
        (["--retriever", "nope"], "unknown retriever 'nope'"),
        (["--run", "x.txt"], "--run needs --qrels or --gold"),
        (["--fail-under", "recall@10"], "metric=threshold"),
        (["--fail-under", "recall@10=7"], "[0, 1]"),
        (["--gold", "missing.jsonl"], "missing.jsonl"),
    ],
)
def test_usage_errors_exit_2(tmp_path: Path, args: list[str], message: str) -> None:
    result = run(["eval", "--demo", "--no-progress", *args], tmp_path)
    assert result.returncode == 2
    assert message in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.slow
def test_config_check_prints_effective_config(tmp_path: Path) -> None:
    config = tmp_path / "goldwatch.yaml"
    config.write_text("eval:\n  k: [3]\n")
    result = run(["config", "check", "--config", str(config)], tmp_path)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["eval"]["k"] == [3]
    config.write_text("eval:\n  k: [0]\n")
    bad = run(["config", "check", "--config", str(config)], tmp_path)
    assert bad.returncode == 2
    assert "eval.k" in bad.stderr


def _closed_port() -> int:
    """A port with no listener, below the ephemeral range: a client's retried connect() to an
    ephemeral port can be given that very port as its source and connect to itself."""
    from tests.ports import free_port

    return free_port()


@pytest.mark.slow
def test_failing_retriever_exits_3_without_traceback(tmp_path: Path) -> None:
    config = tmp_path / "goldwatch.yaml"
    config.write_text(
        "retrievers:\n"
        f"  - {{name: prod, kind: http, url: 'http://127.0.0.1:{_closed_port()}/search',"
        " retries: 0, timeout_s: 1}\n"
    )
    args = ["eval", "--demo", "--config", str(config), "--retriever", "prod", "--no-progress"]
    result = run(args, tmp_path)
    assert result.returncode == 3
    assert "retriever 'prod'" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.slow
def test_entrypoint_retriever_from_the_current_folder(tmp_path: Path) -> None:
    (tmp_path / "my_search.py").write_text(
        "def top_k(question, k):\n    return [('p-0001', 2.0), ('p-0002', 1.0)][:k]\n"
    )
    config = tmp_path / "goldwatch.yaml"
    config.write_text(
        "retrievers:\n  - {name: mine, kind: entrypoint, entrypoint: 'my_search:top_k'}\n"
    )
    args = ["eval", "--demo", "--config", str(config), "--retriever", "mine", "--format", "json"]
    result = run(args, tmp_path)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["retrievers"]["mine"]["n_questions"] == 49


@pytest.mark.slow
@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--qrels", "q.txt"], "--qrels needs --run"),
        (["--qrels", "q.txt", "--gold", "g.jsonl", "--run", "r.txt"], "either --qrels or --gold"),
    ],
)
def test_qrels_mode_conflicts(tmp_path: Path, args: list[str], message: str) -> None:
    result = run(["eval", *args], tmp_path)
    assert result.returncode == 2
    assert message in result.stderr


@pytest.mark.slow
def test_config_check_masks_secrets_and_checks_files(tmp_path: Path) -> None:
    config = tmp_path / "goldwatch.yaml"
    config.write_text(
        "retrievers:\n"
        "  - {name: prod, kind: http, url: 'http://user:s3cretpw@127.0.0.1:9/s?api_key=abc123',"
        " params: {token: tok-SECRET-3, concurrency: 2}}\n"
        "api: {token: hunter2}\n"
    )
    result = run(["config", "check", "--config", str(config)], tmp_path)
    assert result.returncode == 0, result.stderr
    for secret in ("s3cretpw", "abc123", "tok-SECRET-3", "hunter2"):
        assert secret not in result.stdout
    shown = json.loads(result.stdout)
    assert shown["retrievers"][0]["params"]["concurrency"] == 2
    config.write_text("gold_set: nowhere.jsonl\n")
    missing = run(["config", "check", "--config", str(config)], tmp_path)
    assert missing.returncode == 2
    assert "gold_set: file not found" in missing.stderr


def test_config_check_names_the_resolved_path_and_where_it_came_from(tmp_path: Path) -> None:
    # a GOLDWATCH_* path resolves from the working folder, a YAML path from the YAML's folder
    folder, work = tmp_path / "cfg", tmp_path / "work"
    folder.mkdir()
    work.mkdir()
    config = folder / "goldwatch.yaml"
    config.write_text("gold_set: gold-missing.jsonl\n")
    env = {**os.environ, "GOLDWATCH_GOLD_SET": "gold-missing.jsonl"}
    check = [*GOLDWATCH, "config", "check", "--config", str(config)]
    by_env = subprocess.run(check, cwd=work, env=env, capture_output=True, text=True, check=False)
    assert by_env.returncode == 2
    assert (f"gold_set: file not found: {work / 'gold-missing.jsonl'} "
            "(GOLDWATCH_GOLD_SET, relative to the working folder)") in by_env.stderr  # fmt: skip
    env.pop("GOLDWATCH_GOLD_SET")
    by_yaml = subprocess.run(check, cwd=work, env=env, capture_output=True, text=True, check=False)
    assert by_yaml.returncode == 2
    assert (f"gold_set: file not found: {folder / 'gold-missing.jsonl'} "
            f"(from {config}, relative to that file's folder)") in by_yaml.stderr  # fmt: skip


def test_a_missing_absolute_path_is_not_said_to_be_relative(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Trial user 3: ``source.path: /tmp/.../logg.jsonl`` (a typo, absolute) was reported as
    "(from <config>, relative to that file's folder)". An absolute value names its origin
    only; a relative one still says what it is relative to (file and variable alike)."""
    from service.settings import load_settings
    from service.settings.checks import file_problems

    monkeypatch.delenv("GOLDWATCH_SOURCE__PATH", raising=False)
    monkeypatch.delenv("GOLDWATCH_GOLD_SET", raising=False)
    folder, elsewhere = tmp_path / "cfg", tmp_path / "data"
    folder.mkdir()
    config = folder / "goldwatch.yaml"
    config.write_text(f"gold_set: gold-missing.jsonl\n"
                      f"source:\n  kind: file\n  path: {elsewhere / 'logg.jsonl'}\n")  # fmt: skip
    problems = file_problems(load_settings(config), None, config)
    assert f"source.path: file not found: {elsewhere / 'logg.jsonl'} (from {config})" in problems
    assert (f"gold_set: file not found: {folder / 'gold-missing.jsonl'} "
            f"(from {config}, relative to that file's folder)") in problems  # fmt: skip
    monkeypatch.setenv("GOLDWATCH_GOLD_SET", str(elsewhere / "gold.jsonl"))
    problems = file_problems(load_settings(config), None, config)
    assert f"gold_set: file not found: {elsewhere / 'gold.jsonl'} (GOLDWATCH_GOLD_SET)" in problems


def test_a_gold_set_with_no_answerable_question_has_undefined_means(tmp_path: Path) -> None:
    """Trial finding 3 (sixteenth session): a gold set of unanswerable rows only printed
    0.0000 for every mean and ``--fail-under`` failed on that 0. A mean over no question is
    undefined: n/a in the table, ``null`` in JSON and the run history, and a gate on it is
    a usage error (exit 2), not a pass or a fail."""
    (tmp_path / "corpus.jsonl").write_text(
        json.dumps({"id": "p-1", "text": "The library opens at nine."}) + "\n"
        + json.dumps({"id": "p-2", "text": "Parking costs two euros an hour."}) + "\n"
    )  # fmt: skip
    (tmp_path / "gold.jsonl").write_text(
        json.dumps({"id": "q-1", "question": "Who won the 1998 World Cup?", "gold": []}) + "\n"
        + json.dumps({"id": "q-2", "question": "What is the capital of Peru?", "gold": []})
        + "\n"
    )  # fmt: skip
    base = ["eval", "--gold", "gold.jsonl", "--corpus", "corpus.jsonl", "--retriever", "bm25",
            "--no-progress", "--k", "1,5"]  # fmt: skip
    text = run(base, tmp_path)
    assert text.returncode == 0, text.stderr
    assert "0 answerable questions, 2 unanswerable" in text.stdout
    row = next(line for line in text.stdout.splitlines() if line.startswith("all "))
    assert row.split()[1:] == ["0"] + ["n/a"] * 7  # recall@1,5, hit_rate@1,5, mrr, ndcg@5, map
    doc = json.loads(run([*base, "--format", "json"], tmp_path).stdout)
    assert set(doc["retrievers"]["bm25"]["overall"].values()) == {None}
    history = [json.loads(line) for line in (tmp_path / "goldwatch-runs.jsonl").open()]
    assert set(history[-1]["metrics"].values()) == {None}
    page = run([*base, "--html", "eval.html"], tmp_path)
    assert page.returncode == 0, page.stderr
    html = (tmp_path / "eval.html").read_text()
    assert "No answerable question: every mean is undefined" in html
    assert "No answerable question to break down" in html  # not "sets none of the fields"
    assert "0.000" not in html.split('id="overall"')[1].split("</table>")[0]  # no fake 0
    gated = run([*base, "--fail-under", "recall@5=0.5"], tmp_path)
    assert gated.returncode == 2
    assert "no answerable question (2 unanswerable)" in gated.stderr
    assert "FAIL" not in gated.stderr


def test_a_question_asked_by_two_gold_rows_is_a_warning(tmp_path: Path) -> None:
    """Trial 13: a gold set asking one question in two rows with different gold passages
    loaded without a word. Two hand-written rows on the demo corpus: one question (differing
    only in case and spacing), gold p-0002 and p-0003; a third row asks another question."""
    gold = tmp_path / "gold.jsonl"
    rows = [
        {"id": "a-1", "question": "When does the library open?", "gold": ["p-0002"]},
        {"id": "a-2", "question": "when does the  LIBRARY open?", "gold": ["p-0003"]},
        {"id": "b-1", "question": "Where is the canteen?", "gold": ["p-0004"]},
    ]
    gold.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    from service.demo import demo_path

    corpus = demo_path("corpus.jsonl")
    result = run(["eval", "--gold", str(gold), "--corpus", str(corpus), "--retriever", "bm25",
                  "--no-progress", "--format", "json"], tmp_path)  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert ("goldwatch: warning: 1 question appears in more than one gold-set row (rows "
            "'a-1', 'a-2'), 1 of them with different gold passages" in result.stderr)  # fmt: skip
    assert "library" not in result.stderr.lower()  # ids only, never the question's text


@pytest.mark.slow
def test_entrypoint_scoring_every_passage_zero_is_named_with_its_tie_ranked_mrr(
    tmp_path: Path,
) -> None:
    """Trial 45 M3 end to end: an entrypoint that finds no word of two questions returns
    every passage at score 0. By hand (trec_eval: score descending, ties by id descending,
    so d5 d4 d3 d2 d1): z1's gold d2 is 4th (RR 1/4), z2's gold d5 1st (RR 1); the third
    question's gold d1 is first (RR 1). MRR = (1/4 + 1 + 1) / 3 = 0.75, as trec_eval gives
    it; the notice names the 2 questions and the depth asked (eval.depth, 100)."""
    (tmp_path / "corpus.jsonl").write_text(
        "".join(json.dumps({"id": f"d{i}", "text": f"passage {i}"}) + "\n" for i in range(1, 6))
    )
    rows = [("z1", "कार्ड", "d2", "hi"), ("z2", "ट्रांसफर", "d5", "hi"), ("a1", "fee", "d1", "en")]
    (tmp_path / "gold.jsonl").write_text("".join(
        json.dumps({"id": i, "question": q, "gold": [g], "language": lang}) + "\n"
        for i, q, g, lang in rows))  # fmt: skip
    (tmp_path / "zeros.py").write_text(
        "def top_k(question, k):\n"
        "    ids = ['d1', 'd2', 'd3', 'd4', 'd5']\n"
        "    if question == 'fee':\n"
        "        return [(d, 2.0 - i * 0.25) for i, d in enumerate(ids)][:k]\n"
        "    return [(d, 0.0) for d in ids][:k]\n"
    )
    config = tmp_path / "goldwatch.yaml"
    config.write_text(
        "gold_set: gold.jsonl\ncorpus: corpus.jsonl\n"
        "retrievers:\n  - {name: mine, kind: entrypoint, entrypoint: 'zeros:top_k'}\n"
    )
    base = ["eval", "--config", str(config), "--retriever", "mine", "--no-progress", "--k", "1,5"]
    result = run([*base, "--format", "json"], tmp_path)
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    mine = doc["retrievers"]["mine"]
    assert doc["depth"] == 100
    assert mine["overall"]["mrr"] == pytest.approx(0.75)
    assert mine["ties"]["all_tied"] == ["z1", "z2"]
    assert mine["ties"]["mrr_all_tied"] == pytest.approx(0.625)
    assert mine["ties"]["groups"] == {"language=hi": 2}
    text = run(base, tmp_path)
    assert text.returncode == 0, text.stderr
    assert "each retriever was asked for its top 100 passages (eval.depth)" in text.stdout
    assert ("ties: mine: 2 of 3 answerable questions got passages all scored alike (z1, z2; "
            "language=hi 2): their ranks and their uncut MRR 0.6250 (0.4167 of the overall "
            "0.7500) rest on trec_eval's tie order") in text.stdout  # fmt: skip
