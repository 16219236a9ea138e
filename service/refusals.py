"""Refusal detection over answer text: "does this reply decline to answer?".

A deterministic, multilingual pattern classifier (English; Hindi in Devanagari and romanized;
Spanish), case- and accent-insensitive after Unicode NFKC + casefold. It is the free, "dumb"
check used by ``goldwatch eval --answers``; the live refusal tracking builds on it.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable

#: Default refusal patterns (regular expressions over NFKC-casefolded text).
DEFAULT_PATTERNS: tuple[str, ...] = (
    # English
    r"\bi (?:do not|don't|dont) (?:have|know|find)\b",
    r"\bi (?:cannot|can't|cant|am unable to|am not able to) (?:answer|help|find|provide|say)",
    r"\b(?:no|not enough|insufficient) (?:relevant )?(?:information|context|data)\b",
    r"\bnot (?:mentioned|provided|specified|stated|available|covered) in the "
    r"(?:context|passages?|documents?|sources?|text)",
    r"\b(?:the )?(?:context|passages?|documents?) (?:does|do) not (?:contain|mention|provide|say)",
    r"\bi'?m (?:sorry|afraid)\b.*\b(?:not|no|unable|cannot|can't)\b",
    r"\bunable to (?:answer|determine|find)\b",
    r"\bno answer\b",
    # Hindi, Devanagari
    r"जानकारी (?:नहीं|उपलब्ध नहीं)",
    r"(?:पता|मालूम) नहीं",
    r"उत्तर (?:नहीं|देने में असमर्थ)",
    r"क्षमा करें",
    # Hindi, romanized
    r"\bjaankari nahi\b|\bjankari nahi\b|\bjaankari nahin\b|\bjankari nahin\b",
    r"\bpata nahi\b|\bpata nahin\b|\bmaloom nahi\b|\bmalum nahi\b",
    # Spanish
    r"\bno (?:tengo|dispongo de|hay) (?:suficiente )?informaci[oó]n\b",
    r"\bno (?:puedo|es posible) (?:responder|contestar|ayudar)",
    r"\blo siento\b",
)


def _normalise(text: str) -> str:
    return unicodedata.normalize("NFKC", text).casefold().replace("’", "'")


class RefusalDetector:
    """Pattern-based refusal classifier.

    Args:
        patterns: regular expressions (matched anywhere, against NFKC-casefolded text);
            defaults to :data:`DEFAULT_PATTERNS`.

    Raises:
        ValueError: a pattern is not a valid regular expression (the message names it).

    >>> RefusalDetector().is_refusal("I'm sorry, I don't have information about that.")
    True
    >>> RefusalDetector().is_refusal("The hostel fee is ₹85,000 per year.")
    False
    """

    def __init__(self, patterns: Iterable[str] | None = None) -> None:
        chosen = tuple(patterns) if patterns is not None else DEFAULT_PATTERNS
        try:
            self._regex = re.compile("|".join(f"(?:{p})" for p in chosen))
        except re.error as exc:
            raise ValueError(f"invalid refusal pattern: {exc}") from None

    def is_refusal(self, text: str | None) -> bool:
        """True when ``text`` declines to answer; an empty or missing answer counts as one."""
        if text is None or not text.strip():
            return True
        return self._regex.search(_normalise(text)) is not None
