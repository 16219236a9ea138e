"""Scrubbing a text: find the personal items, replace each with its placeholder, count them.

:func:`scrub` is the scrubber every store, log, export and label goes through;
:func:`scrub_label` is the same scrubber, remembered, for the few distinct label values a log
holds.

The detectors (:mod:`service.pii.detectors`) run, in their table's order, on a copy of the text
whose Unicode decimal digits (Devanagari, Arabic-Indic, full-width, ...) are folded to ASCII
with :func:`unicodedata.decimal`, and whose odd spaces, dashes, ``＋`` and ``＠`` become ASCII
(:mod:`service.pii.fold`); folding keeps every character in place, so spans are replaced in
the ORIGINAL text. A span overlapping an earlier one is skipped.
Invisible format characters (Unicode category Cf: zero-width space and joiners, word joiner,
soft hyphen, BOM, bidi marks and overrides, :data:`service.pii.fold.FORMAT_CHARS`) hide
nothing: text holding one is scanned twice, first with every Cf character removed
(``98765\u200b43210`` is a phone, ``ver\u200bma@x.in`` one e-mail), then with each as a space
(``call\u200b98765...``); a span found in the first copy covers the Cf characters inside it, so
no part of an item is left behind.
Replacing can free a neighbour (``4111111111111111 9876543210``): passes repeat until one
finds nothing (at most :data:`MAX_PASSES`), so ``scrub(scrub(x).text).text == scrub(x).text``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import NamedTuple

from service.pii.detectors import _clean_fast, _spans
from service.pii.fold import _CF, _FOLD
from service.records import PII_TYPES, PLACEHOLDERS

MAX_PASSES = 4
#: Entries kept by the label memo, and by default by the text and identifier memos
#: (``analytics.pii_memo_size`` sets the PII stage's), then each starts afresh.
_MEMO_SIZE = 65_536
_label_memo: dict[str, str] = {}


class Scrubbed(NamedTuple):
    """A scrubbed text and how many items of each type were replaced (only non-zero types)."""

    text: str
    counts: dict[str, int]


def _find(text: str, checked: bool = False) -> list[tuple[int, int, str]]:
    """Spans ``(start, end, type)`` of one pass over ``text``, sorted, never overlapping.

    Text holding format characters (Cf) is scanned twice: with them removed (spans mapped
    back to the original, so they cover the Cf characters inside), then with each as a space.
    ``checked``: the caller has already seen :func:`_clean_fast` say no.
    """
    if not checked and _clean_fast(text):
        return []
    norm = text if text.isascii() else text.translate(_FOLD)
    candidates: list[tuple[int, int, str]] = []
    if not norm.isascii() and _CF.search(norm) is not None:
        kept: list[tuple[int, int]] = []
        pos = 0
        for run in _CF.finditer(norm):
            kept.append((pos, run.start()))
            pos = run.end()
        kept.append((pos, len(norm)))
        index = [i for start, stop in kept for i in range(start, stop)]
        stripped = "".join(norm[start:stop] for start, stop in kept)
        candidates += [(index[a], index[b - 1] + 1, k) for a, b, k in _spans(stripped) if b > a]
        norm = _CF.sub(lambda run: " " * len(run.group()), norm)
    candidates += _spans(norm)
    taken = bytearray(len(text))
    spans: list[tuple[int, int, str]] = []
    for start, end, kind in candidates:
        if taken.find(1, start, end) != -1:
            continue
        taken[start:end] = b"\x01" * (end - start)
        spans.append((start, end, kind))
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
    spans = _find(text, checked=True)
    if not spans:
        return Scrubbed(text, {})  # a digit or an "@" but nothing personal: most slow paths
    counts = dict.fromkeys(PII_TYPES, 0)
    for n_pass in range(1, MAX_PASSES + 1):
        parts: list[str] = []
        pos = 0
        for start, end, kind in spans:
            parts += (text[pos:start], PLACEHOLDERS[kind])
            counts[kind] += 1
            pos = end
        text = "".join((*parts, text[pos:]))
        spans = _find(text) if n_pass < MAX_PASSES else []
        if not spans:
            break
    return Scrubbed(text, {kind: n for kind, n in counts.items() if n})


def scrub_many(texts: Iterable[str]) -> list[Scrubbed]:
    """:func:`scrub` each text, in order. Raises ``TypeError`` on a non-``str`` item."""
    return [scrub(text) for text in texts]


def _memo(memo: dict[str, str], text: str, compute: Callable[[str], str],
          size: int = _MEMO_SIZE) -> str:  # fmt: skip
    """``compute(text)``, remembered in ``memo`` (cleared when it holds ``size`` entries;
    ``size`` 0: not remembered)."""
    value = memo.get(text)
    if value is None:
        value = compute(text)
        if size:
            if len(memo) >= size:
                memo.clear()
            memo[text] = value
    return value


class ScrubMemo:
    """:func:`scrub` of recent texts (questions and answers: live traffic repeats them),
    remembered: at most ``size`` texts, then it starts afresh (cleared; ``size`` 0: none
    remembered). ``scrub`` is a pure function of its text, so a remembered result is the one
    it would compute: the size changes the time, never a result. The results are shared:
    callers copy the counts, never change them.

    Memory: about 0.32 KB per text (the text, its :class:`Scrubbed` and the map entry;
    ``benchmarks.bench_memory``: 47,589 production-shaped questions and answers, 15.0 MiB),
    so 65,536 texts are at most ~21 MB.

    Raises:
        ValueError: ``size`` is negative.

    >>> memo = ScrubMemo(1)
    >>> memo("mail bo@example.com"), memo("hi"), len(memo)
    (Scrubbed(text='mail <EMAIL>', counts={'email': 1}), Scrubbed(text='hi', counts={}), 1)
    """

    __slots__ = ("_texts", "size")

    def __init__(self, size: int = _MEMO_SIZE) -> None:
        if size < 0:
            raise ValueError(f"the scrub memo's size must be >= 0, got {size}")
        self.size = size
        self._texts: dict[str, Scrubbed] = {}

    def __call__(self, text: str) -> Scrubbed:
        """:func:`scrub` of ``text``, remembered."""
        found = self._texts.get(text)
        if found is None:
            found = scrub(text)
            if self.size:
                if len(self._texts) >= self.size:
                    self._texts.clear()
                self._texts[text] = found
        return found

    def __len__(self) -> int:
        """Texts remembered now (at most ``size``)."""
        return len(self._texts)

    @property
    def peek(self) -> Callable[[str], Scrubbed | None]:
        """``text -> Scrubbed | None``: the remembered result of ``text`` (``None``: not
        remembered), changing nothing (a hit of a call changes nothing either). A batch's
        loop binds it once: one C-level look-up per text, no Python call."""
        return self._texts.get


#: The memo of :func:`service.pii.event.scrub_event` calls given none (the PII stage has its
#: own, of ``analytics.pii_memo_size`` texts).
_text_memo = ScrubMemo()


def scrub_label(text: str) -> str:
    """:func:`scrub`'s text for a label (a role, tenant, channel or retriever name): the same
    scrubber, remembered for the few distinct values a log holds. A name that is all one item
    becomes its placeholder (``ret-7-oscar@example.com`` -> ``<EMAIL>``), so two such names
    then share one label.

    Raises:
        TypeError: ``text`` is not a ``str``.

    >>> scrub_label("ret-7-oscar@example.com"), scrub_label("bm25 for +91 98765 43210")
    ('<EMAIL>', 'bm25 for <PHONE>')
    >>> scrub_label("bm25-v2")
    'bm25-v2'
    """
    return _memo(_label_memo, text, lambda raw: scrub(raw).text)
