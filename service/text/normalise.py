"""Normalising question and passage text: one function, two explicit choices.

``normalise(text, fold=..., separators=...)`` first folds, then treats separators:

``fold``
    * ``"nfkc_casefold"`` (default): Unicode NFKC (full-width → ASCII, ligatures split,
      compatibility digits folded), then ``str.casefold`` (``ß`` → ``ss``).
    * ``"nfc"``: canonical composition only; case and compatibility forms are kept.

``separators``
    * ``"keep"``: nothing more (whitespace as it was).
    * ``"whitespace"``: runs of whitespace (``str.split``'s) become one space; ends stripped.
    * ``"punctuation"``: as ``"whitespace"``, and every punctuation character (Unicode category
      ``P*``) is a space first. Symbols (``+``, ``$``) and combining marks are kept.
    * ``"non_word"``: every run of characters that are neither word characters (``\\w``, so
      letters, digits, ``_``) nor combining marks of the ranges U+0300–036F (Latin accents),
      U+064B–065F (Arabic), U+0900–0DFF (Indic) and U+0E00–0EFF (Thai, Lao) becomes one space,
      then every run of ``_`` too; ends stripped. Symbols go as well.

Why the forms differ (each is the form stored state or a model was built on; changing one
would change suggestion ids, cache keys or scores, so every caller names its form):

====================================  =========================  ===========================
caller                                options                    why
====================================  =========================  ===========================
harvest (``service.harvest``)         nfkc_casefold, non_word    suggestion ids are
                                                                 ``candidate_id`` of this form
                                                                 (stored in the state and the
                                                                 harvest topic); symbols are
                                                                 noise for near-duplicates
known questions (``service.quality.known``)   nfkc_casefold,             matches gold questions;
                                      punctuation                keeps ``+``/``$``/marks, which
                                                                 its n-grams score
repeated gold questions              nfkc_casefold,             the same question as known
(``service.data.goldset``)            punctuation                questions match it
answer checks (``service.evaluation.answers``)  nfkc_casefold,             whole-token tests:
                                      punctuation                "no" is no token of "don t"
char n-gram embedder                  nfkc_casefold, whitespace  n-grams: punctuation is
                                                                 meaningful
built-in retrievers' tokeniser        nfkc_casefold, keep        the tokeniser splits words
                                                                 itself; TF-IDF ``char_wb``
                                                                 splits on whitespace itself
language detection cache key          nfc, whitespace            detectors see case and
(``service.language.detector``)                                           full-width forms
====================================  =========================  ===========================

>>> normalise("  When are the FEES due?? ", separators="non_word")
'when are the fees due'
>>> normalise("  Hostel  KA fee—semester wise?? ", separators="punctuation")
'hostel ka fee semester wise'
>>> [normalise("C++ fee: $50", separators=s) for s in ("punctuation", "non_word")]
['c++ fee $50', 'c fee 50']
>>> normalise("ＡＢＣ ﬁne Straße", separators="keep")
'abc fine strasse'
>>> normalise(" Ｆｅｅ\\u00a0 DUE ", fold="nfc", separators="whitespace")
'Ｆｅｅ DUE'
"""

from __future__ import annotations

import functools
import re
import unicodedata
from typing import Literal

from service.text.unicode_classes import category_ranges

__all__ = ["Fold", "Separators", "normalise"]

Fold = Literal["nfkc_casefold", "nfc"]
Separators = Literal["keep", "whitespace", "punctuation", "non_word"]

#: ``non_word``: characters that are neither word characters nor the kept combining marks,
#: and runs of ``_`` (separate matches, so ``"a_ b"`` gives two spaces, as it always did).
_NOT_WORD = re.compile(r"[^\w\u0300-\u036f\u064b-\u065f\u0900-\u0dff\u0e00-\u0eff]+|_+")
#: ``non_word`` on ASCII: letters, digits and ``_`` kept, every other byte a space (the same
#: result as :data:`_NOT_WORD` on ASCII, ~3x cheaper).
_ASCII_WORD = bytes(c if c == 0x5F or (c < 128 and chr(c).isalnum()) else 0x20 for c in range(256))
_UNDERSCORES = re.compile("_+")
#: ``punctuation`` on ASCII: punctuation bytes (category ``P*``) → space, others kept.
_ASCII_PUNCTUATION = bytes(
    0x20 if unicodedata.category(chr(b)).startswith("P") else b for b in range(256)
)


@functools.cache
def _punctuation() -> dict[int, int]:
    """``str.translate`` table: every punctuation code point (category ``P*``) → space, and
    every other code point below U+3000 → itself (a code point missing from the table is
    kept too, but ``translate`` finds that out through a slow ``KeyError``)."""
    table = {cp: cp for cp in range(0x3000)}
    table.update((cp, 0x20) for lo, hi in category_ranges("P") for cp in range(lo, hi + 1))
    return table


def normalise(text: str, *, fold: Fold = "nfkc_casefold", separators: Separators) -> str:
    """Return the normalised form of ``text`` (rules and the callers' forms: module docstring).

    Args:
        text: any Unicode text; may be empty (so may the result).
        fold: ``"nfkc_casefold"`` or ``"nfc"``.
        separators: ``"keep"``, ``"whitespace"``, ``"punctuation"`` or ``"non_word"``.

    Raises:
        ValueError: an unknown ``fold`` or ``separators``.
    """
    if fold == "nfkc_casefold":
        # NFKC leaves ASCII as it is and casefold is lower() on it
        folded = text.lower() if text.isascii() else unicodedata.normalize("NFKC", text).casefold()
    elif fold == "nfc":
        nfc = unicodedata.is_normalized("NFC", text)
        folded = text if nfc else unicodedata.normalize("NFC", text)
    else:
        raise ValueError(f"unknown fold {fold!r}")
    if separators == "keep":
        return folded
    if separators == "whitespace":
        return " ".join(folded.split())
    if separators == "punctuation":
        if folded.isascii():
            return " ".join(folded.encode("ascii").translate(_ASCII_PUNCTUATION).decode().split())
        return " ".join(folded.translate(_punctuation()).split())
    if separators == "non_word":
        if folded.isascii():
            # runs of non-word bytes become one space via translate and split, then runs
            # of "_" (separate matches of the pattern) too
            spaced = b" ".join(folded.encode("ascii").translate(_ASCII_WORD).split()).decode()
            return _UNDERSCORES.sub(" ", spaced).strip() if "_" in spaced else spaced
        return _NOT_WORD.sub(" ", folded).strip()
    raise ValueError(f"unknown separators {separators!r}")
