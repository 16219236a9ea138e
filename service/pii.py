"""Scrub personal data from free text before it is stored, logged, exported or labelled.

:func:`scrub` replaces each personal item with a typed placeholder and counts them by type:

============  ===============  =========================================================
type          placeholder      shape (after digit folding), check
============  ===============  =========================================================
``url``       ``<URL>``        ``scheme://`` or ``www.`` URL with userinfo (``user:pw@``)
                               or a secret parameter (``token``, ``key``, ``sig``, ``code``
                               ...); the WHOLE URL is replaced (paths carry tokens too)
``email``     ``<EMAIL>``      ``local@label.tld``; Unicode (IDN) names accepted
``card``      ``<CARD>``       13-19 digits, contiguous or 4-4-4-4(-3) / 4-6-5 / 4-6-4
                               with one kind of separator; Luhn (ISO/IEC 7812-1 Annex B);
                               not after ``ISBN``
``aadhaar``   ``<AADHAAR>``    12 digits, contiguous or 4-4-4, whatever the check digit:
                               people mistype their Aadhaar number, and other 12-digit ids
                               (roll, account, application numbers) are personal too —
                               privacy wins over precision (:func:`verhoeff_valid` is kept
                               for callers that need UIDAI's own check)
``pan``       ``<PAN>``        ``AAAAA1234A`` upper case: five letters, four digits, a
                               letter (the Income Tax Department's shape; the 4th letter,
                               the holder status, is not required: typos count)
``ip``        ``<IP>``         IPv4 with octets 0-255 (not after ``version``, ``section``,
                               ``rule`` ...); IPv6 that :class:`ipaddress.IPv6Address`
                               accepts and that holds a digit
``phone``     ``<PHONE>``      Indian mobile (``+91``/``0091``/``91``/``0`` prefix, 10 digits
                               from 6-9, split 5-5, 3-3-4, 4-3-3, ``(987) 654-3210``),
                               Indian landline (11 digits with the 0 and STD code),
                               international ``+cc``/``00cc`` with 8-15 digits
============  ===============  =========================================================

Detectors run in that order on a copy of the text whose Unicode decimal digits (Devanagari,
Arabic-Indic, full-width, ...) are folded to ASCII with :func:`unicodedata.decimal`, and
whose odd spaces, dashes, ``＋`` and ``＠`` become ASCII; folding keeps every character in place,
so spans are replaced in the ORIGINAL text. A span overlapping an earlier one is skipped.
Numbers glued to words, codes (``INV-``), decimals or longer digit groups are left alone.
Replacing can free a neighbour (``4111111111111111 9876543210``): passes repeat until one
finds nothing (at most :data:`MAX_PASSES`), so ``scrub(scrub(x).text).text == scrub(x).text``.
Text with no digit, ``@``, ``://`` or ``www.`` returns at once (the fast path).

>>> found = scrub("Mail rahul@example.com or call +91 98765 43210, Aadhaar 2341 2341 2346")
>>> found.text
'Mail <EMAIL> or call <PHONE>, Aadhaar <AADHAAR>'
>>> found.counts
{'email': 1, 'aadhaar': 1, 'phone': 1}
>>> scrub("Fee 1,20,000 due 29.11.2026, version 1.2.3").counts
{}
"""

from __future__ import annotations

import dataclasses
import ipaddress
import re
import unicodedata
from collections import Counter
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar

if TYPE_CHECKING:
    from service.events import QueryLogEvent
    from service.pipeline import Batch

__all__ = ["MAX_PASSES", "PII_TYPES", "PiiScrubStage", "Scrubbed", "luhn_valid", "scrub"]
__all__ += ["scrub_event", "scrub_many", "verhoeff_valid"]

#: Types in detection order; placeholders are ``f"<{type.upper()}>"``.
PII_TYPES: tuple[str, ...] = ("url", "email", "card", "aadhaar", "pan", "ip", "phone")
PLACEHOLDERS = {kind: f"<{kind.upper()}>" for kind in PII_TYPES}
MAX_PASSES = 4
ANNOTATION_KEY = "pii"
_R = TypeVar("_R")


class Scrubbed(NamedTuple):
    """A scrubbed text and how many items of each type were replaced (only non-zero types)."""

    text: str
    counts: dict[str, int]


# -- checksums ---------------------------------------------------------------------------------
_VERHOEFF_D = tuple(
    tuple(map(int, row))
    for row in "0123456789 1234067895 2340178956 3401289567 4012395678 "
    "5987604321 6598710432 7659821043 8765932104 9876543210".split()
)
_VERHOEFF_P = tuple(
    tuple(map(int, row))
    for row in "0123456789 1576283094 5803796142 8916043527 9453126870 "
    "4286573901 2793806415 7046913258".split()
)


def _ascii_digits(digits: str) -> str:
    if not (digits.isascii() and digits.isdigit()):
        raise ValueError("expected a non-empty string of ASCII digits")
    return digits


def verhoeff_valid(digits: str) -> bool:
    """True if ``digits`` ends in a correct Verhoeff check digit (J. Verhoeff, *Error
    Detecting Decimal Codes*, 1969: dihedral group D5 tables; UIDAI uses it for Aadhaar).

    Raises:
        ValueError: ``digits`` is empty or holds anything but ASCII digits.

    >>> verhoeff_valid("2363"), verhoeff_valid("2364")
    (True, False)
    """
    check = 0
    for i, char in enumerate(reversed(_ascii_digits(digits))):
        check = _VERHOEFF_D[check][_VERHOEFF_P[i % 8][ord(char) - 48]]
    return check == 0


def luhn_valid(digits: str) -> bool:
    """True if ``digits`` passes the Luhn mod-10 check (H. P. Luhn 1960; ISO/IEC 7812-1).

    Raises:
        ValueError: ``digits`` is empty or holds anything but ASCII digits.

    >>> luhn_valid("4111111111111111"), luhn_valid("4111111111111112")
    (True, False)
    """
    total = 0
    for i, char in enumerate(reversed(_ascii_digits(digits))):
        n = ord(char) - 48
        total += (n * 2 - 9 if n > 4 else n * 2) if i % 2 else n
    return total % 10 == 0


# -- folding -----------------------------------------------------------------------------------
_SAME_AS = {" ": "\u00a0\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
            "\u202f\u205f\u3000", "-": "\u2010\u2011\u2012\u2013\u2014\u2015\u2212\ufe63\uff0d",
            "+": "\uff0b\ufe62", "@": "\uff20\ufe6b", ".": "\uff0e", "(": "\uff08", ")": "\uff09",
            ":": "\uff1a", "/": "\uff0f"}  # fmt: skip
_FOLD_CACHE = 65_536


class _Fold(dict[int, int]):
    """``str.translate`` table: decimal digits to ASCII, look-alike punctuation to ASCII."""

    def __missing__(self, code: int) -> int:
        value = unicodedata.decimal(chr(code), -1)
        folded = 48 + value if value >= 0 else code
        if len(self) < _FOLD_CACHE:
            self[code] = folded
        return folded


_FOLD = _Fold({ord(c): ord(ascii_) for ascii_, chars in _SAME_AS.items() for c in chars})
_TRIGGER = re.compile(r"\d|[@\uff20\ufe6b]|:/|\uff1a|www\.", re.IGNORECASE)

# -- detectors ---------------------------------------------------------------------------------
_SECRET_NAMES = frozenset(
    "token access_token refresh_token id_token auth_token key api_key apikey sig signature "
    "password passwd pwd pass secret client_secret session sessionid session_id sid auth "
    "code otp jwt credential x-amz-signature x-amz-credential x-goog-signature".split()
)
_SECRET_SUFFIX = re.compile(r"[_.-](?:token|key|signature|secret|password|session)$")
_PARAM = re.compile(r"[?&#;]([^=&#;?\s]{1,64})=")
_USERINFO = re.compile(r"[a-z][a-z0-9+.\-]*://[^/?#\s]*@", re.IGNORECASE)
_URL_TAIL = ".,;:!?)]}'\""

_W = r"\w\u0300-\u036f\u0900-\u0dff"  # word characters, with Indic vowel signs and viramas
# A leading look-ahead on the first character makes the scan ~2x faster than the look-behinds.
_NUM_L = r"(?=[0-9+(])(?<![\w+])(?<!\w-)(?<!\d\.)"  # not glued to a word, code prefix, decimal
_NUM_R = r"(?!\w|\.\d)"
_GROUP_L = _NUM_L + r"(?<!/)(?<!\d[ -])"  # ... nor in a URL path, nor continuing a group
_GROUP_R = r"(?!\w|\.\d|[ -]\d)"
_OCTET = r"(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)"
_MOBILE = (
    r"(?:\(?(?:\+|00)91\)?[ -]?|91[ -]?|0[ -]?)?"
    r"(?:[6-9]\d{9}|[6-9]\d{4}[ -]\d{5}|[6-9]\d{2}[ .-]\d{3}[ .-]\d{4}"
    r"|\([6-9]\d{2}\)[ .-]?\d{3}[ .-]\d{4}|[6-9]\d{3}[ .-]\d{3}[ .-]\d{3})"
)
_URL = re.compile(r"(?:\b[a-z][a-z0-9+.\-]{1,15}://|\bwww\.)[^\s<>\"'`{}|\\^]+", re.IGNORECASE)
_EMAIL = re.compile(
    rf"(?<![{_W}.%+\-])[{_W}.%+\-]{{1,64}}@(?:[{_W}\-]{{1,63}}\.){{1,8}}"
    rf"(?:[^\W\d_]|[\u0300-\u036f\u0900-\u0dff]){{2,63}}(?![{_W}\-])"
)
_CARD = re.compile(
    _GROUP_L + r"(?:\d{13,19}|\d{4}(?P<s>[ -])(?:\d{4}(?P=s)\d{4}(?P=s)\d{4}(?:(?P=s)\d{3})?"
    r"|\d{6}(?P=s)\d{4,5}))" + _GROUP_R
)
_AADHAAR = re.compile(_GROUP_L + r"\d{4}(?P<s>[ -]?)\d{4}(?P=s)\d{4}" + _GROUP_R)
_PAN = re.compile(r"(?=[A-Z])(?<!\w)[A-Z]{5}\d{4}[A-Z](?!\w)")
_IPV4 = re.compile(rf"(?=[0-9])(?<![\w.]){_OCTET}(?:\.{_OCTET}){{3}}(?!\w|\.\d)")
#: Words after which a dotted quad or a Luhn-valid number is a version, section or ISBN.
_NOT_IP_AFTER = re.compile(
    r"(?:version|release|ver\.|section|sec\.|clause|rule|para|article|chapter|§)\s*$", re.I
)
_NOT_CARD_AFTER = re.compile(r"isbn(?:-1[03])?[\s:-]*$", re.IGNORECASE)
_IPV6 = re.compile(
    r"(?=[0-9a-f:])(?<![\w:.])(?:[0-9a-f]{0,4}:){2,7}"
    r"(?:(?:\d{1,3}\.){3}\d{1,3}|[0-9a-f]{0,4})(?![\w:]|\.\d)",
    re.IGNORECASE,
)
_LANDLINE = r"\(?0[1-9]\d{1,3}\)?[ -]?\d{3,4}[ -]?\d{3,4}"
_INTL = r"(?:\+\(?|00)[1-9](?:[ .\-()]{0,2}\d){7,14}"
_PHONE = re.compile(
    rf"{_NUM_L}(?:(?P<mobile>{_MOBILE})|(?P<land>{_LANDLINE})|(?P<intl>{_INTL})){_NUM_R}"
)


def _digits(text: str) -> str:
    return "".join(c for c in text if "0" <= c <= "9")


def _url(m: re.Match[str]) -> int | None:
    url = m.group().rstrip(_URL_TAIL)
    names = (name.lower() for name in _PARAM.findall(url))
    secret = any(n in _SECRET_NAMES or _SECRET_SUFFIX.search(n) for n in names)
    return m.start() + len(url) if secret or _USERINFO.match(url) else None


def _after(m: re.Match[str], words: re.Pattern[str]) -> bool:
    return words.search(m.string, max(0, m.start() - 12), m.start()) is not None


def _card(m: re.Match[str]) -> int | None:
    valid = luhn_valid(_digits(m.group())) and not _after(m, _NOT_CARD_AFTER)
    return m.end() if valid else None


def _ipv4(m: re.Match[str]) -> int | None:
    return None if _after(m, _NOT_IP_AFTER) else m.end()


def _ipv6(m: re.Match[str]) -> int | None:
    try:
        ipaddress.IPv6Address(m.group())
    except ValueError:
        return None
    return m.end() if any(c.isdigit() for c in m.group()) else None


def _phone(m: re.Match[str]) -> int | None:
    if m.group("mobile"):
        return m.end()
    n = len(_digits(m.group()))
    if m.group("land"):
        return m.end() if n == 11 else None
    low = 10 if m.group().startswith("00") else 8
    return m.end() if low <= n - (2 if low == 10 else 0) <= 15 else None


def _whole(m: re.Match[str]) -> int | None:
    return m.end()


_Accept = Callable[[re.Match[str]], int | None]
_Gate = Callable[[str, int], bool]  # (folded text, ASCII digit count) -> worth running?
#: (type, pattern, accept -> span end or None, gate), in priority order
_DETECTORS: tuple[tuple[str, re.Pattern[str], _Accept, _Gate], ...] = (
    ("url", _URL, _url, lambda s, n: "://" in s or "www." in s.lower()),
    ("email", _EMAIL, _whole, lambda s, n: "@" in s),
    ("card", _CARD, _card, lambda s, n: n >= 13),
    ("aadhaar", _AADHAAR, _whole, lambda s, n: n >= 12),
    ("pan", _PAN, _whole, lambda s, n: n >= 4 and not s.islower()),
    ("ip", _IPV6, _ipv6, lambda s, n: n >= 1 and s.count(":") >= 2),
    ("ip", _IPV4, _ipv4, lambda s, n: n >= 4 and s.count(".") >= 3),
    ("phone", _PHONE, _phone, lambda s, n: n >= 8),
)
_ASCII_DIGITS = b"0123456789"


def _clean_fast(text: str) -> bool:
    """True if ``text`` surely holds nothing to scrub (no digit, ``@``, ``://``, ``www.``)."""
    if not text.isascii():
        return _TRIGGER.search(text) is None
    raw = text.encode("ascii")
    if len(raw.translate(None, b"0123456789@")) != len(raw):
        return False
    return ":/" not in text and "www." not in text.lower()


def _find(text: str) -> list[tuple[int, int, str]]:
    """Spans ``(start, end, type)`` of one pass over ``text``, sorted, never overlapping."""
    if _clean_fast(text):
        return []
    norm = text if text.isascii() else text.translate(_FOLD)
    raw = norm.encode("utf-8", "surrogatepass")  # lone surrogates may come from JSON
    n_digits = len(raw) - len(raw.translate(None, _ASCII_DIGITS))
    taken = bytearray(len(norm))
    spans: list[tuple[int, int, str]] = []
    for kind, pattern, accept, gate in _DETECTORS:
        if not gate(norm, n_digits):
            continue
        for m in pattern.finditer(norm):
            end = accept(m)
            if end is None or taken.find(1, m.start(), end) != -1:
                continue
            taken[m.start() : end] = b"\x01" * (end - m.start())
            spans.append((m.start(), end, kind))
    return sorted(spans)


def scrub(text: str) -> Scrubbed:
    """Return ``text`` with every personal item replaced by its placeholder, and the counts.

    Args:
        text: any ``str`` (any length, any Unicode; NUL and lone marks are fine).

    Returns:
        :class:`Scrubbed`: the new text and ``{type: count}`` for the types found.

    Raises:
        TypeError: ``text`` is not a ``str``.

    >>> scrub("PAN ABCPE1234F, card 4111-1111-1111-1111, ip 10.0.0.1")
    Scrubbed(text='PAN <PAN>, card <CARD>, ip <IP>', counts={'card': 1, 'pan': 1, 'ip': 1})
    """
    if not isinstance(text, str):
        raise TypeError(f"scrub() expects str, got {type(text).__name__}")
    if _clean_fast(text):
        return Scrubbed(text, {})
    counts = dict.fromkeys(PII_TYPES, 0)
    for _ in range(MAX_PASSES):
        spans = _find(text)
        if not spans:
            break
        parts: list[str] = []
        pos = 0
        for start, end, kind in spans:
            parts += (text[pos:start], PLACEHOLDERS[kind])
            counts[kind] += 1
            pos = end
        text = "".join((*parts, text[pos:]))
    return Scrubbed(text, {kind: n for kind, n in counts.items() if n})


def scrub_many(texts: Iterable[str]) -> list[Scrubbed]:
    """:func:`scrub` each text, in order. Raises ``TypeError`` on a non-``str`` item."""
    return [scrub(text) for text in texts]


def _with(record: _R, **changes: Any) -> _R:
    """A copy of a frozen record with ``changes``: pydantic models or (pydantic) dataclasses."""
    copy = getattr(record, "model_copy", None)
    if copy is not None:
        return copy(update=changes)  # type: ignore[no-any-return]
    return dataclasses.replace(record, **changes)  # type: ignore[type-var]


def scrub_event(event: QueryLogEvent) -> tuple[QueryLogEvent, dict[str, int]]:
    """Scrub an event's user-visible text: ``question`` and ``answer.text``.

    Returns:
        ``(event, counts)``: the same object when nothing changed, else an updated copy (events
        are frozen); counts by type over both fields. ``user.id`` is left as is (it is
        an identifier other stages join on); schema v1 has no free-text feedback field.
    """
    question = scrub(event.question)
    answer = event.answer
    scrubbed = scrub(answer.text) if answer is not None and answer.text else None
    if not question.counts and (scrubbed is None or not scrubbed.counts):
        return event, {}  # the common case: nothing found, nothing to copy or count
    counts = Counter(question.counts)
    update: dict[str, Any] = {"question": question.text} if question.counts else {}
    if answer is not None and scrubbed is not None and scrubbed.counts:
        update["answer"] = _with(answer, text=scrubbed.text)
        counts.update(scrubbed.counts)
    clean = _with(event, **update) if update else event
    return clean, {kind: counts[kind] for kind in PII_TYPES if counts[kind]}


class PiiScrubStage:
    """Pipeline stage: scrub every event in place, before any later stage sees it.

    Sets ``batch.annotations[i]["pii"]`` to the event's counts by type (``{}`` when clean),
    for telemetry. Stateless; never logs text. Other modules may call :func:`scrub_event`.
    """

    name = "pii"

    def process(self, batch: Batch) -> None:
        for i, event in enumerate(batch.events):
            clean, counts = scrub_event(event)
            if clean is not event:
                batch.events[i] = clean
            batch.annotations[i][ANNOTATION_KEY] = counts

    def state_snapshot(self) -> Any:
        """Nothing to persist."""
        return None

    def restore(self, state: Any) -> None:
        """Nothing to restore."""
