"""Every module of ``service/`` is under the layering contracts of ``pyproject.toml``.

The domain contracts list their modules by name (import-linter has no "all but these"), so a
new top-level module or package would otherwise go unchecked: each must be either in the
domain list of both domain contracts or one of the named outer modules below.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
#: The modules above the domain, each bound by its own contract (layers, telemetry's).
OUTER = {"api", "runtime", "cli", "jobs", "telemetry"}


def _top_level_modules() -> set[str]:
    service = ROOT / "service"
    modules = {p.stem for p in service.glob("*.py") if p.stem != "__init__"}
    packages = {p.parent.name for p in service.glob("*/__init__.py")}
    return modules | packages


def _contracts() -> list[dict[str, object]]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    return list(config["tool"]["importlinter"]["contracts"])


def test_every_service_module_is_domain_or_a_named_outer_module() -> None:
    sources = [[str(m) for m in c.get("source_modules", ())] for c in _contracts()]  # type: ignore[attr-defined]
    domain_lists = [
        {m.removeprefix("service.") for m in listed} - {"telemetry"}
        for listed in sources
        if "service.pipeline" in listed
    ]
    assert len(domain_lists) == 2
    first, second = domain_lists
    assert first == second, first ^ second
    modules = _top_level_modules()
    assert "runtime" in modules and "pipeline" in modules  # the tree was read
    assert modules - OUTER == first, {
        "in no contract": sorted(modules - OUTER - first),
        "listed but absent": sorted(first - (modules - OUTER)),
    }
