"""Whether two similar wordings ask the same question: numbers, words, question word, negation.

Trigram Jaccard ≥ 0.6 (:mod:`service.harvest.neardup`) joins wordings that share most of
their characters, and so joined, on the NQ-open trial (finding F6), "who won the oscar for
best picture in 1976" with "who won the oscar for best actor in 1975": the words that differ
are the question. :func:`disagreement` is the merge rule applied to every pair the index
matches: the two normalised texts (:func:`service.text.normalise` with
``separators="non_word"``, harvest's :data:`service.harvest.text.comparison_form`) merge only
if they agree on

1. their *numbers*: the set of numbers of one equals the other's. A number is a token of
   digits (any script's decimal digits: ``"१९७६"`` is 1976), with an ordinal or plural suffix
   (``"1st"``, ``"2nd"``, ``"3e"``, ``"2º"``, ``"1970s"``), leading zeros dropped; a run of
   three-digit groups after a group of one to three digits is one number (``"1,000"``
   normalises to ``"1 000"``: 1000; ``"1.5"`` to ``"1 5"``, the same on both sides); or a
   number word of :data:`NUMBER_WORDS` (``"first"`` is 1, ``"zwei"`` 2). A word that is an
   article or a pronoun as often as a number (``"one"``, ``"un"``, ``"eine"``:
   :data:`WEAK_NUMBER_WORDS`) may stand for its number on one side but never asks for it.
   A year is a number like any other; ``"76"`` and ``"1976"`` differ.
2. their *content words* (for a pair the trigram rule matched; not for a pair only the
   embedding rule matched, whose paraphrases differ in words by design): every word of one
   that is neither a number nor a function word (:data:`FUNCTION_WORDS`: English, Spanish,
   German, French, Hindi in Devanagari and romanised; one list for all, so no language has
   to be detected and a pair's verdict depends on nothing else) has a counterpart in the
   other: the same word up to an inflection (``"fees"``, ``"fee"``; ``"played"``,
   ``"plays"``: :func:`_stem`), the same typed with one slip (an insertion, deletion or swap
   of neighbours when both are at least 4 characters, a substitution when both are at least
   7, or 5 for a vowel or a keyboard neighbour: ``"goverment"``, ``"presidant"``,
   ``"hostal"``; names one letter apart, ``"nora"``/``"noah"``, ``"marvin"``/``"martin"``,
   stay apart; also against a function word or an inflected form the other has,
   ``"atfer"``, ``"studynig"``), the same chat spelling (:data:`CHAT_SPELLINGS`:
   ``"sem"``, ``"clg"``) or the same written as two neighbouring words (``"superbowl"``,
   ``"super bowl"``). A word with a digit (``"ps4"``) must be the same. Greetings,
   politeness and urgency ("good morning sir", "pls", "urgent", "ji") are function words.
   "Rare" is this list's complement, not a frequency, so the rule is the same whatever the
   stream has seen and in whatever order. An added content word is a difference too ("best
   actor", "best supporting actor"): some refinements of one question are kept apart with
   the different questions (measured: the benchmark's false splits). Nor may a word stand
   where the other has its opposite (:data:`OPPOSITES`), though every content word agrees
   (also a trigram match only: ``"can i get a refund before the deadline"`` is not ``"...
   after the deadline"``; :func:`_swapped`). Opposites only: the first version split on any
   two differing prepositions or quantifiers, and a review found 28 CLINC150 and 10
   BANKING77 pairs of one intent (trigram Jaccard ≥ 0.6) split that way ("talking to" /
   "talking with a real person", "open till" / "until 5 pm"); with opposites only, 8 and 2,
   most of them real opposites ("volume up" / "down"), one not ("... get my w2" / "... get
   my w2 from"). Not for an embedding match: paraphrases rewrite
   prepositions ("... top up my account with a cheque" / "... use it to top off my
   account").
3. their *question word*: when both ask with one, they ask with the same ones
   (:data:`QUESTION_WORDS`, those of the five languages that are no other common word:
   ``"when did the titanic sink"`` is not ``"where did the titanic sink"``; ``"which
   year"`` is ``"what year"``; ``"whos"`` is ``"who"``).

4. their *negation*: both negate (:func:`_negated`: a word of :data:`NEGATIONS`, "t"
   after "don", "haven", "can"..., French "ne" ... "pas") or neither does ("that is not
   right", "that is right"; "is it a tax haven" negates nothing, nor does Hinglish "mere pas
   timer hai", I have a timer).

Words are compared with the accents of Latin letters folded (``"cuál"``, ``"cual"``).
Scripts written without spaces (Han, kana, Thai, Lao, Khmer, Myanmar) have no words to
compare: in their tokens only the numbers are read (a digit run inside a token counts).

Measured on NQ-open (``python -m benchmarks.bench_merge_rule``, module docstring there).

The one rule of "asks the same question": harvest merges by it, and known-question matching
(:class:`service.quality.known.KnownQuestionIndex`: the live-quality stage and the
out-of-scope stage's known questions) accepts a gold row above its n-gram threshold only if
:func:`known_disagreement` is ``None``: :func:`disagreement` is, or the live question asks the
gold one with a detail left out and nothing written in its place (trial 13: "What modern city
did Khanbaliq not become?" is not "... did Khanbaliq become?", ``"negation"``; "... faced with
more access to education?" is not "... less access ...", ``"words"``: "less" has no
counterpart and "more" stands in its place; "what time does the college bus leave in the
evening" is "... leave the campus in the evening"). Hence it lives with the shared text forms,
not in harvest.

>>> disagreement(wording("who won the oscar for best picture in 1976"),
...              wording("who won the oscar for best actor in 1975"))
'numbers'
>>> disagreement(wording("who won the oscar for best picture in 1976"),
...              wording("who won the oscar for best actor in 1976"))
'words'
>>> disagreement(wording("whos the president of france"),
...              wording("who is the president of france")) is None
True
>>> disagreement(wording("who won the 1st battle of bull run"),
...              wording("who won the first battle of bull run")) is None
True
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Mapping
from typing import Any, Literal, NamedTuple

__all__ = [
    "CHAT_SPELLINGS",
    "NEGATIONS",
    "FUNCTION_WORDS",
    "NUMBER_WORDS",
    "QUESTION_WORDS",
    "WEAK_NUMBER_WORDS",
    "Disagreement",
    "Wording",
    "COURTESY_WORDS",
    "MAX_LEFT_OUT",
    "OPPOSITES",
    "RELATION_WORDS",
    "content_words",
    "core_form",
    "disagreement",
    "known_disagreement",
    "may_merge",
    "wording",
]

#: Why two wordings do not merge (:func:`disagreement`).
Disagreement = Literal["numbers", "negation", "words", "question"]

_LATIN_MARKS = re.compile("[\u0300-\u036f]")


def _fold(token: str) -> str:
    """``token`` without the accents of Latin letters (combining marks U+0300–U+036F after
    NFD: ``"cuál"`` is ``"cual"``, ``"präsident"`` ``"prasident"``); other scripts' marks
    (Devanagari vowel signs) are letters and stay."""
    if token.isascii():
        return token
    return unicodedata.normalize("NFC", _LATIN_MARKS.sub("", unicodedata.normalize("NFD", token)))


#: Courtesy phrases: thanks, please and greetings (English, German, Spanish, French, Russian,
#: Hindi in Devanagari and romanised; accents folded, :func:`_fold`), read only at a text's
#: edges (:func:`_tokens` drops them from its start and end, never from its middle, and never
#: all of a text). Phrases, not words: "muchas" and "vielen" are courtesy only in "muchas
#: gracias", "vielen dank" ("¿Hay muchas oficinas en Madrid?" asks about "muchas"), and "bitte"
#: or "hola" inside a question may be what it asks ("Wie sagt man bitte auf Englisch?", "Is
#: Hola the CEO?"). Trial 51: "... was zu tun?" and "... was zu tun? Danke." were two
#: suggestions, both accepted as gold rows. The English words ("please", "thanks", "hi") are
#: also function words anywhere (:data:`FUNCTION_WORDS`, as before this list).
_COURTESY_PHRASES: frozenset[tuple[str, ...]] = frozenset(
    tuple(_fold(word) for word in phrase.split())
    for phrase in (
        "thanks", "thank you", "thanks a lot", "thank you very much", "thanks in advance",
        "many thanks", "please", "pls", "plz", "hi", "hello", "hey",
        "danke", "danke schön", "dankeschön", "danke sehr", "vielen dank", "vielen lieben dank",
        "besten dank", "bitte", "bitte schön", "hallo", "guten tag",
        "gracias", "muchas gracias", "mil gracias", "por favor", "hola", "buenos días",
        "buenas tardes",
        "merci", "merci beaucoup", "s il vous plaît", "s il te plaît", "svp", "stp", "bonjour",
        "спасибо", "спасибо большое", "большое спасибо", "пожалуйста", "здравствуйте",
        "привет",
        "धन्यवाद", "शुक्रिया", "कृपया", "नमस्ते", "shukriya", "dhanyavaad", "dhanyawad",
        "dhanyavad",
    )
)  # fmt: skip
#: The longest courtesy phrase, in tokens.
_COURTESY_LONGEST = max(len(phrase) for phrase in _COURTESY_PHRASES)
#: The first and the last words of :data:`_COURTESY_PHRASES` (most texts start and end with
#: none: one set look-up each).
_COURTESY_FIRST = frozenset(phrase[0] for phrase in _COURTESY_PHRASES)
_COURTESY_LAST = frozenset(phrase[-1] for phrase in _COURTESY_PHRASES)

#: Function words of the languages the tool handles, one set (module docstring): articles,
#: pronouns, prepositions, conjunctions, auxiliaries and the glue of questions ("tell me",
#: "please"). English; Spanish, German and French (accents folded: :func:`_fold`); Hindi
#: in Devanagari and romanised (Hinglish). Left out: words that are content words in another of
#: the languages (German "war", "hat", Hinglish "main"; German "die" is in: English "die" is
#: rarer as a question's only difference), the question words (:data:`QUESTION_WORDS`) and
#: the numbers.
FUNCTION_WORDS: frozenset[str] = frozenset(
    _fold(word)
    for word in (
        # English
        "a an the and or but nor if then than so as of in on at to for from by with without "
        "about into onto over under between through during before after above below up down out "
        "off upon within along across against among around behind beside near till until via per "
        "is are was were be been being am isnt arent wasnt werent do does did doing done dont "
        "doesnt didnt have has had having havent hasnt hadnt will would shall should can could "
        "may might must cant couldnt wouldnt shouldnt wont ll ve re s t d m "
        "i me my mine myself you your yours yourself he him his himself she her hers herself it "
        "its itself we us our ours they them their theirs themselves this that these those there "
        "here thats theres "
        "not no yes also too very just only really some any all each every such own same other "
        "another more most much many lot lots please pls plz tell know let get got gets give "
        "show name list find say said "
        # English: the glue of requests ("i need", "can you help me", "go ahead and")
        "need want wanna gonna gotta like would help now wish ahead go okay ok hey hi hello "
        "thanks thank kindly maybe don doesn didn isn aren wasn weren hasn haven hadn couldn "
        "wouldn shouldn "
        # greetings, politeness and urgency, as people type them in a chat (English, Hinglish)
        "sir madam mam maam dear hello hi hey namaste namaskar urgent urgently asap reply "
        "thx u ur r bhaiya bhai ji yaar kya kia kyaa h "
        # Spanish
        "el la los las lo un una unos unas y e o u ni de del al en a con sin por para sobre entre "
        "hasta desde hacia según es son era eran fue fueron ser sido está están estaba esta estan "
        "hay ha han había habia he se su sus mi mis tu tus me te le les nos que quien quienes "
        "cuyo este esta estos estas ese esa esos esas muy más mas también tambien"
        # German
        " der die den dem des das ein einen einem einer eines und oder aber im ins am vom zum zur "
        "von zu mit bei nach aus für fur um an auf über uber unter vor hinter neben zwischen "
        "durch gegen ohne ist sind bin bist seid waren wird werden wurde wurden worden sein "
        "habe haben hatte hatten kann können konnte muss soll ich du er sie es wir ihr mich mir "
        "dich dir sich ihn ihm ihnen mein meine dein deine ihre unser nicht kein keine auch sehr "
        "noch schon dass "
        # French
        "le les l du des au aux et ou mais donc ni dans sur sous avec sans pour par chez vers "
        "entre est sont était etait étaient etaient été ete être etre a ont avait avaient fait "
        "je tu il elle on nous vous ils elles moi toi lui leur leurs se ce cet cette ces mon ma "
        "mes ton ta tes sa ses notre nos votre vos qui que qu j n c pas ne plus aussi "
        # Hindi: Devanagari
        "है हैं था थी थे हो होता होती होते हूँ हूं और या का की के को से में पर ने तो भी ही "
        "यह ये वह वे इस उस इन उन मैं मेरा मेरी मेरे हम हमारा आप आपका तुम नहीं न जो क्या जी "
        "कृपया नमस्ते बताइए बताइये बताओ बताएं "
        # Hindi: romanised (Hinglish)
        "hai hain tha thi the ho hota hoti hote hoon hu hun aur ya ka ki ke ko se mein par ne "
        "toh bhi hi yeh ye woh wo is us in un mera meri mere hum humara aap aapka tum nahi "
        "nahin jo tak karo kar karna karne batao bataiye"
    ).split()
)

#: The function words that ask nothing (greetings, politeness, urgency, "tell me", in the
#: languages of :data:`FUNCTION_WORDS`): a re-asking of a gold question may add them where it
#: leaves a detail out (:func:`known_disagreement`), as it may add an article
#: (:data:`_ARTICLES`); any other function word it adds may be the question ("more access"
#: for "less access").
COURTESY_WORDS: frozenset[str] = frozenset(
    _fold(word)
    for word in (
        "please pls plz kindly tell me sir madam mam maam dear hi hello hey namaste namaskar "
        "thanks thank thx urgent urgently asap ji bhai bhaiya yaar ok okay batao bataiye "
        "कृपया नमस्ते जी बताइए बताओ बताएं"
    ).split()
)
#: Articles (English, Spanish, German, French): "what time does a bus leave" for "... the
#: bus ..." adds nothing.
_ARTICLES: frozenset[str] = frozenset(
    "a an the el la los las un una unos unas der die das den dem des ein eine einen einem "
    "einer eines le les l une des du".split()
)
#: Pairs of words that relate the question's things in opposite ways (time, place,
#: direction, amount, company): one standing where the other question has its opposite
#: asks something else, though every content word agrees ("a refund before the deadline",
#: "... after the deadline"; "transfer from savings", "... to savings"; :func:`_swapped`,
#: read by :func:`disagreement` for a trigram match, so by harvest and known-question
#: matching alike). Only opposites: near-synonyms ("till"/"until", "each"/"every",
#: "under"/"below", "to"/"into", "with"/"to", "all"/"any") are one question — a review found
#: 28 CLINC150 and 10 BANKING77 pairs of one intent split when any two of these words
#: differed (session 32: "talking to a real person" / "talking with a real person").
OPPOSITES: frozenset[frozenset[str]] = frozenset(
    frozenset(pair.split("/"))
    for pair in (
        "before/after above/below over/under with/without from/to from/into into/out "
        "more/less more/fewer most/least all/none inside/outside in/out up/down on/off"
    ).split()
)
#: The words of :data:`OPPOSITES`.
RELATION_WORDS: frozenset[str] = frozenset().union(*OPPOSITES)
#: At most this share of a gold question's content words may be left out by a re-asking
#: (:func:`known_disagreement`): "when was the university founded" keeps 2 of "... university
#: medical school founded"'s 4 and asks about another institution.
MAX_LEFT_OUT = 1 / 3

#: Words that negate (module docstring, 4), accents folded: English (with the pieces
#: "doesn't", "isn't"... normalise to, "doesn", "isn", which are no other word), Spanish,
#: German, French ("jamais"), Hindi. Not "no" before a number ("no 1 song": number one).
#: Read in context by :func:`_negated`, not listed here: the pieces that are also words
#: (:data:`_CONTRACTED`: "don", "haven", "can", "won", "ain") negate only before ``"t"``
#: ("don't", not "Don Quixote"; "haven't", not "safe haven"), and French "ne"/"n" only with
#: a partner after it (:data:`_NE_PARTNERS`: "ne ... pas"), for both are Hinglish words too
#: ("mere pas" is "I have", "maa ne" the ergative): in the questions of Hinglish-TOP, "pas"
#: 100 times, one English twin negated ("ke pas ... no later than": not the "pas"); "ne" 29,
#: none negated; "ne"/"n" before "pas" none. French negation is read only in a question
#: with a French word (:data:`_FRENCH_WORDS`), and a lone "pas" there unless a Hinglish word
#: of having stands before it (:data:`_PAS_HOLDERS`: "c'est pas gratuit" negates).
NEGATIONS: frozenset[str] = frozenset(
    "not no never nor doesn didn isn aren wasn weren couldn wouldn shouldn hasn "
    "hadn dont doesnt didnt isnt arent wasnt werent cant wont couldnt wouldnt shouldnt "
    "havent hasnt hadnt aint nunca nicht kein keine keinen keinem keiner nie jamais "
    "nahi nahin नहीं न मत".split()
)
#: Pieces of an English negative contraction that are also words: each negates only before
#: ``"t"`` (the normaliser splits "don't", "haven't", "can't" into two tokens; "havent"
#: stays one, in :data:`NEGATIONS`), and only there are "don" and "haven" function words
#: (:data:`_WORD_PIECES`: the name in "Don Quixote", the noun in "safe haven" are content
#: words; "won" stays a content word and "can" a function word everywhere). Measured in the
#: questions of NQ-open, the SQuAD 2.0 sample, BANKING77, CLINC150, Hinglish-TOP (both
#: sides) and XQuAD en: "haven" 6 times without ``"t"``, "don" 6, all a noun or a name
#: (before ``"t"``: 124 and 571); "didn" twice without it, both a negation mistyped
#: ("didn'y"), as are the other pieces, which are no word: they stay in :data:`NEGATIONS`.
_CONTRACTED: frozenset[str] = frozenset({"can", "won", "ain", "don", "haven"})
#: The pieces of :data:`_CONTRACTED` listed in :data:`FUNCTION_WORDS` for their contraction
#: only: elsewhere content words.
_WORD_PIECES: frozenset[str] = frozenset({"don", "haven"})
#: The French negation's second part: at most :data:`_NE_REACH` tokens after "ne" (or "n'",
#: normalised to "n") it negates ("je ne le veux pas": 3; "tom n jerry on disney plus" is no
#: negation).
_NE_PARTNERS: frozenset[str] = frozenset({"pas", "plus", "rien", "personne", "aucun", "aucune"})
_NE_REACH = 3
#: Hinglish words after which "pas" is "near, with" ("mere pas", "aas pas"; with any word
#: ending in "ke", :func:`_holds`): in all of Hinglish-TOP's questions (train, validation,
#: test) its 100 "pas" follow only mere, aas, ke, hamare, humare, uske, unke, ass, kiske.
#: Elsewhere a lone "pas" is French negation ("c'est pas gratuit").
_PAS_HOLDERS: frozenset[str] = frozenset(
    "mere tere hamare humare tumhare apne aas ass paas".split()
)
#: Words only French writes among the five languages (pronouns, "est", "sont", articles and
#: prepositions no Hinglish, English, Spanish or German question uses): French negation is
#: read only in a question with one of them. Hinglish-TOP's "pas"/"paas" follow "kya",
#: "mai", "sabse" too (176 "paas"; a final read), and English has "faux pas", "rock n roll
#: plus": none of them holds a French word.
_FRENCH_WORDS: frozenset[str] = frozenset(
    "je j il ils elle elles nous vous c ce cet cette est sont suis ai avons avez ont les des "
    "du au aux une mon mes ton tes notre nos votre vos leur leurs qui que qu quoi comment "
    "pourquoi combien avec pour dans sur chez".split()
)

#: Chat spellings read as the word they stand for (English and Hinglish short forms).
CHAT_SPELLINGS: dict[str, str] = {
    "wen": "when", "wat": "what", "wht": "what", "sem": "semester", "clg": "college",
    "kb": "kab", "abt": "about", "govt": "government", "dept": "department", "yr": "year",
    "paas": "pas",
}  # fmt: skip
#: "good morning", "good evening"...: a greeting, dropped (both words).
_GREETED = frozenset({"morning", "afternoon", "evening", "night", "day"})

#: Question words and what each asks (module docstring, 3), accents folded: English, and
#: those of Spanish, German, French and Hindi that are no other common word (not Spanish
#: "que", "como", German "was", "wo" (Hinglish "that"), French "qui", "où" (folded: "ou", or),
#: "comment", Hindi "क्या"/"kya", also a yes-no particle). A word missing here is no question
#: word.
QUESTION_WORDS: dict[str, str] = {
    _fold(word): asked
    for asked, words in (
        ("who", "who whom whos quien quienes wer कौन kaun"),
        ("whose", "whose"),
        (
            "what",
            "what whats which cual cuales welche welcher welches welchen quel quelle quels quelles",
        ),
        ("when", "when whens cuando wann quand कब kab"),
        ("where", "where wheres donde कहाँ कहां kahan kaha"),
        ("why", "why whys warum wieso weshalb pourquoi क्यों kyun kyon kyu"),
        (
            "how",
            "how hows cuanto cuanta cuantos cuantas wie combien कैसे कितना कितने कितनी "
            "kaise kitna kitne kitni",
        ),
    )
    for word in words.split()
}

#: Number words read as their number (module docstring, 1): cardinals and ordinals of English,
#: Spanish, German, French and Hindi (Devanagari). Values are canonical digit strings.
NUMBER_WORDS: dict[str, str] = {
    _fold(word): str(value)
    for value, words in (
        (
            1,
            "first 1st premier première premiere primer primero primera erste erster ersten "
            "erstes पहला पहली",
        ),
        (
            2,
            "two second dos segundo segunda zwei zweite zweiter zweiten deux deuxième "
            "deuxieme seconde दूसरा दूसरी",
        ),
        (
            3,
            "three third tres tercer tercero tercera drei dritte dritter dritten trois "
            "troisième troisieme तीन तीसरा तीसरी",
        ),
        (4, "four fourth cuatro vier vierte vierten quatre quatrième quatrieme चार चौथा"),
        (5, "five fifth cinco quinto quinta fünf funf fünfte cinq cinquième cinquieme पांच पाँच"),
        (6, "six sixth seis sexto sexta sechs sechste sixième sixieme छह"),
        (7, "seven seventh siete séptimo septimo sieben siebte septième septieme सात"),
        (8, "eight eighth ocho octavo octava acht achte huit huitième huitieme आठ"),
        (9, "nine ninth nueve noveno novena neun neunte neuf neuvième neuvieme नौ"),
        (10, "ten tenth diez décimo decimo zehn zehnte dix dixième dixieme दस"),
        (11, "eleven eleventh onze"),
        (12, "twelve twelfth doce zwölf zwolf douze"),
        (13, "thirteen thirteenth trece dreizehn treize"),
        (14, "fourteen fourteenth catorce vierzehn quatorze"),
        (15, "fifteen fifteenth quince fünfzehn quinze"),
        (16, "sixteen sixteenth dieciséis dieciseis sechzehn seize"),
        (17, "seventeen seventeenth diecisiete siebzehn"),
        (18, "eighteen eighteenth dieciocho achtzehn"),
        (19, "nineteen nineteenth diecinueve neunzehn"),
        (20, "twenty twentieth veinte zwanzig vingt"),
        (30, "thirty treinta dreißig dreissig trente"),
        (40, "forty cuarenta vierzig quarante"),
        (50, "fifty cincuenta fünfzig cinquante"),
        (60, "sixty sesenta sechzig soixante"),
        (70, "seventy setenta siebzig"),
        (80, "eighty ochenta achtzig"),
        (90, "ninety noventa neunzig"),
        (100, "hundred cien ciento hundert सौ"),
        (1000, "thousand mil tausend mille हज़ार हजार"),
        (1000000, "million millón millon millones millionen millions"),
    )
    for word in words.split()
}

#: Words that are a number as often as an article, a pronoun or another word ("which one",
#: "un libro", "eine Frage", Hindi "दो" also "give", English "do"; the collisions of the
#: languages below): one may stand for its number, none asks for it.
WEAK_NUMBER_WORDS: dict[str, str] = {
    "one": "1", "uno": "1", "una": "1", "un": "1", "une": "1", "ein": "1", "eine": "1",
    "eins": "1", "एक": "1", "ek": "1", "do": "2", "दो": "2",
    # a number in one language, another word in another: Spanish "tres", French "très"
    # (folded); Spanish "once", English "once"; German "elf"; French "sept", "Sept 11";
    # French "cent", English "cent"
    "tres": "3", "sept": "7", "once": "11", "elf": "11", "cent": "100",
}  # fmt: skip

#: A token of digits with an optional ordinal or plural suffix (en, es, de, fr; "º", "ª"
#: survive normalisation as "o", "a").
_NUMBER = re.compile(r"(\d+)(?:st|nd|rd|th|s|er|re|e|eme|ème|o|a|te|ten|ter|tes)?")
_DIGITS = re.compile(r"\d+")
#: Inflectional endings :func:`_stem` drops, longest first (English mostly; the plural ``s``
#: and ``es`` of Spanish and French too).
_ENDINGS = ("ing", "ed", "es", "s", "e")
_VOWELS = frozenset("aeiouy")
_ROWS = ("qwertyuiop", "asdfghjkl", "zxcvbnm")
#: Each letter's neighbours on a QWERTY keyboard: the same row either side, the row above
#: and below at the same and the next position.
_QWERTY_NEIGHBOURS: dict[str, str] = {
    key: "".join(
        row[c]
        for other, row in enumerate(_ROWS)
        if abs(other - r) <= 1
        for c in (col - 1, col, col + 1)
        if 0 <= c < len(row) and row[c] != key
    )
    for r, keys in enumerate(_ROWS)
    for col, key in enumerate(keys)
}
#: Scripts written without spaces between words (module docstring).
_UNSPACED = re.compile(
    "[\u0e00-\u0eff\u1000-\u109f\u1780-\u17ff\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]"
)


class Wording(NamedTuple):
    """What :func:`disagreement` compares of one normalised text.

    Attributes:
        numbers: canonical digit strings its numbers stand for (``"1976"``).
        weak: numbers its :data:`WEAK_NUMBER_WORDS` may stand for.
        words: its content words, stemmed (:func:`_stem`).
        pairs: ``{joined: (left, right)}`` of each two neighbouring tokens (content words
            stemmed), for the split-word counterpart.
        asks: its question words, counted as :data:`QUESTION_WORDS` says.
        tokens: its tokens that are no number, unstemmed (accents folded, chat spellings
            read), for a slip against a function word (``"atfer"``, ``"after"``).
        raw: ``{content word: the token it was stemmed from}`` (the first in sorted order),
            for a slip in an ending (``"studynig"``, ``"studying"``).
        negated: whether a token is one of :data:`NEGATIONS`.
    """

    numbers: frozenset[str]
    weak: frozenset[str]
    words: frozenset[str]
    pairs: Mapping[str, tuple[str, str]]
    asks: frozenset[str]
    tokens: frozenset[str] = frozenset()
    raw: Mapping[str, str] = {}
    negated: bool = False


def _stem(word: str) -> str:
    """``word`` without one ending of :data:`_ENDINGS` (the first that leaves 3 or more
    characters; not ``s`` after ``s``; a doubled consonant other than l, s, z before ``ing``
    or ``ed`` once): ``"played"``, ``"plays"``, ``"playing"`` are ``"play"``; ``"come"``,
    ``"coming"`` ``"com"``; ``"setting"`` ``"set"``."""
    for ending in _ENDINGS:
        if word.endswith(ending) and len(word) - len(ending) >= 3:
            if ending == "s" and word[-2] == "s":
                return word
            stem = word[: -len(ending)]
            if len(ending) > 1 and ending != "es" and stem[-1] == stem[-2] not in "lsz":
                return stem[:-1]  # "setting", "stopped": "set", "stop"
            return stem
    return word


def _number(token: str) -> str | None:
    """The canonical number of a digit token (module docstring, 1), else ``None``."""
    match = _NUMBER.fullmatch(token)
    if match is None:
        return None
    digits = match.group(1)
    if not digits.isascii():  # another script's digits: their value
        digits = "".join(str(unicodedata.decimal(c)) for c in digits)
    return digits.lstrip("0") or "0"


#: Openings that announce a question and ask nothing, read only at the start of a text
#: (:func:`wording` skips them): "Quick question: ...", "Kurze Frage: ...", "Una pregunta:
#: ..." (trial 51: each was a second suggestion of the question it opened). Longest first.
_PREFACES: tuple[tuple[str, ...], ...] = tuple(
    sorted(
        (tuple(phrase.split()) for phrase in (
            "quick question", "a quick question", "short question", "one question",
            "kurze frage", "eine frage", "una pregunta", "una pregunta rapida",
            "petite question", "une question", "ek sawal",
        )),
        key=len, reverse=True,
    )
)  # fmt: skip


#: The first words of :data:`_PREFACES` (most texts start with none: one set look-up).
_PREFACE_STARTS = frozenset(preface[0] for preface in _PREFACES)


def _split(normalised: str) -> list[str]:
    """A normalised text's words, the Devanagari danda and double danda (U+0964, U+0965)
    separating words as a space does."""
    if "\u0964" in normalised or "\u0965" in normalised:
        normalised = normalised.replace("\u0964", " ").replace("\u0965", " ")
    return normalised.split()


def _tokens(normalised: str) -> list[str]:
    """The tokens :func:`wording` and :func:`content_words` read: a danda separates words; an
    opening of :data:`_PREFACES` at the start and courtesy phrases (:data:`_COURTESY_PHRASES`)
    at the start and the end are dropped, but never every token (a text that is only courtesy
    stays itself: "Danke!" is no empty question).

    >>> _tokens("hallo wann öffnet die bibliothek vielen dank")
    ['wann', 'öffnet', 'die', 'bibliothek']
    >>> _tokens("wie sagt man bitte auf englisch")
    ['wie', 'sagt', 'man', 'bitte', 'auf', 'englisch']
    >>> _tokens("kurze frage"), _tokens("danke"), _tokens("por favor cambio contraseña por favor")
    (['kurze', 'frage'], ['danke'], ['cambio', 'contraseña'])
    """
    tokens = _split(normalised)
    start, end = _edges(tokens)
    return tokens[start:end] if start or end != len(tokens) else tokens


def core_form(normalised: str) -> str:
    """A normalised text (``comparison_form``) without what :func:`wording` does not read at
    its edges: an opening (:data:`_PREFACES`) and courtesy phrases at its start and its end
    (:data:`_COURTESY_PHRASES`, never every word), so the text itself when it has none. What
    harvest's trigram gate compares (:class:`service.harvest.neardup.NearDupIndex`'s ``gate``,
    :func:`service.harvest.labelling.duplicated_gold_row`): on the whole text, "Kurze Frage:
    Wann ist Zahltag?" shares too few trigrams with "Wann ist Zahltag?" for the wording rule
    ever to be asked (review of trial 51's fix).

    >>> core_form("kurze frage wann ist zahltag"), core_form("wann ist zahltag")
    ('wann ist zahltag', 'wann ist zahltag')
    >>> core_form("hallo wann öffnet die bibliothek vielen dank")
    'wann öffnet die bibliothek'
    >>> core_form("danke"), core_form("wie sagt man danke auf englisch"), core_form("i thank you")
    ('danke', 'wie sagt man danke auf englisch', 'i thank you')
    """
    tokens = _split(normalised)
    start, end = _edges(tokens)
    return " ".join(tokens[start:end]) if start or end != len(tokens) else normalised


def _edges(tokens: list[str]) -> tuple[int, int]:
    """``(start, end)``: ``tokens[start:end]`` are ``tokens`` without an opening of
    :data:`_PREFACES` and courtesy phrases at the edges (:func:`_tokens`), or all of them when
    nothing but function words would be left ("i thank you" is no question "i")."""
    start, end = 0, len(tokens)
    if not end:
        return start, end
    moved = True
    while moved:
        moved = False
        first = tokens[start]
        if first in _PREFACE_STARTS:  # "quick question: ..." asks what "..." asks
            for preface in _PREFACES:
                if (end - start > len(preface)
                        and tuple(tokens[start : start + len(preface)]) == preface):  # fmt: skip
                    start += len(preface)
                    moved = True
                    break
        first = tokens[start]
        if (first if first.isascii() else _fold(first)) in _COURTESY_FIRST:
            size = _courtesy_at(tokens, start, end, 1)
            if size:
                start += size
                moved = True
        last = tokens[end - 1]
        if (last if last.isascii() else _fold(last)) in _COURTESY_LAST:
            size = _courtesy_at(tokens, start, end, -1)
            if size:
                end -= size
                moved = True
    if (start or end != len(tokens)) and all(
        (t if t.isascii() else _fold(t)) in FUNCTION_WORDS for t in tokens[start:end]
    ):  # "i thank you", "many thanks": courtesy with no question in it stays itself
        return 0, len(tokens)
    return start, end


def _courtesy_at(tokens: list[str], start: int, end: int, side: int) -> int:
    """The length of the longest courtesy phrase (:data:`_COURTESY_PHRASES`) that
    ``tokens[start:end]`` starts with (``side`` 1) or ends with (``side`` -1) and that leaves
    at least one token, or 0."""
    phrases = _COURTESY_PHRASES
    for size in range(min(_COURTESY_LONGEST, end - start - 1), 0, -1):
        piece = tuple(tokens[start : start + size] if side > 0 else tokens[end - size : end])
        if piece in phrases or (
            not "".join(piece).isascii() and tuple(map(_fold, piece)) in phrases
        ):
            return size
    return 0


@functools.lru_cache(maxsize=1 << 14)
def wording(normalised: str) -> Wording:
    """The :class:`Wording` of a normalised text (``comparison_form``; cached, 16,384 texts).

    >>> from service.text import normalise
    >>> asked = "Who won Best Pictures in 1976: the 2nd of 1,000 or one?"
    >>> w = wording(normalise(asked, separators="non_word"))
    >>> sorted(w.numbers), sorted(w.weak), sorted(w.words), sorted(w.asks)
    (['1000', '1976', '2'], ['1'], ['best', 'pictur', 'won'], ['who'])

    A Devanagari danda (``"।"``, ``"॥"``, which the comparison form keeps) separates words, and an
    opening of :data:`_PREFACES` is skipped: ``"quick question who won"`` reads as ``"who won"``.
    """
    tokens = _tokens(normalised)
    numbers: set[str] = set()
    weak: set[str] = set()
    words: set[str] = set()
    asks: set[str] = set()
    kept: list[str] = []  # tokens as compared (stems), for the neighbouring pairs
    seen: set[str] = set()  # tokens not numbers, unstemmed
    raw: dict[str, str] = {}  # content word -> its first unstemmed token
    known = _TOKEN_READINGS
    n = len(tokens)
    i = 0
    while i < n:
        token = tokens[i]
        i += 1
        if token == "good" and i < n and tokens[i] in _GREETED:
            i += 1
            continue
        token = CHAT_SPELLINGS.get(token, token)
        if token.isdecimal() and len(token) <= 3:  # 1,000,000 normalises to "1 000 000"
            while i < n and len(tokens[i]) == 3 and tokens[i].isdecimal():
                token += tokens[i]
                i += 1
        read = known.get(token)
        if read is None:
            read = _token_reading(token)
            if len(token) <= _REMEMBERED_TOKEN_MAX:  # a long token is read, not kept
                if len(known) >= _TOKEN_READINGS_MAX:
                    known.clear()
                known[token] = read
        kind = read[0]
        if kind is _FUNCTION:
            seen.add(read[2])
            kept.append(read[1])
        elif kind is _CONTENT or (kind is _PIECE_WORD and (i == n or tokens[i] != "t")):
            # "don quixote", "safe haven": content words; "don t", "haven t": function words
            stem, word = read[1], read[2]
            seen.add(word)
            words.add(stem)
            if word < raw.get(stem, "\U0010ffff"):
                raw[stem] = word
            kept.append(stem)
        elif kind is _PIECE_WORD:
            seen.add(read[2])
            kept.append(read[1])
        elif kind is _NUMBER_WORD:
            numbers.add(read[1])
            kept.append(read[1])
        elif kind is _ASK:
            seen.add(read[2])
            asks.add(read[3])
            kept.append(read[1])
        elif kind is _WEAK:
            weak.add(read[1])
            kept.append(read[2])
        else:  # _UNSPACED_RUN: only its numbers are read
            numbers.update(read[1])
            kept.append(read[2])
    # {left + right: (left, right)} of each two neighbours, in C-level passes
    after = kept[1:]
    pairs = dict(zip(map(str.__add__, kept, after), zip(kept, after, strict=False), strict=True))
    return Wording(frozenset(numbers), frozenset(weak), frozenset(words), pairs,
                   frozenset(asks), frozenset(seen), raw, _negated(tokens))  # fmt: skip


#: What a token is to :func:`wording` (the first item of :func:`_token_reading`'s tuple).
_FUNCTION, _CONTENT, _PIECE_WORD, _NUMBER_WORD, _ASK, _WEAK, _UNSPACED_RUN = (
    "function", "content", "piece", "number", "ask", "weak", "unspaced")  # fmt: skip
#: :func:`_token_reading` of each token :func:`wording` read so far (bounded: emptied at
#: :data:`_TOKEN_READINGS_MAX`).
_TOKEN_READINGS: dict[str, tuple[Any, ...]] = {}
_TOKEN_READINGS_MAX = 1 << 16
#: The longest token (characters) the two token memos keep: their bound is a count, so a
#: stream of long unspaced tokens (a 300-character CJK run is one) would otherwise hold
#: ~48 MiB each at capacity; longer tokens are read each time (the same reading).
_REMEMBERED_TOKEN_MAX = 48


def _token_reading(token: str) -> tuple[Any, ...]:
    """What one token (chat spellings applied, numbers joined) is to :func:`wording`, by its
    rules, which depend on the token alone (an ASCII token is its own fold and holds no
    unspaced script, so a text's being ASCII changes nothing): ``(_UNSPACED_RUN, numbers,
    folded)`` for a run of an unspaced script (its digit runs' numbers), ``(_NUMBER_WORD,
    number)``, ``(_WEAK, number, folded)`` for a :data:`WEAK_NUMBER_WORDS` word, and for the
    others ``(kind, stem, folded)`` — ``_ASK`` with its question word after them, a word
    of :data:`FUNCTION_WORDS` ``_FUNCTION``, or ``_PIECE_WORD`` when it is one of
    :data:`_WORD_PIECES` (a content word unless ``"t"`` follows it), else ``_CONTENT``.

    >>> _token_reading("played"), _token_reading("1976"), _token_reading("who")
    (('content', 'play', 'played'), ('number', '1976'), ('ask', 'who', 'who', 'who'))
    """
    if not token.isascii():
        token = _fold(token)
        if _UNSPACED.search(token):
            return _UNSPACED_RUN, tuple(str(int(d)) for d in _DIGITS.findall(token)), token
    digits = not token.isalpha() and any(c.isdigit() for c in token)
    value = _number(token) if digits else NUMBER_WORDS.get(token)
    if value is not None:
        return _NUMBER_WORD, value
    if token in WEAK_NUMBER_WORDS:
        return _WEAK, WEAK_NUMBER_WORDS[token], token
    stem = _stem(token)
    ask = QUESTION_WORDS.get(token)
    if ask is not None:
        return _ASK, stem, token, ask
    if token not in FUNCTION_WORDS:
        return _CONTENT, stem, token
    return (_PIECE_WORD if token in _WORD_PIECES else _FUNCTION), stem, token


def content_words(normalised: str) -> dict[str, str]:
    """``{stem: token}`` of a normalised text's content words: :func:`wording`'s ``words``
    with its ``raw`` token each (the same rules, the same result), without the rest of a
    :class:`Wording` — ~3× cheaper per new text, for a caller that reads only the words (the
    drift stage's rising terms reads every question's). What a token is (its stem, or no
    content word) is remembered across texts (:data:`_TOKEN_STEMS`), but for the words
    whose reading depends on the next token (:data:`_WORD_PIECES`) and those of greetings.

    >>> from service.text import normalise
    >>> sorted(content_words(normalise("Who played the Doctors in 1963?", separators="non_word")
    ...                      ).items())
    [('doctor', 'doctors'), ('play', 'played')]
    """
    tokens = _tokens(normalised)  # as wording() reads them: danda split, opening skipped
    raw: dict[str, str] = {}
    n = len(tokens)
    known = _TOKEN_STEMS
    i = 0
    while i < n:
        token = tokens[i]
        i += 1
        if token == "good" and i < n and tokens[i] in _GREETED:
            i += 1
            continue
        token = CHAT_SPELLINGS.get(token, token)
        if token.isdecimal() and len(token) <= 3:
            while i < n and len(tokens[i]) == 3 and tokens[i].isdecimal():
                token += tokens[i]
                i += 1
        read = known.get(token)
        if read is None:
            read = _read_token(token)
            if read is not _PIECE and len(token) <= _REMEMBERED_TOKEN_MAX:
                if len(known) >= _TOKEN_STEMS_MAX:
                    known.clear()
                known[token] = read
        if read is _PIECE:  # "don quixote", "safe haven": content words; "don t": not
            if i != n and tokens[i] == "t":
                continue
            word = _fold(token)  # ("dón" is "don", as wording reads it)
            read = (_stem(word), word)
        if read:
            stem, word = read
            if word < raw.get(stem, "\U0010ffff"):
                raw[stem] = word
    return raw


#: What :func:`content_words` read of each token so far: ``(stem, the token accents folded)``
#: for a content word, ``()`` for none (bounded: emptied at :data:`_TOKEN_STEMS_MAX`).
_TOKEN_STEMS: dict[str, tuple[str, str] | tuple[()]] = {}
_TOKEN_STEMS_MAX = 1 << 16
_PIECE = ("", "")  # a token of _WORD_PIECES: its reading depends on the next token


def _read_token(token: str) -> tuple[str, str] | tuple[()]:
    """What one token (chat spellings applied, numbers joined) is to :func:`content_words`,
    by :func:`wording`'s rules: ``(stem, token accents folded)`` for a content word, ``()``
    for none (a number, a function or question word, an unspaced script's run), or
    :data:`_PIECE` for a word of :data:`_WORD_PIECES`. (An ASCII token is its own fold and
    holds no unspaced script, so a text's being ASCII changes nothing.)"""
    if not token.isascii():
        token = _fold(token)
        if _UNSPACED.search(token):
            return ()
    digits = not token.isalpha() and any(c.isdigit() for c in token)
    if (_number(token) if digits else NUMBER_WORDS.get(token)) is not None:
        return ()
    if token in WEAK_NUMBER_WORDS or token in QUESTION_WORDS:
        return ()
    if token not in FUNCTION_WORDS:
        return (_stem(token), token)
    return _PIECE if token in _WORD_PIECES else ()


def _negated(tokens: list[str]) -> bool:
    """Whether the tokens negate: one of :data:`NEGATIONS` (not ``"no"`` before a digit),
    ``"t"`` after a piece of :data:`_CONTRACTED` (``"haven t"``, not ``"safe haven"``), or
    or, in a question with a French word (:data:`_FRENCH_WORDS`), a word of
    :data:`_NE_PARTNERS` at most :data:`_NE_REACH` tokens after ``"ne"`` or ``"n"`` (``"je
    ne sais pas"``, ``"il n y a plus"``; not ``"maa ne kaha"``, ``"rock n roll plus"``) or
    ``"pas"`` alone unless a Hinglish word of having stands before it (:func:`_holds`:
    ``"c est pas gratuit"``; not ``"mere pas timer hai"``, ``"kya pas mein atm hai"``,
    ``"what is a faux pas"``).

    >>> _negated("i haven t paid".split()), _negated("is it a tax haven".split())
    (True, False)
    >>> _negated("je ne sais pas".split()), _negated("mere pas timer hai".split())
    (True, False)
    >>> _negated("c est pas gratuit".split()), _negated("tom n jerry on disney plus".split())
    (True, False)
    >>> _negated("kya pas mein koi atm hai".split()), _negated("rock n roll plus".split())
    (False, False)
    """
    ne = -_NE_REACH - 1  # index of the last "ne"/"n"
    french: bool | None = None  # whether a French word is among the tokens (read once)
    for i, token in enumerate(tokens):
        if token in NEGATIONS:
            if token == "no" and i + 1 < len(tokens) and tokens[i + 1][:1].isdigit():
                continue
            return True
        if token == "t" and i and tokens[i - 1] in _CONTRACTED:
            return True
        if token in ("ne", "n"):
            ne = i
        elif token in _NE_PARTNERS and (
            i - ne <= _NE_REACH or (token == "pas" and not (i and _holds(tokens[i - 1])))
        ):
            if french is None:
                french = not _FRENCH_WORDS.isdisjoint(tokens)
            if french:  # "ce n est pas", "c est pas": not "rock n roll plus", "kya pas"
                return True
    return False


def _holds(word: str) -> bool:
    """Whether ``word`` before "pas" makes it Hinglish "near, with" ("mere pas", "uske pas",
    "aas pas"; :data:`_PAS_HOLDERS`, or any word ending in "ke": "aapke", "kiske")."""
    return word in _PAS_HOLDERS or word.endswith("ke")


def _slip(a: str, b: str) -> bool:
    """Whether ``a`` and ``b`` differ by one typing slip (module docstring, 2): one inserted
    or deleted character or two neighbours swapped when both have at least 4 characters, one
    substituted when both have at least 7, or at least 5 when the two letters are vowels or
    keyboard neighbours (:func:`_near_keys`); never when either holds a digit."""
    if len(a) > len(b):
        a, b = b, a
    if len(a) < 4 or len(b) - len(a) > 1 or any(c.isdigit() for c in a + b):
        return False
    if len(a) < len(b):  # one deletion
        at = next((i for i in range(len(a)) if a[i] != b[i]), len(a))
        return a[at:] == b[at + 1 :]
    at = next(i for i in range(len(a)) if a[i] != b[i])  # a != b here
    if a[at + 1 :] == b[at + 1 :]:  # one substitution
        return len(a) >= 7 or (len(a) >= 5 and _near_keys(a[at], b[at]))
    return (at + 1 < len(a) and a[at] == b[at + 1] and a[at + 1] == b[at]
            and a[at + 2 :] == b[at + 2 :])  # fmt: skip


def _near_keys(x: str, y: str) -> bool:
    """Whether typing ``y`` for ``x`` is a likely slip: both vowels (``"hostal"``), or
    neighbours on a QWERTY keyboard (``"teacjer"``)."""
    if x in _VOWELS and y in _VOWELS:
        return True
    return y in _QWERTY_NEIGHBOURS.get(x, "")


def _unmatched(
    mine: frozenset[str],
    theirs: frozenset[str],
    pairs: Mapping[str, tuple[str, str]],
    their_pairs: Mapping[str, tuple[str, str]],
) -> tuple[set[str], set[str]]:
    """The content words of each side with no counterpart of the other (module docstring, 2)
    but a typing slip, which :func:`disagreement` then looks for."""
    left, right = set(mine - theirs), set(theirs - mine)
    for joined, parts in their_pairs.items():  # my "superbowl", their "super bowl"
        if joined in left:
            left.discard(joined)
            right.difference_update(parts)
    for joined, parts in pairs.items():  # my "super bowl", their "superbowl"
        if joined in right:
            right.discard(joined)
            left.difference_update(parts)
    return left, right


def _excused(word: str, others: set[str], mine: Wording, theirs: Wording) -> bool:
    """Whether my content ``word`` without a counterpart is one slip (:func:`_slip`) from one
    of their content words without a counterpart (``others``), or, as I typed it, from one of
    their tokens I do not have (a function word, an inflected form)."""
    if any(_slip(word, other) for other in others):
        return True
    typed = mine.raw.get(word, word)
    return any(_slip(typed, token) for token in theirs.tokens - mine.tokens)


def disagreement(a: Wording, b: Wording, semantic: bool = False) -> Disagreement | None:
    """Why the wordings ``a`` and ``b`` (:func:`wording`) do not ask the same question, or
    ``None`` when they may merge (module docstring): ``"numbers"``, ``"negation"``,
    ``"words"`` (not read when ``semantic``: a pair only the embedding rule matched),
    ``"question"``, then ``"words"`` for a relation word standing where the other has another
    (:func:`_swapped`; not read when ``semantic`` either), first found in that order.
    Symmetric: ``disagreement(a, b) == disagreement(b, a)``. Cost: set comparisons; a slip
    check per unmatched pair of words.

    >>> disagreement(wording("when did the titanic sink"), wording("where did the titanic sink"))
    'question'
    >>> before, after = (wording(f"can i get a refund {word} the deadline")
    ...                  for word in ("before", "after"))
    >>> disagreement(before, after), disagreement(before, after, semantic=True)
    ('words', None)
    >>> disagreement(wording("who sang the superbowl anthem"),
    ...              wording("who sang the super bowl anthem")) is None
    True
    """
    if a.numbers != b.numbers and not (
        a.numbers <= b.numbers | b.weak and b.numbers <= a.numbers | a.weak
    ):
        return "numbers"
    if a.negated != b.negated:
        return "negation"
    if not semantic and a.words != b.words:
        left, right = _unmatched(a.words, b.words, a.pairs, b.pairs)
        if not all(_excused(x, right, a, b) for x in left) or not all(
            _excused(y, left, b, a) for y in right
        ):
            return "words"
    if a.asks and b.asks and a.asks != b.asks:
        return "question"
    if not semantic and _swapped(a, b):
        return "words"  # "a refund before the deadline", "a refund after the deadline"
    return None


def known_disagreement(
    live: Wording, gold: Wording, less_detail: bool = True
) -> Disagreement | None:
    """Why the live wording ``live`` does not ask the gold question ``gold``, or ``None`` when
    it does: :func:`disagreement` is ``None``, or ``live`` asks ``gold`` with less detail.

    Less detail: a re-asking may leave out a detail the gold question writes (a content word
    or a number: "what time does the college bus leave in the evening" for "... leave the
    campus in the evening"; "when do the end semester exams start" for "... odd-semester
    end-semester exams start in 2026?"), the context (this college, this year) filling it in,
    if it writes nothing in its place: ``live`` writes no number or the same numbers as
    ``gold`` (leaving one of two out changes the one asked: "7 am" for "7:30 am"; a weak
    number word of ``gold``, "do", stands for none here), every content word of ``live`` has a
    counterpart in ``gold`` (as in :func:`disagreement`: an inflection, a typing slip, a
    split word), at most :data:`MAX_LEFT_OUT` of ``gold``'s content words are left out,
    every function word of ``live`` that ``gold`` lacks is one of :data:`COURTESY_WORDS`
    ("pls tell", "sir", "कृपया") or an article, the two agree on negation, and ``live``
    asks with no question word ``gold`` does not. So "... faced with more access to education?" is
    not "... less access ...": "more" stands where "less" was (trial 13, SQuAD 2.0's
    unanswerable twins). Not symmetric, unlike :func:`disagreement`: the gold question may be
    the more detailed, never the live one ("... leave in the evening in 2026" is not "...
    leave the campus in the evening"). When neither holds, the reason is
    :func:`disagreement`'s, which includes a word of :data:`RELATION_WORDS` on each side
    that the other lacks (``"words"``: "... a full refund before the admission deadline" is
    not "... after ..."; no less detail excuses it, a relation word being no courtesy).

    ``less_detail=False`` reads :func:`disagreement` alone: for an
    unanswerable gold row, whose point is often the detail (SQuAD 2.0 writes unanswerable
    questions by changing one: "How much water does the Rhine discharge at the French
    border?" is unanswerable, "... at the border?" need not be). Harvest merges two live
    wordings by :func:`disagreement` alone: neither is the reference there, so neither may
    leave out what the other asks.

    >>> known_disagreement(wording("what time does the bus leave in the evening pls"),
    ...                    wording("what time does the bus leave the campus in the evening"))
    >>> known_disagreement(wording("what time does the bus leave the campus in the evening"),
    ...                    wording("what time does the bus leave in the evening"))
    'words'
    >>> known_disagreement(wording("who faced more access to education"),
    ...                    wording("who faced less access to education"))
    'words'
    """
    why = disagreement(live, gold)
    if why is not None and less_detail and _less_detail(live, gold):
        return None
    return why


def _swapped(live: Wording, gold: Wording) -> bool:
    """Whether a word of one side that the other lacks has its opposite (:data:`OPPOSITES`)
    among the other side's words the first lacks: "a refund before the deadline" is not "a
    refund after the deadline", though their content words agree (:func:`disagreement`,
    module docstring 2); "open till 5 pm" is "open until 5 pm". Symmetric.

    >>> _swapped(wording("refund before the deadline"), wording("refund after the deadline"))
    True
    >>> _swapped(wording("talk to a real person"), wording("talk with a real person"))
    False
    """
    mine = (live.tokens - gold.tokens) & RELATION_WORDS
    if not mine:
        return False
    theirs = (gold.tokens - live.tokens) & RELATION_WORDS
    return any(frozenset((a, b)) in OPPOSITES for a in mine for b in theirs)


#: Words that turn what follows into its opposite without being a negation of
#: :data:`NEGATIONS`: a gold question's one of them is no detail a re-asking may leave out
#: (trial 15: a live "... reaching the top of Spotify's Global Top 50" was matched to the gold
#: "... failing to reach the top ...", whose answers are yes and no; both already "negated" by
#: the song title's "No").
_POLARITY_WORDS = frozenset({"fail", "fails", "failed", "failing", "unable"})


def _less_detail(live: Wording, gold: Wording) -> bool:
    """Whether ``live`` asks ``gold`` leaving out details and adding none
    (:func:`known_disagreement`); a word of :data:`_POLARITY_WORDS` is no detail.

    >>> _less_detail(wording("did the song reach the top"),
    ...              wording("did the song fail to reach the top"))
    False
    >>> _less_detail(wording("what happens if a student failed the final exam"),
    ...              wording("what happens if a student fails the final exam in physics"))
    True
    """
    if live.negated != gold.negated or live.asks - gold.asks:
        return False  # a question word the gold question does not ask with
    if not _POLARITY_WORDS.isdisjoint(gold.tokens) and _POLARITY_WORDS.isdisjoint(live.tokens):
        return False  # "failing to reach" left out is "reaching"; "failed" for "fails" is not
    if live.numbers and live.numbers != gold.numbers:
        return False  # a number left out of several changes the one asked ("7 am", "7:30 am")
    if live.weak - (gold.numbers | gold.weak):
        return False  # "for one semester" is not "for two semesters"
    added = live.tokens - gold.tokens
    if any(
        token in FUNCTION_WORDS and token not in COURTESY_WORDS and token not in _ARTICLES
        for token in added
    ):
        return False
    left, right = _unmatched(live.words, gold.words, live.pairs, gold.pairs)
    if not all(_excused(word, right, live, gold) for word in left):
        return False
    left_out = [word for word in right if not _excused(word, left, gold, live)]
    return len(left_out) <= MAX_LEFT_OUT * len(gold.words)


def may_merge(text: str, other: str, semantic: bool = False) -> bool:
    """Whether two normalised texts a near-duplicate index matched may merge:
    :func:`disagreement` of their :func:`wording` is ``None`` (``semantic``: only the
    embedding rule matched them). The ``rule`` of harvest's
    :class:`~service.harvest.neardup.NearDupIndex`.

    >>> may_merge("who won best picture in 1976", "who won best picture in 1976 oscars")
    False
    >>> may_merge("who won best picture in 1976", "who won the best picture 1976")
    True
    """
    return disagreement(wording(text), wording(other), semantic) is None
