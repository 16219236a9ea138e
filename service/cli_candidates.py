"""``goldwatch candidates``: harvested gold-question suggestions, read from the state file.

``export`` writes the undecided suggestions, best first, as gold-set JSONL (``gold: []``,
``source``, ``status: "suggested"``, ``reasons``, ``pool``; see :mod:`service.harvest.export`).
It reads the SQLite state file of ``goldwatch serve`` (or of ``goldwatch replay --state``),
which may be running: the file is in WAL mode and only read.

Exit codes: 0 success; 2 bad usage, configuration or an unusable state file.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from service.harvest.config import HarvestConfig
from service.harvest.export import export_rows, write_jsonl
from service.harvest.store import StateStoreCandidates
from service.state import StateError, StateStore

EXIT_USAGE = 2


def _fail(message: str) -> None:
    click.echo(f"goldwatch: error: {message}", err=True)
    sys.exit(EXIT_USAGE)


@click.group("candidates")
def candidates_group() -> None:
    """Gold-question suggestions harvested from live traffic."""


@candidates_group.command("export")
@click.option(
    "--state",
    "state_path",
    type=click.Path(path_type=Path, dir_okay=False),
    default=None,
    help="State file (default: state.path of the configuration).",
)
@click.option("--config", "config", type=click.Path(path_type=Path, dir_okay=False),
              envvar="GOLDWATCH_CONFIG", default=None, help="YAML configuration file.")  # fmt: skip
@click.option("--limit", type=click.IntRange(min=1), default=None, help="Best N only.")
@click.option("--out", type=click.Path(path_type=Path, dir_okay=False), required=True)
def export_command(
    state_path: Path | None, config: Path | None, limit: int | None, out: Path
) -> None:
    """Write the undecided suggestions as gold-set JSONL to OUT, best first."""
    harvest = HarvestConfig()
    if state_path is None or config is not None:
        from service.settings import ConfigError, load_settings

        try:
            settings = load_settings(config)
        except ConfigError as exc:
            _fail(str(exc))
            return
        harvest = getattr(settings, "harvest", harvest)
        state_path = state_path or settings.state.path
    if not state_path.is_file():
        _fail(f"state file not found: {state_path}")
        return
    try:
        with StateStore.open(state_path) as store:
            rows = export_rows(StateStoreCandidates(store), harvest, limit)
    except StateError as exc:
        _fail(str(exc))
        return
    out.parent.mkdir(parents=True, exist_ok=True)
    count = write_jsonl(rows, out)
    click.echo(f"{count} suggestion(s) -> {out}")
