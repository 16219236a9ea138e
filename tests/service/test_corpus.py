"""Corpus JSONL loading, its validation errors, and the Corpus record."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from service.data.corpus import Corpus, CorpusError, load_corpus
from service.records import Passage


def write_rows(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def row(**fields: object) -> str:
    return json.dumps(fields)


def test_loads_passages_in_order(tmp_path: Path) -> None:
    path = write_rows(
        tmp_path / "corpus.jsonl",
        [
            row(
                id="p-1",
                text="Fees are due in July.",
                doc="fees.pdf",
                doc_type="pdf",
                acl=["student", "parent"],
                page=3,
            ),
            "",
            row(id="p-2", text="Hostel rules."),
        ],
    )
    corpus = load_corpus(path)
    assert corpus.passages == (
        Passage("p-1", "Fees are due in July.", "fees.pdf", "pdf", ("student", "parent")),
        Passage("p-2", "Hostel rules."),
    )
    assert corpus.ids == ("p-1", "p-2")
    assert corpus.by_id["p-2"].text == "Hostel rules."
    assert "p-1" in corpus and "p-3" not in corpus and len(corpus) == 2
    assert list(corpus) == list(corpus.passages)
    assert corpus.path == path


def test_utf8_bom_and_crlf_are_tolerated(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    path.write_bytes(("\ufeff" + row(id="p-1", text="नमस्ते") + "\r\n").encode("utf-8"))
    assert load_corpus(path).by_id["p-1"].text == "नमस्ते"


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("{bad", "line 2: invalid JSON"),
        # json's message for a raw control character ends in "at" (trial 15: "at at"); the
        # control character is the 25th character of the line
        (
            '{"id": "p-2", "text": "a\x01b"}',
            "invalid JSON (Invalid control character at column 25)",
        ),
        ('"just a string"', "line 2: expected a JSON object, got string"),
        (row(text="x"), "line 2, field 'id': is required"),
        (row(id="p-2", text=""), "line 2 (id 'p-2'), field 'text': must not be empty"),
        (row(id="p-2"), "line 2 (id 'p-2'), field 'text': is required"),
        (row(id="p-2", text="x", acl="student"), "field 'acl': Input should be a valid list"),
        (row(id="p-2", text="x", acl=["a", 3]), "field 'acl[1]': Input should be a valid string"),
        (row(id="p-2", text="x", acl=["a", " "]), "field 'acl': role at position 1"),
        (row(id="p-2", text="x", doc=5), "field 'doc': Input should be a valid string"),
        (
            row(id="p-1", text="again"),
            "line 2 (id 'p-1'), field 'id': duplicate id (first on line 1",
        ),
    ],
)
def test_errors_name_file_line_and_field(tmp_path: Path, line: str, expected: str) -> None:
    path = write_rows(tmp_path / "corpus.jsonl", [row(id="p-1", text="ok"), line])
    with pytest.raises(CorpusError) as info:
        load_corpus(path)
    assert len(info.value.problems) == 1, info.value.problems
    assert info.value.problems[0].startswith(f"{path}, line 2")
    assert expected in info.value.problems[0]


def test_invalid_utf8_is_reported_with_line(tmp_path: Path) -> None:
    path = tmp_path / "corpus.jsonl"
    path.write_bytes(row(id="p-1", text="ok").encode() + b"\n" + b'{"id": "\xff"}\n')
    with pytest.raises(CorpusError, match=r"line 2: not UTF-8 \(byte 8 of the line\)"):
        load_corpus(path)


def test_empty_corpus_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(CorpusError, match="contains no passages"):
        load_corpus(write_rows(tmp_path / "corpus.jsonl", [""]))


def test_error_does_not_echo_passage_text(tmp_path: Path) -> None:
    path = write_rows(tmp_path / "c.jsonl", [row(id=["p"], text="private salary 90000", acl=1)])
    with pytest.raises(CorpusError) as info:
        load_corpus(path)
    assert "90000" not in str(info.value)


def test_version_ignores_order_and_acl_order() -> None:
    a = Corpus((Passage("p-1", "x", acl=("a", "b")), Passage("p-2", "y")))
    b = Corpus((Passage("p-2", "y"), Passage("p-1", "x", acl=("b", "a"))))
    c = Corpus((Passage("p-1", "x!"), Passage("p-2", "y")))
    assert a.version == b.version != c.version


def test_corpus_rejects_duplicate_ids() -> None:
    with pytest.raises(ValueError, match="duplicate passage id 'p-1'"):
        Corpus((Passage("p-1", "x"), Passage("p-1", "y")))
