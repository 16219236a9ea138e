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


def test_table_equals_a_fresh_scan() -> None:
    """The shipped table is what a scan of this Python's database gives, and its source is
    what the generator writes (regenerate with ``write_table`` when this fails)."""
    from service.text import unicode_table
    from service.text.unicode_classes import TABLE_PATH, scan_categories, table_source

    if unicode_table.UNIDATA_VERSION != unicodedata.unidata_version:
        pytest.skip(f"table made with Unicode {unicode_table.UNIDATA_VERSION}, "
                    f"this Python has {unicodedata.unidata_version}")  # fmt: skip
    scanned = scan_categories()
    assert unicode_table.RANGES == scanned
    assert TABLE_PATH.read_text("utf-8") == table_source(scanned, unicodedata.unidata_version)


def test_table_covers_every_category_outside_letters_and_others() -> None:
    """Each category's ranges hold exactly its code points in planes 0, 1 and 14 (a check
    independent of the generator: one code point per range end and inside)."""
    from service.text import unicode_table

    if unicode_table.UNIDATA_VERSION != unicodedata.unidata_version:
        pytest.skip("table made with another Unicode version")
    assert sorted(unicode_table.RANGES) == ["Mc", "Me", "Mn", "Nd", "Nl", "No", "Pc", "Pd",
                                            "Pe", "Pf", "Pi", "Po", "Ps", "Sc", "Sk", "Sm",
                                            "So", "Zl", "Zp", "Zs"]  # fmt: skip
    for name, runs in unicode_table.RANGES.items():
        for lo, hi in runs:
            for code in {lo, (lo + hi) // 2, hi}:
                assert unicodedata.category(chr(code)) == name, (name, hex(code))


def test_another_unicode_version_scans_instead(monkeypatch: pytest.MonkeyPatch) -> None:
    """A table made with another Unicode version is not applied: the ranges come from a scan
    of this Python's database (the table's own ranges are replaced by a wrong one here, so
    using it would fail)."""
    from service.text import unicode_classes, unicode_table

    monkeypatch.setattr(unicode_table, "UNIDATA_VERSION", "0.0.0")
    monkeypatch.setattr(unicode_table, "RANGES", {"Mn": ((0x41, 0x41),)})
    unicode_classes._by_category.cache_clear()
    unicode_classes.category_ranges.cache_clear()
    try:
        assert category_ranges("Mn") == full_scan("Mn")
    finally:
        unicode_classes._by_category.cache_clear()
        unicode_classes.category_ranges.cache_clear()
