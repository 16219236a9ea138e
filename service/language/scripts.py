"""Unicode script of a short text, and the letter and word cues of Latin-script languages.

:func:`dominant_script` counts the letters of each script in one pass (``str.translate`` with
a code-point table, then a ``Counter``) and returns the script with the most weight. Questions
in other scripts often quote Latin names ("Что делала компания Tesla Electric Light?",
"DECnet क्या है"), so a non-Latin letter weighs 3 Latin ones. Han, kana and Hangul count as
one "CJK" group (a Han character weighs 4, a kana or Hangul syllable 3), so "如何配置Kafka?"
is Chinese while "What does 東京 mean?" is Latin. Inside the group: any Hangul (at least as much
as kana) means ``ko``, any kana means ``ja``, Han alone ``zh``.

:data:`SCRIPT_LANGUAGES` lists the languages each script can mean (langdetect codes, ``zh``
for Chinese); a script with one language decides it. :func:`latin_cues` scores the letters
that only a few Latin-script languages use (ñ ¿ ¡ → es, ß ä → de, ș ț ă → ro, ı ğ → tr,
Vietnamese ơ ư đ and tone marks → vi, ...) and :func:`function_word_scores` the share of
question words, articles and prepositions of each language (en es de ro tr vi fr it pt nl id).

>>> dominant_script("¿Cuántos puntos?")
'Latn'
>>> dominant_script("Что такое Kafka?"), dominant_script("東京タワーの高さは?")
('Cyrl', 'ja')
>>> dominant_script("1234 !?") is None
True
>>> latin_cues("Wie groß ist München?")
{'de': 3.0, 'tr': 0.5}

Errors: none; any ``str`` (empty, digits only, lone surrogates) is accepted.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Collection, Sequence

__all__ = [
    "SCRIPT_LANGUAGES",
    "dominant_script",
    "function_word_scores",
    "function_words",
    "latin_cues",
    "script_and_letters",
    "script_counts",
]

#: Languages a script can stand for, langdetect codes; one entry decides the language.
SCRIPT_LANGUAGES: dict[str, tuple[str, ...]] = {
    "Latn": (
        "af", "ca", "cs", "cy", "da", "de", "en", "es", "et", "fi", "fr", "hr", "hu", "id",
        "it", "lt", "lv", "nl", "no", "pl", "pt", "ro", "sk", "sl", "so", "sq", "sv", "sw",
        "tl", "tr", "vi",
    ),
    "Cyrl": ("ru", "uk", "bg", "mk"),
    "Arab": ("ar", "fa", "ur"),
    "Deva": ("hi", "mr", "ne"),
    "Grek": ("el",), "Hebr": ("he",), "Thai": ("th",), "Beng": ("bn",), "Guru": ("pa",),
    "Gujr": ("gu",), "Taml": ("ta",), "Telu": ("te",), "Knda": ("kn",), "Mlym": ("ml",),
    "Armn": ("hy",), "Geor": ("ka",), "Sinh": ("si",), "Khmr": ("km",), "Laoo": ("lo",),
    "Mymr": ("my",), "Ethi": ("am",), "ko": ("ko",), "ja": ("ja",), "zh": ("zh",),
}  # fmt: skip

# (script, first code point, last code point); letters only where a block mixes in symbols.
_RANGES: tuple[tuple[str, int, int], ...] = (
    ("Latn", 0x41, 0x5A), ("Latn", 0x61, 0x7A), ("Latn", 0xC0, 0xD6), ("Latn", 0xD8, 0xF6),
    ("Latn", 0xF8, 0x24F), ("Latn", 0x1E00, 0x1EFF), ("Grek", 0x370, 0x3FF),
    ("Grek", 0x1F00, 0x1FFF), ("Cyrl", 0x400, 0x52F), ("Armn", 0x531, 0x587),
    ("Hebr", 0x5D0, 0x5EA), ("Arab", 0x620, 0x64A), ("Arab", 0x66E, 0x6D3),
    ("Arab", 0x6FA, 0x6FF), ("Arab", 0x750, 0x77F), ("Arab", 0xFB50, 0xFDFF),
    ("Arab", 0xFE70, 0xFEFF), ("Deva", 0x900, 0x963), ("Deva", 0x971, 0x97F),
    ("Beng", 0x980, 0x9FF), ("Guru", 0xA00, 0xA7F), ("Gujr", 0xA80, 0xAFF),
    ("Taml", 0xB80, 0xBFF), ("Telu", 0xC00, 0xC7F), ("Knda", 0xC80, 0xCFF),
    ("Mlym", 0xD00, 0xD7F), ("Sinh", 0xD80, 0xDFF), ("Thai", 0xE01, 0xE4E),
    ("Laoo", 0xE80, 0xEFF), ("Mymr", 0x1000, 0x109F), ("Geor", 0x10A0, 0x10FF),
    ("Ethi", 0x1200, 0x137F), ("Khmr", 0x1780, 0x17FF), ("Hang", 0x1100, 0x11FF),
    ("Hang", 0x3130, 0x318F), ("Hang", 0xAC00, 0xD7A3), ("Kana", 0x3041, 0x30FF),
    ("Kana", 0x31F0, 0x31FF), ("Kana", 0xFF66, 0xFF9D), ("Hani", 0x3400, 0x4DBF),
    ("Hani", 0x4E00, 0x9FFF), ("Hani", 0xF900, 0xFAFF), ("Hani", 0x20000, 0x2FA1F),
)  # fmt: skip
_NOT_LETTERS = {0xD7, 0xF7, 0x30FB, 0x30FC}  # × ÷ and the katakana middle dot, long mark

_NAMES = sorted({name for name, _, _ in _RANGES})
#: One private-use character per script, so the translated text never collides with a letter.
_CODE = {name: chr(0xE000 + i) for i, name in enumerate(_NAMES)}
_NAME = {code: name for name, code in _CODE.items()}
_TABLE: dict[int, str] = {
    cp: _CODE[name]
    for name, first, last in _RANGES
    for cp in range(first, last + 1)
    if cp not in _NOT_LETTERS
}
_CJK_WEIGHT = {"Hani": 4, "Kana": 3, "Hang": 3}
_OTHER_WEIGHT = 3  # a non-Latin letter outweighs the Latin names quoted in its question
_ASCII_LETTERS = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
_ASCII_RUNS = re.compile(r"[\x00-\x7f]+")


def script_counts(text: str) -> Counter[str]:
    """Count the letters of each script in ``text``: ``{"Latn": 12, "Hani": 3, ...}``."""
    ascii_part = text.encode("ascii", "ignore")
    letters = len(ascii_part) - len(ascii_part.translate(None, _ASCII_LETTERS))
    counts: Counter[str] = Counter()
    if len(ascii_part) < len(text):  # translate only the non-ASCII characters
        found = Counter(_ASCII_RUNS.sub("", text).translate(_TABLE))
        counts.update({_NAME[code]: n for code, n in found.items() if code in _NAME})
    if letters:
        counts["Latn"] += letters
    return counts


def dominant_script(text: str) -> str | None:
    """Return the script with the most letters (a key of :data:`SCRIPT_LANGUAGES`), or None.

    CJK text comes back as its language (``ko``, ``ja``, ``zh``). Returns None when ``text``
    has no letter of a known script (digits, punctuation, emoji, unknown scripts).
    """
    return script_and_letters(text)[0]


def script_and_letters(text: str) -> tuple[str | None, int]:
    """Return ``(dominant_script(text), number of letters of known scripts)`` in one pass."""
    counts = script_counts(text)
    if not counts:
        return None, 0
    return _dominant(counts), sum(counts.values())


def _dominant(counts: Counter[str]) -> str | None:
    if len(counts) == 1:
        (only,) = counts
        if only not in _CJK_WEIGHT:
            return only
    cjk = sum(counts.get(name, 0) * weight for name, weight in _CJK_WEIGHT.items())
    best, best_count = max(
        (
            (name, n if name == "Latn" else n * _OTHER_WEIGHT)
            for name, n in counts.items()
            if name not in _CJK_WEIGHT
        ),
        key=lambda item: item[1],
        default=(None, 0),
    )
    if cjk > best_count:
        hangul, kana = counts.get("Hang", 0), counts.get("Kana", 0)
        if hangul and hangul >= kana:
            return "ko"
        return "ja" if kana else "zh"
    return best


# Letters that point at few Latin-script languages: letters -> {language: weight}.
_CUES: tuple[tuple[str, dict[str, float]], ...] = (
    ("ñ¿¡", {"es": 2.0}),
    ("áéíóú", {"es": 0.5, "vi": 0.3, "pt": 0.3}),
    ("ß", {"de": 2.0}),
    ("ä", {"de": 1.5, "fi": 1.0, "sv": 1.0}),
    ("öü", {"de": 1.0, "tr": 0.5}),
    ("șță", {"ro": 2.0}),
    ("ţ", {"ro": 1.5}),
    ("âî", {"ro": 1.0, "tr": 0.3, "fr": 0.3}),
    ("ş", {"tr": 1.0, "ro": 1.0}),
    ("ığİ", {"tr": 2.0}),
    ("ç", {"tr": 1.0, "fr": 0.5, "pt": 0.5, "ca": 0.5}),
    ("ơưđĐ", {"vi": 3.0}),
    ("ạảấầẩẫậắằẳẵặẹẻẽếềểễệỉịọỏốồổỗộớờởỡợụủứừửữựỳỵỷỹ", {"vi": 3.0}),
    ("ãõ", {"pt": 1.5, "vi": 1.0}),
    ("èàù", {"fr": 0.5, "it": 0.5, "vi": 0.5}),
    ("ą ę ł ń ś ź ż".replace(" ", ""), {"pl": 2.0}),
    ("ěřůč", {"cs": 1.5}),
    ("ő ű".replace(" ", ""), {"hu": 2.0}),
    ("å", {"sv": 1.0, "da": 1.0, "no": 1.0}),
    ("øæ", {"da": 1.0, "no": 1.0}),
)
#: An apostrophe between a name (3+ letters, or a number) and a Turkish case ending.
_TURKISH_SUFFIX = re.compile(
    r"(?:\w{3,}|\d)['’](?:n?[ıiuü]n|[ıiuü]|y?[ae]|[dt][ae]n?|l[ae]r\w*|s[ıiuü])\b"
)
_CUE_OF: dict[str, dict[str, float]] = {ch: w for chars, w in _CUES for ch in chars}
_CUE_LETTERS = frozenset(_CUE_OF)
#: The cue letters as a set, public for :func:`cue_word_share`.
CUE_LETTERS: frozenset[str] = _CUE_LETTERS


def latin_cues(text: str) -> dict[str, float]:
    """Score the Latin-script languages that ``text``'s special letters point at.

    Also scores ``tr`` 2 when a name carries a Turkish case ending after an apostrophe.

    Each distinct cue letter adds its weights once (``{"de": 2.0}`` for ß), so a long text does
    not outweigh a short one by repetition. Returns ``{}`` for plain ASCII text.
    """
    scores: dict[str, float] = {}
    if ("'" in text or "’" in text) and _TURKISH_SUFFIX.search(
        text
    ):  # Luther'in, Broncos'un, 1520'de: tr case endings
        scores["tr"] = 2.0
    if text.isascii():
        return scores
    for ch in _CUE_LETTERS.intersection(text.lower()):
        for lang, weight in _CUE_OF[ch].items():
            scores[lang] = scores.get(lang, 0.0) + weight
    return scores


# Function words (question words, articles, prepositions, auxiliaries) of Latin-script
# languages; a word listed for several languages splits its point among those in the pool.
_FUNCTION_WORDS: dict[str, str] = {
    "en": "what who whom whose which when where why how many much is are was were did does do"
    " the of a an in on to for by with from and or that this these those has have had been"
    " can could would will should not it its there their they he she his her",
    "es": "qué que cuál cuáles quién quiénes cómo dónde cuándo cuánto cuántos cuánta cuántas"
    " por para el la los las un una unos unas de del en con es son fue fueron era eran se su"
    " sus al y o lo le les hay tiene tienen ha han",
    "de": "was wer wen wem wessen welche welcher welches welchen wann wo woher wohin warum wie"
    " wieviel viele der die das den dem des ein eine einen einem einer ist sind war waren"
    " wurde wurden hat haben hatte hatten von vom zu zum zur mit im in auf für und oder"
    " nicht sich als auch bei nach aus"
    # German-only ones (no other list has them, nor English): without them a German question
    # whose function words are shared (Was, In, Wie; en/nl) had no German lead
    " welchem wieso weshalb wofür woran worauf wodurch womit worin wozu wird werden"
    " kann können konnte konnten soll sollte sollten muss musste gibt gab noch dass über"
    " durch gegen zwischen ohne unter vor beim während diese dieser dieses diesem diesen"
    " sie seine seiner seinen seinem ihr ihre ihrer ihren ihrem",
    "ro": "ce care cine cui cum când unde cât câte câți de la în pe cu din pentru și sau este"
    " sunt era au a fost fi un o unei unui al ale ai lui se mai că prin după despre",
    "tr": "ne neden nasıl nerede nereye hangi hangisi kim kimin kaç kaçıncı zaman mı mi mu mü"
    " mıdır midir bir ve ile için bu şu o da de olan oldu olarak olduğu nedir kimdir en gibi",
    "vi": "gì nào ai đâu sao bao nhiêu khi là của có được những các không người trong cho với"
    " và một đã đến từ này đó thì năm",
    "fr": "que qu quel quelle quels quelles qui quoi comment où quand pourquoi combien le la"
    " les un une des du de est sont était ont a été dans pour avec sur et ou pas ce cette",
    "it": "che chi cosa quale quali come dove quando perché quanto quanti quante il lo la gli"
    " le un una di del della dei in con per su è sono era erano ha hanno stato",
    "pt": "que qual quais quem como onde quando porque quanto quantos quantas o a os as um uma"
    " de do da dos das em no na com para por é são foi foram tem",
    "nl": "wat wie welke wanneer waar waarom hoe hoeveel de het een van in op met voor is zijn"
    " was waren heeft hebben niet en of",
    "id": "apa siapa mana kapan dimana mengapa kenapa bagaimana berapa yang di ke dari dan"
    " untuk dengan ini itu adalah tidak ada",
}
_FUNCTION_SETS: dict[str, frozenset[str]] = {
    lang: frozenset(words.split()) for lang, words in _FUNCTION_WORDS.items()
}


def function_words(language: str) -> frozenset[str]:
    """The function words (question words, articles, prepositions, auxiliaries) listed for
    ``language`` (en es de ro tr vi fr it pt nl id), lower case; empty for any other.

    >>> sorted(function_words("de") & {"für", "ein", "stadt"}), function_words("hi")
    (['ein', 'für'], frozenset())
    """
    return _FUNCTION_SETS.get(language, frozenset())


_WORD_LANGS: dict[str, tuple[str, ...]] = {}
for _lang, _words in _FUNCTION_WORDS.items():
    for _word in set(_words.split()):
        _WORD_LANGS[_word] = (*_WORD_LANGS.get(_word, ()), _lang)


def function_word_scores(words: Sequence[str], pool: Collection[str]) -> dict[str, float]:
    """Share of ``words`` (lower-case) that are function words of each language in ``pool``.

    A word of k pool languages gives each 1/k. Returns ``{lang: share in [0, 1]}``, only for
    languages with a hit (``{}`` for no words).

    >>> function_word_scores(["how", "many", "points"], ["en", "es", "de"])
    {'en': 0.6666666666666666}
    """
    scores: dict[str, float] = {}
    for word in [word for word in words if word in _WORD_LANGS]:
        langs = [lang for lang in _WORD_LANGS[word] if lang in pool]
        for lang in langs:
            scores[lang] = scores.get(lang, 0.0) + 1.0 / len(langs)
    return {lang: hits / len(words) for lang, hits in scores.items()}
