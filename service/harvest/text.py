"""Question text as harvesting compares it: its key and its character trigrams.

The normalised form (:data:`comparison_form`) is :func:`service.text.normalise` with
``separators="non_word"``: Unicode NFKC, case folding, every run of characters that are neither
word characters nor combining marks of Indic, Thai or Arabic scripts becomes one space, then
trimmed. Placeholders of the PII scrubber (``<EMAIL>``) keep their word. Suggestion ids are
derived from it, so it must never change.

>>> comparison_form("  When are the FEES due?? ")
'when are the fees due'
>>> comparison_form("Hostel ka fee — semester-wise?")
'hostel ka fee semester wise'
>>> candidate_id("when are the fees due")
'c-a257c880ef82696f'
>>> sorted(trigrams("ab"))
[b' ab', b'ab ']
"""

from __future__ import annotations

import functools
import hashlib
import unicodedata
from collections.abc import Callable, Collection

from service.text import normalise

__all__ = [
    "BIDI_CONTROLS",
    "candidate_id",
    "comparison_form",
    "jaccard",
    "strip_controls",
    "trigrams",
]

#: Bidirectional embedding, override and isolate controls (format characters that reorder
#: what a reader sees: U+202A–U+202E, U+2066–U+2069); other format characters (ZWJ in Indic
#: scripts, emoji) are kept.
BIDI_CONTROLS = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def strip_controls(text: str, keep: Collection[str] = ()) -> str:
    """``text`` without its control characters (``Cc``: U+0000–U+001F, DEL U+007F, C1
    U+0080–U+009F) and bidirectional controls (:data:`BIDI_CONTROLS`), except the characters
    in ``keep``; nothing else changes. Shared by reject reasons
    (:func:`service.harvest.labelling.clean_reason`) and suggestion wordings.

    >>> strip_controls("bell\\x07 and nul\\x00 and rtl \\u202e override\\tok\\n", keep="\\t\\n")
    'bell and nul and rtl  override\\tok\\n'
    """
    if text.isprintable():  # the usual case: no Cc, no Cf (bidi controls are Cf)
        return text
    return "".join(
        char for char in text
        if char in keep or not (char in BIDI_CONTROLS or unicodedata.category(char) == "Cc")
    )  # fmt: skip


#: The form harvesting compares and keys questions by (module docstring); one argument, so it
#: can be cached (``functools.lru_cache``) and mapped.
comparison_form: Callable[[str], str] = functools.partial(normalise, separators="non_word")


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
