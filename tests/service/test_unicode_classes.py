"""Category ranges from the three scanned planes equal a scan of every code point."""

from __future__ import annotations

import sys
import unicodedata

import pytest

from service.text.unicode_classes import category_ranges, ranges_of


def full_scan(prefix: str) -> tuple[tuple[int, int], ...]:
    return ranges_of(
        [c for c in range(sys.maxunicode + 1) if unicodedata.category(chr(c)).startswith(prefix)]
    )


@pytest.mark.parametrize("prefix", ["M", "P", "Mn", "Nd", "S", "Zs"])
def test_scanned_planes_miss_nothing(prefix: str) -> None:
    assert category_ranges(prefix) == full_scan(prefix)


def test_known_members() -> None:
    marks = category_ranges("M")
    inside = lambda code, ranges: any(lo <= code <= hi for lo, hi in ranges)  # noqa: E731
    assert inside(0x0301, marks)  # COMBINING ACUTE ACCENT
    assert inside(0x093F, marks)  # DEVANAGARI VOWEL SIGN I (Mc)
    assert inside(0xE0100, marks)  # VARIATION SELECTOR-17, plane 14
    assert not inside(ord("a"), marks)
    punctuation = category_ranges("P")
    assert inside(ord("?"), punctuation) and inside(0x3002, punctuation)  # 。
    assert inside(0x1E95E, punctuation)  # ADLAM INITIAL EXCLAMATION MARK, plane 1


@pytest.mark.parametrize("prefix", ["L", "Lo", "C", "Co", ""])
def test_categories_outside_the_scanned_planes_are_refused(prefix: str) -> None:
    with pytest.raises(ValueError, match="outside planes"):
        category_ranges(prefix)
