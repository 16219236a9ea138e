"""``goldwatch replay``: push a whole JSONL query log (or stdin, or the embedded demo log)
through the live pipeline and print the report. The work is :mod:`service.jobs.replay`'s.
"""

from __future__ import annotations

from pathlib import Path

import click

from service.cli.common import (
    UNKEYED_PSEUDONYM_NOTICE,
    FilePath,
    _describe,
    _emit_replay_report,
    _fail,
    _settings,
    _unkeyed_pseudonyms,
    config_option,
    html_option,
)


@click.command("replay")
@config_option
@click.argument(
    "file", type=FilePath(path_type=Path, dir_okay=False, allow_dash=True), required=False
)
@click.option(
    "--state",
    "state_path",
    type=FilePath(path_type=Path, dir_okay=False),
    default=None,
    help="Resume from / checkpoint to this state file (default: none).",
)
@click.option(
    "--dlq",
    "dlq_path",
    type=FilePath(path_type=Path, dir_okay=False),
    default=None,
    help="Dead-letter JSONL (default: <FILE>.replay.dlq.jsonl, emptied first; with --state S, "
    "source.dlq_path or S.dlq.jsonl, appended to (a state from before session 51: the "
    "<FILE>.dlq.jsonl it counts letters in); give each state its own: two states "
    "sharing one can lose or double letters across a kill).",
)
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text")
@html_option
@click.option("--demo", is_flag=True,
              help="Replay the embedded demo log with the demo's configuration, gold set and "
                   "corpus (no FILE).")  # fmt: skip
def replay_command(
    config: Path | None,
    file: Path | None,
    state_path: Path | None,
    dlq_path: Path | None,
    fmt: str,
    html_path: Path | None,
    demo: bool,
) -> None:
    """Process a whole JSONL query log (or - for stdin) with the live pipeline, print the
    report and exit.

    The gold set and corpus are those of the configuration (gold_set:, corpus:); without a
    gold set the gold-set comparisons are off and the report says so first. --demo replays
    the embedded demo log (three days of a college bot's traffic) with the demo's data.
    Without --state every replay starts fresh, and so does its dead-letter file (its own,
    <FILE>.replay.dlq.jsonl: never a file a serve writes); with --state S it appends to the
    state's own S.dlq.jsonl, as serve does.
    """
    from consumers.errors import GoldwatchConsumerError
    from service.demo import demo_data, demo_path
    from service.jobs.replay import render_text, run_replay
    from service.state import StateError

    if demo and file is not None:
        _fail("--demo replays the embedded demo log: leave out FILE (or leave out --demo)")
    if demo:
        file = demo_path("querylog.jsonl")
        dlq_path = dlq_path or Path("goldwatch-demo.dlq.jsonl")
        settings = _settings(config or demo_path("goldwatch.yaml"))
        settings = settings.model_copy(update=demo_data())
    elif file is None:
        _fail("no query log: give FILE (- for stdin), or --demo to replay the embedded demo")
        return
    else:
        settings = _settings(config)
    if state_path is not None and _unkeyed_pseudonyms(settings):
        # the state file keeps the pseudonyms (a trial-11 state held sha256 of an e-mail
        # address): say so as serve and config check do
        click.echo(f"goldwatch: warning: {UNKEYED_PSEUDONYM_NOTICE}", err=True)
    try:
        doc = run_replay(settings, file, state_path, dlq_path)
    except (StateError, ValueError, OSError, GoldwatchConsumerError) as exc:
        _fail(_describe(exc))
        return
    _emit_replay_report(doc, fmt, html_path, render_text)
