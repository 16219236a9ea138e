"""Question text as harvesting compares it: normalised form, its key, its character trigrams.

Normalising (:func:`normalise`): Unicode NFKC, case folding, every run of characters that are
neither word characters nor combining marks of Indic, Thai or Arabic scripts becomes one
space, then trimmed. Placeholders of the PII scrubber (``<EMAIL>``) keep their word.

>>> normalise("  When are the FEES due?? ")
'when are the fees due'
>>> normalise("Hostel ka fee — semester-wise?")
'hostel ka fee semester wise'
>>> candidate_id("when are the fees due")
'c-a257c880ef82696f'
>>> sorted(trigrams("ab"))
[b' ab', b'ab ']
"""

from __future__ import annotations

import hashlib
import re
import unicodedata

__all__ = ["candidate_id", "jaccard", "normalise", "trigrams"]

_NOT_WORD = re.compile(r"[^\w\u0300-\u036f\u064b-\u065f\u0900-\u0dff\u0e00-\u0eff]+|_+")


#: ASCII bytes: letters, digits and ``_`` kept, everything else a space (ASCII fast path).
_ASCII_WORD = bytes(c if c == 0x5F or (c < 128 and chr(c).isalnum()) else 0x20 for c in range(256))
_UNDERSCORES = re.compile("_+")


def normalise(text: str) -> str:
    """Return the comparison form of ``text`` (rules in the module docstring); may be ``""``."""
    if text.isascii():
        # NFKC leaves ASCII unchanged and case folding is lower(); runs of non-word
        # characters become one space via bytes.translate and split (3x cheaper than the
        # regular expression), then runs of "_" — separate matches of the pattern — too
        spaced = b" ".join(text.lower().encode("ascii").translate(_ASCII_WORD).split())
        folded = spaced.decode("ascii")
        return _UNDERSCORES.sub(" ", folded).strip() if "_" in folded else folded
    folded = unicodedata.normalize("NFKC", text).casefold()
    return _NOT_WORD.sub(" ", folded).strip()


def candidate_id(normalised: str) -> str:
    """Stable id of a suggestion: ``"c-"`` + 16 hex digits of BLAKE2b-64 of the normalised
    text (the same in every replica and process, so keys are idempotent)."""
    digest = hashlib.blake2b(normalised.encode("utf-8"), digest_size=8).hexdigest()
    return f"c-{digest}"


def trigrams(normalised: str) -> frozenset[bytes]:
    """Character trigrams of ``" " + normalised + " "`` as UTF-8 bytes (``∅`` for ``""``)."""
    if not normalised:
        return frozenset()
    padded = f" {normalised} "
    if padded.isascii():  # one byte per character: slice the bytes (same trigrams, cheaper)
        raw = padded.encode("ascii")
        return frozenset([raw[i : i + 3] for i in range(len(raw) - 2)])
    return frozenset([padded[i : i + 3].encode("utf-8") for i in range(len(padded) - 2)])


def jaccard(a: frozenset[bytes], b: frozenset[bytes]) -> float:
    """``|a ∩ b| / |a ∪ b|`` in [0, 1]; 0 when both are empty.

    >>> jaccard(frozenset({b"a", b"b"}), frozenset({b"b", b"c"}))
    0.3333333333333333
    """
    shared = len(a & b)
    union = len(a) + len(b) - shared
    return shared / union if union else 0.0
