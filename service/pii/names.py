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
  (``can you change my name to bob``, ``please call me bob``), ``X is my name``, a form's
  ``Name: X`` and, at a clause start, ``Name - X`` (a dash: ``Name - of the river`` has no
  name). The name is the next one to three words, cut at the
  first function word (:data:`STOP_WORDS`: ``my name is going to change`` has no name).
  Hinglish ``mujhe X bolte|bulate|kehte hain`` ("people call me X") anywhere, any case: the
  words between, less leading fillers (``mujhe sab Arjun bolte hain``), none of them a
  function word or a language (``mujhe ye sab bolte hain``, ``mujhe Hindi bolte hain``).
* **Weak cues** (``I am``, ``I'm``, ``this is``, ``ich bin``, ``hier ist``, ``hier
  spricht``, ``soy``, ``yo soy``, ``je suis``, also at a clause start): two or three
  Title-case words (``I am Alice Smith``, ``Hi, this is Rahul Verma from Pune``, ``hier ist
  Sabine Krüger``), or with the English and Spanish cues one Title-case word that ends the
  clause or is followed by ``from``, ``and`` or ``here`` (``Hi, I'm Rahul.``, ``Yo soy
  Andrés``). All-capital words are no name (``this is URGENT``); a German noun after ``ich
  bin`` or ``hier ist`` is one word, so no name (``Ich bin Student.``, ``Hier ist Platz``).
  ``it's`` / ``its`` / ``it is`` only right after a greeting (``hey its Kevin O'Connor``;
  ``It's Apple Pay`` and ``its Monday`` stay), one word not a weekday, month or feast.
* **Sign-offs and self-announcements** (Title-case words): ``Regards, Klaus Müller.``,
  ``Thanks, Anna``, ``Signed, Maria Lopez`` (ending the text, its sentence or a clause before a
  dash; ``Signed`` at a clause start), a signature line ``-- Ngozi Okafor`` (``--`` starting a
  line, the name ending it; one word only on the text's last line), ``Maria Lopez here -
  …``, ``Hi, Dmitri Ivanov speaking.``, Hinglish ``main Vikram Singh bol raha hoon`` ("I am
  Vikram Singh speaking"; not a language: ``main Hindi bol raha hoon``) (at a clause start).
* **Signatures after a sentence** (Title-case words): ``…animals? - Dieter Schmidt, Tel. …``,
  ``…theory? - Dr. Emily Chen, …`` (a dash right after ``?``, ``!`` or ``.``; two or three
  words, or one after a title, ending the text, its line or a clause), and a mail client's
  ``sent from my iPhone, Mike Johnson`` or ``- Mike Johnson`` (the name ending the text, its
  line or a clause). A question answered after a dash reads as signed (``Who wrote Emma? -
  Jane Austen``).
* **Repeats**: a name found by any cue is scrubbed wherever the text repeats one of its words,
  in any case (``My name is o'connor, sean o'connor``; not a title, particle or word under
  three letters): :func:`_with_repeats`.
* **Titles** (:data:`TITLES`: ``Dr``, ``Mr``, ``Mrs``, ``Ms``, ``Mx``, ``Miss``, ``Prof``,
  ``Sr``, ``Sra``, ``Srta``, ``Dra``, ``Herr``, ``Frau``, ``M.``, ``Mme``, ``Mlle``, ``Sri``,
  ``Shri``, ``Smt``; with or without a full stop, up to three: ``Herr Dr. Krüger``) before a
  name after any cue above are part of the name, not one of its words: ``I'm Dr. Wanjiru
  Wambui Kamau from Nairobi`` is ``I'm <NAME> from Nairobi`` (a trial's suggestions kept
  ``I'm <NAME>. Wanjiru Kamau``: the title's full stop ended the name). After a title one
  Title-case word is a name wherever it ends (``I am Dr. Kamau calling``, ``Thanks, Dr. Smith
  for the help``); a title before a stop word is none (``I am Dr. Who fan`` reads ``Dr`` as
  before). Titles after a weak cue or in a sign-off are Title case; a title with no cue stays
  (``Dr. Pepper ingredients?``).
* **Particles and initials** (:data:`PARTICLES`: ``de``, ``la``, ``van``, ``von``, ``der``,
  ``del``, ``da``, ``dos``, ``al``…, either case; a capital and a full stop) before a
  Title-case word are one word of the name with it, after every cue above but ``X here``,
  ``X is my name`` and ``mujhe … bolte hain``: ``Regards, Maria de la Cruz``, ``I'm Dr. van
  der Berg``, ``My name is Mr. De Souza``, ``I'm J. R. Tolkien``, ``my name is John F.
  Kennedy`` are one ``<NAME>`` each (a twenty-first-session report: ``My name is <NAME>. De
  Souza``, ``Regards, Maria de la Cruz`` kept whole, ``my name is <NAME>. Kennedy``; ``de`` is
  a stop word and an initial's full stop ended the name). A particle is none before a word in
  lower case (``I'm de facto in charge``, ``I'm van driver``, ``my name is juan de la
  fuente`` keeps ``de la fuente``), nor an initial before a stop word (``My name is J. I need
  help`` keeps ``I need help``); a name's full stop still ends it (``My name is J. Smith. I
  need help``). A Title-case name's first word takes a particle only after a title (``this
  is La Liga`` stays as before); after a weak cue, initials and a word are a name as two
  words are (``I'm J. R. Tolkien calling``). An initial is a capital and a full stop with a
  space after it (``M.Sc.`` holds none); initials written together (``J.R.R. Tolkien``,
  ``J.P. Morgan``) are a name's only after a strong cue, ``Name:``, ``Name -``, a ``--``
  signature line or a title (``I am Mr. J.P. Morgan``): after a weak cue or a sign-off they
  are an abbreviation as often (``I am U.S. Army veteran``, ``This is A.I. Generated?``,
  ``Regards, U.S. Bank`` stay whole, as before initials were known; a review of the
  twenty-first session's change).

The span replaced is the name only (``my name is <NAME>``), so the question keeps its
meaning. Measured on the questions of CLINC150, BANKING77, Hinglish-TOP and NQ-open dev
(``tests/service/test_pii_names.py``): every hit was read by hand.

Misses, by design: names without a cue (``balance of Alice Smith's account``), a single
Title-case word after ``I am`` followed by more text (``I am Alice and need help`` is found,
``I am Alice need help`` is not), names in lower case after a weak cue, ``It's Kevin`` without
a greeting before it, a one-word signature line before more text, a signature after one
dash (``- Ngozi Okafor``, ``— Ngozi Okafor``: the scrubber folds ``—`` and ``–`` to ``-``, and
one ``-`` starts a list's items, ``- Apple Pay``), and the Devanagari
``मैं … बोल रहा हूँ`` (no case tells a name from ``हिंदी``). False positives, by design: two
Title-case words after a weak cue that are not a name (``this is New York``), a quotation's
attribution on its own line (``-- Mahatma Gandhi``), a sentence after a middle initial that
starts with a word no stop word (``My name is Anna K. Need help`` is ``My name is <NAME>``: an
initial's full stop cannot tell ``K. Need`` from ``F. Kennedy``), one spaced initial and a
Title-case word after a weak cue whatever follows (``I am A. Lot confused`` is ``I am <NAME>
confused``: it cannot be told from ``I'm A. Kumar calling``): privacy over precision. Missed
for the same reason: initials written together after a weak cue or a sign-off (``I'm J.R.R.
Tolkien calling`` stays, as ``I'm U.S. Citizen`` must), and initials with no space before the
surname (``my name is J.Smith`` is ``my name is <NAME>.Smith``).
"""

from __future__ import annotations

import re
import sys
import threading
from collections.abc import Iterator

__all__ = ["OPENERS", "STOP_WORDS", "TITLES", "find_names", "may_hold_name"]

#: Held while a :class:`_LazyPattern` compiles: each compiles once, whichever thread asks.
_COMPILE_LOCK = threading.Lock()


class _LazyPattern:
    """A regular expression compiled on its first use, once, thread-safe.

    The cues' patterns hold large character classes (:data:`_UPPER`, :data:`_LOWER`) many
    times over: compiling the 15 of them took ~0.17 s of CPU at import (1.5-2.5 s of wall
    time on a loaded 2-core machine), before ``goldwatch serve`` bound its port, though
    almost every question is turned away by :func:`may_hold_name` before any of them runs
    and the rarer cues' run only on their hint. Here each compiles when a scan first needs
    it (:meth:`compiled`); the result is the one ``re.compile`` gives.

    Args:
        pattern: the pattern's source (:attr:`pattern`).
        flags: ``re`` flags (:attr:`flags`).
    """

    __slots__ = ("_compiled", "flags", "pattern")

    def __init__(self, pattern: str, flags: int = 0) -> None:
        self.pattern, self.flags = pattern, flags
        self._compiled: re.Pattern[str] | None = None

    def compiled(self) -> re.Pattern[str]:
        """The compiled pattern (compiled now if no thread did before)."""
        compiled = self._compiled
        if compiled is None:
            with _COMPILE_LOCK:
                compiled = self._compiled
                if compiled is None:
                    compiled = self._compiled = re.compile(self.pattern, self.flags)
        return compiled

    def made(self, compiled: re.Pattern[str]) -> bool:
        """Whether ``compiled`` (a match's ``re``) is this pattern compiled."""
        return compiled is self._compiled

    def finditer(self, string: str, pos: int = 0,
                 endpos: int = sys.maxsize) -> Iterator[re.Match[str]]:  # fmt: skip
        """:meth:`re.Pattern.finditer`."""
        return self.compiled().finditer(string, pos, endpos)

    def match(self, string: str, pos: int = 0, endpos: int = sys.maxsize) -> re.Match[str] | None:
        """:meth:`re.Pattern.match`."""
        return self.compiled().match(string, pos, endpos)


#: The hints of ``main … bol raha hoon`` and ``mujhe … bolte hain``: asked by the gate and
#: again by :func:`find_names` before its scans for them.
_BOL_HINT = "bol r"
_MUJHE_HINTS = ("olte h", "late h", "hte h")
#: Substrings (of the lower-cased text) one of which every cue holds (``it's`` and a signature
#: line: :data:`_ITS_HINTS`, ``--``): the gate that skips the scan for almost
#: every question.
_HINTS = ("name", "i am", "i'm", "i’m", "this is", "ich bin", "heiß", "heiss", "llamo",
          "nombre", "appelle", "nom est", "nome", "chamo", "naam", "नाम", "soy ",
          "je suis", "call", "me as", "go by", "called", "regards", "thank", "cheers",
          "sincerely", "saludos", "gracias", "grüße", "gruß", "merci", "cordialement",
          "dhanyavaad", " here", "speaking", "hier ", "signed,", "signed:", "sent from",
          _BOL_HINT,
          *_MUJHE_HINTS)  # fmt: skip
#: Hints common in questions that are no cue (``what is its capital``, ``--verbose``): the
#: gate passes on them only after a second test, a greeting word for ``it's``
#: (:data:`_GREETING_WORD`), ``--`` starting a line for a signature (:data:`_DASH_LINE`).
_ITS_HINTS = ("it's", "it’s", "its ", "it is")

#: Words before a cue that still leave it at the start of a clause (lower case).
OPENERS = frozenset(
    "hi hello hey dear greetings namaste hallo hola bonjour ola olá yo and so also yes ok okay "
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

#: Capitals and small letters of Latin-1 and of Latin Extended-A and -B (``Ł``, ``Š``,
#: ``Ş``, ``İ``, ``Č``, ``Ž``; ``ı``, ``ł``, ``ș``), as ``str.isupper``/``str.islower`` read
#: them: with Latin-1 alone ``My name is Ł. Kowalski`` kept ``Kowalski`` and ``I'm İ.
#: Yılmaz`` was no name (a twenty-first-session review).
_EXTENDED = [chr(c) for c in range(0x100, 0x250)]
_UPPER = "A-ZÀ-ÖØ-Þ" + "".join(c for c in _EXTENDED if c.isupper())
_LOWER = "a-zß-öø-ÿ" + "".join(c for c in _EXTENDED if c.islower())
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

#: Titles before a name (English, Spanish, Portuguese, German, French, Hindi), with or
#: without a full stop; the French ``M.`` only with it (``M`` alone is an initial or a size).
TITLES = ("Dr", "Dra", "Mr", "Mrs", "Ms", "Mx", "Miss", "Prof", "Sr", "Sra", "Srta", "Herr",
          "Frau", "Mme", "Mlle", "Sri", "Shri", "Smt")  # fmt: skip
_TITLE_WORDS = "|".join(sorted(TITLES, key=len, reverse=True)) + r"|M(?=\.)"
#: After a title, the next word must not be a stop word: ``I am Dr. and …`` takes no title,
#: so its cue reads ``Dr`` as it did before titles were known.
_NOT_STOP = (
    "(?!(?i:"
    + "|".join(re.escape(w) for w in sorted(STOP_WORDS, key=len, reverse=True))
    + r")(?![\w'’-]))"
)


#: Particles a surname may start with (lower case here; the first letter in either case, ``de
#: la Cruz``, ``De Souza``, ``van der Berg``, ``Van Dyke``): Spanish, Portuguese, Italian,
#: French, Dutch, German, Arabic. Several are stop words (``de``, ``la``, ``der``, ``du``) that
#: cut a name, and one in lower case is no Title-case word, so ``Regards, Maria de la Cruz``
#: and ``I'm Dr. van der Berg`` were scrubbed in part or not at all. A run of them is a
#: name's only when a Title-case word follows it (:func:`_lead`): ``I'm de facto in
#: charge`` and ``I'm van driver`` hold no particle.
PARTICLES = ("da", "das", "de", "degli", "dei", "del", "della", "der", "des", "di", "do", "dos",
             "du", "la", "las", "le", "los", "den", "ten", "ter", "van", "von", "vom", "zu",
             "zum", "zur", "al", "el", "bin", "ibn")  # fmt: skip
_PARTICLE = (
    "(?:"
    + "|".join(f"[{w[0].upper()}{w[0]}]{w[1:]}" for w in sorted(PARTICLES, key=len, reverse=True))
    + ")"
)
#: An initial: a capital and a full stop with a space after it (``J. R. Tolkien``, ``A.
#: Kumar``): ``M.Sc.`` holds none. After a weak cue, a sign-off, ``main … bol raha hoon`` and
#: a ``--`` signature line's Title case alone these are a name's initials.
_INITIALS = rf"(?:[{_UPPER}]\.{_GAP})+"
#: Initials also written together (``J.R.R. Tolkien``, ``J.P. Morgan``): the run's last full
#: stop before a space. A name's only after a cue that says a name follows (``my name is``,
#: ``me llamo``, ``Name:``, a ``--`` signature line): after ``I'm``, ``this is`` or
#: ``Regards,`` they are an abbreviation as often (``I am U.S. Army veteran``, ``This is
#: A.I. Generated?``, ``Regards, U.S. Bank`` stay whole, as before initials were known).
_INITIALS_JOINED = rf"(?:(?:[{_UPPER}]\.)+{_GAP})+"


def _lead(initials: str, particles: bool = True) -> str:
    """What may come before a name part's Title-case word and is one part with it: initials
    (``initials``: :data:`_INITIALS` or :data:`_INITIALS_JOINED`), then particles (``J.
    Smith``, ``de la Cruz``, ``A. van Dijk``); the word after it is a Title-case word, not a
    stop word (:func:`_part`): ``My name is J. I need help`` keeps ``I need help``, and a
    name's full stop after it ends the name (``J. Smith. I need help``). ``particles``: it may
    start with a particle (else initials only)."""
    with_initials = rf"{initials}(?:(?:{_PARTICLE}{_GAP})+)?"
    return rf"(?:{with_initials}|(?:{_PARTICLE}{_GAP})+)" if particles else with_initials


def _after_title(initials: str) -> str:
    """What may follow a title: a lead (:func:`_lead`) and its Title-case word (``Mr. De
    Souza``, ``Mr. A. Kumar``: ``de`` and ``a`` are stop words), else no stop word
    (:data:`_NOT_STOP`)."""
    return rf"(?:(?={_lead(initials)}{_NOT_STOP}{_TITLE}(?![\w'’-]))|{_NOT_STOP})"


def _part(word: str, initials: str, particles: bool = True) -> str:
    """The pattern of one part of a name: a lead (initials, particles: :func:`_lead`) and the
    Title-case word it belongs to, or ``word`` alone (:data:`_TITLE` or :data:`_WORD`). A
    part is one of a name's one to three words, whatever its lead holds (``Juan de la
    Fuente`` is two, ``J. R. Tolkien`` one). ``particles``: a part may start with one; not a
    Title-case name's first part without a title before it (``this is La Liga.`` stays)."""
    return rf"(?:{_lead(initials, particles)}{_NOT_STOP}{_TITLE}(?![\w'’-])|{word})"


def _name(word: str, any_case: bool, initials: str = _INITIALS) -> str:
    """The pattern of a name of one to three parts (:func:`_part`) as group ``n``, after the
    optional title of :func:`_titled` (group ``title``). ``any_case``: after a cue whose name
    may be in any case, where a name may start with a particle (``my name is de la Cruz``);
    else a Title-case name, whose first part holds a particle only after a title (``I'm Dr.
    van der Berg``). ``initials``: which initials a part may start with (:data:`_INITIALS`,
    or :data:`_INITIALS_JOINED` after a cue that says a name follows); a first part after a
    title may start with either, the title saying a name follows (``I am Mr. J.P. Morgan``)."""
    part = _part(word, initials)
    titled = _part(word, _INITIALS_JOINED)
    first = part if any_case else rf"(?(title){titled}|{_part(word, initials, False)})"
    return rf"(?P<n>{first}(?:{_GAP}{part}){{0,2}})"


def _titled(any_case: bool) -> str:
    """The pattern of an optional title before a name (group ``title``: the first title's
    word; up to three titles, ``Herr Dr. Krüger``, ``Frau Prof. Dr. Anna Weber``) and the gap
    after it. A title is not one of the name's one to three words (``I'm Dr. Wanjiru Wambui
    Kamau``), and the span found starts at it (:func:`_start`). ``any_case``: in any case
    (after a cue whose name may be lower case, ``my name is dr. smith``), else Title case as
    :data:`TITLES` writes it. Initials after a title may be written together (``Mr. J.P.
    Morgan``: :func:`_name`)."""
    words = f"(?i:{_TITLE_WORDS})" if any_case else f"(?:{_TITLE_WORDS})"
    after = _after_title(_INITIALS_JOINED)
    return rf"(?:(?P<title>{words})\.?{_GAP}(?:(?:{words})\.?{_GAP}){{0,2}}{after})?"


#: A title before a name after a cue of Title-case names, and after one of any-case names.
_TITLED = _titled(any_case=False)
_TITLED_ANY = _titled(any_case=True)
#: A name after a cue of Title-case names, after one of any-case names and on a signature
#: line (:func:`_name`).
_NAME = _name(_TITLE, any_case=False)
_NAME_ANY = _name(_WORD, any_case=True, initials=_INITIALS_JOINED)
_NAME_SIG = _name(_TITLE, any_case=False, initials=_INITIALS_JOINED)
#: A name's parts, one match each, as :func:`_name` reads them (:func:`_kept_words`; initials
#: written together are in group ``n`` only after a cue that allows them).
_PARTS = _LazyPattern(_part(_WORD, _INITIALS_JOINED))
#: A Title-case name's first part without a title before it: no particle (:func:`_name`).
_FIRST_PARTS = _LazyPattern(_part(_WORD, _INITIALS_JOINED, particles=False))
#: A part with initials (``J. Smith``), a full name after a weak cue as two words are.
_INITIALED = _LazyPattern(rf"[{_UPPER}]\.")
#: Up to three titles right before a name found by what follows it (``Dr. Maria Lopez
#: here``, ``Mr. Smith is my name``: :func:`_title_start`); in its patterns an optional
#: title first made every scan try the titles at every position (~1.5x slower).
_TITLES_BEFORE = re.compile(rf"(?<![\w'’-])(?:(?:{_TITLE_WORDS})\.?{_GAP}){{1,3}}\Z")
_TITLES_BEFORE_ANY = re.compile(_TITLES_BEFORE.pattern, re.IGNORECASE)

_STRONG = _LazyPattern(
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
    rf"\s+[\"“']?{_TITLED_ANY}{_NAME_ANY}"
)
#: :data:`_BEFORE`'s cue alone, searched for first (its very pattern: a text without a
#: match of it has no match of :data:`_BEFORE`).
_BEFORE_CUE = re.compile(r"(?i:is\s+my\s+(?:real\s+)?name)")
#: ``jason is my name``: the name before the cue, at the start of a clause.
_BEFORE = re.compile(
    rf"(?<![\w\u0900-\u0dff])(?P<n>{_WORD}(?:{_GAP}{_WORD})?)\s+{_BEFORE_CUE.pattern}"
    r"(?![\w'’])"
)
_WEAK = _LazyPattern(
    r"(?<![\w\u0900-\u0dff])(?P<cue>(?i:i\s+am|i['’]m|this\s+is|soy|je\s+suis)"
    r"|(?P<other>(?i:ich\s+bin)))"
    rf"\s+{_TITLED}{_NAME}(?![\w'’-])"
)
#: The weak cues scanned for only when their hint is in the text (:func:`_rare_spans`; in
#: :data:`_WEAK` they made every scan ~2x slower): ``it's`` (group ``its``) and the German
#: ``hier ist`` / ``hier spricht`` (group ``other``, as ``ich bin``).
_WEAK_RARE = _LazyPattern(
    r"(?<![\w\u0900-\u0dff])(?:(?P<its>(?i:it['’]?s|it\s+is))"
    r"|(?P<other>(?i:hier\s+ist|hier\s+spricht)))"
    rf"\s+{_TITLED}{_NAME}(?![\w'’-])"
)
#: Words before ``it's`` that make it a self-introduction (``hey its Kevin``), lower case.
_GREETINGS = frozenset("hi hii hello hey heya hiya hallo hola yo namaste greetings".split())
#: The gate's test for a greeting word: finds every one :func:`_after_greeting` accepts.
_GREETING_WORD = re.compile(r"\b(?:" + "|".join(sorted(_GREETINGS)) + r")\b")
#: One Title-case word after ``it's`` that is a day, not a name (``hey its Monday``); months
#: that are also names (April, May, June, August) are taken: privacy over precision.
_CALENDAR = frozenset(
    "monday tuesday wednesday thursday friday saturday sunday january february march july "
    "september october november december christmas easter diwali holi eid today tomorrow "
    "tonight".split()
)
_SINGLE_END = re.compile(r"\s*(?:[,.!?;:)\-–—]|$|(?:from|and|here|btw|y|et)\b)", re.IGNORECASE)
#: A sign-off: ``Regards, Klaus Müller.``, ``Thanks! Maria``, ``Regards, Klaus Müller - how
#: do I ...`` — Title-case words that end the text, their sentence or their clause (a dash);
#: after a title wherever they end (``Thanks, Dr. Smith for the help``: ``Thanks, Best Buy
#: is open`` has none).
_SIGNOFF = _LazyPattern(
    r"(?<![\w])(?i:(?:(?:best|kind|warm|many)\s+)?regards|thanks|thank\s+you|cheers|sincerely"
    r"|saludos|gracias|gruß|grüße|viele\s+grüße|merci|cordialement|dhanyavaad"
    r"|(?P<signed>signed[,:](?!\s*sealed\b)))[,!.]?\s+"
    r"(?!(?i:(?:(?:best|kind|warm|many)\s+)?regards|thanks|thank\s+you|cheers|sincerely)\b)"
    rf"{_TITLED}{_NAME}"
    r"(?(title)(?![\w'’-])|(?=[^\S\n]*(?:[.!,;\n]|[-–—](?:\s|$)|$)))"
)
#: ``Name: Alice Smith`` (a form's field, any case).
_FIELD = _LazyPattern(rf"(?<![\w])(?i:name)\s*[:=]\s*{_TITLED_ANY}{_NAME_ANY}")
#: The test for :data:`_FIELD_DASH` on the lower-cased text: ``name`` a literal first, so
#: found by a fast search, where ``_FIELD_DASH``'s own scan tries every character.
_NAME_DASH = re.compile(r"name[^\S\n]*[-–—]")
#: ``Name - Alice Smith``, ``Full name – Alice Smith``: a dash with a space after it, the name on
#: the same line; at a clause start only (``in a name - Romeo`` stays; :func:`_rare_spans`).
_FIELD_DASH = _LazyPattern(
    r"(?<![\w])(?i:(?:(?:full|first|last)[^\S\n]+)?name)[^\S\n]*[-–—]{1,2}[^\S\n]+"
    rf"{_TITLED_ANY}{_NAME_ANY}"
)
#: The cues whose name may be in any case and start with a particle (:func:`_name`).
_ANY_CASE = frozenset(p.pattern for p in (_STRONG, _FIELD, _FIELD_DASH))
#: ``Maria Lopez here - ...``, ``Hi, Dmitri Ivanov speaking.``: at a clause start, before a
#: dash, comma, full stop or the text's end.
_SELF = _LazyPattern(
    rf"(?<![\w'’-])(?P<n>{_TITLE}(?:{_GAP}{_TITLE}){{0,2}})\s+(?i:here|speaking)"
    r"(?=\s*(?:[-–—,.!:;]|$))"
)
#: The gate's test for :data:`_SIG_DASH`: ``--`` starting a line.
_DASH_LINE = re.compile(r"(?:^|\n)\s*--")
#: A signature line: ``--`` starting a line (the name on it or on the next line,
#: ``--\nNgozi Okafor``: RFC 3676's signature separator), Title-case words ending their line;
#: not a sign-off word.
_SIG_DASH = _LazyPattern(
    r"(?:^|(?<=\n))[^\S\n]*--[^\S\n]*(?:\r?\n[^\S\n]*)?"
    r"(?!(?i:(?:(?:best|kind|warm|many)\s+)?regards|thanks|cheers|sincerely)\b)"
    rf"{_TITLED}{_NAME_SIG}(?=[^\S\n]*[.,]?[^\S\n]*(?:\r?\n|$))"
)
#: A mail client's signature: ``sent from my iPhone, Mike Johnson`` (the device in one to
#: three words, then a comma, full stop, colon, line break or a dash between spaces — ``sent
#: from my iPhone - Mike Johnson``, a trial's — then Title-case words that end the text, their
#: line or their clause).
_SENT_FROM = _LazyPattern(
    r"(?<![\w])(?i:sent\s+from\s+my)[^\S\n]+[^,.:;!?\n]{1,40}?[^\S\n]*"
    r"(?:[,.:;]|\r?\n|(?<=\s)[-–—]{1,2}(?=\s))\s*"
    r"(?!(?i:(?:(?:best|kind|warm|many)\s+)?regards|thanks|cheers|sincerely)\b)"
    rf"{_TITLED}{_NAME_SIG}(?=[^\S\n]*(?:[.!,;\n]|[-–—](?:\s|$)|$))"
)
#: A signature after a dash that follows a sentence: ``Who first …? - Dr. Emily Chen, …``,
#: ``… animals? - Dieter Schmidt, Tel. …``: Title-case words (two or three, or one after a
#: title) ending the text, their line or their clause (a comma or semicolon: the contact
#: details that follow). A question followed by a dash and a two-word Title-case answer ends
#: that way too (``Who wrote Emma? - Jane Austen``): it is read as a signature (privacy first).
_DASH_SIGN = _LazyPattern(
    r"(?<=[?.!])[^\S\n]*[-–—]{1,2}[^\S\n]+"
    r"(?!(?i:(?:(?:best|kind|warm|many)\s+)?regards|thanks|cheers|sincerely)\b)"
    rf"{_TITLED}{_NAME_SIG}(?=[^\S\n]*(?:[,;\n]|$))"
)
#: The gate's test for :data:`_DASH_SIGN` on the lower-cased text: a dash after a sentence.
_DASH_AFTER_SENTENCE = re.compile(r"[?.!][^\S\n]*[-–—]")
#: Hinglish ``main Vikram Singh bol raha hoon`` ("I am Vikram Singh speaking"), also ``mai``,
#: ``bol rahi``, ``bol rha``, ``hu``/``hun``.
_BOL = _LazyPattern(
    rf"(?<![\w'’-])(?i:main|mai)\s+{_TITLED}{_NAME}"
    r"\s+(?i:bol\s+r(?:aha|ahi|ha|hi)\s+(?:hoon|hun|hu|hoo)\b)"
)
#: Languages, which ``main … bol raha hoon`` may name instead of a person (``main Hindi bol
#: raha hoon``: "I am speaking Hindi"), lower case.
_LANGUAGES = frozenset(
    "hindi english urdu punjabi bengali bangla marathi gujarati tamil telugu kannada "
    "malayalam odia oriya assamese sanskrit bhojpuri french german spanish".split()
)
#: Hinglish ``mujhe Arjun bolte hain`` ("people call me Arjun"), also ``mujhko``, ``bulate``,
#: ``kehte``, ``kahte``, ``hai``.
_MUJHE = _LazyPattern(
    rf"(?<![\w'’-])(?i:mujhe|mujhko)\s+{_TITLED_ANY}(?P<n>{_WORD}(?:{_GAP}{_WORD}){{0,2}})"
    r"\s+(?i:(?:bolte|bulate|kehte|kahte)\s+(?:hain|hai|h)\b)"
)
#: Words between ``mujhe`` and ``bolte hain`` that are no name (lower case): a leading one
#: is dropped (``mujhe sab Arjun bolte hain``), any other means no name (``mujhe ye sab``).
_HINDI_FILLERS = frozenset(
    "sab sabhi log ghar pe par mein pyaar pyar se ye yeh wo woh vo voh kuch aap tum hum "
    "bhi hi to ab phir sirf isliye kya".split()
)
#: What ``mujhe … bolte hain`` holds that is no name: a filler or a language (``mujhe Hindi
#: bolte hain``: "they speak Hindi to me").
_NOT_CALLED = _HINDI_FILLERS | _LANGUAGES
_WORDS = re.compile(rf"{_WORD}")
#: Particles and titles in lower case: no word a name's repeats are looked for by
#: (:func:`_with_repeats`).
_PARTICLE_WORDS = frozenset(PARTICLES)
_TITLE_LOWER = frozenset(t.lower() for t in TITLES)


def may_hold_name(low: str) -> bool:
    """True if lower-cased ``low`` holds a cue's hint (:data:`_HINTS`; :data:`_ITS_HINTS`
    with a greeting word, ``--`` starting a line); False means :func:`find_names` surely
    finds nothing. About 2-3 µs a question.

    >>> may_hold_name("my name is tom"), may_hold_name("what is the fee?")
    (True, False)
    """
    for hint in _HINTS:  # a loop: ~20% cheaper than any() over a generator
        if hint in low:
            return True
    for hint in _ITS_HINTS:
        if hint in low:
            if _GREETING_WORD.search(low) is not None:
                return True
            break
    return _may_dash_line(low) or _may_dash_sign(low)


def _may_dash_sign(low: str) -> bool:
    """True if ``low`` may hold a signature after a dash (:data:`_DASH_SIGN`)."""
    return ("-" in low or "–" in low or "—" in low) and (
        _DASH_AFTER_SENTENCE.search(low) is not None
    )


def _may_dash_line(low: str) -> bool:
    """True if ``low`` may hold a signature line (:data:`_SIG_DASH`): ``--`` starting a line."""
    return "--" in low and _DASH_LINE.search(low) is not None


def _clause_start(text: str, at: int) -> bool:
    """True if the cue at ``at`` starts a clause: nothing before it, punctuation right
    before it, or an opener word (:data:`OPENERS`: a greeting, a conjunction, ``say``).
    Reads the 64 characters before the cue only (the whole prefix, copied and split for each
    cue, made a long text's scrub quadratic: 3.3 s for 100 KB of "hier ist Ab "); a longer
    run of spaces before it is a clause break too."""
    before = text[max(0, at - 64) : at].rstrip()
    if not before or before[-1] in ".!?,;:()[]\"'“”‘’-–—\n":
        return True
    return before.split()[-1].lower().strip(".,!?;:'\"") in OPENERS


def _start(m: re.Match[str]) -> int:
    """Where the name ``m`` found starts: at its title if it has one (``Dr. Wanjiru Kamau`` is
    one name, the title with it), else at group ``n``."""
    title = m.start("title")
    return title if title >= 0 else m.start("n")


def _title_start(text: str, at: int, titles: re.Pattern[str]) -> int:
    """Where the titles right before the name at ``at`` start (``titles``:
    :data:`_TITLES_BEFORE` or :data:`_TITLES_BEFORE_ANY`), else ``at``. Reads the 40
    characters before it only."""
    found = titles.search(text, max(0, at - 40), at)
    return at if found is None else found.start()


#: Quotation marks that open a quoted title (``"My Name Is Skrillex"``).
_OPENING_QUOTES = frozenset("\"“„«‘'")


def _quoted_title(m: re.Match[str]) -> bool:
    """Whether the cue ``m`` opens a quoted title of a work: right after an opening quotation
    mark that stands inside a clause (words before it, no clause break: ``the EP "My Name Is
    Skrillex"``, ``wrote “My Name Is Red”``: trial 21 scrubbed Skrillex) and written in Title
    Case, every word of the cue capitalised and none in capitals. ``"my name is Alice"`` or
    ``"My name is Alice"``, a quote that starts the text or a clause (``"My Name Is John
    Smith" and I need…``, ``Hi, "My Name Is …"``: an introduction typed in quotes) and
    ``"MY NAME IS …"`` quote an introduction and stay one."""
    start = m.start()
    if not start or m.string[start - 1] not in _OPENING_QUOTES:
        return False
    if _clause_start(m.string, start - 1):
        return False
    return all(word[:1].isupper() and not word[1:].isupper() for word in m.group("cue").split())


def _strong_end(m: re.Match[str]) -> int | None:
    """End of the name after a strong cue: its words up to the first stop word; ``None``
    when the first is one, the cue does not start a clause, or it opens a quoted title
    (:func:`_quoted_title`)."""
    if m.group("change") is None and (not _clause_start(m.string, m.start())
                                      or _quoted_title(m)):  # fmt: skip
        return None
    return _strong_end_of(m)


def _kept_words(m: re.Match[str]) -> tuple[list[re.Match[str]], int]:
    """Group ``n``'s words up to the first stop word, and how many words it has in all; a
    word is a part (:data:`_PARTS`: ``de la Cruz``, ``J. Smith`` one each), never a stop
    word when it has a lead."""
    start, end = m.span("n")
    may_lead = m.re.pattern in _ANY_CASE or m.group("title") is not None  # with a particle (_name)
    first = (_PARTS if may_lead else _FIRST_PARTS).match(m.string, start, end)
    words = [] if first is None else [first, *_PARTS.finditer(m.string, first.end(), end)]
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
    """End of the Title-case name after a weak cue (two or three words, or one after a title or
    with initials: ``I am Dr. Kamau and``, ``I'm J. R. Tolkien calling``; one without either
    only after a cue other than ``ich bin`` and ``hier ist`` — German nouns are capitalised —
    and before the clause's end, a dash, ``from``, ``and``, ``here``, ``btw``, ``y`` or
    ``et``; after ``it's`` not a day, :data:`_CALENDAR`), else ``None``. A cue starts a
    clause; ``it's`` follows a greeting (``It's Apple Pay`` is no introduction)."""
    its = _WEAK_RARE.made(m.re) and m.group("its") is not None
    if not (_after_greeting(m.string, m.start()) if its else _clause_start(m.string, m.start())):
        return None
    kept, n_words = _kept_words(m)
    if len(kept) >= 2 or (
        kept and (m.group("title") is not None or _INITIALED.match(kept[0].group()))
    ):
        return kept[-1].end()
    if len(kept) == 1 and n_words == 1 and m.group("other") is None:
        if its and kept[0].group().lower() in _CALENDAR:
            return None
        if _SINGLE_END.match(m.string, kept[0].end()) is not None:
            return kept[0].end()
    return None


def _after_greeting(text: str, at: int) -> bool:
    """True if the word right before ``at`` is a greeting (:data:`_GREETINGS`), punctuation
    after it allowed: ``hey its Kevin``, ``Hi! It's Kevin``."""
    before = text[max(0, at - 24) : at].split()  # a greeting is short: no copy of a long text
    return bool(before) and before[-1].lower().strip(".,!?;:-–—") in _GREETINGS


def _sandwich_span(m: re.Match[str], no_name: frozenset[str]) -> tuple[int, int] | None:
    """Group ``n`` between a cue before and one after (``mujhe … bolte hain``): its words
    less leading ones in ``no_name`` or :data:`STOP_WORDS`, none of the rest one of them."""
    words = list(_WORDS.finditer(m.string, m.start("n"), m.end("n")))
    while words and (words[0].group().lower() in no_name or words[0].group().lower() in STOP_WORDS):
        words.pop(0)
    if not words or any(
        w.group().lower() in no_name or w.group().lower() in STOP_WORDS for w in words
    ):
        return None
    start = words[0].start() if words[0].start() > m.start("n") else _start(m)
    return start, words[-1].end()


def _before_span(m: re.Match[str]) -> tuple[int, int] | None:
    """The name before ``is my name``: its last one or two words that are no stop word,
    at a clause start (the first word kept: a start)."""
    words = list(_WORDS.finditer(m.string, m.start("n"), m.end("n")))
    while words and words[0].group().lower() in STOP_WORDS:
        words.pop(0)
    if not words or any(w.group().lower() in STOP_WORDS for w in words):
        return None
    start = _title_start(m.string, words[0].start(), _TITLES_BEFORE_ANY)
    if not _clause_start(m.string, start):
        return None
    return start, words[-1].end()


def _rare_spans(text: str, low: str) -> list[tuple[int, int]]:
    """Spans of the rarer cues — ``it's`` after a greeting, ``hier ist``, ``Name - X``, a
    signature line, ``main … bol raha hoon``, ``mujhe … bolte hain`` — each scanned for only
    when lower-cased ``low`` holds its hint: a text through the gate for another cue costs
    about what it did."""
    spans = []
    its = any(hint in low for hint in _ITS_HINTS) and _GREETING_WORD.search(low) is not None
    if its or "hier " in low:
        for m in _WEAK_RARE.finditer(text):
            end = _weak_end(m)
            if end is not None:
                spans.append((_start(m), end))
    if "name" in low and _NAME_DASH.search(low) is not None:
        for m in _FIELD_DASH.finditer(text):
            end = _strong_end_of(m) if _clause_start(text, m.start()) else None
            if end is not None:
                spans.append((_start(m), end))
    if _may_dash_line(low):
        for m in _SIG_DASH.finditer(text):
            kept, n_words = _kept_words(m)
            alone = n_words > 1 or m.group("title") is not None  # a name, whatever follows
            if len(kept) == n_words and (alone or not text[m.end() :].strip(" \t\r\n.,")):
                spans.append((_start(m), m.end("n")))
    if _may_dash_sign(low):
        for m in _DASH_SIGN.finditer(text):
            kept, n_words = _kept_words(m)  # two or three words, or one after a title
            if len(kept) == n_words and (n_words > 1 or m.group("title") is not None):
                spans.append((_start(m), m.end("n")))
    if "sent from" in low:
        for m in _SENT_FROM.finditer(text):
            kept, n_words = _kept_words(m)
            if len(kept) == n_words:
                spans.append((_start(m), m.end("n")))
    if _BOL_HINT in low:
        for m in _BOL.finditer(text):
            kept, n_words = _kept_words(m)
            language = any(w.group().lower() in _LANGUAGES for w in kept)
            if len(kept) == n_words and not language and _clause_start(text, m.start()):
                spans.append((_start(m), m.end("n")))
    if any(hint in low for hint in _MUJHE_HINTS):
        for m in _MUJHE.finditer(text):
            span = _sandwich_span(m, _NOT_CALLED)
            if span is not None:
                spans.append(span)
    return spans


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
    low = text.lower()
    if not checked and not may_hold_name(low):
        return
    spans = []
    for pattern, end_of in ((_STRONG, _strong_end), (_WEAK, _weak_end)):
        for m in pattern.finditer(text):
            end = end_of(m)
            if end is not None:
                spans.append((_start(m), end))
    # _BEFORE tries every word of the text (~26 µs a question through the gate): only when
    # its cue, the same pattern, is in the text (a search: ~1 µs)
    if _BEFORE_CUE.search(text) is not None:
        for m in _BEFORE.finditer(text):
            span = _before_span(m)
            if span is not None:
                spans.append(span)
    for m in _SIGNOFF.finditer(text):
        if m.group("signed") is None or _clause_start(text, m.start()):
            spans.append((_start(m), m.end("n")))
    for m in _FIELD.finditer(text):
        end = _strong_end_of(m)
        if end is not None:
            spans.append((_start(m), end))
    spans += _rare_spans(text, low)
    for m in _SELF.finditer(text):
        start = _title_start(text, m.start("n"), _TITLES_BEFORE)
        if _clause_start(text, start):
            spans.append((start, m.end("n")))
    found: list[tuple[int, int]] = []
    free = 0
    for start, end in sorted(spans):
        if start >= free:
            found.append((start, end))
            free = end
    yield from _with_repeats(text, found)


def _with_repeats(text: str, found: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """``found`` (in text order, not overlapping) and every other occurrence, in any case, of
    a word of those names (not a title, particle or function word, at least three letters):
    a name given once is the person's wherever the text repeats it (``My name is o'connor,
    sean o'connor``, ``Dr. Emily Chen, emily chen at gmail dot com``: a trial's suggestions
    kept the second). Each repeated word is a span of its own (``<NAME> <NAME>``): a span that
    took the next word too could overlap another detector's (``chen at gmail dot com``) and
    lose to it whole."""
    if not found:
        return found
    skip = STOP_WORDS | _PARTICLE_WORDS | _TITLE_LOWER
    words = {w.group().lower() for a, b in found for w in _WORDS.finditer(text, a, b)}
    words = {w for w in words if len(w) >= 3 and w not in skip}
    if not words:
        return found
    alternatives = "|".join(re.escape(w) for w in sorted(words, key=len, reverse=True))
    repeat = re.compile(rf"(?<![\w'’-])(?:{alternatives})(?![\w'’-])", re.IGNORECASE)
    spans = sorted(
        {*found, *(m.span() for m in repeat.finditer(text))}, key=lambda s: (s[0], -s[1])
    )
    kept: list[tuple[int, int]] = []
    for start, end in spans:
        if kept and start < kept[-1][1]:  # inside a name found: already covered
            continue
        kept.append((start, end))
    return kept
