"""Text folding for matching: a view of a text in which every character stays in place.

The detectors (:mod:`service.pii.detectors`) run on a copy of the text whose Unicode decimal
digits (Devanagari, Arabic-Indic, full-width, ...) are folded to ASCII with
:func:`unicodedata.decimal`, and whose odd spaces, dashes, ``＋``, ``＠`` and full-width
punctuation become ASCII (:data:`_FOLD`, a ``str.translate`` table). Folding maps one character
to one character, so a span found in the folded copy is a span of the ORIGINAL text.
:data:`FORMAT_CHARS` lists the invisible format characters (Unicode category Cf) that
:func:`service.pii.scrub.scrub` looks through (:data:`_CF` matches a run of them).
"""

from __future__ import annotations

import re
import unicodedata

_SAME_AS = {" ": "\u00a0\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
            "\u202f\u205f\u3000", "-": "\u2010\u2011\u2012\u2013\u2014\u2015\u2212\ufe63\uff0d",
            "+": "\uff0b\ufe62", "@": "\uff20\ufe6b", ".": "\uff0e", "(": "\uff08", ")": "\uff09",
            ":": "\uff1a", "/": "\uff0f"}  # fmt: skip
_FOLD_CACHE = 65_536
#: Every Unicode format character (category Cf) of Python 3.11's Unicode 14 database, as
#: ``re`` class ranges, with U+13439-1343F that Unicode 15 adds (a test checks it against
#: :func:`unicodedata.category`).
_FORMAT_BMP = (
    "\u00ad\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u180e\u200b-\u200f\u202a-\u202e"
    "\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb"
)
FORMAT_CHARS = _FORMAT_BMP + (
    "\U000110bd\U000110cd\U00013430-\U0001343f"
    "\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0001\U000e0020-\U000e007f"
)
_CF = re.compile(f"[{FORMAT_CHARS}]+")


class _Fold(dict[int, int]):
    """``str.translate`` table: decimal digits to ASCII, look-alike punctuation to ASCII."""

    def __missing__(self, code: int) -> int:
        value = unicodedata.decimal(chr(code), -1)
        folded = 48 + value if value >= 0 else code
        if len(self) < _FOLD_CACHE:
            self[code] = folded
        return folded


_FOLD = _Fold({ord(c): ord(ascii_) for ascii_, chars in _SAME_AS.items() for c in chars})
