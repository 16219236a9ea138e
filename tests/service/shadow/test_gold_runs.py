"""Gold-set runs of production and the candidates: hand-worked scores, ACL as the row's role,
paired comparison, history, the background runner and the gauges it feeds."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from service.settings import Settings, load_settings
from service.shadow.gold_runs import GoldRuns, failure_line, run_gold_set
from service.telemetry import build_shadow_metrics

# Fixed rankings, best first, by question text.
PROD = {"fee due?": ["p1", "p3"], "hostel rules?": ["p2", "p3"], "weather?": ["p2"]}
CAND = {"fee due?": ["p3", "p1"], "hostel rules?": ["p3", "p2"], "weather?": []}


def production(question: str, k: int) -> list[tuple[str, float]]:
    return [(pid, 10.0 - i) for i, pid in enumerate(PROD[question][:k])]


def candidate(question: str, k: int) -> list[tuple[str, float]]:
    return [(pid, 10.0 - i) for i, pid in enumerate(CAND[question][:k])]


def _write(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    corpus = _write(tmp_path / "corpus.jsonl", [
        {"id": "p1", "text": "fees are due on the tenth", "acl": ["staff"]},
        {"id": "p2", "text": "hostel gates close at ten"},
        {"id": "p3", "text": "fees can be paid online"},
    ])  # fmt: skip
    gold = _write(tmp_path / "gold.jsonl", [
        {"id": "q1", "question": "fee due?", "gold": ["p1", "p3"], "kind": "multi-passage",
         "role": "student"},
        {"id": "q2", "question": "hostel rules?", "gold": ["p3"], "kind": "plain"},
        {"id": "q3", "question": "weather?", "gold": [], "kind": "unanswerable"},
    ])  # fmt: skip
    mod = __name__
    return load_settings(
        gold_set=gold, corpus=corpus,
        retrievers=[{"name": "prod", "kind": "entrypoint", "entrypoint": f"{mod}:production"},
                    {"name": "cand", "kind": "entrypoint", "entrypoint": f"{mod}:candidate"}],
        eval={"k": [1, 2], "depth": 2, "history": str(tmp_path / "runs.jsonl"), "misses": None},
        shadow={"production": "prod", "candidates": [{"name": "new", "retriever": "cand"}],
                "history": str(tmp_path / "runs.jsonl")},
    )  # fmt: skip


def test_scores_by_kind_match_hand_worked_values(settings: Settings) -> None:
    run = run_gold_set(settings, "test")
    prod, new = run["retrievers"]["prod"], run["retrievers"]["new"]
    assert (prod["role"], new["role"], new["retriever"]) == ("production", "candidate", "cand")
    # prod: q1 finds p1 at 1 and p3 at 2; q2 finds p3 at 2 only.
    # recall@1 = (1/2 + 0) / 2; recall@2 = (1 + 1) / 2; MRR = (1 + 1/2) / 2.
    assert prod["by_kind"]["all"]["recall@1"] == pytest.approx(0.25)
    assert prod["by_kind"]["all"]["recall@2"] == pytest.approx(1.0)
    assert prod["by_kind"]["all"]["mrr"] == pytest.approx(0.75)
    assert prod["by_kind"]["plain"]["hit_rate@1"] == 0.0
    assert prod["by_kind"]["multi-passage"]["recall@1"] == pytest.approx(0.5)
    # cand: q1 p3 then p1 -> recall@1 1/2, RR 1; q2 p3 first -> recall@1 1, RR 1.
    assert new["by_kind"]["all"]["recall@1"] == pytest.approx(0.75)
    assert new["by_kind"]["all"]["mrr"] == pytest.approx(1.0)
    assert prod["n_by_kind"] == {"all": 2, "multi-passage": 1, "plain": 1}
    assert run["gold_set"]["n_unanswerable"] == 1


def test_role_rows_are_evaluated_as_their_role(settings: Settings) -> None:
    run = run_gold_set(settings)
    # q1 is asked as a student; p1 is staff-only and both retrievers return it in the top 2.
    for label in ("prod", "new"):
        acl = run["retrievers"][label]["acl"]
        assert acl["n"] == 1 and acl["by_role"] == {"student": 1}
        assert acl["questions"] == [{"id": "q1", "role": "student", "passages": ["p1"]}]


def test_paired_comparison_is_candidate_minus_production(settings: Settings) -> None:
    run = run_gold_set(settings)
    rows = {row["metric"]: row for row in run["comparisons"]["new"]}
    assert set(rows) == {"recall@1", "recall@2", "mrr"}
    r1 = rows["recall@1"]
    assert (r1["a"], r1["b"], r1["n"]) == ("prod", "new", 2)
    assert r1["mean_diff"] == pytest.approx(0.5)  # q1: 0 change, q2: 0 -> 1
    assert (r1["wins"], r1["losses"], r1["ties"]) == (1, 0, 1)


def test_history_gets_one_row_per_retriever(settings: Settings, tmp_path: Path) -> None:
    run_gold_set(settings, "schedule")
    rows = [json.loads(line) for line in (tmp_path / "runs.jsonl").read_text().splitlines()]
    assert [r["retriever"] for r in rows] == ["prod", "new"]
    assert rows[0]["metrics"]["mrr"] == pytest.approx(0.75)


def test_nothing_to_run_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="no retriever"):
        run_gold_set(load_settings(state={"path": tmp_path / "state.sqlite"}))


def test_history_defaults_to_the_state_folder(settings: Settings, tmp_path: Path) -> None:
    state = tmp_path / "state" / "state.sqlite"
    shadow = settings.shadow.model_copy(update={"history": None})
    moved = settings.model_copy(
        update={"shadow": shadow, "state": settings.state.model_copy(update={"path": state})}
    )
    run_gold_set(moved)
    history = state.parent / "gold-runs.jsonl"
    assert len(history.read_text().splitlines()) == 2
    assert history.stat().st_mode & 0o777 == 0o600  # private, as the state folder's files


def test_background_run_feeds_the_gauges(settings: Settings) -> None:
    registry = CollectorRegistry()
    metrics = build_shadow_metrics(
        registry, candidates=["new"], production="prod", role_labels=["staff", "student"]
    )
    runs = GoldRuns(settings, on_run=metrics.observe_gold_run)
    assert runs.start() and runs.wait(30)
    assert runs.latest is not None and runs.runs == 1 and runs.last_error is None
    value = registry.get_sample_value
    assert value("goldwatch_gold_recall", {"retriever": "prod", "k": "1", "kind": "all"}) == 0.25
    assert value("goldwatch_gold_mrr", {"retriever": "new", "kind": "all"}) == 1.0
    assert value("goldwatch_gold_hit_rate",
                 {"retriever": "prod", "k": "1", "kind": "plain"}) == 0.0  # fmt: skip
    assert value("goldwatch_gold_acl_violations", {"retriever": "new", "role": "student"}) == 1


def test_a_failed_run_is_reported_not_raised(settings: Settings) -> None:
    failures: list[str] = []

    def broken(settings: Settings, trigger: str) -> dict[str, Any]:
        raise OSError("disk full")

    runs = GoldRuns(settings, on_failure=failures.append, runner=broken)
    assert runs.start() and runs.wait(10)
    assert failures == ["OSError"] and runs.last_error == "OSError" and runs.latest is None


def leaky(question: str, k: int) -> list[tuple[str, float]]:
    raise KeyError(question)  # a user's retriever whose error carries the question


def _failure(settings: Settings, **changes: Any) -> BaseException:
    changed = settings.model_copy(update=changes)
    with pytest.raises(Exception) as caught:
        run_gold_set(changed, "test")
    return caught.value


def test_failure_line_of_a_retriever_failing_on_a_question_keeps_only_classes(
    settings: Settings,
) -> None:
    retrievers = [r.model_copy(update={"entrypoint": f"{__name__}:leaky"}) if r.name == "cand"
                  else r for r in settings.retrievers]  # fmt: skip
    line = failure_line(_failure(settings, retrievers=retrievers))
    # prod answers; cand raises KeyError("fee due?") on the first question, wrapped by the
    # entrypoint retriever: names and classes only, never the question
    assert line == "retriever 'cand' failed while retrieving: RetrieverError (cause: KeyError)"


def test_failure_line_of_an_unimportable_retriever_gives_the_import_message(
    settings: Settings,
) -> None:
    retrievers = [r.model_copy(update={"entrypoint": "no_such_module_s50:search"})
                  if r.name == "prod" else r for r in settings.retrievers]  # fmt: skip
    line = failure_line(_failure(settings, retrievers=retrievers))
    assert line == (
        "retriever 'prod' failed while loading: ValueError: entrypoint "
        "'no_such_module_s50:search': cannot import 'no_such_module_s50' "
        "(ModuleNotFoundError: No module named 'no_such_module_s50')"
    )


def test_failure_line_outside_a_retriever_is_the_class_only() -> None:
    try:
        try:
            raise KeyError("user text")
        except KeyError as inner:
            raise OSError("disk full: user text") from inner
    except OSError as exc:
        assert failure_line(exc) == "OSError (cause: KeyError)"
    assert failure_line(ValueError("user text")) == "ValueError"


def test_one_run_at_a_time(settings: Settings) -> None:
    import threading

    gate = threading.Event()

    def slow(settings: Settings, trigger: str) -> dict[str, Any]:
        gate.wait(10)
        return {"retrievers": {}}

    runs = GoldRuns(settings, runner=slow)
    assert runs.start()
    assert not runs.start()  # the second request is refused while the first runs
    gate.set()
    assert runs.wait(10) and runs.runs == 1


def test_close_waits_for_the_run_in_progress_and_refuses_new_ones(settings: Settings) -> None:
    import threading

    gate, entered = threading.Event(), threading.Event()

    def slow(settings: Settings, trigger: str) -> dict[str, Any]:
        entered.set()
        gate.wait(10)
        return {"retrievers": {}, "trigger": trigger}

    runs = GoldRuns(settings, runner=slow)
    assert runs.start() and entered.wait(10)
    assert not runs.close(0.05) and runs.running  # outlived the wait: abandoned, said so
    assert not runs.start()  # stopped: no new run, even with none in progress later
    threading.Timer(0.2, gate.set).start()
    assert runs.close(10) and not runs.running
    assert runs.runs == 1 and runs.latest == {"retrievers": {}, "trigger": "on_demand"}
    assert not runs.start()


#: A gold-set run whose runner sits in scipy's pybind11 kernel (the GIL released) when the
#: process exits; ``close`` must keep the interpreter from finalising under it.
EXIT_DURING_RUN = """
import sys, threading
import numpy as np
from scipy.spatial.distance import cdist
from service.settings import load_settings
from service.shadow.gold_runs import GoldRuns

a = np.random.default_rng(0).random((1500, 64))
started = threading.Event()

def runner(settings, trigger):
    started.set()
    for _ in range(12):
        cdist(a, a, "sqeuclidean")
    return {"retrievers": {}}

settings = load_settings(gold_set=sys.argv[1], corpus=sys.argv[2],
    retrievers=[{"name": "prod", "kind": "entrypoint", "entrypoint": "os:getcwd"}],
    shadow={"production": "prod"})
runs = GoldRuns(settings, runner=runner)
assert runs.start() and started.wait(10)
assert runs.close(60) and runs.runs == 1
print("exited cleanly")
"""


def test_the_process_exits_cleanly_when_stopped_during_a_run(tmp_path: Path) -> None:
    # Without the wait in close, 4 of 5 such exits aborted on this machine ("terminate called
    # without an active exception", status -6): Python 3.11 ends a daemon thread that wants
    # the GIL back after finalisation with pthread_exit, fatal inside pybind11's noexcept
    # GIL guard. This is how the live demo once failed in CI when stopped after
    # POST /v1/shadow/evaluate.
    import subprocess
    import sys

    corpus = _write(tmp_path / "corpus.jsonl", [{"id": "p1", "text": "fees"}])
    gold = _write(tmp_path / "gold.jsonl",
                  [{"id": "q1", "question": "fee?", "gold": ["p1"], "kind": "plain"}])  # fmt: skip
    root = Path(__file__).resolve().parents[3]
    for _ in range(3):
        done = subprocess.run(
            [sys.executable, "-c", EXIT_DURING_RUN, str(gold), str(corpus)],
            capture_output=True, text=True, timeout=120, cwd=root,
        )  # fmt: skip
        assert (done.returncode, done.stdout.strip()) == (0, "exited cleanly"), done.stderr[-2000:]
