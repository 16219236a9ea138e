"""The *subject* of a scrubbed question: what the analysis reads (topics, out-of-scope,
near-duplicates), without the personal-data placeholders and the contact clauses around them.

The PII stage (:mod:`service.pii`) replaces a self-introduction's details by placeholders
(:data:`service.records.PLACEHOLDERS`) and keeps its cue words: ``My name is Alice Smith, my
email is alice.smith@example.org. How many points…`` becomes ``My name is <NAME>, my email is
<EMAIL>. How many points…``. Those words are about who asked, not what: in trial 12 (F7) the
same 60 in-scope questions were out of scope 30/60 with such a prefix vs 9/60 without, and one
accepted gold row carrying it (F6) drew 59 of 60 prefixed questions into its topic.
:func:`subject` removes them; the text stored, shown and exported stays the scrubbed one.
"""

from __future__ import annotations

import re

from service.records import PLACEHOLDERS

__all__ = ["CONTACT_WORDS", "SIGN_OFF_WORDS", "has_placeholder", "subject", "without_placeholders"]

#: Any placeholder, with a possessive after it (``<NAME>'s``).
_PLACEHOLDER = re.compile(
    "(?:" + "|".join(re.escape(p) for p in PLACEHOLDERS.values()) + ")(?:['’]s\\b)?"
)
#: Clause boundaries: punctuation (with the spaces after it) or a coordinating conjunction
#: between spaces (``… <NAME> and my phone is <PHONE>``, ``y``, ``et``, ``und``, ``aur``).
_BOUNDARY = re.compile(r"([.!?;:,\n¿¡|()\[\]]+\s*|\s+-+\s+|\s+(?:and|or|y|et|und|aur)\s+)",
                       re.IGNORECASE)  # fmt: skip
#: A word (letters, an apostrophe inside: ``m'appelle``, ``i'm``), lower-cased before lookup.
_WORD = re.compile(r"[^\W\d_]+(?:['’][^\W\d_]+)*")
_SPACES = re.compile(r"\s{2,}")
_SENTENCE_END = re.compile(r"[.!?]")
#: A boundary that ends a label: a colon or a spaced dash (``email: …``, ``phone - …``).
_LABEL_MARK = re.compile(r":|^\s+-+\s+$")

#: The words a clause around a placeholder may hold and still be only about the asker: the
#: cue words of the scrubber's detectors (:mod:`service.pii.names` ``_STRONG``/``_WEAK``,
#: :mod:`service.pii.detectors` ``_PHONE_CUE``, ``_ADDRESS_CUE``), their link words, and the
#: other personal-data types' names, in en/es/fr/de/pt and Hindi written in Latin letters.
#: A clause with any other word is the question proper: only its placeholders go.
CONTACT_WORDS: frozenset[str] = frozenset(
    # English
    "my me i i'm im am is 's it's its it this here name name's names full first last given "
    "real surname called call calling reach contact text ring me at on to by the a an of go "
    "goes email e mail mail address addr phone telephone tel number no num mobile cell "
    "cellphone whatsapp landline you can also i'll contactable via or via with "
    "ssn social security passport iban account card credit debit upi aadhaar pan voter id ip "
    "url website site link secret password pin token key speaking hi hello hey dear greetings "
    "mr mrs ms mx miss dr prof sir madam "
    # requests to be contacted (``pls reply on whatsapp <PHONE>``, ``send it to <EMAIL>``)
    "please pls plz kindly reply back urgently urgent asap soon send it write message msg dm "
    "ping drop line just only now from here on out onwards forward ok okay "
    # what the person wants to be called (service.pii.names _STRONG's ``change`` cues)
    "like want prefer love be refer referring speak talk as change update set correct "
    # Spanish / Portuguese
    "me llamo mi nombre es soy yo correo electrónico electronico teléfono telefono número "
    "numero móvil movil celular llámame llamame al el la mí escríbeme escribeme hola y "
    "meu nome é e chamo sou olá ola "
    # French
    "je m'appelle mon nom est suis c'est moi mail courriel adresse téléphone numéro portable "
    "appelez appelle joindre au à bonjour salut ma "
    # German
    "mein meine name ist ich heiße heisse bin telefon telefonnummer handy handynummer nummer "
    "rufnummer unter erreichbar mich hier spricht hallo adresse mobil e-mail "
    # Hindi (Latin letters)
    "mera meri naam hai hain mujhe bolte bulate kehte main hoon hun bol raha rahi namaste aur "
    "ka ki ke se par kar karo do dena dijiye"
    .split()
)  # fmt: skip
#: The words of a sign-off or mail-client line (``Sent from my iPhone``, ``Regards``,
#: ``Thanks``): dropped with a removed contact clause (a placeholder-free text keeps them).
SIGN_OFF_WORDS: frozenset[str] = frozenset(
    "sent from my iphone ipad android phone mobile device galaxy samsung outlook get for "
    "regards best kind warm thanks thank you cheers signed sincerely yours "
    "saludos gracias atentamente cordialement merci bien grüße gruß grüsse danke mfg "
    "dhanyavaad shukriya".split()
)  # fmt: skip
#: Sign-off words that say a clause is one (``my phone`` alone is no sign-off).
_SIGN_OFF_MARKS = SIGN_OFF_WORDS - CONTACT_WORDS - {"from", "for", "get", "you", "yours"}


def has_placeholder(text: str) -> bool:
    """Whether ``text`` holds a personal-data placeholder (``<NAME>``, ``<EMAIL>`` …,
    :data:`service.records.PLACEHOLDERS`).

    >>> has_placeholder("My name is <NAME>. Who won?"), has_placeholder("Is 3 < 4?")
    (True, False)
    """
    return "<" in text and _PLACEHOLDER.search(text) is not None


def without_placeholders(text: str) -> str:
    """``text`` with its placeholders (a possessive after one included) taken out and nothing
    else, runs of whitespace collapsed to one space, ends stripped: what :func:`subject`
    gives when it removes no clause, whitespace aside.

    >>> without_placeholders("areas Call me at <PHONE>"), without_placeholders("<NAME>'s car")
    ('areas Call me at', 'car')
    """
    return " ".join(_PLACEHOLDER.sub(" ", text).split())


def _only(words: list[str], vocabulary: frozenset[str]) -> bool:
    return all(w in vocabulary for w in words)


def _closed_only(boundary: str, before: str) -> str:
    """``boundary`` without the closing brackets (``)``, ``]``) that close none left open in
    ``before``: their opening bracket went with a removed clause.

    >>> _closed_only("). ", "Hi"), _closed_only(") ", "What (if any"), _closed_only("]", "")
    ('. ', ') ', '')
    """
    if ")" not in boundary and "]" not in boundary:
        return boundary
    depth = {")": before.count("(") - before.count(")"), "]": before.count("[") - before.count("]")}
    out = []
    for ch in boundary:
        if ch in depth:
            if depth[ch] <= 0:
                continue
            depth[ch] -= 1
        out.append(ch)
    return "".join(out)


def subject(text: str) -> str:
    """The question ``text`` without placeholders and the contact clauses around them.

    The text is cut into clauses at punctuation and at ``and``/``or``/``y``/``et``/``und``/
    ``aur``. A clause holding a placeholder whose other words are all contact words
    (:data:`CONTACT_WORDS`: ``my name is <NAME>``, ``call me at <PHONE>``, ``<NAME> here``,
    ``this is <NAME>``, ``je m'appelle <NAME>``) is removed, with the boundary before it (or,
    first in the text, after it); so is a sign-off clause (:data:`SIGN_OFF_WORDS`: ``Sent from
    my iPhone``, ``Regards``) when a contact clause was removed. A placeholder inside the
    question proper is removed alone, its clause kept (``what did <NAME> say about the
    budget`` → ``what did say about the budget``). A text that is nothing but contact
    clauses (``call me <NAME>``, ``my name is <NAME>``: a request about the name itself) is
    its own subject, returned as is: removing them would leave only cue words, and the
    placeholder is what such requests share (the production-shaped log's "call me X" intents).

    Deterministic; linear in ``len(text)``. A text without ``<`` is returned as is (the same
    object): the hot path's cost is one ``in`` test.

    Args:
        text: a question, scrubbed by :mod:`service.pii` or not; any length.

    Returns:
        The subject, whitespace-collapsed where something was removed; ``text`` itself when it
        holds no placeholder.

    >>> subject("My name is <NAME>, my email is <EMAIL> and my phone is <PHONE>. "
    ...         "How many points did the Panthers defense surrender?")
    'How many points did the Panthers defense surrender?'
    >>> subject("What did <NAME> say about the budget?")
    'What did say about the budget?'
    >>> subject("Hi, this is <NAME>. Who wrote Emma? Sent from my iPhone")
    'Hi. Who wrote Emma?'
    >>> subject("Hi, I am <NAME> (<EMAIL>). Who wrote Emma?")
    'Hi. Who wrote Emma?'
    >>> subject("Me llamo <NAME> y mi teléfono es <PHONE>. ¿Qué es el oxígeno?")
    '¿Qué es el oxígeno?'
    >>> subject("mera naam <NAME> hai, Delhi ki population kitni hai?")
    'Delhi ki population kitni hai?'
    >>> subject("Who won in 2016?") == "Who won in 2016?", subject("please call me <NAME>")
    (True, 'please call me <NAME>')
    """
    if "<" not in text or _PLACEHOLDER.search(text) is None:
        return text
    parts = _BOUNDARY.split(text)  # clause, boundary, clause, …, clause
    clauses = parts[0::2]
    held = [_PLACEHOLDER.search(c) is not None for c in clauses]
    residue = [_PLACEHOLDER.sub(" ", c) if h else c for c, h in zip(clauses, held, strict=True)]
    words = [[w.lower() for w in _WORD.findall(r)] for r in residue]
    drop = [h and _only(ws, CONTACT_WORDS) for h, ws in zip(held, words, strict=True)]
    # a label before a removed contact clause (``my email: <EMAIL>``, ``Phone - <PHONE>``):
    # its clause ends at the colon or dash, so it holds no placeholder; right to left, so a
    # chain of labels (``contact - email: <EMAIL>``) goes with it (trial 21, MEDIUM 4) —
    # unless the labels are all the words there are: ``Can I change my email address:
    # <EMAIL>`` asks what its label says, and keeps it as its subject
    labelled = list(drop)
    for i in range(len(words) - 2, -1, -1):
        if (labelled[i + 1] and not held[i] and words[i] and _only(words[i], CONTACT_WORDS)
                and _LABEL_MARK.search(parts[2 * i + 1])):  # fmt: skip
            labelled[i] = True
    if any(not d and ws for d, ws in zip(labelled, words, strict=True)):
        drop = labelled
    if any(drop):
        for i, ws in enumerate(words):
            if (not held[i] and ws and _only(ws, SIGN_OFF_WORDS | CONTACT_WORDS)
                    and any(w in _SIGN_OFF_MARKS for w in ws)):  # fmt: skip
                drop[i] = True
    kept: list[str] = []
    for i, clause in enumerate(residue):
        if drop[i]:
            continue
        if not kept and i:  # an opening mark of the boundary before the first kept clause
            kept.append("".join(ch for ch in parts[2 * i - 1] if ch in "¿¡(["))
        elif kept and drop[i - 1] and not kept[-1][-1:].isspace():
            # after a removed clause: the boundary before this, without the brackets that
            # closed what was removed (``Hi, I am <NAME> (<EMAIL>). Considering …``: not
            # ``Hi). Considering …``, trial t42 L3)
            kept.append(_closed_only(parts[2 * i - 1], "".join(kept)))
        kept.append(_SPACES.sub(" ", clause).strip() if held[i] else clause)
        if 2 * i + 1 < len(parts):  # the boundary after a kept clause: kept before a kept
            # clause or when it ends a sentence (``… for my son. contact me on <PHONE>``)
            after = parts[2 * i + 1]
            if not drop[i + 1] or _SENTENCE_END.search(after):
                kept.append(after)
    # a removed last clause leaves the boundary before it: a comma, a dash or spaces
    result = "".join(kept).strip().rstrip(",;:- \n|").strip()
    if not any(not d and _WORD.search(r) for d, r in zip(drop, residue, strict=True)):
        return text  # nothing but contact clauses (and sign-offs): the request itself
    return result
