"""``goldwatch demo``: the embedded demo (a college help bot's 3-day query log), served live
at a paced rate or processed at once (``--fast``). The work is :mod:`service.jobs.demo`'s.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from service.cli.common import (
    FilePath,
    _describe,
    _emit_replay_report,
    _fail,
    _stoppable_start_up,
    html_option,
)


@click.command("demo")
@click.option(
    "--fast",
    is_flag=True,
    help="Process the whole demo log at once (no server), print the report and exit.",
)
@click.option(
    "--rate",
    type=click.FloatRange(min=0, min_open=True),
    default=20.0,
    show_default=True,
    help="Events per second read from the demo log (live mode).",
)
@click.option("--port", type=click.IntRange(0, 65535), default=8000, show_default=True)
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option(
    "--workdir",
    type=FilePath(path_type=Path, file_okay=False),
    default=Path("goldwatch-demo"),
    show_default=True,
    help="Folder for state, dead letters, run history and the gold-set copy.",
)
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text",
              help="Report format (--fast).")  # fmt: skip
@html_option
def demo_command(
    fast: bool, rate: float, port: int, host: str, workdir: Path, fmt: str,
    html_path: Path | None,
) -> None:  # fmt: skip
    """Run goldwatch on the embedded demo: a college help bot's 3-day query log with a planted
    Hinglish rise, exam-schedule rise and refusal jump.

    Live (default): serves the status page at /, /metrics and the API while the log streams
    in at --rate events/s, with the 'hybrid' shadow candidate and harvesting on; prints the
    URLs and a fresh API token (your own GOLDWATCH_API__TOKEN is used instead and not
    printed); Ctrl-C stops it. --fast: everything at once, then the report.
    """
    from service.jobs import demo as demo_job
    from service.settings import ConfigError
    from service.state import StateError

    try:
        if not fast:
            with _stoppable_start_up("demo"):
                code = demo_job.run_live(workdir, rate=rate, host=host, port=port,
                                         echo=lambda text: click.echo(text, err=True))  # fmt: skip
                sys.exit(code)
            return  # stopped during its start-up
        doc = demo_job.run_fast(workdir)
    except ConfigError as exc:
        _fail(str(exc))
        return
    except (demo_job.DemoError, StateError, ValueError, OSError) as exc:
        _fail(_describe(exc))
        return
    _emit_replay_report(doc, fmt, html_path, demo_job.render_fast_text)
