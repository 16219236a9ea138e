"""``goldwatch candidates``: harvested gold-question suggestions, read from the state file.

``export`` writes the undecided suggestions, balanced over topics and languages and best first
within each, as gold-set JSONL (``id`` the
suggestion's ``c-…`` id, ``gold: []`` and no ``kind`` until a labeller fills them, ``source``,
``status: "suggested"``, ``reasons``, ``pool``; see :mod:`service.harvest.export`) to
``--out FILE``, or to stdout with ``--out -`` (the summary line then goes to stderr). The
summary line also says, when the state holds shadow candidates' counts, how many events each
had no completed comparison for, by cause (``shadow_not_compared``:
:func:`service.harvest.shed_note.not_compared_note`): none of them could get the reason
``shadow_disagreement`` from that candidate (but those still ``in_flight``), and a ``serve``
under load skips comparisons (``interrupted``, lost at a stop or crash, said apart). The
folder of ``FILE`` must exist (it is not created, as with a shell redirection); an existing
file is replaced. It reads the SQLite state file of ``goldwatch serve`` (or of
``goldwatch replay --state``), which may be running: the file is in WAL mode and only read.
With ``--from-records FILE`` it reads instead the records of the compacted suggestions topic
(one JSON value a line, oldest first, as a console consumer prints them) and merges each
question's records from the replicas (:mod:`service.harvest.merge`: counts summed, reasons
unioned); the topic holds no decisions, so the gold set (``--gold FILE``, else ``gold_set:``
of ``--config``) is read and a suggestion whose question duplicates a gold row by harvest's
rule (:func:`service.harvest.labelling.duplicated_gold_row`, ``harvest.similarity``) is left
out and counted in the summary line: an accepted question is not exported again.
``--skip-writers W1,W2`` leaves out the records of those writer ids before merging. Rejections
are not shared: a question rejected on a replica is exported again. Each (question, writer)
record is summed: a replica that re-read events already counted under an earlier writer id
(new state and offsets reset to earliest) counts them twice (see ``docs/runbook.md``).

Exit codes: 0 success; 2 bad usage, configuration, an unusable state file or an output that
cannot be written (one line on stderr naming the path and the problem).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, NoReturn

import click

from service.cli.common import FilePath

EXIT_USAGE = 2
STDOUT = "-"


def _fail(message: str) -> NoReturn:
    click.echo(f"goldwatch: error: {message}", err=True)
    sys.exit(EXIT_USAGE)


def _check_out(out: str) -> None:
    """Refuse an output path that cannot be a file before any work is done."""
    if out == STDOUT:
        return
    if not out.strip():
        _fail("--out is empty: give a file name, or - for stdout")
    path = Path(out)
    if path.is_dir():
        _fail(f"cannot write {out}: it is a folder")
    if not path.parent.is_dir():
        _fail(f"cannot write {out}: folder {path.parent} does not exist")


@click.group("candidates")
def candidates_group() -> None:
    """Gold-question suggestions harvested from live traffic."""


@candidates_group.command("export")
@click.option(
    "--state",
    "state_path",
    type=FilePath(path_type=Path, dir_okay=False),
    default=None,
    help="State file (default: state.path of the configuration).",
)
@click.option("--config", "config", type=FilePath(path_type=Path, dir_okay=False),
              envvar="GOLDWATCH_CONFIG", default=None, help="YAML configuration file.")  # fmt: skip
@click.option(
    "--from-records",
    "records_path",
    type=FilePath(path_type=Path, dir_okay=False),
    default=None,
    help="JSONL of the suggestions topic's record values (oldest first), merged over "
    "replicas; read instead of a state file.",
)
@click.option(
    "--gold",
    "gold_path",
    type=FilePath(path_type=Path, dir_okay=False),
    default=None,
    help="Gold-set JSONL whose questions --from-records leaves out (default: gold_set of "
    "--config).",
)
@click.option(
    "--skip-writers",
    "skip_writers",
    default="",
    metavar="W1,W2",
    help='With --from-records: leave out the records of these writer ids ("writer" in a '
    "record), e.g. the earlier writers of a replica that re-read from earliest.",
)
@click.option(
    "--limit", type=click.IntRange(min=1), default=None, help="The first N of that order only."
)
@click.option("--out", required=True, metavar="FILE|-",
              help="JSONL file to write (its folder must exist), or - for stdout.")  # fmt: skip
def export_command(
    state_path: Path | None,
    config: Path | None,
    records_path: Path | None,
    gold_path: Path | None,
    skip_writers: str,
    limit: int | None,
    out: str,
) -> None:
    """Write the undecided suggestions as gold-set JSONL to OUT (- for stdout), in the order a
    labeller should take them: balanced over topics and languages (each topic and language in
    turn, best first within each; reason quotas cap any one reason), as the API lists them —
    so priorities do not fall row by row."""
    # imported here, not at the top: `goldwatch --help` must not load them
    from service.harvest.config import HarvestConfig
    from service.harvest.export import export_rows, write_jsonl
    from service.harvest.shed_note import not_compared_note
    from service.harvest.store import StateStoreCandidates
    from service.shadow.not_compared import NOT_COMPARED, from_snapshot
    from service.state import StateError, StateStore

    _check_out(out)
    if records_path is not None and state_path is not None:
        _fail("give --state or --from-records, not both")
    if gold_path is not None and records_path is None:
        _fail("--gold goes with --from-records (a state file holds its decisions)")
    skipped = frozenset(w.strip() for w in skip_writers.split(",") if w.strip())
    if skipped and records_path is None:
        _fail("--skip-writers goes with --from-records")
    harvest = HarvestConfig()
    if (state_path is None and records_path is None) or config is not None:
        from service.settings import ConfigError, load_settings

        try:
            settings = load_settings(config)
        except ConfigError as exc:
            _fail(str(exc))
        harvest = getattr(settings, "harvest", harvest)
        state_path = state_path or settings.state.path
        gold_path = gold_path or settings.gold_set
    note = ""
    if records_path is not None:
        rows, in_gold = _rows_from_records(records_path, harvest, limit, gold_path, skipped)
        note = (f"; {in_gold} left out as already in the gold set {gold_path}"
                if gold_path is not None
                else "; no gold set given (--gold or --config): accepted questions not "
                     "left out")  # fmt: skip
    else:
        assert state_path is not None
        if not state_path.is_file():
            _fail(f"state file not found: {state_path}")
        try:
            with StateStore.open(state_path) as store:
                rows = export_rows(StateStoreCandidates(store), harvest, limit)
                # checkpointed with the suggestions: the comparisons that could not add the
                # reason shadow_disagreement (serve under load skips them; trial 45, L3)
                compared = not_compared_note(
                    {NOT_COMPARED: from_snapshot(store.get("stage/shadow"))}
                )
                note = f"; {compared}" if compared else ""
        except StateError as exc:
            _fail(str(exc))
    target = sys.stdout.buffer if out == STDOUT else Path(out)
    try:
        count = write_jsonl(rows, target)
    except OSError as exc:
        _fail(f"cannot write {'stdout' if out == STDOUT else out}: {exc.strerror or exc}")
    if out == STDOUT:
        click.echo(f"{count} suggestion(s) -> stdout{note}", err=True)
    else:
        click.echo(f"{count} suggestion(s) -> {out}{note}")


def _gold_rows(path: Path) -> list[dict[str, Any]]:
    """The JSON objects of the gold-set JSONL ``path`` (blank lines skipped); exits 2 if it
    cannot be read or a line is not a JSON object."""
    import json

    if not path.is_file():
        _fail(f"gold set not found: {path}")
    try:
        rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()
                if line.strip()]  # fmt: skip
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        _fail(f"cannot read gold set {path}: {exc}")
    if not all(isinstance(row, dict) for row in rows):
        _fail(f"cannot read gold set {path}: a line is not a JSON object")
    return rows


def _rows_from_records(
    path: Path,
    harvest: Any,
    limit: int | None,
    gold_path: Path | None,
    skipped: frozenset[str] = frozenset(),
) -> tuple[list[Any], int]:
    """Export rows from the topic's record values in ``path`` (those of writers in ``skipped``
    left out), merged over replicas, without the questions that duplicate a row of
    ``gold_path``; and how many were left out as in the gold set."""
    import json

    from service.harvest.export import export_rows
    from service.harvest.labelling import duplicated_gold_row
    from service.harvest.merge import merge_records
    from service.harvest.store import MemoryCandidates

    if not path.is_file():
        _fail(f"records file not found: {path}")
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
        records = [json.loads(line) for line in lines if line.strip()]
        records = [r for r in records if str(r.get("writer") or "") not in skipped]
        merged = merge_records(records, harvest.max_variants)
    except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError, AttributeError) as exc:
        _fail(f"cannot read suggestion records from {path}: {exc}")
    gold = _gold_rows(gold_path) if gold_path is not None else []
    kept = [r for r in merged
            if duplicated_gold_row(str(r.get("question", "")), gold, harvest.similarity,
                                   r.get("role")) is None]  # fmt: skip
    repository = MemoryCandidates()
    repository.publish(kept)
    return list(export_rows(repository, harvest, limit)), len(merged) - len(kept)
