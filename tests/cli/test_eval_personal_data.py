"""``goldwatch eval`` writes gold questions into its outputs scrubbed of personal data, and
says which gold rows hold it (trial 14: an e-mail address of a gold row was copied into the
``--misses`` file and the HTML report).

The data is written here by hand: three passages, a gold row whose question holds an e-mail
address and whose gold passage shares no word with it (so BM25 misses it: a miss), an
unanswerable row whose question holds a phone number, and a clean row.
"""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from service.cli import main

EMAIL = "carlos.ramirez@example.com"
PHONE = "+1 415 555 0134"


def write_inputs(tmp_path: Path) -> tuple[Path, Path]:
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("\n".join(json.dumps(row) for row in [
        {"id": "p1", "text": "Library opening hours are nine to five on weekdays."},
        {"id": "p2", "text": "Tuition is paid each semester at the bursar's office."},
        {"id": "p3", "text": "Parking permits cost forty dollars a term."},
    ]) + "\n")  # fmt: skip
    gold = tmp_path / "gold.jsonl"
    gold.write_text("\n".join(json.dumps(row) for row in [
        # the gold passage p3 shares no word with the question: a miss at every k
        {"id": "g-mail", "question": f"can you mail {EMAIL} the library hours", "gold": ["p3"]},
        {"id": "g-phone", "question": f"call me at {PHONE} about the dean", "gold": [],
         "kind": "unanswerable"},
        {"id": "g-clean", "question": "when is tuition paid", "gold": ["p2"]},
    ]) + "\n")  # fmt: skip
    return corpus, gold


def test_eval_outputs_hold_gold_questions_scrubbed_and_name_the_rows(tmp_path: Path) -> None:
    corpus, gold = write_inputs(tmp_path)
    misses, html = tmp_path / "m.jsonl", tmp_path / "e.html"
    result = CliRunner().invoke(main, [
        "eval", "--no-progress", "--gold", str(gold), "--corpus", str(corpus),
        "--retriever", "bm25", "--k", "1,3", "--misses", str(misses), "--html", str(html),
        "--format", "json"])  # fmt: skip
    assert result.exit_code == 0, result.output
    written = misses.read_text(encoding="utf-8")
    rows = [json.loads(line) for line in written.splitlines()]
    assert [row["id"] for row in rows] == ["g-mail"]
    assert rows[0]["question"] == "can you mail <EMAIL> the library hours"
    page = html.read_text(encoding="utf-8")
    for text in (written, page, result.stdout, result.stderr):
        assert EMAIL not in text and "555 0134" not in text
    assert "&lt;PHONE&gt;" in page and "&lt;EMAIL&gt;" in page  # the rows are still shown
    assert ("2 gold questions hold personal data (rows 'g-mail': email, 'g-phone': phone)"
            in result.stderr)  # fmt: skip
    assert "g-clean" not in result.stderr
