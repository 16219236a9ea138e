"""Generate the Grafana dashboards and copy them, with the rules, into the Helm chart.

    python dashboards/generate.py           # write dashboards/*.json and the chart's copies
    python dashboards/generate.py --check   # exit 1 if any written file would change

The dashboards are code (like kubernetes-mixin's jsonnet): panels are declared below with their
query, unit and description, and written as Grafana JSON (schemaVersion 39) with a `datasource`
variable — no data source uid is hard-coded. Helm's ``.Files`` cannot read outside the chart,
so the chart keeps byte copies (``helm/goldwatch/dashboards/*.json``,
``helm/goldwatch/files/goldwatch.rules.yaml``); ``tests/ops`` checks they match.

Only the standard library is used, so CI and a laptop produce the same bytes.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
CHART = ROOT / "helm" / "goldwatch"
RULES = HERE / "rules" / "goldwatch.rules.yaml"

#: Dashboard file name -> "module:function" building it (modules of this folder).
DASHBOARDS = {
    "goldwatch-overview.json": "dashboards.overview:dashboard",
    "goldwatch-retrieval.json": "dashboards.retrieval:dashboard",
}


def _builder(spec: str) -> Callable[[], dict[str, Any]]:
    import importlib

    module, _, name = spec.partition(":")
    return getattr(importlib.import_module(module), name)  # type: ignore[no-any-return]


def rendered() -> Iterator[tuple[Path, bytes]]:
    """Every generated file and its bytes: the dashboards and the chart's copies."""
    for name, spec in DASHBOARDS.items():
        data = (json.dumps(_builder(spec)(), indent=2, ensure_ascii=False) + "\n").encode()
        yield HERE / name, data
        yield CHART / "dashboards" / name, data
    yield CHART / "files" / RULES.name, RULES.read_bytes()


def main(argv: list[str]) -> int:
    """Write (or with ``--check`` only compare) every generated file; 1 if any was stale."""
    check = "--check" in argv
    stale = []
    for path, data in rendered():
        if path.exists() and path.read_bytes() == data:
            continue
        stale.append(path.relative_to(ROOT))
        if not check:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
    for path in stale:
        print(f"{'stale' if check else 'wrote'}: {path}")
    return 1 if check and stale else 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    sys.exit(main(sys.argv[1:]))
