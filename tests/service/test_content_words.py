"""``content_words`` reads exactly the words ``wording`` reads, on real questions (issue 22).

:func:`service.text.wording.content_words` is the drift stage's cheap reading of a question's
content words (rising terms); it must give :func:`~service.text.wording.wording`'s ``raw``
(``{stem: token}``) for every text, and since the thirty-fourth session it remembers what
each token is across texts. The reference here is ``wording`` itself (its own
tests pin its rules by hand); compared on every distinct question of NQ-open (dev), CLINC150
(all splits), BANKING77 (test), Hinglish-TOP (test, both columns) and XQuAD (all 12
languages), normalised as the drift stage does, twice in a row (the second pass reads what
the first remembered) and once more in reverse order after emptying the memory.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

from service.text import normalise
from service.text.wording import _TOKEN_STEMS, content_words, wording


def _questions(root: Path) -> list[str]:
    out: list[str] = []
    with (root / "nq-open" / "NQ-open.dev.jsonl").open(encoding="utf-8") as f:
        out += [json.loads(line)["question"] for line in f]
    clinc = json.loads((root / "clinc150" / "data_full.json").read_text(encoding="utf-8"))
    out += [text for split in clinc.values() for text, _ in split]
    with (root / "banking77" / "test.csv").open(encoding="utf-8", newline="") as f:
        out += [row["text"] for row in csv.DictReader(f)]
    with (root / "hinglish-top" / "test.tsv").open(encoding="utf-8", newline="") as f:
        for row in csv.DictReader(f, delimiter="\t"):
            out += [row["en_query"], row["cs_query"]]
    for path in sorted((root / "xquad").glob("xquad.*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))["data"]
        out += [qa["question"] for article in data for p in article["paragraphs"]
                for qa in p["qas"]]  # fmt: skip
    return sorted(set(out))


def test_content_words_equal_wording_on_real_questions(shared_data: Path) -> None:
    texts = sorted({normalise(q, separators="non_word") for q in _questions(shared_data)})
    assert len(texts) > 50_000
    want = [dict(wording.__wrapped__(text).raw) for text in texts]
    assert sum(1 for w in want if w) > 0.9 * len(texts)  # most questions have content words
    _TOKEN_STEMS.clear()
    assert [content_words(text) for text in texts] == want
    assert [content_words(text) for text in texts] == want  # read back from the memory
    _TOKEN_STEMS.clear()
    assert [content_words(text) for text in reversed(texts)] == want[::-1]


def test_accented_word_pieces_read_as_wording_reads_them() -> None:
    """A token that folds to a word piece ("dón", "háven") is read folded, as ``wording``
    reads it ("don", "haven"), whether the memory knows other tokens or not (a review of
    the thirty-fourth session found the unfolded token kept: ``{"dón": "dón"}``)."""
    texts = ["dón quixote", "safe háven", "dón t know", "háven t seen", "don quixote",
             "l hàven de paix", "dõn juan et don carlos"]  # fmt: skip
    want = [dict(wording.__wrapped__(text).raw) for text in texts]
    assert want[0] == {"don": "don", "quixot": "quixote"}
    _TOKEN_STEMS.clear()
    assert [content_words(text) for text in texts] == want
    assert [content_words(text) for text in texts] == want
