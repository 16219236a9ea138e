"""What a reader sees at 1,400 px in a real browser (headless Chromium): the eval report's
overall table fits the page without a horizontal scroll bar (issue 18, item 5).

The pages run no script; the test loads a copy with one appended script that logs, per
table, its section and whether its scroll box overflows, and reads Chromium's console.
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
from pathlib import Path

from service.evaluation import evaluate_run
from service.html import render_eval_html
from service.records import ScoredDoc
from tests.acceptance.test_html_chromium import CONSOLE, chromium  # noqa: F401
from tests.service.html import samples

WIDTH = 1400
_MEASURE = """<script>
for (const box of document.querySelectorAll("section .scroll")) {
  const section = box.closest("section").id;
  console.log(JSON.stringify({section, scroll: box.scrollWidth, client: box.clientWidth}));
}
</script>"""


def table_widths(browser: str, page: str, tmp_path: Path) -> list[dict[str, object]]:
    """Each table's ``{section, scroll, client}`` widths (px) in a 1,400 px wide window."""
    copy = tmp_path / "measured.html"
    copy.write_text(page.replace("</body>", _MEASURE + "</body>"), encoding="utf-8")
    result = subprocess.run(
        [browser, "--headless", "--disable-gpu", "--no-sandbox", "--no-first-run",
         "--disable-dev-shm-usage", f"--user-data-dir={tmp_path / 'profile'}",
         "--enable-logging=stderr", "--v=0", f"--window-size={WIDTH},1000", "--dump-dom",
         copy.resolve().as_uri()],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-2000:]
    logged = [m.group(1) for m in map(CONSOLE.search, result.stderr.splitlines()) if m]
    # Chromium quotes the message without escaping it: "{"section":...}", source: ...
    rows = [json.loads(line.split(", source:")[0].strip()[1:-1]) for line in logged]
    assert rows, result.stderr[-2000:]
    return rows


def test_eval_overall_table_fits_at_1400_px(chromium: str, tmp_path: Path) -> None:  # noqa: F811
    outcome = samples.eval_outcome()
    # the demo's shape: three retrievers, four cut-offs (the old table needed 1,650 px)
    questions = list(outcome.gold_set)
    run = {"q-1": [ScoredDoc("p-1", 1.0)], "q-2": [ScoredDoc("p-9", 1.0)]}
    ks = (1, 5, 10, 20)
    reports = tuple(evaluate_run(name, questions, run, ks) for name in ("bm25", "tfidf", "hybrid"))
    wide = dataclasses.replace(outcome, ks=ks, reports=reports, comparisons=())
    for case in (outcome, wide):
        rows = table_widths(chromium, render_eval_html(case), tmp_path)
        overall = [r for r in rows if r["section"] == "overall"]
        assert overall and all(r["scroll"] <= r["client"] for r in overall), overall
