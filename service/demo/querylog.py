"""The demo query log: a deterministic, timed production log with planted, known changes.

``querylog.jsonl`` beside this module is the embedded default that ``goldwatch replay`` (and
``goldwatch demo``) run on. It is the output of :func:`write` with the default seed and size,
and a test regenerates it byte for byte. Regenerate it with::

    python -m service.demo.querylog --out service/demo/querylog.jsonl

What it imitates: three days (Monday 16 to Wednesday 18 November 2026, India time) of the
help bot of the invented Sunrise Institute of Technology (see ``README.md``), with a daily
rhythm (quiet at night, busy mid-morning and in the evening). Each line is a valid query-log
event, schema v1 (``service.events``)::

    event_id   e-000001 ... e-003000, in time order
    timestamp  RFC 3339 UTC with a "Z", strictly increasing
    question   written in ``questions.yaml`` (:mod:`service.demo.questions`), with typos, lower
               case and WhatsApp style added here; some exact and near-duplicate repeats, as
               in real traffic
    user       {id: pseudonymous "u-NNN", role: student | parent | staff, tenant: "sunrise"}
    channel    web | whatsapp | app
    retrieval  {retriever: "prod-bm25", latency_ms, results: top 5 of BM25 over the demo
               corpus (service.retrievers.bm25), with id, score, rank, doc, doc_type}
    answer     {text, refused, citations}: the text is built from the best-matching sentence
               of the top passage, or is a refusal in the question's language; ``refused`` is
               null (goldwatch classifies the text) except on the ``app`` channel, whose client
               sends an explicit true/false; citations are the passages the answer used
    feedback   {rating: +1 or -1} on about one event in eight, otherwise absent

The production retriever ignores passage ACLs, like many real RAG systems, so staff-only
passages (salary circular, invigilation note) often come back to students and parents. Its
answer step skips them, except for questions about staff pay or exam duty: a student who asks
about staff salaries gets the staff-only salary circular and, about 60 % of the time, an answer
from it (an ACL leak; :data:`ACL_LEAK_EVENT_IDS`). Hindi questions written only in Devanagari
share no word with the English corpus, so BM25 returns nothing and the bot refuses them.

Planted changes (exact positions in :data:`CHANGES`; with the defaults, n = 3,000):

=====  ======================  ======================  =====================================
phase  events                  from (UTC; IST +5:30)   what
=====  ======================  ======================  =====================================
A      e-000001 .. e-001350    2026-11-15T18:32:32Z    baseline: language en 90 %, hi-Latn
       (first 45 %)                                    8 %, hi 2 %; topics spread like the
                                                       gold set (fees, hostel, admissions
                                                       heavy); refusals about 5 %, two thirds
                                                       of them to out-of-scope or unanswerable
                                                       questions
B      e-001351 .. e-002250    2026-11-17T08:40:40Z    language drift: hi-Latn rises to 35 %
       (next 30 %)                                     (parents on WhatsApp); topic drift:
                                                       exams rise to 40 % of questions, 70 %
                                                       of them about the exam schedule;
                                                       admissions fall to 4 % (season over);
                                                       refusals about 7 % (romanised and
                                                       Devanagari questions retrieve worse)
C      e-002251 .. e-003000    2026-11-18T06:32:50Z    retrieval breakage: the SEE timetable
       (last 25 %)                                     (``see-timetable-odd-2026.html``,
                                                       p-0038..p-0041) is missing from the
                                                       production index, so exam-schedule
                                                       questions are mostly refused ("I'm
                                                       sorry, I don't have information about
                                                       that." / "Mujhe iski jaankari nahi
                                                       hai"): refusals jump to about 25 %;
                                                       languages and topics as in phase B
=====  ======================  ======================  =====================================

Personal data appears only in the planted events listed in :data:`PII_EVENT_IDS` (an e-mail
address, an Indian mobile number, a PAN, an Aadhaar number; see ``planted_pii`` in
``questions.yaml``); answers never quote the college's own phone number or e-mail address.

The ground truth of every event (phase, language, topic, intent, whether it was refused and
why, planted personal data, ACL leak) is returned beside the events by
:func:`generate_with_meta`, never inside them: goldwatch has to find it on its own.

Determinism: one :class:`random.Random` seeded with ``seed``, nothing that depends on set or
hash order, BM25 scores rounded to 4 decimals, JSON written in a fixed key order with compact
separators and non-ASCII text kept as UTF-8.

>>> events = generate(n=40)
>>> len(events), events[0]["event_id"], events[0]["user"]["tenant"]
(40, 'e-000001', 'sunrise')
>>> [r["rank"] for r in events[0]["retrieval"]["results"]] == list(
...     range(1, len(events[0]["retrieval"]["results"]) + 1))
True
"""

from __future__ import annotations

import argparse
import json
import math
import random
import re
import sys
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import cache
from pathlib import Path
from typing import Any

from service.data.corpus import load_corpus
from service.demo import DEMO_DIR, demo_path
from service.demo.questions import LANGUAGES, Intent, question_bank
from service.records import Passage
from service.retrievers.bm25 import BM25Retriever
from service.retrievers.text import tokenize

__all__ = [
    "ACL_LEAK_EVENT_IDS", "CHANGES", "DEFAULT_N", "DEFAULT_PATH", "DEFAULT_SEED", "EventMeta",
    "LANGUAGES", "PHASE_LANGUAGES", "PHASE_TOPICS", "PII_EVENT_IDS", "REMOVED_DOC",
    "generate", "generate_with_meta", "main", "phase_of", "pii_positions", "render",
    "summary", "write",
]  # fmt: skip

#: Events in the committed log.
DEFAULT_N = 3000
DEFAULT_SEED = 0
#: Where the committed log lives.
DEFAULT_PATH: Path = DEMO_DIR / "querylog.jsonl"

#: Start of the simulated period: Monday 16 November 2026, 00:00 India time (UTC+5:30).
START = datetime(2026, 11, 15, 18, 30, tzinfo=UTC)
DAYS = 3

RETRIEVER = "prod-bm25"
TENANT = "sunrise"
TOP_K = 5
#: The document phase C drops from the production index.
REMOVED_DOC = "see-timetable-odd-2026.html"

#: Phase boundaries as shares of the log: A is [0, 0.45), B [0.45, 0.75), C [0.75, 1).
PHASE_STARTS: tuple[tuple[str, float], ...] = (("A", 0.0), ("B", 0.45), ("C", 0.75))

#: Language shares per phase (the generator's labels, not a detector's).
PHASE_LANGUAGES: dict[str, dict[str, float]] = {
    "A": {"en": 0.90, "hi-Latn": 0.08, "hi": 0.02},
    "B": {"en": 0.62, "hi-Latn": 0.35, "hi": 0.03},
    "C": {"en": 0.62, "hi-Latn": 0.35, "hi": 0.03},
}

_TOPICS_A = {
    "fees": 0.20, "hostel": 0.17, "admissions": 0.17, "exams": 0.14, "scholarships": 0.09,
    "library": 0.06, "transport": 0.07, "salary": 0.03, "exam-duty": 0.01, "placements": 0.015,
    "facilities": 0.01, "events": 0.005, "general": 0.005, "out-of-scope": 0.025,
}  # fmt: skip
_TOPICS_B = {
    "fees": 0.16, "hostel": 0.15, "admissions": 0.04, "exams": 0.40, "scholarships": 0.06,
    "library": 0.05, "transport": 0.04, "salary": 0.02, "exam-duty": 0.02, "placements": 0.015,
    "facilities": 0.01, "events": 0.005, "general": 0.005, "out-of-scope": 0.025,
}  # fmt: skip
#: Topic shares per phase (sum to 1).
PHASE_TOPICS: dict[str, dict[str, float]] = {"A": _TOPICS_A, "B": _TOPICS_B, "C": _TOPICS_B}
#: Share of exam questions that ask about the schedule (dates, papers, hall tickets).
SCHEDULE_SHARE: dict[str, float] = {"A": 0.5, "B": 0.7, "C": 0.7}

#: Probability that the bot refuses, by cause (else it answers from the best usable passage).
REFUSE_OUT_OF_SCOPE = 0.9
REFUSE_UNANSWERABLE = 0.25
REFUSE_ACL = 0.4  # non-staff asking about staff pay or exam duty
REFUSE_INDEX_GAP = 0.64  # phase C: exam-schedule questions, timetable gone from the index
REFUSE_IN_SCOPE = 0.005  # over-refusal of answerable questions
#: Probability of an exact repeat of an earlier question with the same intent and language.
REPEAT = 0.08
#: Probability that an event carries a feedback rating.
FEEDBACK = 0.12

#: The planted changes, as generated with the defaults (a test checks them).
CHANGES: tuple[dict[str, Any], ...] = (
    {
        "phase": "A",
        "index": 0,
        "event_id": "e-000001",
        "timestamp": "2026-11-15T18:32:32Z",
        "change": "baseline: en 90 %, hi-Latn 8 %, hi 2 %; gold-like topics; refusals ~5 %",
    },
    {
        "phase": "B",
        "index": 1350,
        "event_id": "e-001351",
        "timestamp": "2026-11-17T08:40:40Z",
        "change": "language and topic drift: hi-Latn 35 %; exams 40 % of questions "
        "(70 % of them about the schedule); admissions 4 %",
    },
    {
        "phase": "C",
        "index": 2250,
        "event_id": "e-002251",
        "timestamp": "2026-11-18T06:32:50Z",
        "change": f"retrieval breakage: {REMOVED_DOC} removed from the production index; "
        "exam-schedule questions refused, refusals ~25 %",
    },
)

#: Events whose question holds planted personal data (defaults), with its kinds.
PII_EVENT_IDS: dict[str, tuple[str, ...]] = {
    "e-000121": ("email",),
    "e-000391": ("phone",),
    "e-000661": ("pan",),
    "e-000931": ("aadhaar",),
    "e-001561": ("phone",),
    "e-001891": ("email", "phone"),
    "e-002431": ("pan",),
    "e-002791": ("email",),
}

#: Events where a student or parent got an answer citing a staff-only passage (defaults).
ACL_LEAK_EVENT_IDS: tuple[str, ...] = (
    "e-000074", "e-000169", "e-000353", "e-000432", "e-000560", "e-000627", "e-000642",
    "e-000958", "e-001088", "e-001874", "e-002024", "e-002061", "e-002174", "e-002189",
    "e-002288", "e-002347", "e-002867", "e-002907", "e-002932", "e-002979",
)  # fmt: skip

_HOURLY_RHYTHM = (  # relative traffic per hour of the day, India time
    0.30, 0.15, 0.10, 0.08, 0.08, 0.15, 0.40, 0.80, 1.20, 1.60, 1.90, 2.00,
    1.80, 1.60, 1.60, 1.50, 1.50, 1.60, 1.80, 2.10, 2.40, 2.40, 1.90, 1.00,
)  # fmt: skip
_STAFF_TOPICS = ("salary", "exam-duty")
_ROLES = ("student", "parent", "staff")
_CHANNELS = ("web", "whatsapp", "app")
_CHANNEL_BY_ROLE = {
    "student": (0.30, 0.40, 0.30),
    "parent": (0.25, 0.70, 0.05),
    "staff": (0.60, 0.10, 0.30),
}
_USERS_PER_ROLE = {"student": 520, "parent": 300, "staff": 60}

_REFUSALS: dict[str, tuple[str, ...]] = {
    "en": (
        "I'm sorry, I don't have information about that.",
        "I'm sorry, I could not find this in the college documents. Please contact the office.",
        "I don't have enough information to answer this question.",
    ),
    "hi-Latn": (
        "Maaf kijiye, mujhe iski jaankari nahi hai.",
        "Mujhe iski jaankari nahi hai. Kripya college office se sampark karein.",
        "Sorry, is baare mein mujhe jaankari nahi hai.",
    ),
    "hi": (
        "क्षमा करें, मुझे इसकी जानकारी नहीं है।",
        "मुझे इस बारे में जानकारी नहीं है। कृपया कॉलेज कार्यालय से संपर्क करें।",
    ),
}
_OUT_OF_SCOPE_REFUSALS: dict[str, tuple[str, ...]] = {
    "en": (
        "I'm sorry, I can only answer questions about Sunrise Institute of Technology. "
        "I cannot help with that.",
        "I'm sorry, that is not something I can help with. Please ask about admissions, fees, "
        "hostel, exams or other college matters.",
    ),
    "hi-Latn": (
        "Maaf kijiye, mujhe iski jaankari nahi hai. Main sirf college se jude sawalon ka jawab "
        "de sakta hoon.",
    ),
    "hi": ("क्षमा करें, मैं केवल कॉलेज से जुड़े प्रश्नों का उत्तर दे सकता हूँ।",),
}
_ACL_REFUSALS: dict[str, tuple[str, ...]] = {
    "en": ("I'm sorry, salary and duty details are shared only with staff, so I cannot answer.",),
    "hi-Latn": ("Maaf kijiye, staff ki salary ki jaankari nahi de sakte.",),
    "hi": ("क्षमा करें, यह जानकारी केवल स्टाफ के लिए है।",),
}
_DOC_TITLES = {
    "fee-circular-2026.pdf": ("the fee circular", "fee circular", "फीस परिपत्र"),
    "hostel-rules-2026-27.pdf": ("the hostel rules", "hostel rules", "हॉस्टल नियमों"),
    "admissions-2026.html": ("the admissions page", "admission notice", "प्रवेश सूचना"),
    "scholarship-notice-2026.docx": (
        "the scholarship notice", "scholarship notice", "छात्रवृत्ति सूचना",
    ),
    "academic-regulations-r2024.pdf": (
        "the academic regulations", "academic regulations", "शैक्षणिक नियमों",
    ),
    "see-timetable-odd-2026.html": ("the SEE timetable", "exam time table", "परीक्षा समय-सारणी"),
    "library-rules.html": ("the library rules", "library rules", "पुस्तकालय नियमों"),
    "transport-circular-2026.docx": (
        "the transport circular", "transport circular", "परिवहन परिपत्र",
    ),
    "salary-circular-2026.pdf": ("the salary circular", "salary circular", "वेतन परिपत्र"),
    "invigilation-note-odd-2026.docx": (
        "the invigilation note", "invigilation note", "निरीक्षण सूचना",
    ),
}  # fmt: skip

#: Word-level typos people make (applied to English and Hinglish questions).
_TYPOS = {
    "fees": "fess", "fee": "fe", "hostel": "hostal", "schedule": "schedual",
    "scholarship": "scholorship", "exam": "exm", "exams": "exms", "admission": "admision",
    "library": "libary", "attendance": "attendence", "installment": "instalment",
    "instalment": "installmnt", "certificate": "certificat", "semester": "semister",
    "receipt": "reciept", "refund": "refnd", "kitna": "kitana", "kab": "kb", "hai": "h",
    "kya": "kia", "please": "plz", "you": "u", "timetable": "time tabel", "what": "wat",
}  # fmt: skip
#: Other ways of writing the same words (one or two applied to many English / Hinglish questions).
_REWORDS: tuple[tuple[re.Pattern[str], tuple[str, ...]], ...] = tuple(
    (re.compile(pattern, re.IGNORECASE), options)
    for pattern, options in (
        (r"\bbtech\b", ("b.tech", "b tech", "BTech", "B.Tech")),
        (r"\bB\.Tech\b", ("btech", "b.tech", "BTech")),
        (r"\bfees\b", ("fee",)),
        (r"\bfee\b", ("fees",)),
        (r"\bkitna\b", ("kitni", "kitne")),
        (r"\bkitni\b", ("kitna",)),
        (r"\bhai\b", ("he", "h", "hai ji")),
        (r"\bkya\b", ("kia", "kyaa")),
        (r"\bsemester\b", ("sem",)),
        (r"\bsem\b", ("semester",)),
        (r"\bcollege\b", ("clg",)),
        (r"\bthe ", ("",)),
        (r"\blast date\b", ("deadline", "last day")),
        (r"\bwhen\b", ("wen",)),
        (r"\bplease\b", ("pls",)),
        (r"\bmy son\b", ("my ward", "my child")),
        (r"\bdaughter\b", ("girl", "beti")),
        (r"\bfirst year\b", ("1st year", "FY")),
        (r"\bfirst\b", ("1st",)),
        (r"\bsecond\b", ("2nd",)),
        (r"\bwhat is\b", ("whats", "what's", "wht is")),
        (r"\bcan i\b", ("can we", "is it possible to")),
    )
)
_CONTEXTS = {
    "en": (" for 1st year", " for my son", " in 2026", " for this year", " for CSE"),
    "hi-Latn": (" bhaiya", " ji", " 1st year ke liye", " is saal", " mere bete ke liye"),
}
_PREFIXES = ("sir ", "hello sir, ", "hi ", "pls tell ", "good morning sir ", "namaste, ")
_SUFFIXES = (" pls", " ??", " urgent", " sir", " plz reply", "?? pls tell")
_SENTENCE_END = re.compile(r"(?<=\.)\s+(?=[A-Z0-9(])")
_MAX_ANSWER_CHARS = 320
_ABBREVIATION = re.compile(r"(?:\bRs|\bNo|Engg|\bRef|\bSc|\bDr|\bSt|\bvs|\b[A-Z])\.$")
_CONTACT = re.compile(r"@|\d{3,5}-\d{6,8}")


@dataclass(frozen=True)
class EventMeta:
    """The ground truth of one generated event (kept apart from the event itself).

    Attributes:
        index: position in the log (0-based).
        event_id: the event's id.
        phase: ``"A"``, ``"B"`` or ``"C"`` (module docstring).
        language: ``en``, ``hi-Latn`` or ``hi``: the language the question was written in.
        topic, intent: what it asks about (``questions.yaml``).
        scope: ``"in"``, ``"unanswerable"`` or ``"out"``.
        schedule: an exam-schedule question (answered from the SEE timetable).
        role: the asker's role.
        refused: whether the bot's answer is a refusal.
        refusal_cause: why, ``None`` when answered: ``out-of-scope``, ``unanswerable``
            (scope), ``acl`` (a non-staff user asked about staff pay or duty), ``index-gap``
            (phase C, exam-schedule question), ``no-results`` (nothing the bot may use was
            retrieved: no result at all, or only staff-only passages), ``over-refusal`` (an
            answerable question refused anyway).
        pii: kinds of planted personal data in the question (empty for all but a few).
        acl_leak: a non-staff user got an answer citing a staff-only passage.
        repeat: the question is an exact repeat of an earlier one.
    """

    index: int
    event_id: str
    phase: str
    language: str
    topic: str
    intent: str
    scope: str
    schedule: bool
    role: str
    refused: bool
    refusal_cause: str | None
    pii: tuple[str, ...]
    acl_leak: bool
    repeat: bool


@dataclass
class _Draft:
    """An event before retrieval and answering."""

    index: int
    phase: str
    timestamp: datetime
    question: str
    intent: Intent
    language: str
    role: str
    user: str
    channel: str
    pii: tuple[str, ...]
    repeat: bool


def event_id(index: int) -> str:
    """Return the id of the event at 0-based ``index``: ``event_id(0) == "e-000001"``."""
    return f"e-{index + 1:06d}"


def phase_of(index: int, n: int) -> str:
    """Return the phase (``"A"``, ``"B"``, ``"C"``) of event ``index`` in a log of ``n``.

    >>> [phase_of(i, 100) for i in (0, 44, 45, 74, 75, 99)]
    ['A', 'A', 'B', 'B', 'C', 'C']
    """
    phase = PHASE_STARTS[0][0]
    for name, share in PHASE_STARTS:
        if index >= round(share * n):
            phase = name
    return phase


def pii_positions(n: int) -> dict[int, int]:
    """Return ``{event index: index into the bank's planted_pii}`` for a log of ``n`` events."""
    return {round(planted.at * n): k for k, planted in enumerate(question_bank().planted_pii)}


@cache
def _corpus() -> tuple[Passage, ...]:
    return load_corpus(demo_path("corpus.jsonl")).passages


@cache
def _retrievers() -> tuple[BM25Retriever, BM25Retriever]:
    """The production index, and the same without the SEE timetable (phase C)."""
    passages = _corpus()
    broken = [p for p in passages if p.doc != REMOVED_DOC]
    return BM25Retriever(passages, name=RETRIEVER), BM25Retriever(broken, name=RETRIEVER)


def _timestamps(rng: random.Random, n: int) -> list[datetime]:
    """``n`` strictly increasing whole-second times over :data:`DAYS` days, daily rhythm."""
    weights = [_HOURLY_RHYTHM[h % 24] * (1.0 + 0.05 * (h // 24)) for h in range(24 * DAYS)]
    total = sum(weights)
    bounds: list[float] = []
    running = 0.0
    for weight in weights:
        running += weight
        bounds.append(running / total)
    draws = sorted(rng.random() for _ in range(n))
    seconds: list[int] = []
    hour = 0
    for u in draws:
        while hour < len(bounds) - 1 and u > bounds[hour]:
            hour += 1
        low = bounds[hour - 1] if hour else 0.0
        within = (u - low) / (bounds[hour] - low)
        second = int((hour + within) * 3600)
        if seconds and second <= seconds[-1]:
            second = seconds[-1] + 1
        seconds.append(second)
    return [START + timedelta(seconds=s) for s in seconds]


def _quota(rng: random.Random, shares: dict[Any, float], n: int) -> list[Any]:
    """``n`` labels in random order, each label ``round(share * n)`` times (largest remainder).

    Quotas rather than independent draws keep every phase's mix at its planted shares.
    """
    total = sum(shares.values())
    exact = {key: share / total * n for key, share in shares.items()}
    counts = {key: math.floor(value) for key, value in exact.items()}
    by_remainder = sorted(exact, key=lambda key: counts[key] - exact[key])  # stable on ties
    for key in by_remainder[: n - sum(counts.values())]:
        counts[key] += 1
    labels = [key for key, count in counts.items() for _ in range(count)]
    rng.shuffle(labels)
    return labels


def _phase_plans(rng: random.Random, n: int) -> list[tuple[str, tuple[str, bool]]]:
    """Per event: ``(language, (topic, schedule))``, by quota within each phase."""
    plans: list[tuple[str, tuple[str, bool]]] = []
    for phase, _ in PHASE_STARTS:
        size = sum(1 for index in range(n) if phase_of(index, n) == phase)
        topics: dict[tuple[str, bool], float] = {}
        for topic, share in PHASE_TOPICS[phase].items():
            if topic == "exams":
                topics[topic, True] = share * SCHEDULE_SHARE[phase]
                topics[topic, False] = share * (1 - SCHEDULE_SHARE[phase])
            else:
                topics[topic, False] = share
        languages = _quota(rng, PHASE_LANGUAGES[phase], size)
        plans.extend(zip(languages, _quota(rng, topics, size), strict=True))
    return plans


def _intent_for(rng: random.Random, topic: str, schedule: bool, language: str) -> Intent:
    candidates = [
        i
        for i in question_bank().intents
        if i.topic == topic and i.schedule == schedule and language in i.questions
    ]
    return rng.choice(candidates)


def _role_for(rng: random.Random, topic: str, language: str) -> str:
    if topic in _STAFF_TOPICS:
        weights = (0.17, 0.08, 0.75)
    elif language == "en":
        weights = (0.62, 0.32, 0.06)
    else:
        weights = (0.42, 0.55, 0.03)
    return rng.choices(_ROLES, weights=weights)[0]


def _user_pools(rng: random.Random) -> dict[str, list[str]]:
    """Pseudonymous ids ``u-001``.. shuffled over the roles; a few users ask a lot."""
    total = sum(_USERS_PER_ROLE.values())
    ids = [f"u-{k:03d}" for k in range(1, total + 1)]
    rng.shuffle(ids)
    pools: dict[str, list[str]] = {}
    start = 0
    for role in _ROLES:
        pools[role] = ids[start : start + _USERS_PER_ROLE[role]]
        start += _USERS_PER_ROLE[role]
    return pools


def _typo(rng: random.Random, text: str) -> str:
    words = text.split(" ")
    known = [k for k, w in enumerate(words) if w.lower().strip("?,.") in _TYPOS]
    if known and rng.random() < 0.7:
        k = rng.choice(known)
        bare = words[k].lower().strip("?,.")
        words[k] = words[k].lower().replace(bare, _TYPOS[bare])
        return " ".join(words)
    long = [k for k, w in enumerate(words) if len(w) >= 5 and w.isalpha()]
    if not long:
        return text
    k = rng.choice(long)
    word = words[k]
    j = rng.randrange(1, len(word) - 2)
    words[k] = word[:j] + word[j + 1] + word[j] + word[j + 2 :]  # swap two letters
    return " ".join(words)


def _reword(rng: random.Random, text: str, language: str) -> str:
    """Near-duplicates: swap one or two words for another spelling, maybe add a context."""
    for _ in range(2):
        if rng.random() >= 0.45:
            break
        options = [(rx, alts) for rx, alts in _REWORDS if rx.search(text)]
        if options:
            rx, alts = rng.choice(options)
            text = rx.sub(rng.choice(alts), text, count=1)
    if rng.random() < 0.12:
        text = (
            text.rstrip("?") + rng.choice(_CONTEXTS[language]) + ("?" if text.endswith("?") else "")
        )
    return text


def _style(rng: random.Random, text: str, language: str, channel: str) -> str:
    """Add the way people type: lower case, no question mark, typos, 'sir', 'pls'."""
    if language == "hi":
        return text if rng.random() < 0.8 else text.rstrip("?") + " जी?"
    casual = channel != "web"
    text = _reword(rng, text, language)
    if rng.random() < (0.6 if casual else 0.2):
        text = text.lower()
    if rng.random() < (0.5 if casual else 0.2):
        text = text.rstrip("?")
    if rng.random() < (0.25 if casual else 0.08):
        text = _typo(rng, text)
    if casual and rng.random() < 0.12:
        text = rng.choice(_PREFIXES) + text
    if casual and rng.random() < 0.12:
        text = text.rstrip("?") + rng.choice(_SUFFIXES)
    return text


def _drafts(rng: random.Random, n: int) -> list[_Draft]:
    times = _timestamps(rng, n)
    pools = _user_pools(rng)
    user_weights = {
        role: [1.0 / (rank + 4) for rank in range(len(ids))] for role, ids in pools.items()
    }
    planted_at = pii_positions(n)
    plans = _phase_plans(rng, n)
    bank = question_bank()
    by_key = {(i.topic, i.name): i for i in bank.intents}
    asked: dict[tuple[str, str, str], list[str]] = {}
    drafts: list[_Draft] = []
    for index in range(n):
        phase = phase_of(index, n)
        planted = bank.planted_pii[planted_at[index]] if index in planted_at else None
        if planted is not None:
            intent = by_key[planted.topic, planted.intent]
            language, role = planted.language, planted.role
        else:
            language, (topic, schedule) = plans[index]
            intent = _intent_for(rng, topic, schedule, language)
            role = _role_for(rng, intent.topic, language)
        user = rng.choices(pools[role], weights=user_weights[role])[0]
        channel = rng.choices(_CHANNELS, weights=_CHANNEL_BY_ROLE[role])[0]
        if planted is not None:
            question, pii, repeat = planted.question, planted.pii, False
        else:
            earlier = asked.setdefault((intent.topic, intent.name, language), [])
            if earlier and rng.random() < REPEAT:
                question = rng.choice(earlier)
            else:
                base = rng.choice(intent.questions[language])
                question = _style(rng, base, language, channel)
            pii, repeat = (), question in earlier
            earlier.append(question)
        drafts.append(
            _Draft(index, phase, times[index], question, intent, language, role, user, channel,
                   pii, repeat)
        )  # fmt: skip
    return drafts


def _sentences(text: str) -> list[str]:
    parts: list[str] = []
    for piece in _SENTENCE_END.split(text):
        if parts and _ABBREVIATION.search(parts[-1]):
            parts[-1] = f"{parts[-1]} {piece}"
        else:
            parts.append(piece)
    return parts


def _best_sentence(question: str, passage: Passage) -> str:
    """The sentence of ``passage`` sharing most words with ``question`` (first on ties)."""
    wanted = set(tokenize(question, stopwords=True))
    best, best_score = "", -1
    for sentence in _sentences(passage.text):
        if _CONTACT.search(sentence) or len(sentence) < 50:
            continue
        score = len(wanted & set(tokenize(sentence, stopwords=True)))
        if score > best_score:
            best, best_score = sentence, score
    best = best or passage.text.split(". ")[0] + "."
    if len(best) > _MAX_ANSWER_CHARS:  # keep the clauses that fit
        clauses = best.split("; ")
        best = clauses[0]
        for clause in clauses[1:]:
            if len(best) + len(clause) + 2 > _MAX_ANSWER_CHARS:
                break
            best = f"{best}; {clause}"
    return best


def _answer_text(rng: random.Random, question: str, language: str, passage: Passage) -> str:
    sentence = _best_sentence(question, passage)
    if not sentence.endswith("."):
        sentence = sentence.rstrip(";,") + "."
    titles = _DOC_TITLES.get(passage.doc or "", ("the college notice", "notice", "सूचना"))
    roll = rng.random()
    if language == "hi-Latn":
        if roll < 0.5:
            return f"Ji, {titles[1]} ke hisaab se: {sentence}"
        return sentence
    if language == "hi":
        if roll < 0.6:
            return f"जी, {titles[2]} के अनुसार: {sentence}"
        return sentence
    if roll < 0.35:
        return f"As per {titles[0]}: {sentence}"
    if roll < 0.5:
        return f"{sentence} Please check {titles[0]} for details."
    return sentence


def _public(passage: Passage) -> bool:
    return not passage.acl or "student" in passage.acl


def _usable(draft: _Draft, passages: Sequence[Passage]) -> list[Passage]:
    """The retrieved passages the production bot may answer from, best first.

    Its answer step skips staff-only passages, except for questions about staff pay or exam
    duty, where it keeps them whoever asks: the ACL leak this demo plants.
    """
    if draft.intent.topic in _STAFF_TOPICS:
        return list(passages)
    return [p for p in passages if _public(p)]


def _refusal_cause(rng: random.Random, draft: _Draft, has_passages: bool) -> str | None:
    """Why the bot refuses ``draft``, or ``None`` when it answers (draws from ``rng``)."""
    intent = draft.intent
    if not has_passages:
        return "no-results"
    if intent.scope == "out":
        return "out-of-scope" if rng.random() < REFUSE_OUT_OF_SCOPE else None
    if intent.scope == "unanswerable":
        return "unanswerable" if rng.random() < REFUSE_UNANSWERABLE else None
    if intent.topic in _STAFF_TOPICS and draft.role != "staff":
        return "acl" if rng.random() < REFUSE_ACL else None
    if intent.schedule and draft.phase == "C":
        return "index-gap" if rng.random() < REFUSE_INDEX_GAP else None
    return "over-refusal" if rng.random() < REFUSE_IN_SCOPE else None


def _refusal_text(rng: random.Random, cause: str, language: str) -> str:
    table = {"out-of-scope": _OUT_OF_SCOPE_REFUSALS, "acl": _ACL_REFUSALS}.get(cause, _REFUSALS)
    return rng.choice(table[language])


def generate_with_meta(
    seed: int = DEFAULT_SEED, n: int = DEFAULT_N
) -> tuple[list[dict[str, Any]], list[EventMeta]]:
    """Generate the demo log and, separately, the ground truth of each event.

    Args:
        seed: random seed; the same seed and ``n`` always give the same log.
        n: number of events (>= 1).

    Returns:
        ``(events, meta)``: the events as JSON-able dicts (schema v1) in time order, and one
        :class:`EventMeta` per event, in the same order.

    Raises:
        ValueError: ``n < 1``.
    """
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    rng = random.Random(seed)
    drafts = _drafts(rng, n)
    full, broken = _retrievers()
    by_id = {p.id: p for p in _corpus()}
    results: list[list[Any]] = [[] for _ in drafts]
    for retriever, phase_c in ((full, False), (broken, True)):
        chosen = [d for d in drafts if (d.phase == "C") == phase_c]
        hits = retriever.search_batch([d.question for d in chosen], TOP_K)
        for draft, row in zip(chosen, hits, strict=True):
            results[draft.index] = row
    events: list[dict[str, Any]] = []
    metas: list[EventMeta] = []
    for draft in drafts:
        row = results[draft.index]
        usable = _usable(draft, [by_id[hit.doc_id] for hit in row])
        cause = _refusal_cause(rng, draft, bool(usable))
        citations: list[str] = []
        if cause is None:
            top = usable[0]
            text = _answer_text(rng, draft.question, draft.language, top)
            citations = [top.id]
            if len(usable) > 1 and rng.random() < 0.25:
                citations.append(usable[1].id)
        else:
            text = _refusal_text(rng, cause, draft.language)
        leak = cause is None and any(
            by_id[c].acl and draft.role not in by_id[c].acl for c in citations
        )
        event: dict[str, Any] = {
            "event_id": event_id(draft.index),
            "timestamp": draft.timestamp.strftime("%Y-%m-%dT%H:%M:%SZ"),
            "question": draft.question,
            "user": {"id": draft.user, "role": draft.role, "tenant": TENANT},
            "channel": draft.channel,
            "retrieval": {
                "retriever": RETRIEVER,
                "latency_ms": round(rng.lognormvariate(math.log(32.0), 0.35), 1),
                "results": [
                    {
                        "id": hit.doc_id,
                        "score": round(hit.score, 4),
                        "rank": rank,
                        "doc": by_id[hit.doc_id].doc,
                        "doc_type": by_id[hit.doc_id].doc_type,
                    }
                    for rank, hit in enumerate(row, start=1)
                ],
            },
            "answer": {
                "text": text,
                "refused": (cause is not None) if draft.channel == "app" else None,
                "citations": citations,
            },
        }
        if rng.random() < FEEDBACK:
            happy = rng.random() < (0.15 if cause else 0.75)
            event["feedback"] = {"rating": 1 if happy else -1}
        events.append(event)
        metas.append(
            EventMeta(
                index=draft.index,
                event_id=event["event_id"],
                phase=draft.phase,
                language=draft.language,
                topic=draft.intent.topic,
                intent=draft.intent.name,
                scope=draft.intent.scope,
                schedule=draft.intent.schedule,
                role=draft.role,
                refused=cause is not None,
                refusal_cause=cause,
                pii=draft.pii,
                acl_leak=leak,
                repeat=draft.repeat,
            )
        )
    return events, metas


def generate(seed: int = DEFAULT_SEED, n: int = DEFAULT_N) -> list[dict[str, Any]]:
    """Return the demo log's events (JSON-able dicts, schema v1), in time order.

    See :func:`generate_with_meta` for the arguments and the ground truth.
    """
    return generate_with_meta(seed, n)[0]


def render(events: Sequence[dict[str, Any]]) -> bytes:
    """Return ``events`` as UTF-8 JSONL: one compact object a line, non-ASCII kept as is."""
    lines = (json.dumps(e, ensure_ascii=False, separators=(",", ":")) for e in events)
    return "".join(f"{line}\n" for line in lines).encode("utf-8")


def write(path: Path | str = DEFAULT_PATH, seed: int = DEFAULT_SEED, n: int = DEFAULT_N) -> int:
    """Generate the log and write it to ``path`` as JSONL; return the number of events."""
    events = generate(seed, n)
    Path(path).write_bytes(render(events))
    return len(events)


def summary(metas: Sequence[EventMeta]) -> dict[str, dict[str, Any]]:
    """Counts per phase: events, languages, topics, refusals (and their causes), repeats.

    >>> summary(generate_with_meta(n=20)[1])["A"]["events"]
    9
    """
    out: dict[str, dict[str, Any]] = {}
    for phase, _ in PHASE_STARTS:
        rows = [m for m in metas if m.phase == phase]
        out[phase] = {
            "events": len(rows),
            "language": dict(Counter(m.language for m in rows).most_common()),
            "topic": dict(Counter(m.topic for m in rows).most_common()),
            "refused": sum(m.refused for m in rows),
            "refusal_cause": dict(
                Counter(m.refusal_cause for m in rows if m.refusal_cause).most_common()
            ),
            "exam_schedule": sum(m.schedule for m in rows),
            "repeats": sum(m.repeat for m in rows),
            "acl_leaks": sum(m.acl_leak for m in rows),
        }
    return out


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m service.demo.querylog --out FILE [--n N] [--seed S] [--summary]``."""
    parser = argparse.ArgumentParser(
        prog="python -m service.demo.querylog", description="Write the demo query log (JSONL)."
    )
    parser.add_argument("--out", type=Path, required=True, help="output JSONL file")
    parser.add_argument("--n", type=int, default=DEFAULT_N, help=f"events (default {DEFAULT_N})")
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED, help="random seed (default 0)")
    parser.add_argument("--summary", action="store_true", help="print counts per phase (JSON)")
    args = parser.parse_args(argv)
    if args.n < 1:
        parser.error("--n must be >= 1")
    events, metas = generate_with_meta(args.seed, args.n)
    args.out.write_bytes(render(events))
    print(f"wrote {len(events)} events to {args.out}", file=sys.stderr)
    if args.summary:
        print(json.dumps(summary(metas), indent=2, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
