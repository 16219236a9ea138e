"""English stop words: scikit-learn's ``ENGLISH_STOP_WORDS`` (318 words, from the Glasgow
Information Retrieval Group's list; scikit-learn is BSD-3-Clause), copied so that tokenising
text does not import scikit-learn, whose import (with pandas, which it pulls in) was ~0.5 s of
serve's start-up. ``tests/service/text/test_stop_words.py`` checks the copy equals the list of
the installed scikit-learn.

>>> "the" in ENGLISH_STOP_WORDS, "fee" in ENGLISH_STOP_WORDS, len(ENGLISH_STOP_WORDS)
(True, False, 318)

:func:`stop_words` gives the stop words of any language the language detector labels, for
topic labels (``service.topics.model``): English this list, others the stopwords-iso
collection (``stopwordsiso``, MIT).
"""

from __future__ import annotations

import functools

#: The words, lower case, as scikit-learn ships them.
ENGLISH_STOP_WORDS: frozenset[str] = frozenset(
    """
    a about above across after afterwards again against all almost alone along already also
    although always am among amongst amoungst amount an and another any anyhow anyone anything
    anyway anywhere are around as at back be became because become becomes becoming been before
    beforehand behind being below beside besides between beyond bill both bottom but by call
    can cannot cant co con could couldnt cry de describe detail do done down due during each eg
    eight either eleven else elsewhere empty enough etc even ever every everyone everything
    everywhere except few fifteen fifty fill find fire first five for former formerly forty
    found four from front full further get give go had has hasnt have he hence her here
    hereafter hereby herein hereupon hers herself him himself his how however hundred i ie if
    in inc indeed interest into is it its itself keep last latter latterly least less ltd made
    many may me meanwhile might mill mine more moreover most mostly move much must my myself
    name namely neither never nevertheless next nine no nobody none noone nor not nothing now
    nowhere of off often on once one only onto or other others otherwise our ours ourselves out
    over own part per perhaps please put rather re same see seem seemed seeming seems serious
    several she should show side since sincere six sixty so some somehow someone something
    sometime sometimes somewhere still such system take ten than that the their them themselves
    then thence there thereafter thereby therefore therein thereupon these they thick thin
    third this those though three through throughout thru thus to together too top toward
    towards twelve twenty two un under until up upon us very via was we well were what whatever
    when whence whenever where whereafter whereas whereby wherein whereupon wherever whether
    which while whither who whoever whole whom whose why will with within without would yet you
    your yours yourself yourselves
    """.split()
)


#: Languages whose stop words :func:`stop_words` takes from ``stopwordsiso`` (the stopwords-iso
#: collection, MIT): every langdetect language it lists, English left out (its 1,298 words hold
#: topic words such as "world", "year" and "causes"; :data:`ENGLISH_STOP_WORDS` is English's).
#: langdetect's cy, kn, mk, ml, ne, pa, sq, ta, te have no list there: :func:`stop_words`
#: gives them their script's other languages' lists (ne: hi, mr) or none.
_ISO_SKIPPED = frozenset({"en"})

#: The non-Latin scripts several langdetect languages share (a short question is often read
#: as a neighbour: Hindi as Marathi or Nepali), so their lists are pooled.
_SHARED_SCRIPTS: tuple[frozenset[str], ...] = (
    frozenset({"hi", "mr", "ne"}),
    frozenset({"ar", "fa", "ur"}),
    frozenset({"ru", "uk", "bg", "mk"}),
)

#: Romanized Hindi function words (``hi-Latn``): the language detector's Hinglish lexicon
#: (:data:`service.language.hinglish.STRONG_WORDS` and ``WEAK_WORDS``) less its content words
#: (weather, home, music, work, name, road, times of day, week, month), which can name a topic.
_HINGLISH_CONTENT = frozenset(
    """
    mausam mousam baarish barish garmi thand thandi ghar gaana gaane kaam naam rasta samay
    waqt subah subha raat shaam sham dopahar hafte haftey mahine band char teen paanch
    """.split()
)


#: Hindi (Devanagari) question words, which stopwords-iso's Hindi list lacks ("क्या" labelled
#: trial 41's Hindi topic): what, who, which, whom, whose, when, where, how, why, how much.
_HINDI_QUESTION_WORDS = frozenset(
    """
    क्या कौन कौनसा कौनसी कौनसे कौन-सा कौन-सी कौन-से किस किसने किसको किसे किसका किसकी किसके
    किन किनके किनका किनकी कब कहाँ कहां कहा कैसे कैसा कैसी क्यों क्यूँ कितना कितनी कितने
    """.split()
)


#: Content words the stopwords-iso lists hold, kept as label terms (they name a topic: work,
#: employment, time, world, life, year, country, water, state, home, day), as English keeps
#: scikit-learn's list rather than stopwords-iso's (review s41). Taken out of every list of
#: the pool the language is in (``काम``, work, is in the Marathi list, pooled with Hindi).
_ISO_CONTENT: dict[str, frozenset[str]] = {
    "es": frozenset("trabajo empleo tiempo estados lugar general".split()),
    "it": frozenset("mondo vita anno paese stato".split()),
    "ru": frozenset("время мир работа жизнь вода год страна".split()),
    "pt": frozenset("trabalho estado tempo".split()),
    "hi": frozenset("काम घर".split()),
    "de": frozenset("jahr zeit tag".split()),
}


@functools.cache
def stop_words(language: str) -> frozenset[str]:
    """The stop words of ``language`` (a langdetect code, optionally with a script or region:
    ``hi``, ``hi-Latn``, ``de-AT``), lower case, for topic labels: English
    :data:`ENGLISH_STOP_WORDS`; ``hi-Latn`` the romanized Hindi function words; any other the
    stopwords-iso list of the language (``stopwordsiso``) pooled with those of the languages
    sharing its non-Latin script (Devanagari: hi, mr, ne), plus the question words, articles
    and prepositions the language detector lists
    (:func:`service.language.scripts.function_words`); ``und``, ``other`` or an unknown code:
    empty. The content words those lists hold that :data:`_ISO_CONTENT` names (es
    "trabajo", ru "время", de "jahr" ...) are taken out; another content word of a list is
    lost as a label term, never kept as one.

    >>> {"के", "है", "में", "क्या"} <= stop_words("hi"), "भारत" in stop_words("hi")
    (True, False)
    >>> "के" in stop_words("mr"), {"hai", "kya"} <= stop_words("hi-Latn")
    (True, True)
    >>> "mausam" in stop_words("hi-Latn"), "für" in stop_words("de-AT"), stop_words("und")
    (False, True, frozenset())
    >>> "trabajo" in stop_words("es"), "घर" in stop_words("hi"), "काम" in stop_words("mr")
    (False, False, False)
    """
    # here: a tokeniser importing this module needs neither (the lists load a 207 KB file)
    import stopwordsiso

    from service.language.hinglish import STRONG_WORDS, WEAK_WORDS
    from service.language.scripts import function_words

    base, _, script = language.partition("-")
    if base == "en":
        return ENGLISH_STOP_WORDS
    if base == "hi" and script.lower() == "latn":
        return (STRONG_WORDS | WEAK_WORDS) - _HINGLISH_CONTENT
    pooled = next((group for group in _SHARED_SCRIPTS if base in group), frozenset({base}))
    out = set(function_words(base))
    if "hi" in pooled:
        out.update(_HINDI_QUESTION_WORDS)
    for code in pooled:
        if code not in _ISO_SKIPPED and stopwordsiso.has_lang(code):
            out.update(word.lower() for word in stopwordsiso.stopwords(code))
    for code in pooled:
        out -= _ISO_CONTENT.get(code, frozenset())
    return frozenset(out)
