"""The HTML reports in a real browser: headless Chromium (Debian's ``chromium``) loads each page
from ``file://``, with no console message (the pages run no script, so any console line is a
failure), a DOM with every section and chart, and a screenshot kept as a CI artefact.

Pages: ``goldwatch eval --html`` and ``goldwatch replay --html`` on the embedded demo data
(through the real CLI), the status page on the replay's analytics, and the hand-built samples
of ``tests/service/html`` whose questions plant ``<script>console.error(...)</script>``.

Screenshots and pages go to ``$GOLDWATCH_ARTEFACTS`` (default: a pytest temporary folder).
Without Chromium the test is skipped, except under ``CI=true``, where it fails.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import struct
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from service.html import render_eval_html, render_replay_html, render_status_page
from tests.service.html import samples
from tests.service.html.structure import external, parse

BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
WIDTH, HEIGHT = 1280, 2400
#: A console line in Chromium's stderr log: ``...:INFO:CONSOLE:1] "msg", source: ...`` (newer)
#: or ``...:INFO:CONSOLE(1)] "msg", source: ...`` (older).
CONSOLE = re.compile(r":CONSOLE(?::\d+|\(\d+\))\]\s*(.*)")
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
STATUS = {
    "version": "test",
    "ready": True,
    "not_ready_reasons": [],
    "uptime_s": 5.0,
    "source_kind": "file",
    "source": {"path": "querylog.jsonl", "at_eof": True},
    "input_finished": True,
    "totals": {"consumed": 3000, "processed": 3000},
    "last_error": None,
}


@dataclass(frozen=True)
class Loaded:
    console: list[str]  # console messages logged while loading
    dom: str  # the DOM Chromium built (--dump-dom)


@pytest.fixture(scope="module")
def chromium() -> str:
    for name in BROWSERS:
        path = shutil.which(name)
        if path:
            return path
    message = "headless Chromium not found: apt-get install -y chromium"
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(message)
    pytest.skip(message)


@pytest.fixture(scope="module")
def artefacts(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = os.environ.get("GOLDWATCH_ARTEFACTS")
    path = Path(root) if root else tmp_path_factory.mktemp("artifacts")
    path.mkdir(parents=True, exist_ok=True)
    return path


@pytest.fixture(scope="module")
def pages(artefacts: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Write every page under test into ``artefacts`` and return them by name."""
    work = tmp_path_factory.mktemp("cli")
    cli = [sys.executable, "-m", "service.cli"]
    for args in (
        [
            "eval",
            "--demo",
            "--no-progress",
            "--compare",
            "bm25",
            "hybrid",
            "--html",
            str(artefacts / "eval.html"),
        ],
        ["replay", "--demo", "--format", "json", "--html", str(artefacts / "replay.html")],
    ):
        result = subprocess.run(
            [*cli, *args], cwd=work, capture_output=True, text=True, timeout=600, check=False
        )
        assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    written = {
        "status.html": render_status_page(STATUS, report["analytics"]),
        "sample-eval.html": render_eval_html(samples.eval_outcome()),
        "sample-replay.html": render_replay_html(samples.replay_report(series=True)),
    }
    for name, page in written.items():
        (artefacts / name).write_text(page, encoding="utf-8")
    names = ["eval.html", "replay.html", *written]
    return {name.removesuffix(".html"): artefacts / name for name in names}


def load(chromium: str, page: Path, profile: Path, screenshot: Path | None = None) -> Loaded:
    """Open ``page`` in headless Chromium: dump its DOM and collect console messages; also
    take a screenshot when asked."""
    base = [
        chromium,
        "--headless",
        "--disable-gpu",
        "--no-sandbox",
        "--no-first-run",
        "--disable-dev-shm-usage",
        "--hide-scrollbars",
        f"--user-data-dir={profile}",
        "--enable-logging=stderr",
        "--v=0",
        f"--window-size={WIDTH},{HEIGHT}",
    ]
    console: list[str] = []
    runs = [["--dump-dom"]] + ([[f"--screenshot={screenshot}"]] if screenshot else [])
    dom = ""
    for extra in runs:
        result = subprocess.run(
            [*base, *extra, page.resolve().as_uri()],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert result.returncode == 0, result.stderr[-2000:]
        console += [m.group(1) for m in map(CONSOLE.search, result.stderr.splitlines()) if m]
        dom = dom or result.stdout
    return Loaded(console, dom)


def png_size(path: Path) -> tuple[int, int]:
    """Width and height from a PNG's IHDR chunk."""
    head = path.read_bytes()[:24]
    assert head[:8] == PNG_MAGIC, f"{path} is not a PNG"
    return struct.unpack(">II", head[16:24])


def test_harness_sees_console_errors(chromium: str, tmp_path: Path) -> None:
    """The check below means something: the planted question, unescaped, does log."""
    page = tmp_path / "planted.html"
    page.write_text(f"<!DOCTYPE html><html><body><p>{samples.PLANTED}</p></body></html>")
    loaded = load(chromium, page, tmp_path / "profile")
    assert any('"planted"' in line for line in loaded.console), loaded.console


@pytest.mark.parametrize(
    ("name", "sections"),
    [
        ("eval", ["overall", "curves", "breakdown", "misses", "unanswerable", "comparison"]),
        ("replay", ["ingest", "languages", "topics", "drift", "refusals"]),
        ("status", ["moved", "languages", "topics", "drift", "refusals"]),
        (
            "sample-eval",
            ["overall", "curves", "breakdown", "misses", "unanswerable", "comparison"],
        ),  # fmt: skip
        (
            "sample-replay",
            ["ingest", "languages", "topics", "drift", "refusals", "shadow", "gold-candidates"],
        ),
    ],
)
def test_page_loads_clean_with_every_section(
    chromium: str,
    pages: dict[str, Path],
    artefacts: Path,
    tmp_path: Path,
    name: str,
    sections: list[str],
) -> None:
    source = parse(pages[name].read_text(encoding="utf-8"))
    screenshot = artefacts / f"{name}.png"
    screenshot.unlink(missing_ok=True)
    loaded = load(chromium, pages[name], tmp_path / "profile", screenshot)
    assert loaded.console == []
    dom = parse(loaded.dom)
    assert dom.sections[: len(sections)] == sections
    assert dom.svgs == source.svgs >= 4
    assert dom.scripts == 0 and external(dom.urls) == []
    assert png_size(screenshot) == (WIDTH, HEIGHT)
