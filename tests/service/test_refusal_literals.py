"""The required-literal pre-check of refusal patterns: read off by hand, and never changing
what the plain alternation of every pattern decides."""

from __future__ import annotations

import functools
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from service.refusals.detector import (
    DEFAULT_ANSWER_OPENINGS,
    DEFAULT_PATTERNS,
    MEMO_MAX_CHARS,
    RefusalDetector,
    _normalise,
    required_literals,
)


@pytest.mark.parametrize(
    ("pattern", "literals"),
    [
        # the longest run: "answer is not " beats the optional "the "
        (r"\b(?:the )?answer is not (?:present|available)\b", {"answer is not "}),
        # a group's alternatives, all needed as a set; shortest member decides the choice
        (r"\b(?:no|not enough) (?:relevant )?(?:information|context|data)\b",
         {"information", "context", "data"}),
        # top-level alternation: the union of each branch's literals
        # "maa?lu?m nahi?n?": runs "ma", "l", "m nah" around the optional letters: the longest
        (r"\bpata nahi?n?\b|\bmaa?lu?m nahi?n?\b", {"pata nah", "m nah"}),
        (r"ไม่ทราบ|ขออภัย", {"ไม่ทราบ", "ขออภัย"}),
        # a repeat with at least one round counts; an optional one does not
        (r"(?:abc)+x?", {"abc"}),
        (r"(?:abc)*", None),
        (r"\w+\s\d+", None),
        (r"(?i)sorry", None),  # inline flags: no literal may be trusted
        (r"a|\w", None),  # one branch offers nothing
    ],
)  # fmt: skip
def test_required_literals_by_hand(pattern: str, literals: set[str] | None) -> None:
    found = required_literals(pattern)
    assert (None if found is None else set(found)) == literals


def plain(text: str, patterns: tuple[str, ...]) -> bool:
    """What the detector decided before the pre-check: one alternation, openings first."""
    if not text.strip():
        return True
    norm = _normalise(text)
    opening = re.compile("|".join(f"(?:{p})" for p in DEFAULT_ANSWER_OPENINGS))
    if opening.match(norm):
        return False
    return re.search("|".join(f"(?:{p})" for p in patterns), norm) is not None


# Fragments of the patterns themselves, so random texts often hold literals and matches.
FRAGMENTS = [
    "i don't know", "no ", "information", "pata nahin", "maalum nahi", "sorry",
    "the answer is not present", "не могу ответить", "抱歉", "ไม่ทราบ", "data",
    "i'm sorry but not", "lo siento", "नहीं", "जानकारी", " ", ".", "Yes, ", "ß",
]  # fmt: skip


@pytest.mark.slow
@settings(max_examples=600, deadline=None)
@given(st.lists(st.one_of(st.sampled_from(FRAGMENTS), st.text(max_size=6)), max_size=12))
def test_precheck_never_changes_a_verdict(parts: list[str]) -> None:
    text = "".join(parts)
    assert _unremembering_detector().is_refusal(text) == plain(text, DEFAULT_PATTERNS)


@functools.cache
def _unremembering_detector() -> RefusalDetector:
    """One default detector for all the examples above (building one takes ~50 ms: 600 of
    them were nearly all of that test's time), with no memo, so every example runs the
    pre-check and the patterns as a fresh detector's first call does; one example's verdict
    is never reused for another."""
    return RefusalDetector(memo_size=0)


def test_extra_patterns_without_literals_are_always_tried() -> None:
    detector = RefusalDetector(extra_patterns=[r"\d{3}-only"])
    assert detector.is_refusal("ticket 123-only") and not detector.is_refusal("ticket 12-only")


def test_literal_index_verdicts_on_the_demo_answers_and_shared_literals() -> None:
    """The literal index (each literal scanned once, the patterns needing it tried) decides
    as the plain alternation on every answer of the demo log, and when two patterns share a
    literal and only the second matches (the first's failure must not end the search)."""
    import json
    from pathlib import Path

    demo = Path(__file__).resolve().parents[2] / "service" / "demo" / "querylog.jsonl"
    answers = []
    for line in demo.read_text(encoding="utf-8").splitlines():
        answer = json.loads(line).get("answer") or {}
        if isinstance(answer.get("text"), str):
            answers.append(answer["text"])
    assert len(answers) > 100
    detector = RefusalDetector()
    assert any(plain(a, DEFAULT_PATTERNS) for a in answers)  # the log holds refusals
    verdicts = [plain(a, DEFAULT_PATTERNS) for a in answers]
    assert [detector.is_refusal(a) for a in answers] == verdicts
    shared = (r"zz sorry\d", r"sorry[a-c]", r"\d+x")
    custom = RefusalDetector(patterns=shared)
    for text in ("so sorryb", "zz sorry1", "sorry!", "zz sorryz", "12x", "sorry 12x", "nothing"):
        assert custom.is_refusal(text) == plain(text, shared), text
    assert custom.is_refusal("so sorryb") and not custom.is_refusal("sorry!")


def test_memo_remembers_verdicts_within_its_size_and_never_changes_one() -> None:
    """Repeated answers are scanned once (the memo holds their verdicts, at most
    ``memo_size`` texts, then starts afresh); every verdict is the unremembered one."""
    answers = ["I'm sorry, I don't have information about that.", "Paris.",
               "I'm sorry, I don't have information about that.", "No sé la respuesta.",
               "Paris.", "The fee is 85,000."]  # fmt: skip
    plain = RefusalDetector(memo_size=0)
    memo = RefusalDetector(memo_size=2)
    scanned: list[str] = []
    scan = memo.matches_pattern

    def counting(text: str) -> bool:
        scanned.append(text)
        return scan(text)

    memo.matches_pattern = counting  # type: ignore[method-assign]
    # by hand: refusal, answer, refusal, refusal (Spanish), answer, answer
    assert memo.is_refusal_many(answers[:3]) == [True, False, True]
    assert scanned == answers[:2]  # the repeated refusal came from the memo
    assert len(memo._memo) == 2
    assert memo.is_refusal_many(answers[3:]) == [True, False, False]
    # the third text filled the memo: it started afresh with it, so "Paris." was scanned again
    assert scanned == [*answers[:2], answers[3], "Paris.", answers[5]]
    assert len(memo._memo) <= 2
    assert plain.is_refusal_many(answers) == memo.is_refusal_many(answers)
    assert plain._memo == {}
    with pytest.raises(ValueError, match="memo_size"):
        RefusalDetector(memo_size=-1)


def test_memo_does_not_hold_long_answers() -> None:
    """A memo bounded by count alone held 4,095 distinct 64 KiB answers (256 MiB); answers
    over MEMO_MAX_CHARS are judged every time and never held, the verdict unchanged."""
    detector = RefusalDetector(memo_size=4)
    long_refusal = "I'm sorry, I don't have information about that. " + "x" * MEMO_MAX_CHARS
    edge = "Paris. " + "y" * (MEMO_MAX_CHARS - len("Paris. "))  # exactly the limit
    assert detector.is_refusal_many([long_refusal, long_refusal, edge]) == [True, True, False]
    assert list(detector._memo) == [edge]
