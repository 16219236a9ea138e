"""Check digits of the numbers the scrubber finds: Luhn (payment cards), Verhoeff (Aadhaar) and
ISO 7064 mod-97 (IBAN).

Pure functions over ASCII digit strings; :mod:`service.pii.detectors` accepts a card shape only
when :func:`luhn_valid` says so.
"""

from __future__ import annotations

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


def iban_valid(iban: str) -> bool:
    """True if ``iban`` (ASCII letters and digits, no spaces) passes the IBAN check (ISO 13616,
    ISO 7064 MOD 97-10): the first four characters moved to the end, each letter read as a
    number (``A`` 10 ... ``Z`` 35), the whole is 1 modulo 97. Anything else is ``False``.

    >>> iban_valid("DE89370400440532013000"), iban_valid("DE89370400440532013001")
    (True, False)
    """
    if not (iban.isascii() and iban.isalnum() and 5 <= len(iban) <= 34):
        return False
    rotated = (iban[4:] + iban[:4]).upper()
    return int("".join(str(int(c, 36)) for c in rotated)) % 97 == 1
