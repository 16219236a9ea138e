"""PII scrubbing sees through invisible format characters (Unicode category Cf)."""

from __future__ import annotations

import re
import sys
import unicodedata

import pytest

from service.pii import FORMAT_CHARS, Scrubbed, scrub

#: The format characters people paste or type by accident (or on purpose, to dodge filters).
COMMON_CF = {
    "ZWSP": "\u200b",
    "ZWNJ": "\u200c",
    "ZWJ": "\u200d",
    "LRM": "\u200e",
    "RLM": "\u200f",
    "LRE": "\u202a",
    "RLO": "\u202e",
    "WJ": "\u2060",
    "LRI": "\u2066",
    "PDI": "\u2069",
    "SHY": "\u00ad",
    "BOM": "\ufeff",
    "ALM": "\u061c",
    "TAG SPACE": "\U000e0020",
}

ITEMS = [
    ("9876543210", "<PHONE>", "phone"),
    ("rahul.verma77@gmail.com", "<EMAIL>", "email"),
    ("rahul77@okicici", "<UPI>", "upi"),
    ("4111 1111 1111 1111", "<CARD>", "card"),
    ("2341 2341 2346", "<AADHAAR>", "aadhaar"),
    ("ABCPE1234F", "<PAN>", "pan"),
    ("123-45-6789", "<SSN>", "ssn"),
    ("K8765432", "<PASSPORT>", "passport"),
    ("ABC1234567", "<VOTER_ID>", "voter_id"),
    ("sk-live-51HxyzSECRETKEYabc123", "<SECRET>", "secret"),
    ("10.20.30.40", "<IP>", "ip"),
    ("https://drive.google.com/file/d/1AbCSECRETTOKENxyz/view", "<URL>", "url"),
    ("name [at] domain [dot] com", "<EMAIL>", "email"),
]


def _all_cf() -> list[str]:
    return [chr(c) for c in range(sys.maxunicode + 1) if unicodedata.category(chr(c)) == "Cf"]


def test_format_chars_class_is_unicode_category_cf() -> None:
    """Every Cf character of this Python's Unicode database, and nothing assigned to another
    category (the class may hold code points a newer Unicode made Cf, e.g. U+13439-1343F)."""
    pattern = re.compile(f"[{FORMAT_CHARS}]")
    every = "".join(chr(c) for c in range(sys.maxunicode + 1) if not 0xD800 <= c <= 0xDFFF)
    found = pattern.findall(every)
    assert set(_all_cf()) <= set(found)
    assert {unicodedata.category(c) for c in found} <= {"Cf", "Cn"}


def test_the_reported_leaks_are_closed() -> None:
    assert scrub("98765\u200b43210") == Scrubbed("<PHONE>", {"phone": 1})
    assert scrub("rahul.ver\u200bma77@gmail.com") == Scrubbed("<EMAIL>", {"email": 1})


@pytest.mark.parametrize(("item", "placeholder", "kind"), ITEMS)
@pytest.mark.parametrize("name", COMMON_CF)
def test_a_format_char_at_every_inner_position_hides_nothing(
    item: str, placeholder: str, kind: str, name: str
) -> None:
    for i in range(1, len(item)):
        text = f"my id: {item[:i]}{COMMON_CF[name]}{item[i:]} thanks"
        assert scrub(text) == Scrubbed(f"my id: {placeholder} thanks", {kind: 1}), (i, text)


@pytest.mark.parametrize(("item", "placeholder", "kind"), ITEMS[:3])
def test_every_cf_character_is_seen_through(item: str, placeholder: str, kind: str) -> None:
    middle = len(item) // 2
    for cf in _all_cf():
        text = f"ok {item[:middle]}{cf}{cf}{item[middle:]}."
        assert scrub(text) == Scrubbed(f"ok {placeholder}.", {kind: 1}), hex(ord(cf))


def test_format_chars_between_every_character() -> None:
    spread = "\u200b".join("rahul.verma77@gmail.com")
    assert scrub(f"mail {spread}") == Scrubbed("mail <EMAIL>", {"email": 1})
    digits = "\u2060\u00ad".join("9876543210")
    assert scrub(f"फोन {digits} है") == Scrubbed("फोन <PHONE> है", {"phone": 1})


def test_a_format_char_glued_to_a_word_still_separates_it() -> None:
    """``call\\u200b9876543210`` reads as ``call 9876543210``: the phone goes, the word stays."""
    assert scrub("call\u200b9876543210") == Scrubbed("call\u200b<PHONE>", {"phone": 1})
    assert scrub("pan\u200bABCDE1234F") == Scrubbed("pan\u200b<PAN>", {"pan": 1})


def test_format_chars_outside_items_are_left_alone() -> None:
    text = "क्\u200dष \u200cहिन्दी\u200b text \u202eabc\u202c, 9876543210"
    assert scrub(text) == Scrubbed(
        "क्\u200dष \u200cहिन्दी\u200b text \u202eabc\u202c, <PHONE>", {"phone": 1}
    )
    clean = "क्\u200dष और ज़\u200cरा\u00ad \u200b"
    assert scrub(clean) == Scrubbed(clean, {})


def test_format_chars_inside_digitless_triggers() -> None:
    """The fast path looks through Cf too: ``[a\\u200bt]``, ``:\\u200b//``, ``w\\u200bww.``."""
    assert scrub("name [a\u200bt] domain [d\u200bot] com").text == "<EMAIL>"
    assert scrub("name [a\U000e0020t] domain [dot] com").text == "<EMAIL>"
    assert scrub("https:\u200b//drive.google.com/file/d/AbCSECRET/view").text == "<URL>"
    assert scrub("ww\u200bw.dropbox.com/s/abcSECRET/x.pdf").text == "<URL>"


def test_no_partial_item_survives_when_a_replacement_meets_a_format_char() -> None:
    for text in ("rahul\u200b.verma@gmail.com", "rahul.verma@\u200bgmail.com", "\u200brahul@ybl"):
        result = scrub(text)
        visible = re.sub(f"[{FORMAT_CHARS}]", "", result.text)
        assert visible in {"<EMAIL>", "<UPI>"}, result
        assert "rahul" not in result.text and "gmail" not in result.text
