"""Language tags in their canonical case (BCP 47, RFC 5646 §2.1.1).

Tags are case-insensitive, and goldwatch's own labels use the recommended case (``en``,
``hi-Latn``, ``pt-BR``). A tag written another way (``hi-latn``, ``EN``) by a person — a gold
set row, an accepted suggestion's label — would otherwise be a category of its own beside
the live traffic's ``hi-Latn``: two rows in every share, a language "new (not in the gold
set)" that is in it. :func:`canonical_tag` gives the recommended case; values that do not
look like a tag (``English``) are left as written.
"""

from __future__ import annotations

import re

__all__ = ["canonical_tag"]

#: A tag of the shape RFC 5646 §2.1 allows, with a 2–3 letter primary language subtag (ISO 639)
#: or a private-use / grandfathered ``x``/``i`` singleton first.
_TAG = re.compile(r"(?:[A-Za-z]{2,3}|[xXiI])(?:-[A-Za-z0-9]{1,8})*")


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
