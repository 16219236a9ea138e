"""The corpus content index of trace ingest: a document without an id maps to the corpus
passage with the same text (whitespace-normalised)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from service.traces.mapping import content_index


def test_content_index_maps_passage_texts_to_corpus_ids(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus.jsonl"
    rows = [{"id": "p-1", "text": "Fees are due\n in  May."}, {"id": "p-2", "text": "Blue."}]
    corpus.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    digest = hashlib.sha256(b"Fees are due in May.").hexdigest()[:16]  # runs of space -> one
    index = content_index(corpus)
    assert index["sha256:" + digest] == "p-1"
    assert index["sha256:" + hashlib.sha256(b"Blue.").hexdigest()[:16]] == "p-2"
    assert len(index) == 2
    assert content_index(None) == {}
