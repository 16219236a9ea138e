"""``goldwatch --help`` and a taken port answer at once: the command line loads the heavy
libraries (numpy, scipy, scikit-learn, datasketch, the web server) only in the command that
needs them, and the live demo binds its port before it imports them (issue 18, item 7).

Times are measured, not asserted (see the report of issue 18); these tests check what was
imported, in a fresh interpreter, which is what the time depends on.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path

from tests.cli.goldwatch_cli import clean_env

#: Top-level packages none of which ``--help`` or a taken port may load.
HEAVY = ("numpy", "scipy", "sklearn", "datasketch", "langdetect", "wordllama", "uvicorn",
         "fastapi", "kafka")  # fmt: skip

_PROBE = """
import json, sys
from service.cli import main
try:
    main(sys.argv[1:], prog_name="goldwatch")
except SystemExit as exit:
    code = exit.code
heavy = sorted({m.split(".")[0] for m in sys.modules} & set(json.loads(HEAVY)))
print(json.dumps({"code": code, "heavy": heavy}), file=sys.stderr)
"""


def _probe(args: list[str], cwd: Path) -> dict[str, object]:
    """Run the CLI with ``args`` in a fresh interpreter; its exit code and the heavy
    packages it had imported when it ended."""
    done = subprocess.run(
        [sys.executable, "-c", _PROBE.replace("HEAVY", repr(json.dumps(HEAVY))), *args],
        cwd=cwd, env=clean_env(), capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    result: dict[str, object] = json.loads(done.stderr.strip().splitlines()[-1])
    result["stderr"] = done.stderr
    return result


def test_import_of_the_cli_loads_no_heavy_library(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", "import sys, service.cli; print(' '.join(sorted(sys.modules)))"],
        cwd=tmp_path, env=clean_env(), capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    loaded = {name.split(".")[0] for name in done.stdout.split()}
    assert loaded.isdisjoint(HEAVY), sorted(loaded & set(HEAVY))
    assert "service.settings" not in done.stdout.split()
    # pydantic comes with the settings, in the commands that load them; --n-topics' bounds
    # come from service.topics.bounds, not from the pydantic model (issue 21: --help 0.65 s
    # -> 0.28 s, median wall time on the loaded 2-core machine)
    assert "pydantic" not in loaded


def test_help_loads_no_heavy_library(tmp_path: Path) -> None:
    result = _probe(["--help"], tmp_path)
    assert result["code"] == 0
    assert result["heavy"] == []


def test_taken_port_fails_before_the_heavy_imports(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = str(taken.getsockname()[1])
        for command in (["serve", "--port", port], ["demo", "--port", port]):
            result = _probe(command, tmp_path)
            assert result["code"] == 2, result["stderr"]
            assert f"port {port} is already in use" in str(result["stderr"])
            assert result["heavy"] == [], command


#: What ``goldwatch serve`` imports and builds up to the app, bm25 included (the default
#: configuration builds a BM25 index at start); then what it had imported.
_SERVE_PATH_PROBE = """
import importlib.util, json, sys
import service.cli
from service.api.app import create_app
from service.runtime.process import Runtime
from service.records import Passage
from service.retrievers.registry import build_retrievers
from service.retrievers.bm25 import BM25Retriever
hits = BM25Retriever([Passage("a", "cats purr"), Passage("b", "dogs bark")]).search("dogs", 5)
import bm25s
print(json.dumps({"hits": [doc.doc_id for doc in hits],
                  "numba_installed": importlib.util.find_spec("numba") is not None,
                  "bm25s_numba": bm25s.NUMBA_AVAILABLE,
                  "loaded": sorted({m.split(".")[0] for m in sys.modules})}))
"""


def test_serve_path_does_not_import_numba_nor_kafka(tmp_path: Path) -> None:
    """bm25s imports numba (0.4 s, and numba imports ``coverage`` when installed) though
    goldwatch only runs its numpy backend, and the poll loop needs kafka-python (0.14 s)
    only with a Kafka source: the serve path must load neither (issue 22)."""
    done = subprocess.run(
        [sys.executable, "-c", _SERVE_PATH_PROBE],
        cwd=tmp_path, env=clean_env(), capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["hits"] == ["b"]
    assert result["numba_installed"], "numba is not installed: this test would prove nothing"
    assert result["bm25s_numba"] is False
    assert "numba" not in result["loaded"]
    assert "coverage" not in result["loaded"]
    assert "kafka" not in result["loaded"]
