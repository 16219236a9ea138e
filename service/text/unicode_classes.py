"""Code-point ranges of a Unicode general category, for building ``re`` classes and
``str.translate`` tables at start-up.

Python's ``re`` has no ``\\p{M}``; the tables are built from :mod:`unicodedata`. Scanning all
1,114,112 code points costs ~0.2 s per category (it was two such scans at every start), but
outside planes 0 (BMP), 1 (SMP) and 14 (SSP) no code point has a category other than ``Lo``
(planes 2 and 3: CJK ideographs only), ``Co`` (planes 15 and 16: private use) or ``Cn``
(planes 4–13: unassigned) in any Unicode version so far — so :func:`category_ranges` scans only
those three planes (~135,000 code points, ~8x faster). ``tests/service/test_unicode_classes.py``
checks the result against a scan of every code point with this Python's Unicode database.
"""

from __future__ import annotations

import functools
import unicodedata

#: The planes whose code points are scanned: BMP, SMP and SSP (tags, variation selectors).
SCANNED_PLANES: tuple[int, ...] = (0, 1, 14)
_PLANE = 0x10000


def ranges_of(code_points: list[int]) -> tuple[tuple[int, int], ...]:
    """Collapse ascending ``code_points`` into inclusive ``(first, last)`` runs.

    >>> ranges_of([1, 2, 3, 7, 9, 10])
    ((1, 3), (7, 7), (9, 10))
    """
    runs: list[tuple[int, int]] = []
    for code in code_points:
        if runs and runs[-1][1] == code - 1:
            runs[-1] = (runs[-1][0], code)
        else:
            runs.append((code, code))
    return tuple(runs)


@functools.cache
def category_ranges(prefix: str) -> tuple[tuple[int, int], ...]:
    """Inclusive code-point ranges whose general category starts with ``prefix``.

    Args:
        prefix: a category (``"Mn"``) or major class (``"M"``: Mn, Mc, Me; ``"P"``: all
            punctuation). ``"L"``, ``"C"`` and ``"Co"``/``"Cn"`` are refused: they occur in the
            planes this does not scan.

    Returns:
        Ascending, non-overlapping ``(first, last)`` pairs (inclusive), for the Unicode
        version of this Python (``unicodedata.unidata_version``).

    Raises:
        ValueError: ``prefix`` names a category found outside the scanned planes.

    >>> category_ranges("Pd")[0]  # HYPHEN-MINUS is the first dash
    (45, 45)
    """
    if not prefix or prefix[0] in ("L", "C"):
        raise ValueError(f"category {prefix!r} occurs outside planes {SCANNED_PLANES}")
    found = sorted(code for name, codes in _by_category().items() if name.startswith(prefix)
                   for code in codes)  # fmt: skip
    return ranges_of(found)


@functools.cache
def _by_category() -> dict[str, list[int]]:
    """The scanned code points of every category outside ``L*`` and ``C*``, ascending, by
    category: one scan shared by every prefix (start-up asks for two, ``M`` and ``P``)."""
    found: dict[str, list[int]] = {}
    category = unicodedata.category
    for plane in SCANNED_PLANES:
        for code in range(plane * _PLANE, (plane + 1) * _PLANE):
            name = category(chr(code))
            if name[0] not in "LC":
                found.setdefault(name, []).append(code)
    return found
