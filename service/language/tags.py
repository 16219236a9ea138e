"""Language tags in their canonical case (BCP 47, RFC 5646 §2.1.1).

Tags are case-insensitive, and goldwatch's own labels use the recommended case (``en``,
``hi-Latn``, ``pt-BR``). A tag written another way (``hi-latn``, ``EN``) by a person — a gold
set row, an accepted suggestion's label — would otherwise be a category of its own beside
the live traffic's ``hi-Latn``: two rows in every share, a language "new (not in the gold
set)" that is in it. :func:`canonical_tag` gives the recommended case; values that do not
look like a tag (``English``) are left as written.

Live labels carry no region (the detector cannot tell ``en-US`` from ``en-GB``), so a gold set's
``en-US`` rows would be a language of their own that live traffic never shows (a trial saw
14 points of "falling" English that were not real). :func:`language_key` folds a tag to what
gold and live are compared on: the primary language subtag (with any extended language
subtag) plus the script (``hi-Latn`` stays apart from ``hi``, ``zh-Hant`` from ``zh-Hans``);
region, variants, extensions and private use are dropped (``en-US``, ``en-GB`` → ``en``).
"""

from __future__ import annotations

import re

__all__ = [
    "LANGUAGE_TAG_MAX_CHARS",
    "LANGUAGE_TAG_PATTERN",
    "canonical_tag",
    "is_language_tag",
    "language_key",
]

#: A tag of the shape RFC 5646 §2.1 allows, with a 2–3 letter primary language subtag (ISO 639)
#: or a private-use / grandfathered ``x``/``i`` singleton first.
_TAG = re.compile(r"(?:[A-Za-z]{2,3}|[xXiI])(?:-[A-Za-z0-9]{1,8})*")


#: What goldwatch accepts as a language tag wherever a person writes one (an accepted
#: suggestion's ``language``, a gold-set row's): subtags of 1–8 letters or digits joined by
#: hyphens, the first 2–8 letters (RFC 5646 §2.1's syntax, without its registry), at most
#: :data:`LANGUAGE_TAG_MAX_CHARS` characters (RFC 5646 §4.4.1's advised 35).
LANGUAGE_TAG_PATTERN = r"^[A-Za-z]{2,8}(-[A-Za-z0-9]{1,8})*$"
LANGUAGE_TAG_MAX_CHARS = 35
_CHECK = re.compile(LANGUAGE_TAG_PATTERN)


def is_language_tag(value: str) -> bool:
    """Whether ``value`` is a language tag by :data:`LANGUAGE_TAG_PATTERN` and
    :data:`LANGUAGE_TAG_MAX_CHARS` (the accept API's check). Never raises.

    >>> is_language_tag("de-CH"), is_language_tag("hi-Latn"), is_language_tag("Deutsch (Schweiz)")
    (True, True, False)
    >>> is_language_tag("de_CH"), is_language_tag("")
    (False, False)
    """
    return (isinstance(value, str) and len(value) <= LANGUAGE_TAG_MAX_CHARS
            and _CHECK.fullmatch(value) is not None)  # fmt: skip


def canonical_tag(value: str) -> str:
    """``value`` in the case RFC 5646 §2.1.1 recommends, when it looks like a language tag.

    The first subtag lower case; after it, a 4-letter script subtag title case (``Latn``), a
    2-letter region subtag upper case (``BR``), anything else lower case; after a singleton
    (``x-``, ``u-``…) everything lower case. Anything else (``English``, blank, a tag with a
    4–8 letter first subtag) is returned unchanged. Never raises.

    >>> canonical_tag("hi-latn"), canonical_tag("EN"), canonical_tag("pt-br")
    ('hi-Latn', 'en', 'pt-BR')
    >>> canonical_tag("zh-hant-tw"), canonical_tag("en-x-Custom"), canonical_tag("English")
    ('zh-Hant-TW', 'en-x-custom', 'English')
    """
    if not isinstance(value, str) or _TAG.fullmatch(value) is None:
        return value
    first, *rest = value.split("-")
    out = [first.lower()]
    extension = len(first) == 1
    for subtag in rest:
        if extension:
            out.append(subtag.lower())
        elif len(subtag) == 1:
            extension = True
            out.append(subtag.lower())
        elif len(subtag) == 4 and subtag.isalpha():
            out.append(subtag.title())
        elif len(subtag) == 2 and subtag.isalpha():
            out.append(subtag.upper())
        else:
            out.append(subtag.lower())
    return "-".join(out)


#: language_key's results by value (a log holds few distinct language labels; cleared when
#: full, so arbitrary labels cannot grow it past ~4,096 short strings)
_KEYS: dict[str, str] = {}
_KEYS_MAX = 4_096
#: Longest value remembered (a language tag is at most 35 characters)
_KEY_CHARS_MAX = 64


def language_key(value: str) -> str:
    """The tag gold-set and live languages are compared on: ``value`` in its canonical case
    (:func:`canonical_tag`) cut to the primary language subtag, its extended language
    subtags (RFC 5646 §2.2.2, 3 letters) and its script subtag (§2.2.3, 4 letters); the
    region (§2.2.4), variants, extensions and private use are folded away. Tags that start
    with a singleton (``x-``, ``i-``) and values that are not tags are returned as
    :func:`canonical_tag` gives them. Never raises.

    >>> language_key("en-us"), language_key("en-GB"), language_key("hi-Latn-IN")
    ('en', 'en', 'hi-Latn')
    >>> language_key("zh-hant-TW"), language_key("es-419"), language_key("zh-yue-HK")
    ('zh-Hant', 'es', 'zh-yue')
    >>> language_key("en-x-custom"), language_key("x-klingon"), language_key("English")
    ('en', 'x-klingon', 'English')
    """
    try:
        return _KEYS[value]  # called for every live event: remembered
    except (KeyError, TypeError):  # TypeError: an unhashable value (never raises)
        pass
    key = _language_key(value)
    if isinstance(value, str) and len(value) <= _KEY_CHARS_MAX:
        if len(_KEYS) >= _KEYS_MAX:
            _KEYS.clear()
        _KEYS[value] = key
    return key


def _language_key(value: str) -> str:
    """:func:`language_key`, not remembered."""
    tag = canonical_tag(value)
    if not isinstance(tag, str) or _TAG.fullmatch(tag) is None:
        return tag
    first, *rest = tag.split("-")
    if len(first) == 1:
        return tag
    out = [first]
    for subtag in rest:
        if len(subtag) == 3 and subtag.isalpha() and len(out) < 4 and not _has_script(out):
            out.append(subtag)  # extended language subtag (at most three)
        elif len(subtag) == 4 and subtag.isalpha() and not _has_script(out):
            out.append(subtag)
        else:
            break
    return "-".join(out)


def _has_script(subtags: list[str]) -> bool:
    return len(subtags[-1]) == 4 and len(subtags) > 1
