"""An ``entrypoint`` retriever in the current folder works in every command (trial 50, H1).

README: an entrypoint retriever is "imported from the current folder or the Python path". Only
``eval`` used to do that; ``config check``, ``replay`` and ``serve`` could not import a module
sitting in the folder they ran from, and a serve whose production retriever was that module
started ready and logged only "gold-set run failed: ValueError".

Each test runs goldwatch the way the installed console script runs it: a launcher file in its
own folder (so ``sys.path[0]`` is that folder, as it is the venv's ``bin`` for the script, not
the current folder; ``python -m`` would put the current folder first and hide the bug), which
adds this checkout to the path and calls :func:`service.cli.main`. The child's environment has
no ``PYTHONPATH``; its current folder is a temp folder holding the retriever's module.

Expected figures, worked out by hand: the module ranks ``p1, p2, p3`` for every question; the
gold set is q1 → p1 and q2 → p2, so recall@1 = (1 + 0) / 2 = 0.5 and MRR = (1/1 + 1/2) / 2 = 0.75.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from tests.ports import free_port

REPO_ROOT = Path(__file__).resolve().parents[2]
TOKEN = "entrypoint-test-token"

MODULE = """\
ORDER = ["p1", "p2", "p3"]


def search(question, k):
    return [(pid, float(len(ORDER) - i)) for i, pid in enumerate(ORDER)][:k]
"""

CORPUS = [
    {"id": "p1", "text": "The library opens at nine in the morning."},
    {"id": "p2", "text": "The autumn term starts on the first of September."},
    {"id": "p3", "text": "The canteen serves lunch from noon."},
]
GOLD = [
    {"id": "q1", "question": "When does the library open?", "gold": ["p1"]},
    {"id": "q2", "question": "When does the autumn term start?", "gold": ["p2"]},
]


def _jsonl(path: Path, rows: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def _launcher(tmp_path: Path) -> Path:
    """A console-script-like launcher in its own folder (not the child's current folder)."""
    folder = tmp_path / "bin"
    folder.mkdir()
    script = folder / "goldwatch"
    script.write_text(
        "import sys\n"
        f"sys.path.insert(1, {str(REPO_ROOT)!r})\n"
        "from service.cli import main\n"
        "sys.exit(main())\n",
        encoding="utf-8",
    )
    return script


def _child_env() -> dict[str, str]:
    """This environment without PYTHONPATH and without GOLDWATCH_* variables."""
    return {
        k: v for k, v in os.environ.items()
        if k != "PYTHONPATH" and not k.startswith("GOLDWATCH_")
    }  # fmt: skip


def _workdir(tmp_path: Path, config: str, module: str = "myretr") -> Path:
    """The user's folder: the retriever module, corpus, gold set and ``goldwatch.yaml``."""
    work = tmp_path / "work"
    work.mkdir()
    (work / f"{module}.py").write_text(MODULE, encoding="utf-8")
    _jsonl(work / "corpus.jsonl", CORPUS)  # type: ignore[arg-type]
    _jsonl(work / "gold.jsonl", GOLD)  # type: ignore[arg-type]
    (work / "goldwatch.yaml").write_text(
        "gold_set: gold.jsonl\ncorpus: corpus.jsonl\nanalytics: {enabled: false}\n"
        f"state: {{path: {work / 'state' / 'state.sqlite'}}}\n" + config,
        encoding="utf-8",
    )
    return work


def _run(tmp_path: Path, work: Path, args: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(_launcher(tmp_path)), *args], cwd=work, env=_child_env(),
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip


CANDIDATE = """\
retrievers:
  - {name: mine, kind: entrypoint, entrypoint: "myretr:search"}
shadow:
  production: bm25
  candidates:
    - {name: mine, retriever: mine, sample_rate: 1.0}
"""


@pytest.mark.slow
def test_config_check_imports_the_module_from_the_current_folder(tmp_path: Path) -> None:
    work = _workdir(tmp_path, CANDIDATE)
    result = _run(tmp_path, work, ["config", "check", "--config", "goldwatch.yaml"])
    assert result.returncode == 0, result.stdout + result.stderr
    assert "cannot import" not in result.stdout + result.stderr


@pytest.mark.slow
def test_replay_runs_the_module_as_a_shadow_candidate(tmp_path: Path) -> None:
    work = _workdir(tmp_path, CANDIDATE)
    events = [
        {"event_id": f"e{i}", "timestamp": f"2026-11-20T10:0{i}:00Z", "question": row["question"],
         "retrieval": {"retriever": "prod", "results": [{"id": "p1", "score": 1.0, "rank": 1}]}}
        for i, row in enumerate(GOLD)
    ]  # fmt: skip
    _jsonl(work / "events.jsonl", events)  # type: ignore[arg-type]
    result = _run(
        tmp_path, work,
        ["replay", "events.jsonl", "--config", "goldwatch.yaml", "--format", "json"],
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    assert (doc["consumed"], doc["processed"]) == (2, 2)
    assert "mine" in json.dumps(doc["shadow"])


def _serve(tmp_path: Path, work: Path) -> tuple[subprocess.Popen[bytes], str, Path]:
    port = free_port()
    with (work / "goldwatch.yaml").open("a", encoding="utf-8") as config:
        config.write(
            f"source: {{kind: none}}\napi: {{host: 127.0.0.1, port: {port}, token: {TOKEN}}}\n"
        )
    log = tmp_path / "serve.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [sys.executable, str(_launcher(tmp_path)), "-v", "serve", "--config",
             "goldwatch.yaml"],
            cwd=work, env=_child_env(), stdout=out, stderr=subprocess.STDOUT,
        )  # fmt: skip
    return process, f"http://127.0.0.1:{port}", log


def _gold_run(process: subprocess.Popen[bytes], base: str, log: Path) -> dict[str, object]:
    """Wait for readiness, start a gold-set run, wait for it to end; its status."""
    auth = {"Authorization": f"Bearer {TOKEN}"}
    with httpx.Client(base_url=base, timeout=10, headers=auth) as client:
        deadline = time.monotonic() + 180
        while True:
            assert process.poll() is None, log.read_text(errors="replace")
            assert time.monotonic() < deadline, "never ready: " + log.read_text(errors="replace")
            try:
                if client.get("/readyz").status_code == 200:
                    break
            except httpx.TransportError:
                pass
            time.sleep(0.1)
        assert client.post("/v1/shadow/evaluate").status_code == 202
        while True:
            status = client.get("/v1/shadow/evaluate").json()
            if not status["running"] and (status["runs"] or status["last_error"]):
                return dict(status)
            assert time.monotonic() < deadline, "gold run never ended: " + log.read_text()
            time.sleep(0.1)


def _stop(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    try:
        process.wait(timeout=60)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


PRODUCTION = """\
retrievers:
  - {name: prod, kind: entrypoint, entrypoint: "myretr:search"}
shadow:
  production: prod
"""


@pytest.mark.slow
def test_serve_gold_run_of_the_module_as_production(tmp_path: Path) -> None:
    work = _workdir(tmp_path, PRODUCTION)
    process, base, log = _serve(tmp_path, work)
    try:
        status = _gold_run(process, base, log)
    finally:
        _stop(process)
    assert status["last_error"] is None, log.read_text()
    latest = status["latest"]
    assert isinstance(latest, dict)
    overall = latest["retrievers"]["prod"]["overall"]
    assert overall["recall@1"] == pytest.approx(0.5)
    assert overall["mrr"] == pytest.approx(0.75)


@pytest.mark.slow
def test_serve_gold_run_failure_names_the_retriever_and_the_import_problem(
    tmp_path: Path,
) -> None:
    # the module is named in the config but absent from the folder
    work = _workdir(tmp_path, PRODUCTION, module="someothername")
    process, base, log = _serve(tmp_path, work)
    try:
        status = _gold_run(process, base, log)
    finally:
        _stop(process)
    assert status["last_error"] == "ValueError"
    lines = [x for x in log.read_text().splitlines() if "gold-set run failed" in x]
    assert len(lines) == 1, log.read_text()
    assert "retriever 'prod' failed while loading: ValueError" in lines[0]
    assert "cannot import 'myretr'" in lines[0] and "ModuleNotFoundError" in lines[0]
