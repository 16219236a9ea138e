"""The documentation stays true to the code: the generated references are up to date, and the
README names every command, endpoint, alert and page it should."""

from __future__ import annotations

import doctest
import importlib.util
import re
from types import ModuleType

import pytest
import yaml

from tests.conftest import REPO_ROOT

README = (REPO_ROOT / "README.md").read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def generate() -> ModuleType:
    """``docs/generate.py`` (a script, not a package module)."""
    spec = importlib.util.spec_from_file_location("docs_generate", REPO_ROOT / "docs/generate.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_generated_references_are_up_to_date(generate: ModuleType) -> None:
    stale = [str(path.relative_to(REPO_ROOT)) for path in generate.stale_pages()]
    assert not stale, f"stale: {stale}; run `python docs/generate.py` and commit the result"


def test_generator_doctests(generate: ModuleType) -> None:
    result = doctest.testmod(generate)
    assert result.attempted > 0 and result.failed == 0


def test_configuration_reference_covers_every_settings_field(generate: ModuleType) -> None:
    from service.settings import Settings

    page = generate.configuration_markdown()
    for section in Settings.model_fields:
        assert f"| `{section}` |" in page
    assert "## `analytics.drift`" in page and "## `shadow.candidates[]`" in page
    # a field documented in a base class's docstring (ShadowConfig) keeps its description
    assert "RBO persistence" in page


def test_metrics_reference_lists_what_the_service_exports() -> None:
    from prometheus_client import CollectorRegistry

    from service.telemetry.families import build_all_metrics

    registry = CollectorRegistry()
    build_all_metrics(registry)  # every family, trace ingest included
    page = (REPO_ROOT / "docs/metrics.md").read_text(encoding="utf-8")
    families = {metric.name for metric in registry.collect()}
    assert families
    for family in families:
        assert re.search(rf"`{re.escape(family)}(_total|_info)?`", page), family


def test_readme_names_every_command() -> None:
    from service.cli import main

    for name in main.commands:
        assert f"goldwatch {name}" in README, name


def test_readme_names_every_endpoint() -> None:
    from service.api.app import create_app
    from service.settings import Settings

    paths = create_app(Settings()).openapi()["paths"]
    for path, methods in paths.items():
        shown = path.replace("{candidate_id}", "{id}")
        for method in methods:
            assert re.search(rf"{method.upper()}[^|]*`?{re.escape(shown)}[`?]", README) or (
                f"{method.upper()} {shown}" in README
            ), f"{method.upper()} {path}"


def test_readme_links_the_docs_and_every_alert_has_a_runbook() -> None:
    pages = ("docs/configuration.md", "docs/metrics.md", "docs/runbook.md", "docs/scaling.md",
             "CHANGELOG.md")  # fmt: skip
    for page in pages:
        assert f"({page})" in README and (REPO_ROOT / page).is_file(), page
    rules = yaml.safe_load((REPO_ROOT / "dashboards/rules/goldwatch.rules.yaml").read_text())
    alerts = [r["alert"] for g in rules["groups"] for r in g["rules"] if "alert" in r]
    runbook = (REPO_ROOT / "docs/runbook.md").read_text(encoding="utf-8")
    assert alerts
    for alert in alerts:
        assert alert in README and f"## {alert}" in runbook, alert


def test_readme_first_command_runs_the_demo() -> None:
    first = re.search(r"```bash\n(.*?)\n```", README, re.S)
    assert first is not None
    assert first.group(1).strip().endswith("goldwatch demo --fast")
    assert "python -m pytest -q" in README
    ci = (REPO_ROOT / ".ci/run").read_text(encoding="utf-8")
    assert "python -m pytest -q" in ci
