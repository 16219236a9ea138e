"""Keyed pseudonymisation of identifiers that hold personal data (``event_id``, ``user.id``).

A placeholder would merge distinct ids, so an identifier in which :func:`service.pii.scrub.scrub`
finds personal data becomes a stable pseudonym instead: ``pii-`` + 32 hex digits of its SHA-256,
or of its HMAC-SHA256 under the operator's key (``analytics.pii_key``: :class:`Pseudonymiser`).
Equal ids keep equal pseudonyms, so de-duplication and joins stay exact.
"""

from __future__ import annotations

import hashlib
import hmac
import re
from collections.abc import Callable

from service.pii.detectors import _plain_identifier
from service.pii.scrub import _MEMO_SIZE, _memo, scrub

#: What a pseudonymised identifier starts with (:func:`pseudonymise`).
PSEUDONYM_PREFIX = "pii-"
#: Hex digits of SHA-256 kept: 128 bits, so among 10^12 distinct ids the chance that any two
#: share a pseudonym is about 10^24 / 2^129 ~ 1.5e-15 (the birthday bound n^2 / 2^(b+1)).
PSEUDONYM_HEX = 32
_PSEUDONYM = re.compile(f"{PSEUDONYM_PREFIX}[0-9a-f]{{{PSEUDONYM_HEX}}}")


def is_pseudonym(identifier: str) -> bool:
    """True if ``identifier`` has the shape :func:`pseudonymise` gives (``pii-`` + 32 hex).

    >>> is_pseudonym("pii-" + "0" * 32), is_pseudonym("e-1")
    (True, False)
    """
    return _PSEUDONYM.fullmatch(identifier) is not None


def pseudonymise(identifier: str, key: bytes | None = None) -> str:
    """Return ``identifier`` unchanged when it holds no personal data (what :func:`scrub`
    finds), else a stable pseudonym: ``"pii-"`` + the first 32 hex digits of the SHA-256 of
    its UTF-8 bytes (FIPS 180-4; lone surrogates kept with ``surrogatepass``), or with a
    ``key`` of its HMAC-SHA256 under that key (RFC 2104; FIPS 198-1).

    Unlike a placeholder, the pseudonym keeps identity: equal ids give equal pseudonyms,
    distinct ids distinct ones (128 bits: see :data:`PSEUDONYM_HEX`), so de-duplication and
    joins stay exact, across restarts and replicas as long as the key is the same. Without a
    key, whoever can guess a raw id (an e-mail address) can check a guess against its
    pseudonym; with one, only who holds the key can (the raw id is never kept either way). A
    pseudonym is returned as is, so ``pseudonymise(pseudonymise(x, k), k) ==
    pseudonymise(x, k)``. Like :func:`scrub`, purely numeric ids shaped like a phone, Aadhaar
    or card number (``9876543210``) are pseudonymised too; ids whose digits are glued to
    letters or a code prefix (``e-000123``, UUIDs) are not.

    Raises:
        TypeError: ``identifier`` is not a ``str``.

    >>> pseudonymise("e-000123")
    'e-000123'
    >>> pseudonymise("ivan.1@example.com")
    'pii-8b57cc18c1f995b5a91c62444c99961d'
    >>> pseudonymise("ivan.1@example.com", key=b"k" * 32)
    'pii-44ad9d881feed08a8493acbd2a47d88d'
    """
    if not isinstance(identifier, str):
        raise TypeError(f"pseudonymise() expects str, got {type(identifier).__name__}")
    if _plain_identifier(identifier):  # the common event id: scrub surely finds nothing
        return identifier
    if _PSEUDONYM.fullmatch(identifier) is not None or not scrub(identifier).counts:
        return identifier
    raw = identifier.encode("utf-8", "surrogatepass")
    if key is None:
        digest = hashlib.sha256(raw).hexdigest()
    else:
        digest = hmac.new(key, raw, hashlib.sha256).hexdigest()
    return PSEUDONYM_PREFIX + digest[:PSEUDONYM_HEX]


class Pseudonymiser:
    """:func:`pseudonymise` with one key (``None``: the unkeyed SHA-256 digest), remembering
    the pseudonyms of recent identifiers (:meth:`memoised`, for ``user.id``, which repeats).

    The key is never shown (``repr`` says only whether there is one) nor logged.

    Raises:
        ValueError: ``key`` is empty, or ``memo_size`` negative.

    >>> Pseudonymiser(b"k" * 32)
    Pseudonymiser(keyed=True)
    >>> Pseudonymiser()("ivan.1@example.com") == pseudonymise("ivan.1@example.com")
    True
    """

    __slots__ = ("_key", "_memo", "_memo_size")

    def __init__(self, key: bytes | None = None, memo_size: int = _MEMO_SIZE) -> None:
        if key is not None and not key:
            raise ValueError("the pseudonym key must not be empty")
        if memo_size < 0:
            raise ValueError(f"the pseudonym memo's size must be >= 0, got {memo_size}")
        self._key = key
        self._memo: dict[str, str] = {}
        self._memo_size = memo_size

    @property
    def keyed(self) -> bool:
        """True when the digest is HMAC-SHA256 under a key."""
        return self._key is not None

    def __call__(self, identifier: str) -> str:
        """:func:`pseudonymise` ``identifier`` with this key (``TypeError`` if not a ``str``)."""
        return pseudonymise(identifier, self._key)

    def memoised(self, identifier: str) -> str:
        """As calling it, remembered (up to ``memo_size`` identifiers, then afresh; about
        0.13 KB each, ``benchmarks.bench_memory``)."""
        return _memo(self._memo, identifier, self, self._memo_size)

    @property
    def peek(self) -> Callable[[str], str | None]:
        """``identifier -> str | None``: :meth:`memoised`'s remembered pseudonym of
        ``identifier`` (``None``: not remembered), changing nothing (a C-level look-up, like
        :meth:`~service.pii.scrub.ScrubMemo.peek`)."""
        return self._memo.get

    @property
    def remembered(self) -> int:
        """Identifiers whose pseudonyms are remembered now (at most ``memo_size``)."""
        return len(self._memo)

    def __repr__(self) -> str:
        return f"Pseudonymiser(keyed={self.keyed})"


#: The unkeyed pseudonymiser, used when no key is configured.
UNKEYED = Pseudonymiser()
