"""Personal names a person gives of themselves: ``my name is Alice Smith``, ``I am Rahul
Verma``, ``mera naam Priya hai``, ``change my name to bob``.

A name is personal data, but a name detector without a model cannot tell ``Alice Smith``
from ``Super Bowl`` in general, and questions to a knowledge base are full of names of public
people and places that must stay (``who founded Apple``). So this detector finds the names
people *introduce* — the ones that make a logged question personal — by the cue before them,
and leaves every other capitalised word alone:

* **Strong cues** (any case, any script of the name): ``my name is`` / ``my name's`` / ``my
  full|first|last name is`` / ``my surname is``, ``mein Name ist``, ``ich heiße``, ``me
  llamo``, ``mi nombre es``, ``je m'appelle``, ``mon nom est``, ``meu nome é``, ``me
  chamo``, ``mera naam``, ``मेरा नाम``, at the start of a clause (the text's start, after
  punctuation, or after a greeting or conjunction such as ``hi``, ``and``, ``so``:
  :data:`OPENERS`), so a title stays (``who sang my name is stanley``, ``when did my name is
  earl end``). Also ``change|update|set|correct my (full|first|last|sur)name to``, ``call
  me``, ``refer to me as``, ``address me as``, ``want|like|prefer to be called`` anywhere
  (``can you change my name to bob``, ``please call me bob``), ``X is my name`` and a form's
  ``Name: X``. The name is the next one to three words, cut at the
  first function word (:data:`STOP_WORDS`: ``my name is going to change`` has no name).
* **Weak cues** (``I am``, ``I'm``, ``this is``, ``ich bin``, ``soy``, ``je suis``, also at a
  clause start): two or three Title-case words (``I am Alice Smith``, ``Hi, this is Rahul
  Verma from Pune``), or with the English cues one Title-case word that ends the clause or is
  followed by ``from``, ``and`` or ``here`` (``Hi, I'm Rahul.``). All-capital words are no
  name (``this is URGENT``); a German noun after ``ich bin`` is one word, so no name
  (``Ich bin Student.``).
* **Sign-offs and self-announcements** (Title-case words): ``Regards, Klaus Müller.``,
  ``Thanks, Anna`` (ending the text or its sentence), ``Maria Lopez here - …``, ``Hi,
  Dmitri Ivanov speaking.`` (at a clause start).

The span replaced is the name only (``my name is <NAME>``), so the question keeps its
meaning. Measured on the questions of CLINC150, BANKING77, Hinglish-TOP and NQ-open dev
(``tests/service/test_pii_names.py``): every hit was read by hand.

Misses, by design: names without a cue (``balance of Alice Smith's account``), a single
Title-case word after ``I am`` followed by more text (``I am Alice and need help`` is found,
``I am Alice need help`` is not), names in lower case after a weak cue. False positives, by
design: two Title-case words after a weak cue that are not a name (``this is New York``):
privacy over precision.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

__all__ = ["OPENERS", "STOP_WORDS", "find_names", "may_hold_name"]

#: Substrings (of the lower-cased text) one of which every cue holds: the gate that skips the
#: scan for almost every question.
_HINTS = ("name", "i am", "i'm", "i’m", "this is", "ich bin", "heiß", "heiss", "llamo",
          "nombre", "appelle", "nom est", "nome", "chamo", "naam", "नाम", "soy ",
          "je suis", "call", "me as", "go by", "called", "regards", "thank", "cheers",
          "sincerely", "saludos", "gracias", "grüße", "gruß", "merci", "cordialement",
          "dhanyavaad", " here", "speaking")  # fmt: skip

#: Words before a cue that still leave it at the start of a clause (lower case).
OPENERS = frozenset(
    "hi hello hey dear greetings namaste hallo hola bonjour ola olá and so also yes ok okay "
    "well but now hii hlo ji sir madam ma'am mam say said that because actually btw fyi "
    "note".split()
)

#: Function words that are never (the first word of) a name and end one: English, Hindi
#: (romanised and Devanagari), German, Spanish, French, Portuguese.
STOP_WORDS = frozenset(
    # English
    "a an the and or but so nor if then is are was were be been being am not no also still "
    "just only really very going gonna wrong incorrect misspelled misspelt spelled spelt "
    "spelling correct correctly different changed listed printed showing shown written "
    "missing same what who whom whose which why how when where that this these those it its "
    "my your his her our their i im me you we they he she him them us to of in on at for "
    "from with by about as into than please pls plz thanks thank thx can could would will "
    "should shall may might must do does did have has had here there now today yesterday "
    "tomorrow yet already too again mine yours under on back later soon asap anytime "
    "immediately urgently right tonight morning evening afternoon regarding re something "
    "anything nothing someone anyone else different instead new names name maybe after "
    "before due off any some all every saved nicknames nickname bus train car taxi cab metro "
    "subway foot plane air road roads street streets bike boat ferry rail flight anymore"
    "".split()
    # Hindi, romanised and Devanagari
    + "hai hain tha thi hoon hu hun aur ka ki ke ko se mein me par nahi nahin kya है हैं था "
    "थी हूँ हूं और का की के को से में".split()
    # German, Spanish, French, Portuguese
    + "ist und der die das den dem ein eine nicht auch y es de la el los las un una del et "
    "est le les une des du e o os um uma não no na".split()
)

_UPPER = "A-ZÀ-ÖØ-Þ"
_LOWER = "a-zß-öø-ÿ"
#: A Title-case word: an upper-case letter, then lower-case letters, with inner ``'``/``-``
#: parts (``O'Brien``, ``Jean-Luc``) and ``Mc``/``Mac`` (``McDonald``).
_TITLE = (
    rf"(?:Ma?c)?[{_UPPER}](?:[{_LOWER}]+|(?=['’][{_UPPER}]))"
    rf"(?:['’-][{_UPPER}]?[{_LOWER}]+)*"
)
#: Any word of letters (any script, with Indic vowel signs and viramas), inner ``'``/``-``.
_WORD = r"(?:[^\W\d_]|[\u0900-\u0dff])+(?:['’-](?:[^\W\d_]|[\u0900-\u0dff])+)*"

#: Between a name's words: spaces, never a line break (``Name: Fatima Al-Zahra\nIssue: …``
#: is one name, not three words: a second trial's form lost its "Issue").
_GAP = r"[^\S\n\r]+"

_STRONG = re.compile(
    r"(?<![\w\u0900-\u0dff])(?P<cue>"
    r"(?i:my\s+(?:(?:full|first|last|given|real)\s+)?name(?:\s+is|'s|’s)"
    r"|my\s+surname\s+is|mein\s+name\s+ist|ich\s+hei(?:ß|ss)e|me\s+llamo|mi\s+nombre\s+es"
    r"|je\s+m['’]appelle|mon\s+nom\s+est|meu\s+nome\s+(?:é|e)|me\s+chamo|mera\s+naam"
    r"|i\s+go\s+by(?:\s+the\s+name)?)"
    r"|मेरा\s+नाम"
    r"|(?P<change>(?i:(?:change|update|set|correct)\s+my\s+(?:(?:full|first|last|given)\s+)?"
    r"(?:sur)?name\s+to"
    # what the person wants to be called, anywhere in the clause
    r"|call(?:ing)?\s+me(?:\s+by)?|(?:refer(?:ring)?|speak|talk)\s+to\s+me\s+as"
    r"|address\s+me\s+as|address\s+me\s+by\s+the\s+name|prefer\s+to\s+go\s+by"
    r"|go\s+by\s+the\s+name|(?:want|like|prefer|love)\s+to\s+be\s+called(?:\s+by)?"
    r"|(?:i\s+am|i['’]m)\s+called|the\s+name\s+(?:is|i\s+go\s+by\s+is)|my\s+names)))"
    rf"\s+[\"“']?(?P<n>{_WORD}(?:{_GAP}{_WORD}){{0,2}})"
)
#: ``jason is my name``: the name before the cue, at the start of a clause.
_BEFORE = re.compile(
    rf"(?<![\w\u0900-\u0dff])(?P<n>{_WORD}(?:{_GAP}{_WORD})?)\s+(?i:is\s+my\s+(?:real\s+)?name)"
    r"(?![\w'’])"
)
_WEAK = re.compile(
    r"(?<![\w\u0900-\u0dff])(?P<cue>(?i:i\s+am|i['’]m|this\s+is|soy|je\s+suis)"
    r"|(?P<other>(?i:ich\s+bin)))"
    rf"\s+(?P<n>{_TITLE}(?:{_GAP}{_TITLE}){{0,2}})(?![\w'’-])"
)
_SINGLE_END = re.compile(r"\s*(?:[,.!?;:)\-–—]|$|(?:from|and|here|btw|y|et)\b)", re.IGNORECASE)
#: A sign-off: ``Regards, Klaus Müller.``, ``Thanks! Maria`` — Title-case words that end the
#: text or their sentence.
_SIGNOFF = re.compile(
    r"(?<![\w])(?i:(?:(?:best|kind|warm|many)\s+)?regards|thanks|thank\s+you|cheers|sincerely"
    r"|saludos|gracias|gruß|grüße|viele\s+grüße|merci|cordialement|dhanyavaad)[,!.]?\s+"
    r"(?!(?i:(?:(?:best|kind|warm|many)\s+)?regards|thanks|thank\s+you|cheers|sincerely)\b)"
    rf"(?P<n>{_TITLE}(?:{_GAP}{_TITLE}){{0,2}})(?=[^\S\n]*(?:[.!,;\n]|$))"
)
#: ``Name: Alice Smith`` (a form's field, any case).
_FIELD = re.compile(rf"(?<![\w])(?i:name)\s*[:=]\s*(?P<n>{_WORD}(?:{_GAP}{_WORD}){{0,2}})")
#: ``Maria Lopez here - ...``, ``Hi, Dmitri Ivanov speaking.``: at a clause start, before a
#: dash, comma, full stop or the text's end.
_SELF = re.compile(
    rf"(?<![\w'’-])(?P<n>{_TITLE}(?:{_GAP}{_TITLE}){{0,2}})\s+(?i:here|speaking)"
    r"(?=\s*(?:[-–—,.!:;]|$))"
)
_WORDS = re.compile(rf"{_WORD}")


def may_hold_name(low: str) -> bool:
    """True if lower-cased ``low`` holds a cue's hint (:data:`_HINTS`); False means
    :func:`find_names` surely finds nothing. About 1 µs a question.

    >>> may_hold_name("my name is tom"), may_hold_name("what is the fee?")
    (True, False)
    """
    return any(hint in low for hint in _HINTS)


def _clause_start(text: str, at: int) -> bool:
    """True if the cue at ``at`` starts a clause: nothing before it, punctuation right
    before it, or an opener word (:data:`OPENERS`: a greeting, a conjunction, ``say``)."""
    before = text[:at].rstrip()
    if not before or before[-1] in ".!?,;:()[]\"'“”‘’-–—\n":
        return True
    return before.split()[-1].lower().strip(".,!?;:'\"") in OPENERS


def _strong_end(m: re.Match[str]) -> int | None:
    """End of the name after a strong cue: its words up to the first stop word; ``None``
    when the first is one, or the cue does not start a clause."""
    if m.group("change") is None and not _clause_start(m.string, m.start()):
        return None
    return _strong_end_of(m)


def _kept_words(m: re.Match[str]) -> tuple[list[re.Match[str]], int]:
    """Group ``n``'s words up to the first stop word, and how many words it has in all."""
    words = list(_WORDS.finditer(m.string, m.start("n"), m.end("n")))
    kept = []
    for word in words:
        if word.group().lower() in STOP_WORDS:
            break
        kept.append(word)
    return kept, len(words)


def _strong_end_of(m: re.Match[str]) -> int | None:
    """The end of group ``n``'s words up to the first stop word (``None``: the first is
    one)."""
    kept, _ = _kept_words(m)
    return kept[-1].end() if kept else None


def _weak_end(m: re.Match[str]) -> int | None:
    """End of the Title-case name after a weak cue (two or three words; one only after a
    cue other than ``ich bin`` — German nouns are capitalised — and before the clause's end,
    a dash, ``from``, ``and``, ``here``, ``btw``, ``y`` or ``et``), else ``None``."""
    if not _clause_start(m.string, m.start()):
        return None
    kept, n_words = _kept_words(m)
    if len(kept) >= 2:
        return kept[-1].end()
    if len(kept) == 1 and n_words == 1 and m.group("other") is None:
        if _SINGLE_END.match(m.string, kept[0].end()) is not None:
            return kept[0].end()
    return None


def _before_span(m: re.Match[str]) -> tuple[int, int] | None:
    """The name before ``is my name``: its last one or two words that are no stop word,
    at a clause start (the first word kept: a start)."""
    words = list(_WORDS.finditer(m.string, m.start("n"), m.end("n")))
    while words and words[0].group().lower() in STOP_WORDS:
        words.pop(0)
    if not words or any(w.group().lower() in STOP_WORDS for w in words):
        return None
    if not _clause_start(m.string, words[0].start()):
        return None
    return words[0].start(), words[-1].end()


def find_names(text: str, checked: bool = False) -> Iterator[tuple[int, int]]:
    """Yield ``(start, end)`` of each self-introduced name in ``text`` (module docstring),
    in text order, never overlapping; nothing when :func:`may_hold_name` is False.
    ``checked``: the caller has already seen :func:`may_hold_name` say yes (the scrubber's
    gate), so it is not asked again.

    >>> text = "Hi, I am Alice Smith. My name is alice smith and I want a refund"
    >>> [text[a:b] for a, b in find_names(text)]
    ['Alice Smith', 'alice smith']
    >>> list(find_names("who sang my name is stanley")), list(find_names("this is URGENT"))
    ([], [])
    """
    if not checked and not may_hold_name(text.lower()):
        return
    spans = []
    for pattern, end_of in ((_STRONG, _strong_end), (_WEAK, _weak_end)):
        for m in pattern.finditer(text):
            end = end_of(m)
            if end is not None:
                spans.append((m.start("n"), end))
    for m in _BEFORE.finditer(text):
        span = _before_span(m)
        if span is not None:
            spans.append(span)
    for m in _SIGNOFF.finditer(text):
        spans.append((m.start("n"), m.end("n")))
    for m in _FIELD.finditer(text):
        end = _strong_end_of(m)
        if end is not None:
            spans.append((m.start("n"), end))
    for m in _SELF.finditer(text):
        if _clause_start(text, m.start("n")):
            spans.append((m.start("n"), m.end("n")))
    free = 0
    for start, end in sorted(spans):
        if start >= free:
            yield start, end
            free = end
