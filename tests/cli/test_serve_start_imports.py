"""What ``goldwatch serve``'s start imports before its first batch (issue 22, item 4: start-up
to ready ≤ 3 s with the defaults).

``serve`` is ready once its pipeline is loaded (:meth:`service.runtime.process.Runtime.load`),
and the time to ready is mostly imports. These modules are not needed before the first
batch, so a module-level import of one of them anywhere on that path costs every start:

* ``scipy.stats`` (~0.5 s: scipy parses its docstrings at import): the drift tests, the
  over-time paired tests and the exact term test import it where they run, at a window's
  close, not at start;
* ``httpx`` (~0.1 s, with ``rich`` and ``pygments`` for its command line): only a retriever
  of kind ``http`` needs it;
* ``sklearn`` and ``pandas`` (scikit-learn imports pandas when it is installed, and
  ``scipy.stats`` and ``rich``): only a fit needs them, and a start that reads every fit
  from the model cache (warm) makes none — nor do its first batches: the out-of-scope
  detector read back is scored from its regression's arrays with numpy alone;
* the personal-name cues' patterns (:mod:`service.pii.names`, 0.17 s of CPU to compile):
  compiled on the first text through the names gate.

Measured here in a fresh interpreter by what was imported (times are in
``docs/scaling.md``), as ``tests/cli/test_lazy_imports.py`` does for ``--help``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from service.demo import demo_data, demo_path
from tests.cli.goldwatch_cli import clean_env

#: Modules no start may import before its first batch (a fit's scikit-learn brings
#: ``scipy.stats`` and ``rich``, but never these).
NEVER = ("httpx", "pygments")
#: Modules a start that fits nothing (analytics off, or every fit read from the model
#: cache) may not import before its first batch either.
NOT_WITHOUT_FITS = (*NEVER, "rich", "scipy.stats", "sklearn", "pandas")

#: ``goldwatch serve``'s start in the order :func:`service.cli.serve._serve` runs it, up to
#: the loaded pipeline (no port, no first batch); then what was imported and whether any
#: name pattern was compiled.
_PROBE = """
import json, sys
from service.api import listen
from service.api.app import create_app
from service.api.serving import GracefulServer, server_config, shutdown_problem
from service.cli.common import _settings
from service.runtime.process import Runtime
from service.settings.checks import dead_letter_problems, secret_problems, state_problems
from service.state import StateError
import service.pii.names as names

settings = _settings(sys.argv[1])
runtime = Runtime(settings, defer=True)
create_app(settings, runtime)
runtime.load()
compiled = sorted(name for name, value in vars(names).items()
                  if isinstance(value, names._LazyPattern) and value._compiled is not None)
loaded = sorted(sys.modules)
batch = []
if sys.argv[2:] == ["first-batch"]:  # then the consumer, until its first batch is counted
    import time

    runtime.start()
    deadline = time.monotonic() + 120
    while not runtime.engine.totals_view()["processed"] and time.monotonic() < deadline:
        if runtime.last_error:
            raise SystemExit(runtime.last_error)
        time.sleep(0.01)
    runtime.stop()
    assert runtime.engine.totals_view()["processed"], "no batch counted in 120 s"
    batch = sorted(sys.modules)
runtime.state.close()
print(json.dumps({"modules": loaded, "compiled": compiled, "batch": batch}))
"""


def _config(tmp_path: Path, analytics: bool) -> Path:
    """The defaults on the demo data (file source: the demo log), as the start-up benchmark
    runs them; analytics off when asked."""
    config: dict[str, object] = {key: str(path) for key, path in demo_data().items()}
    config["source"] = {"kind": "file", "path": str(demo_path("querylog.jsonl")),
                        "dlq_path": str(tmp_path / "dlq.jsonl")}  # fmt: skip
    config["state"] = {"path": str(tmp_path / "state" / "goldwatch.sqlite")}
    if not analytics:
        config["analytics"] = {"enabled": False}
    path = tmp_path / "goldwatch.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    return path


def _start(config: Path, first_batch: bool = False) -> dict[str, list[str]]:
    """Run :data:`_PROBE` on ``config`` in a fresh interpreter (with ``first_batch``, also
    the consumer until its first batch is counted: ``batch``, what was imported by then)."""
    extra = ["first-batch"] if first_batch else []
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, str(config), *extra], cwd=config.parent, env=clean_env(),
        capture_output=True, text=True, timeout=240, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    result: dict[str, list[str]] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def _imported(result: dict[str, list[str]], names: tuple[str, ...]) -> list[str]:
    """Which of ``names`` (a package or a module) the start imported."""
    return sorted(set(names) & set(result["modules"]))


def test_start_without_analytics_imports_no_heavy_module(tmp_path: Path) -> None:
    result = _start(_config(tmp_path, analytics=False))
    assert "service.runtime.process" in result["modules"]  # the probe ran the start
    assert _imported(result, NOT_WITHOUT_FITS) == []
    assert result["compiled"] == []


@pytest.mark.slow
def test_default_start_imports_no_heavy_module_before_its_first_batch(tmp_path: Path) -> None:
    config = _config(tmp_path, analytics=True)
    cold = _start(config)  # every model fitted (scikit-learn needed), the cache filled
    assert "sklearn" in cold["modules"]  # the probe did fit: else the warm start proves nothing
    assert _imported(cold, NEVER) == []
    assert cold["compiled"] == []
    for stale in (tmp_path / "state").glob("goldwatch.sqlite*"):  # a restart: cache kept
        stale.unlink()
    warm = _start(config, first_batch=True)
    assert _imported(warm, NOT_WITHOUT_FITS) == []
    assert warm["compiled"] == []
    # nor its first batches: the out-of-scope detector read back scores with numpy alone
    # (its regression's arrays kept in the model cache: service.refusals.scope.LinearScope),
    # so scikit-learn (and pandas, which it pulls in) is imported only by a fit
    assert "service.refusals.scope" in warm["batch"]  # the batch did run the analytics
    assert sorted(set(warm["batch"]) & {"sklearn", "pandas", *NEVER}) == []
