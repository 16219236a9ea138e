"""``service.text.normalise``: hand-worked forms, and the same strings as the six functions it
replaced (copied below as they were at 08314aa) on every code point and on real questions —
harvest ids, known-question matches and cache keys depend on those strings."""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Callable
from pathlib import Path

import pytest

from service.text import normalise
from service.text.unicode_classes import category_ranges

# -- hand-worked values ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "separators", "expected"),
    [
        # NFKC: full-width "ＦＥＥ" → "FEE", ligature "ﬁ" → "fi"; casefold: "ß" → "ss"
        ("ＦＥＥ ﬁne Straße", "keep", "fee fine strasse"),
        ("  two\t\nspaces  ", "keep", "  two\t\nspaces  "),
        ("  two\t\nspaces  ", "whitespace", "two spaces"),
        ("ｆｅｅ\u3000２０２６", "whitespace", "fee 2026"),  # ideographic space → " " by NFKC
        # punctuation (P*) → space: "’" (Pf), "?", "!" go; "+" and "$" (S*) stay
        ("  WHAT’s the FEE?!  ", "punctuation", "what s the fee"),
        ("C++ fee: $50", "punctuation", "c++ fee $50"),
        ("snake_case", "punctuation", "snake case"),  # "_" is Pc
        ("हॉस्टल के लिए।", "punctuation", "हॉस्टल के लिए"),  # vowel signs kept, danda (Po) goes
        # non_word: symbols go too; "_" runs are separate matches, so "a_ b" keeps 2 spaces
        ("C++ fee: $50", "non_word", "c fee 50"),
        ("Hostel ka fee — semester-wise?", "non_word", "hostel ka fee semester wise"),
        ("a_ b", "non_word", "a  b"),
        ("__x__", "non_word", "x"),
        ("हॉस्टल के लिए।", "non_word", "हॉस्टल के लिए।"),  # U+0900–0DFF kept whole: danda too
        ("Ünïcödé_ <EMAIL>", "non_word", "ünïcödé  email"),  # "_" and " <" are two matches
        ("", "non_word", ""),
        ("?!", "punctuation", ""),
    ],
)
def test_hand_worked_forms(text: str, separators: str, expected: str) -> None:
    assert normalise(text, separators=separators) == expected  # type: ignore[arg-type]


def test_nfc_keeps_case_and_compatibility_forms() -> None:
    # "a" + U+0301 composes to "á"; full-width letters and case are kept; NBSP is whitespace
    assert normalise(" A\u0301\u00a0ＦＥＥ\n", fold="nfc", separators="whitespace") == "Á ＦＥＥ"
    assert normalise("Ａ", fold="nfc", separators="keep") == "Ａ"


def test_unknown_options_are_refused() -> None:
    with pytest.raises(ValueError, match="unknown fold"):
        normalise("x", fold="nfd", separators="keep")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="unknown separators"):
        normalise("x", separators="tabs")  # type: ignore[arg-type]


# -- the functions it replaced, as they were (08314aa) ---------------------------------------

_NOT_WORD = re.compile(r"[^\w\u0300-\u036f\u064b-\u065f\u0900-\u0dff\u0e00-\u0eff]+|_+")
_ASCII_WORD = bytes(c if c == 0x5F or (c < 128 and chr(c).isalnum()) else 0x20 for c in range(256))
_UNDERSCORES = re.compile("_+")


def old_harvest(text: str) -> str:  # service/harvest/text.py: normalise
    if text.isascii():
        spaced = b" ".join(text.lower().encode("ascii").translate(_ASCII_WORD).split())
        folded = spaced.decode("ascii")
        return _UNDERSCORES.sub(" ", folded).strip() if "_" in folded else folded
    folded = unicodedata.normalize("NFKC", text).casefold()
    return _NOT_WORD.sub(" ", folded).strip()


_PUNCTUATION = {cp: cp for cp in range(0x3000)}
_PUNCTUATION.update((cp, 0x20) for lo, hi in category_ranges("P") for cp in range(lo, hi + 1))
_ASCII_PUNCTUATION = bytes(
    0x20 if unicodedata.category(chr(b)).startswith("P") else b for b in range(256)
)


def old_known(text: str) -> str:  # service/quality/known.py: normalize
    if text.isascii():
        return " ".join(text.lower().encode().translate(_ASCII_PUNCTUATION).decode().split())
    folded = unicodedata.normalize("NFKC", text).casefold()
    return " ".join(folded.translate(_PUNCTUATION).split())


def old_retrievers(text: str) -> str:  # service/retrievers/text.py: normalise
    return unicodedata.normalize("NFKC", text).casefold()


def old_language(text: str) -> str:  # service/language/detector.py: normalise
    if not unicodedata.is_normalized("NFC", text):
        text = unicodedata.normalize("NFC", text)
    return " ".join(text.split())


def old_answers(text: str) -> str:  # service/evaluation/answers.py: _norm
    return re.sub(r"\s+", " ", unicodedata.normalize("NFKC", text).casefold()).strip()


def old_embedder(text: str) -> str:  # service/embeddings/backends.py: " ".join(_fold(t).split())
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split())


FORMS: dict[str, tuple[Callable[[str], str], Callable[[str], str]]] = {
    "harvest": (old_harvest, lambda t: normalise(t, separators="non_word")),
    "known": (old_known, lambda t: normalise(t, separators="punctuation")),
    "retrievers": (old_retrievers, lambda t: normalise(t, separators="keep")),
    "language": (old_language, lambda t: normalise(t, fold="nfc", separators="whitespace")),
    "answers": (old_answers, lambda t: normalise(t, separators="whitespace")),
    "embedder": (old_embedder, lambda t: normalise(t, separators="whitespace")),
}


def _assert_same(form: str, texts: list[str]) -> None:
    old, new = FORMS[form]
    for text in texts:
        assert new(text) == old(text), text


@pytest.fixture(scope="module")
def every_code_point() -> list[str]:
    """All 1,114,112 code points (surrogates too), 256 at a time in one string, every 8th
    run also between ASCII words and punctuation (ASCII and non-ASCII paths both run)."""
    points = [chr(cp) for cp in range(0x110000)]
    texts = ["".join(points[i : i + 256]) for i in range(0, len(points), 256)]
    return texts + [f"A_b, {text[:40]} C?d_" for text in texts[::8]]


@pytest.fixture(scope="module")
def real_questions(shared_data: Path) -> list[str]:
    """XQuAD questions in its 12 languages (Arabic, Devanagari, Thai, Greek, Han, ...) and
    the demo's query log."""
    texts: list[str] = []
    for path in sorted((shared_data / "xquad").glob("xquad.*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))["data"]
        texts += [qa["question"] for art in data for par in art["paragraphs"] for qa in par["qas"]]
    assert len(texts) == 12 * 1190  # SOURCE.md: 1,190 questions per language
    demo = Path(__file__).parents[3] / "service" / "demo" / "querylog.jsonl"
    return texts + [json.loads(line)["question"] for line in demo.read_text("utf-8").splitlines()]


@pytest.mark.parametrize("form", FORMS)
def test_same_strings_as_before_on_every_code_point(form: str, every_code_point: list[str]) -> None:
    _assert_same(form, every_code_point)


@pytest.mark.parametrize("form", FORMS)
def test_same_strings_as_before_on_every_ascii_pair(form: str) -> None:
    _assert_same(form, [chr(a) + chr(b) + " x" for a in range(128) for b in range(128)])


@pytest.mark.parametrize("form", FORMS)
def test_same_strings_as_before_on_real_questions(form: str, real_questions: list[str]) -> None:
    _assert_same(form, real_questions)
