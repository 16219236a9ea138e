"""``goldwatch config check`` fails (exit 2, naming the field and file) on what serve and
replay would reject later: an invalid refusal pattern, a non-finite drift window, gold-set or
corpus rows that do not load, a Kafka secret file that cannot be read; ``topics fit
--n-topics`` takes the configuration's bounds."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from service.cli import main
from service.demo import demo_path
from service.jobs.replay import run_replay
from service.refusals.scope import CALIBRATION_LIMIT
from service.settings import load_settings
from service.topics.config import N_TOPICS_MAX, N_TOPICS_MIN, TopicConfig
from service.topics.model import TopicModel


def _check(tmp_path: Path, text: str) -> Result:
    config = tmp_path / "goldwatch.yaml"
    config.write_text(text, encoding="utf-8")
    return CliRunner().invoke(main, ["config", "check", "--config", str(config)])


@pytest.mark.parametrize(
    ("text", "field", "problem"),
    [
        ("analytics:\n  refusal_patterns: ['ok', '(bad']\n", "analytics.refusal_patterns.1",
         "missing ), unterminated subpattern"),
        ("analytics:\n  refusal_patterns: ['(?i)sorry']\n", "analytics.refusal_patterns.0",
         "global flags not at the start"),
        ("analytics:\n  drift: {window_s: .inf}\n", "analytics.drift.window_s", "finite"),
        ("analytics:\n  drift: {bucket_s: .nan}\n", "analytics.drift.bucket_s", "finite"),
        ("analytics:\n  drift: {allowed_lateness_s: .inf}\n",
         "analytics.drift.allowed_lateness_s", "finite"),
    ],
)  # fmt: skip
def test_settings_problems_name_the_field(
    tmp_path: Path, text: str, field: str, problem: str
) -> None:
    result = _check(tmp_path, text)
    assert result.exit_code == 2, result.output
    assert f"  {field}: " in result.stderr and problem in result.stderr, result.stderr


def test_replay_rejects_the_same_settings_naming_the_field(tmp_path: Path) -> None:
    config = tmp_path / "goldwatch.yaml"
    config.write_text("analytics:\n  drift: {window_s: .inf}\n", encoding="utf-8")
    log = tmp_path / "log.jsonl"
    log.write_text("", encoding="utf-8")
    result = CliRunner().invoke(main, ["replay", str(log), "--config", str(config)])
    assert result.exit_code == 2
    assert "analytics.drift.window_s: Input should be a finite number" in result.stderr


def _with_bad_line(source: Path, target: Path, line: str) -> Path:
    rows = source.read_text(encoding="utf-8").splitlines()
    target.write_text("\n".join([rows[0], line, *rows[1:]]) + "\n", encoding="utf-8")
    return target


@pytest.mark.parametrize(
    ("field", "demo_file", "bad_row", "problem"),
    [
        ("gold_set", "gold.jsonl", '{"id": "q-x", "gold": ["p-0001"]}', "line 2"),
        ("gold_set", "gold.jsonl", "not json", "line 2"),
        ("corpus", "corpus.jsonl", '{"id": "p-x", "text": 5}', "line 2"),
        ("corpus", "corpus.jsonl", '{"id": "p-0001", "text": "again"}', "line 2"),
    ],
)
def test_gold_set_and_corpus_rows_are_loaded(
    tmp_path: Path, field: str, demo_file: str, bad_row: str, problem: str
) -> None:
    path = _with_bad_line(demo_path(demo_file), tmp_path / demo_file, bad_row)
    result = _check(tmp_path, f"{field}: {path}\n")
    assert result.exit_code == 2, result.output
    message = result.stderr.split("goldwatch: error: ", 1)[1]
    assert message.startswith(f"{field}: 1 problem(s) in {path}:"), message
    assert f"{path}, {problem}" in message, message


def test_good_gold_set_and_corpus_pass(tmp_path: Path) -> None:
    gold = shutil.copy(demo_path("gold.jsonl"), tmp_path / "gold.jsonl")
    corpus = shutil.copy(demo_path("corpus.jsonl"), tmp_path / "corpus.jsonl")
    result = _check(tmp_path, f"gold_set: {gold}\ncorpus: {corpus}\n")
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["gold_set"] == str(gold)


def test_a_good_configuration_ends_with_a_positive_summary(tmp_path: Path) -> None:
    """Issue 18: all well, config check said nothing about what it checked. The demo gold
    set has 61 rows over 13 topic labels and the demo corpus 58 passages (counted with
    ``wc -l`` and ``jq -r .topic | sort -u | wc -l``); the paths are relative to the file."""
    shutil.copy(demo_path("gold.jsonl"), tmp_path / "gold.jsonl")
    shutil.copy(demo_path("corpus.jsonl"), tmp_path / "corpus.jsonl")
    (tmp_path / "q.jsonl").write_text("", encoding="utf-8")
    text = ("gold_set: gold.jsonl\ncorpus: corpus.jsonl\nstate: {path: st/state.sqlite}\n"
            "source: {kind: file, path: q.jsonl}\n")  # fmt: skip
    result = _check(tmp_path, text)
    assert result.exit_code == 0, result.stderr
    base = tmp_path.resolve()
    # the detectors as the replay report of the same configuration judges them (its own
    # path: the report's "uncalibrated" texts); the demo's two are both uncalibrated
    settings = load_settings(tmp_path / "goldwatch.yaml")
    report = run_replay(settings, tmp_path / "q.jsonl", None, tmp_path / "dlq.jsonl")
    judged = report["analytics"]["detector_quality"]
    assert sorted(judged) == ["novelty", "out_of_scope"]
    # what each AUC is measured on: the demo gold set's 61 rows, 12 of them unanswerable
    # (``jq -c 'select(.gold == [])' | wc -l``)
    on = {
        "novelty": "61 gold questions, each of 13 topics held out in turn",  # 13 labels
        "out_of_scope": "12 unanswerable / 49 answerable gold questions",
    }
    support = report["analytics"]["out_of_scope"]["support"]
    cutoff = support["by_script"]["Latn"]
    # its range over draws of the 39 Latin setters (scope.cutoff_band; as the report has it)
    low, high = support["band_by_script"]["Latn"]
    assert low <= cutoff <= high
    # the corpus's families (doc_type of the nearest passage; session 43), as the report of
    # the same configuration places the gold rows: every one of the 49 answerable rows in one
    families = {
        row["family"]: row for row in report["analytics"]["out_of_scope"]["by_family"]["rows"]
    }
    assert sorted(families) == ["docx", "html", "pdf", "scanned_pdf"]  # jq .doc_type | sort -u
    assert sum(row["answerable_gold"] for row in families.values()) == 49
    # placed by the embeddings, so not the qrels' doc_types (pdf 19, html 14, docx 9,
    # scanned_pdf 7): docx 13, html 12, pdf 19, scanned_pdf 5 (the replay golden's by_family;
    # html 10 before q-060 and q-061, two questions on the SEE timetable, html)
    assert {name: row["answerable_gold"] for name, row in families.items()} == {
        "docx": 13, "html": 12, "pdf": 19, "scanned_pdf": 5}  # fmt: skip
    family_line = (
        "#     out-of-scope families (doc_type of the nearest passage): docx 13 answerable gold "
        f"rows ({families['docx']['kept_held_out']} kept in scope held out), html 12 "
        f"({families['html']['kept_held_out']}), pdf 19 ({families['pdf']['kept_held_out']}), "
        f"scanned_pdf 5 ({families['scanned_pdf']['kept_held_out']}); fewer than 10 in "
        "scanned_pdf: its live verdicts are named as not measured if its out-of-scope share "
        "stands above the others' (add 5 answerable gold rows from scanned_pdf)"
    )
    assert result.stderr.splitlines()[-20:] == [
        "# ok: every check passed; serve and replay would start from:",
        f"#   gold set 61 rows ({base / 'gold.jsonl'})",
        f"#   corpus 58 passages ({base / 'corpus.jsonl'})",
        "#   topics 13 (the gold set's topic labels)",
        *[f"#   {name} detector UNCALIBRATED (its counts are not facts and raise no drift "
          f"alarm): {judged[name]['uncalibrated']} (measured on {on[name]})"
          for name in ("novelty", "out_of_scope")],
        # what to add to calibrate it (trial 41 L2), as the report's quality entry says it
        f"#     to calibrate it: {judged['out_of_scope']['to_calibrate']}",
        f"#     out-of-scope calibration: {CALIBRATION_LIMIT}",
        # by script, measured per language: the demo gold set's languages (``jq .language``)
        # are en 39 answerable rows, hi-Latn 8 and hi 2 (Devanagari, the only such rows)
        "#     off-corpus rule by script, measured per gold-set language (support similarity "
        "below the least any answerable gold question of the script's languages with at "
        # the trim: 0 since the forty-ninth session (on the held-out probabilities averaged
        # over 10 fold draws the detector keeps 46 of the 49 answerable rows in scope at trim
        # 0, 0.939, already below 0.95, and a larger trim only lowers it: choose_trim; it was
        # 1 of 47 on one draw), so the text has no trim clause
        "least 10 such rows has; a script without one is not judged); the cutoff's 95 % "
        f"bootstrap range over draws of as many answerable rows: Latn [{low:.3f}, {high:.3f}]:",
        f"#       en: below {cutoff:.3f} (the Latn cutoff; 39 answerable gold questions), "
        # 10 of the 390 held-out appearances (39 rows x 10 fold draws): 1 of 39 on average
        # (16, 1.6 of 39, before q-060 and q-061 joined the fit); its Wilson interval on 1 of
        # 39, by hand: p = 0.02564, centre p + z²/2n = 0.07489, half-width
        # z·√(p(1-p)/n + z²/4n²) = 0.06991, over 1 + z²/n = 1.0985: [0.5%, 13.2%]
        "held-out false-positive rate 2.6% (1 of 39; Wilson 95 % [0.5%, 13.2%])",
        "#       hi: not judged by the off-corpus rule (2 answerable gold questions, no language "
        "of its script has enough)",
        f"#       hi-Latn: below {cutoff:.3f} (the Latn cutoff; too few answerable gold "
        "questions to set it, 8), false-positive rate 0.0% on them",
        "#       off-corpus rule limit: cutoffs and false-positive rates are measured on the "
        "gold set's languages (en, hi, hi-Latn); a question in another language is not "
        "judged, one of no named language by its script's cutoff or not at all",
        family_line,
        # novelty uncalibrated: the topic shares are nearest gold topics (fortieth session)
        "#   topic shares are by NEAREST gold topic (not facts; no topic coverage gap; topic "
        "drift still alarms on a change of the distribution): each question's nearest gold "
        "topic, questions on topics outside the gold set included (the novelty detector labels "
        f"no question novel while it is uncalibrated: {judged['novelty']['uncalibrated']}); no "
        "topic coverage gap is a fact",
        # the demo's topic labels held out (the replay golden's topic_quality): 36 of 61,
        # chance agreement from the two marginals (labelled rows x rows read as it, per
        # topic: exams 15 x 17, fees 8 x 16, admissions 7 x 6, hostel 7 x 3, salary 6 x 4,
        # library 4 x 4, scholarships 4 x 1, transport 4 x 5, facilities 2 x 2, events
        # 1 x 2, general 1 x 1, exam-duty and placements 1 x 0) 517 / 61² = 0.13894, kappa
        # (0.59016 - 0.13894) / 0.86106 = 0.5240, its 95 % interval
        # +- 1.96 * sqrt(0.59016 * 0.40984 / 61) / 0.86106 = +- 0.143 -> [0.381, 0.667]
        "#   topic assignment calibrated: held out 36 of 61 labelled gold questions keep "
        "their topic (59.0%); Cohen's kappa 0.52 [0.38, 0.67] (95 % interval on 61 rows; "
        "chance agreement 13.9%; floor 0.4, analytics.topics.min_kappa, inside the interval: "
        "the gate reads the point estimate, and a few labelled gold questions more or less "
        "could move it across)",
        "#   harvest: at most 5000 suggestions held; harvest.max_new_per_batch 48 in serve "
        "(the default; a replay sheds nothing unless it is set)",
        f"#   source file {base / 'q.jsonl'}",
        # the state's own dead-letter file (trial 50, L2: not the log's, which states shared)
        f"#   dead letters {base / 'st' / 'state.sqlite.dlq.jsonl'} (appended; one file per "
        "state)",
        f"#   state {base / 'st' / 'state.sqlite'}",
    ]  # fmt: skip
    bad = _check(tmp_path, text.replace("gold.jsonl", "missing.jsonl"))
    assert bad.exit_code == 2 and "# ok:" not in bad.stderr


def test_a_gold_set_the_topic_fit_refuses_fails_the_check(tmp_path: Path) -> None:
    """Every row of the demo gold set relabelled ``billing``: the rows load, but supervised
    topics need two labels, so serve and replay refuse to start; config check must too
    (it passed before, then ended in a traceback), naming the file and field, exit 2."""
    rows = [json.loads(line) for line in demo_path("gold.jsonl").read_text("utf-8").splitlines()]
    (tmp_path / "gold.jsonl").write_text(
        "".join(json.dumps({**row, "topic": "billing"}) + "\n" for row in rows), encoding="utf-8"
    )
    shutil.copy(demo_path("corpus.jsonl"), tmp_path / "corpus.jsonl")
    result = _check(tmp_path, "gold_set: gold.jsonl\ncorpus: corpus.jsonl\n")
    assert result.exit_code == 2, result.stderr
    assert "field 'topic': supervised topics need at least 2 distinct labels" in result.stderr
    assert "Traceback" not in result.stderr and "# ok:" not in result.stderr


KAFKA = """source: {{kind: kafka}}
kafka:
  bootstrap_servers: 127.0.0.1:9
  topic: queries
  consumer_group: goldwatch
  security_protocol: SASL_SSL
  sasl_mechanism: PLAIN
  sasl_username: svc
  sasl_password_file: {password}
  ssl_cafile: {cafile}
"""


def test_kafka_secret_and_tls_files_must_be_readable(tmp_path: Path) -> None:
    password, cafile = tmp_path / "password", tmp_path / "ca.pem"
    missing = _check(tmp_path, KAFKA.format(password=password, cafile=cafile))
    assert missing.exit_code == 2
    assert f"kafka.sasl_password_file: cannot read {password}: No such file" in missing.stderr
    assert f"kafka.ssl_cafile: cannot read {cafile}: No such file" in missing.stderr
    password.write_text("pw-not-shown\n", encoding="utf-8")
    cafile.write_text("-----BEGIN CERTIFICATE-----\n", encoding="utf-8")
    present = _check(tmp_path, KAFKA.format(password=password, cafile=cafile))
    assert present.exit_code == 0, present.stderr
    assert "pw-not-shown" not in present.output


@pytest.mark.parametrize("n", ["-3", "0", "1", str(N_TOPICS_MAX + 1), "many"])
def test_topics_fit_n_topics_outside_the_config_bounds_exits_2(tmp_path: Path, n: str) -> None:
    out = tmp_path / "topics.joblib"
    result = CliRunner().invoke(
        main, ["topics", "fit", "--cluster", f"--n-topics={n}", "--out", str(out)]
    )
    assert result.exit_code == 2, result.output
    assert "'--n-topics'" in result.stderr
    assert not out.exists()


def test_topics_fit_and_the_config_share_the_bounds(tmp_path: Path) -> None:
    field = TopicConfig.model_fields["n_topics"]
    bounds = {type(m).__name__: getattr(m, type(m).__name__.lower()) for m in field.metadata}
    assert bounds == {"Ge": N_TOPICS_MIN, "Le": N_TOPICS_MAX}
    out = tmp_path / "topics.joblib"
    result = CliRunner().invoke(
        main, ["topics", "fit", "--gold", str(demo_path("gold.jsonl")), "--cluster",
               f"--n-topics={N_TOPICS_MIN}", "--out", str(out)],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert len(TopicModel.load(out).topics) == N_TOPICS_MIN


def test_an_unvalidated_config_cannot_slip_a_bad_n_topics_into_the_fit() -> None:
    """``model_copy(update=...)`` skips validation; 0 was then taken for "default"."""
    texts = [f"question {i} about fees" for i in range(9)]
    for bad in (0, 1, -3):
        config = TopicConfig().model_copy(update={"n_topics": bad})
        with pytest.raises(ValueError, match=rf"n_topics must be in \[2, 1000\], got {bad}"):
            TopicModel.fit(texts, config)


def test_env_json_nested_too_deep_exits_2_naming_the_variable() -> None:
    """It was a RecursionError traceback with exit 1."""
    deep = "[" * 5000 + "]" * 5000
    result = CliRunner().invoke(main, ["config", "check"], env={"GOLDWATCH_EVAL__K": deep})
    assert result.exit_code == 2, result.output
    assert "GOLDWATCH_EVAL__K: JSON nested more than 64 levels" in result.output
    assert "Traceback" not in result.output and deep not in result.output


def test_unlabelled_gold_set_counts_the_topics_serve_fits(tmp_path: Path) -> None:
    """Without topic labels the topics are clusters fitted on the gold set and the corpus:
    the summary counts the model serve builds (the replay report's topic labels, its own
    path), not one fitted a second time without the corpus."""
    rows = [json.loads(line) for line in demo_path("gold.jsonl").read_text("utf-8").splitlines()]
    (tmp_path / "gold.jsonl").write_text(
        "".join(json.dumps({k: v for k, v in row.items() if k != "topic"}) + "\n" for row in rows),
        encoding="utf-8",
    )
    shutil.copy(demo_path("corpus.jsonl"), tmp_path / "corpus.jsonl")
    (tmp_path / "q.jsonl").write_text("", encoding="utf-8")
    result = _check(tmp_path, "gold_set: gold.jsonl\ncorpus: corpus.jsonl\n")
    assert result.exit_code == 0, result.stderr
    settings = load_settings(tmp_path / "goldwatch.yaml")
    report = run_replay(settings, tmp_path / "q.jsonl", None, tmp_path / "dlq.jsonl")
    labels = report["analytics"]["topic_labels"]
    assert labels and all(name.startswith("topic-") for name in labels)
    assert f"#   topics {len(labels)} (fitted on the gold set)" in result.stderr.splitlines()


def test_gold_ids_missing_from_the_corpus_are_a_note(tmp_path: Path) -> None:
    """Replay and serve say so, eval warns; config check passed silently. Two demo questions
    made to cite ids the demo corpus lacks: a note naming 2 ids of 2 questions, exit 0."""
    rows = [json.loads(line) for line in demo_path("gold.jsonl").read_text("utf-8").splitlines()]
    rows[0]["gold"] = ["p-missing-1"]
    rows[1]["gold"] = ["p-missing-2", *rows[1]["gold"]]
    (tmp_path / "gold.jsonl").write_text(
        "".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8"
    )
    shutil.copy(demo_path("corpus.jsonl"), tmp_path / "corpus.jsonl")
    result = _check(tmp_path, "gold_set: gold.jsonl\ncorpus: corpus.jsonl\n")
    assert result.exit_code == 0, result.stderr
    notes = [line for line in result.stderr.splitlines() if "not in corpus" in line]
    assert len(notes) == 1 and notes[0].startswith("# note: 2 gold id(s) of 2 question(s) ")
    assert "'p-missing-1', 'p-missing-2'" in notes[0]


def test_the_harvest_line_says_where_the_per_batch_bound_applies(tmp_path: Path) -> None:
    """A new user saw ``max_new_per_batch: 48`` in the effective configuration while their
    replay shed nothing: a replay applies the bound only when the configuration sets it. The
    summary says so, and what it says is what replays do: the demo log (3,000 events in
    batches of up to 500) with the default sheds no question; with the bound set to 1 it sheds
    (each full batch holds more than one new question)."""
    shutil.copy(demo_path("gold.jsonl"), tmp_path / "gold.jsonl")
    shutil.copy(demo_path("corpus.jsonl"), tmp_path / "corpus.jsonl")
    base = "gold_set: gold.jsonl\ncorpus: corpus.jsonl\n"
    sheds = {}
    for name, extra in (("default", ""), ("set", "harvest: {max_new_per_batch: 1}\n")):
        result = _check(tmp_path, base + extra)
        assert result.exit_code == 0, result.stderr
        sheds[name] = [line for line in result.stderr.splitlines() if "#   harvest:" in line]
        report = run_replay(
            load_settings(tmp_path / "goldwatch.yaml"),
            demo_path("querylog.jsonl"),
            None,
            tmp_path / f"{name}.dlq.jsonl",
        )
        sheds[name].append(report["gold_candidates"]["shed"])
    assert sheds["default"] == [
        "#   harvest: at most 5000 suggestions held; harvest.max_new_per_batch 48 in serve "
        "(the default; a replay sheds nothing unless it is set)",
        0,
    ]
    assert sheds["set"][0] == (
        "#   harvest: at most 5000 suggestions held; harvest.max_new_per_batch 1 (serve and replay)"
    )
    assert sheds["set"][1] > 0
    off = _check(tmp_path, base + "harvest: {enabled: false}\n")
    assert "#   harvest off (harvest.enabled false)" in off.stderr.splitlines()


@pytest.mark.slow
def test_a_calibrated_detector_line_shows_its_operating_point(tmp_path: Path) -> None:
    """A new user saw config check give the out-of-scope detector's ROC AUC only, where the
    replay report gives its operating point too (TPR, FPR, balanced accuracy at the threshold
    its counts use). The benchmark's production-shaped gold set (100 CLINC150 out-of-scope
    questions as unanswerable rows) calibrates the out-of-scope detector, not novelty (its
    balanced accuracy at its threshold is under the floor); each line carries the figures the
    replay report of the same configuration measured."""
    from benchmarks.bench_production import write_gold_and_corpus

    gold, corpus = write_gold_and_corpus(tmp_path, seed=0)
    result = _check(tmp_path, f"gold_set: {gold}\ncorpus: {corpus}\n")
    assert result.exit_code == 0, result.stderr
    (tmp_path / "q.jsonl").write_text("", encoding="utf-8")
    settings = load_settings(tmp_path / "goldwatch.yaml")
    report = run_replay(settings, tmp_path / "q.jsonl", None, tmp_path / "dlq.jsonl")
    q = report["analytics"]["detector_quality"]["out_of_scope"]
    assert q["uncalibrated"] is None and q["balanced_accuracy"] is not None
    lines = result.stderr.splitlines()
    line = (
        f"#   out_of_scope detector calibrated: ROC AUC {q['auc']:.3f} [{q['auc_low']:.3f}, "
        f"{q['auc_high']:.3f}] on 100 unanswerable / {q['n_pos']} answerable gold questions; "
        f"at its threshold answerable kept in scope {round(q['tpr'] * q['n_pos'])} of "
        f"{q['n_pos']} (TPR {q['tpr']:.3f}); unanswerable judged in scope "
        f"{round(q['fpr'] * 100)} of 100 (FPR {q['fpr']:.3f}); balanced accuracy "
        f"{q['balanced_accuracy']:.3f}"
    )
    assert line in lines
    assert lines[lines.index(line) + 1] == f"#     out-of-scope calibration: {CALIBRATION_LIMIT}"
    novelty = [line for line in result.stderr.splitlines() if "#   novelty detector" in line]
    # novelty's operating point (since trial 15), the replay report's figures: 183 of 477 held
    # out read novel (0.38365 = 183 / 477), 24 of 477 with every topic kept (0.05031)
    # (the production-shaped golden's tpr 0.3836478 and fpr 0.0503145 since the topics are
    # fitted by content in session 48); balanced accuracy (183 / 477 + 1 - 24 / 477) / 2 =
    # 636 / 954 = 0.667, with the FPR at its Wilson bound over 477 (0.0739) 0.655: under 0.68,
    # uncalibrated since the fortieth session (trial t40)
    assert len(novelty) == 1 and novelty[0].startswith(
        "#   novelty detector UNCALIBRATED (its counts are not facts and raise no drift alarm): "
        "novelty balanced accuracy 0.667 at its threshold (gold questions read novel with their "
        "topic held out 183 of 477 (TPR 0.384); read novel with every topic kept 24 of 477 (FPR "
        "0.050); ROC AUC 0.866), 0.655 with its false-positive rate at its Wilson 95 % upper "
        "bound over 477 questions, is below analytics.scope_min_balanced_accuracy 0.68"
    )
    assert novelty[0].endswith(
        "(measured on 477 gold questions, each of 22 topics held out in turn)"
    )
    # so the topic shares are nearest gold topics, and config check says so
    assert any(line.startswith("#   topic shares are by NEAREST gold topic (not facts; ")
               for line in result.stderr.splitlines())  # fmt: skip


@pytest.mark.parametrize(
    ("entrypoint", "problem"),
    [
        ("nomodule:fn", "cannot import 'nomodule' (ModuleNotFoundError"),
        ("service.retrievers.entrypoint:nothing_here",
         "'service.retrievers.entrypoint' has no 'nothing_here'"),
        ("service.retrievers.entrypoint:__doc__", "is neither callable nor has search()"),
    ],
)  # fmt: skip
def test_a_declared_entrypoint_retriever_nothing_uses_is_checked(
    tmp_path: Path, entrypoint: str, problem: str
) -> None:
    """Trial 48 L4: ``entrypoint: nomodule:fn``, declared and used by nothing yet, passed the
    check (exit 0) and ``eval --retriever prod`` then failed. Every declared entrypoint
    retriever is resolved now, the field named."""
    result = _check(tmp_path, "retrievers:\n  - name: prod\n    kind: entrypoint\n"
                              f"    entrypoint: {entrypoint}\n")  # fmt: skip
    assert result.exit_code == 2, result.output
    line = next(x for x in result.stderr.splitlines() if "retrievers[0].entrypoint" in x)
    assert "retrievers[0].entrypoint (prod): " in line and repr(entrypoint) in line, line
    assert problem in line, line


def test_the_entrypoint_check_builds_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A class entry point is imported, not instantiated (its constructor does not run):
    one whose constructor would fail is no problem of the check; a function is none either."""
    from service.cli.config import retriever_problems

    (tmp_path / "t48_heavy.py").write_text(
        "class Index:\n    def __init__(self):\n        raise RuntimeError('built')\n"
        "def top_k(question, k):\n    return []\n", encoding="utf-8")  # fmt: skip
    monkeypatch.syspath_prepend(str(tmp_path))
    config = tmp_path / "goldwatch.yaml"
    config.write_text("retrievers:\n"
                      "  - {name: a, kind: entrypoint, entrypoint: 't48_heavy:Index'}\n"
                      "  - {name: b, kind: entrypoint, entrypoint: 't48_heavy:top_k'}\n"
                      "  - {name: c, kind: entrypoint, entrypoint: 't48_heavy:missing'}\n",
                      encoding="utf-8")  # fmt: skip
    problems = retriever_problems(load_settings(config))
    assert problems == ["retrievers[2].entrypoint (c): entrypoint 't48_heavy:missing': "
                        "'t48_heavy' has no 'missing'"]  # fmt: skip
