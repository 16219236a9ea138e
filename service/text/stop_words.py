"""English stop words: scikit-learn's ``ENGLISH_STOP_WORDS`` (318 words, from the Glasgow
Information Retrieval Group's list; scikit-learn is BSD-3-Clause), copied so that tokenising
text does not import scikit-learn, whose import (with pandas, which it pulls in) was ~0.5 s of
serve's start-up. ``tests/service/text/test_stop_words.py`` checks the copy equals the list of
the installed scikit-learn.

>>> "the" in ENGLISH_STOP_WORDS, "fee" in ENGLISH_STOP_WORDS, len(ENGLISH_STOP_WORDS)
(True, False, 318)

:func:`stop_words` gives the stop words of any language the language detector labels, for
topic labels (``service.topics.model``): English this list, the non-Latin-script languages
of :data:`_ISO_SCRIPTS` the stopwords-iso collection (``stopwordsiso``, MIT), the others
the language detector's function words.
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


#: The non-Latin-script langdetect languages whose stop words :func:`stop_words` takes from
#: ``stopwordsiso`` (the stopwords-iso collection, MIT), pooled by script because a short
#: question is often read as a neighbour (Hindi as Marathi or Nepali). Only these: trial 41's
#: Hindi cluster was labelled "के, है, में", and each list was read word by word against
#: XQuAD ru/hi questions (review s42). Latin-script languages keep the language detector's
#: function words alone (:func:`service.language.scripts.function_words`): stopwords-iso's
#: de, fr, es lists hold content words (de "menschen", "beispiel"; fr "personnes", "valeur";
#: es "cuenta", "valor") that name topics. Its other non-Latin lists (bn el gu he ja ko th
#: zh) are not vetted and not used; langdetect's kn ml pa ta te have none.
_ISO_SCRIPTS: tuple[frozenset[str], ...] = (
    frozenset({"hi", "mr", "ne"}),  # Devanagari (stopwords-iso has no ne list)
    frozenset({"ar", "fa", "ur"}),  # Arabic script
    frozenset({"ru", "uk", "bg", "mk"}),  # Cyrillic (no mk list)
)

#: Romanized Hindi (``hi-Latn``) function words, vetted one by one: pronouns, postpositions,
#: auxiliaries and the light verb "karna", question words, conjunctions, negation, particles
#: and intensifiers. Not the Hinglish lexicon's content verbs and nouns ("yaad", "bajao",
#: "sunao", "bhejo", "shuru", "din", "mausam", "ghar") nor its spellings of English words
#: ("banana", "use", "main", "band", "do", "hi"), which can name a topic.
_HINGLISH_FUNCTION = frozenset(
    """
    hai hain hei tha thi ho hoga hogi hoge hona hone hota hoti hote hua hui huye huwe raha rahi
    rahe sakta sakti sakte chahiye kar karo kare karen karein karna karne karke kariye kijiye
    kiya kiye
    kya kyaa kia kyu kyun kyon kyunki kaise kaisa kaisi kaisey kesa kese kitna kitni kitne kab
    kahan kaha kahaan kaun kon konsa konsi konse kis kisi kise kisko kiska
    mujhe muje mujhko mujhse mera meri mere mai mei mein hum humein hume humko hamara hamari
    hamare aap aapka aapki aapke aapko apna apni apne tum tumhe tumhara tera teri uska uski
    uske usko unka unki unke unko iska iski iske isko yeh woh ye wo vo us jo jis jise koi kuch
    sab sabhi saare wala wali wale waala
    ka ke ki ko se me par pe tak liye saath sath bina baare bare
    aur ya lekin agar toh to phir fir bhi na nahi nahin nhi jab tab jahan yaha yahan waha wahan
    bahut bohot bhot zyada jyada thoda
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


#: Hindi auxiliaries stopwordsiso's Hindi list lacks (session 43: "जाता" was a label term):
#: the forms of जाना (the passive "किया जाता है", "कहा गया"; future "किया जाएगा"), of होना's
#: future, and of रहना, सकना, चुकना after a verb stem. XQuAD's 1,190 Hindi questions: जाता
#: in 65, each after a participle or a verb stem (किया 25, कहा 16, माना 8, जाना 6 ...); गई
#: in 23, each after a participle (की 14, बनाई 4 ...); गए in 27, 24 of them after a
#: participle or stem and 3 "went" (हार्वर्ड गए): verbs, none a topic's word. Its list has
#: होता, होती, होते, रहा, रहे, सकता, सकते already.
_HINDI_AUXILIARIES = frozenset(
    """
    जाता जाती जाते जाना जाने जाए जाएं जाएँ जाएगा जाएगी जाएंगे जाएँगे गई गए गयी गये
    होगा होगी होंगे होँगे रही रहें रहता रहती रहते सकती चुका चुकी चुके
    """.split()
)


#: Urdu function words, vetted one by one, in place of stopwords-iso's Urdu list, which is
#: garbled (session 43): of its 517 entries at least 214 are written with a legacy font's
#: letter map read as Unicode — ب for ا ("تھب" for تھا), ً/ٌ/ى/ي for ن ("ًہیں" for نہیں), ث
#: for ب ("ثھی" for بھی), ه for م ("هیں" for میں), ض for س ("ضے" for سے), ذ for د, ة for ب
#: — so میں, کا, سے, کو, نے, نہیں, بھی, تھا were missing, and its garbles can be real words
#: of the pooled Arabic-script texts (Arabic "قطن" cotton, garbled from Urdu قسم). Here:
#: postpositions, pronouns and their possessives, the auxiliaries (forms of ہونا, جانا,
#: رہنا, سکنا, چکنا) and the light verb کرنا, question words, conjunctions, negation,
#: particles. Not content words a topic could be named by (کام work, لوگ people, وقت time,
#: سال year, دن day, گھر home). Pooled with Arabic and Persian, a few of them are also
#: content words there, dropped from those labels too: Persian جو (barley), کر (deaf), سی
#: (thirty), Arabic and Persian جن (jinn), and (a review's reading) Persian پر (full, feather),
#: پاس (guard), والی (governor), Arabic اب (father, without hamza) — Urdu's relative pronouns
#: جو, جن are too common in its questions to keep. Left out for that reason: تب (then; Persian
#: fever) and صرف (only; Arabic and Persian spending, exchange), content words in the pooled
#: languages that an Urdu label may show.
_URDU_FUNCTION = frozenset(
    """
    کا کے کی کو سے میں پر تک نے لیے لئے والا والے والی ساتھ بارے بغیر بعد پہلے اندر باہر
    اوپر نیچے پاس طرف ذریعے ذریعہ جیسا جیسے جیسی
    میں ہم تم آپ وہ یہ وہی یہی اس ان اسے انہیں انھیں انہوں انھوں اسی انہی مجھے مجھ ہمیں تمہیں
    میرا میری میرے ہمارا ہماری ہمارے تمہارا تمہاری تمہارے تیرا تیری تیرے اپنا اپنی اپنے
    اسکا اسکی اسکے انکا انکی انکے کوئی کچھ کسی کس کسے کن جو جس جن جسے جنہیں سب تمام ہر خود
    ہے ہیں ہوں ہو تھا تھی تھے تھیں ہوا ہوئی ہوئے ہوگا ہوگی ہوگے ہونا ہونے ہوتا ہوتی ہوتے
    رہا رہی رہے رہیں رہتا رہتی رہتے سکتا سکتی سکتے سکا سکی سکے چکا چکی چکے
    گیا گئی گئے گئیں جاتا جاتی جاتے جا جائے جائیں جانا جانے گا گی گے
    کر کرنا کرنے کرتا کرتی کرتے کیا کیے کئے کریں کرے کرو کرکے چاہیے چاہئے
    سا سی کون کیوں کیسے کیسا کیسی کب کہاں کتنا کتنی کتنے کونسا کونسی کونسے
    اور یا لیکن مگر اگر تو پھر بھی کہ کیونکہ تاکہ جب جبکہ بلکہ اگرچہ چونکہ نیز
    نہیں نہ مت ہی بہت زیادہ بس ابھی اب یہاں وہاں جہاں کہیں ایسا ایسی ایسے ویسا ویسے ایک
    """.split()
)


#: Content words the pooled stopwords-iso lists hold, read word by word (review s42), kept as
#: label terms: they name a topic. Devanagari: work, home, lack, class, a surname,
#: information, decision, effort; Cyrillic: nouns (people, car, city, house, road, money,
#: war, water, world, work, time, year, day, country, Russia ...) and "Russian", "Soviet";
#: Arabic script: year(s), day(s), time, visit, force, morning, evening, May, services,
#: people, place names' "abad", name, way, area, group. Taken out of the whole pool.
_ISO_CONTENT: frozenset[str] = frozenset(
    """
    काम घर कमी वर्ग वरग पाटील माहिती निर्ण्य परयतन
    белый вечер взгляд вода война вопрос глаз голова голос город дверь деньги дом дорога друг
    душа жена женщина жизнь земля имя книга комната конец лицо мать машина место минута мир
    мира москва народ нога ночь окно отец плечо пол путь работа работать ребенок россия рука
    русский свет сила слово случай советский стол сторона страна товарищ улица утро час часть
    человек люди день год года году лет время времени дело дел
    време година години годишен ден дни живот месец новина екип глас смях син юмрук часа
    سنة سنوات عام عاما يوم ايام اليوم الوقت زيارة قوة صباح مساء مايو ايار للامم لوكالة برس
    آباد خدمات مردم روز روزانه روزهاي زمان نام راه بخش جناح امسال امشب
    لوگ لوگوں علاقہ علاقے علاقوں گروپ ضرورت
    """.split()
)


#: The content words among stopwords-iso's two-character Chinese entries, read one by one
#: (s44): "begin", "local" (twice), "result", "compare", "replace", "blink", "the whole
#: body", "all of", "the moment"; the other 2-character entries are pronouns, conjunctions,
#: prepositions, adverbs and interjections ("因此" therefore, "根据" according to, "我们" we).
_ZH_CONTENT = frozenset("开始 本地 当地 结果 对比 替代 眨眼 全体 全部 时候".split())
#: Two-character question and function bigrams stopwords-iso lacks as entries: the halves of
#: 为什么 (why), 是什么 (is what), 是多 (of 是多少, is how many), the particles with 的 (of),
#: and 哪一 / 多大 (which / how).
_ZH_FUNCTION = frozenset(
    "为什 是什 什么 的是 是在 在哪 哪一 多大 哪位 是谁 的一 是哪 一年 是多".split()
)


#: Chinese characters that are nearly always function words alone: the particles 的 (of),
#: 了 (perfective), 吗 and 呢 (question), and the copula 是 (is). Vetted one by one against
#: their common bigrams: 在 (存在 exist, 在线 online), 和 (和平 peace, 共和 republic), 与
#: (参与 participate), 及 (涉及 involve, 普及) and 等 (平等 equality, 等级 grade) are in
#: content words too often to drop every bigram holding them, so they are not listed.
HAN_FUNCTION_CHARS = frozenset("的了是吗呢")
#: The content words among the bigrams holding a :data:`HAN_FUNCTION_CHARS` character:
#: 目的 (purpose), 了解 (understand), 是非 (right and wrong).
_HAN_FUNCTION_CONTENT = frozenset("目的 了解 是非".split())


def han_function_bigram(bigram: str) -> bool:
    """Whether the Han ``bigram`` holds a :data:`HAN_FUNCTION_CHARS` character and is none
    of the content words among such bigrams (its half of a particle: 的价 of "的价格").

    >>> [han_function_bigram(b) for b in ("的价", "格是", "是多", "价格", "目的", "了解")]
    [True, True, True, False, False, False]
    """
    return bigram not in _HAN_FUNCTION_CONTENT and any(c in HAN_FUNCTION_CHARS for c in bigram)


@functools.cache
def han_stop_bigrams() -> frozenset[str]:
    """Chinese function bigrams for topic labels, whose Han terms are character bigrams
    (:func:`service.topics.model._words`): stopwords-iso's two-character ``zh`` entries (the
    stopwords-iso collection, MIT) less the content words among them (:data:`_ZH_CONTENT`),
    with :data:`_ZH_FUNCTION`.

    >>> {"因此", "根据", "我们", "什么", "为什"} <= han_stop_bigrams()
    True
    >>> {"开始", "结果", "议会", "欧洲"} & han_stop_bigrams()
    set()
    """
    import stopwordsiso

    listed = {w for w in stopwordsiso.stopwords("zh") if len(w) == 2}
    return frozenset((listed - _ZH_CONTENT) | _ZH_FUNCTION)


@functools.cache
def stop_words(language: str) -> frozenset[str]:
    """The stop words of ``language`` (a langdetect code, optionally with a script or region:
    ``hi``, ``hi-Latn``, ``de-AT``), lower case, for topic labels:

    * English: :data:`ENGLISH_STOP_WORDS`;
    * ``hi-Latn``: romanized Hindi's function words (:data:`_HINGLISH_FUNCTION`);
    * Hindi, Marathi, Nepali; Arabic, Persian, Urdu; Russian, Ukrainian, Bulgarian,
      Macedonian: the stopwords-iso lists of the language's script group pooled
      (:data:`_ISO_SCRIPTS`), less the content words they hold (:data:`_ISO_CONTENT`), with
      Hindi's question words and auxiliaries for Devanagari, and for Urdu the vetted
      :data:`_URDU_FUNCTION` in place of its garbled stopwords-iso list;
    * any other (the Latin-script languages, ``und``, ``other``, unknown codes): the
      function words the language detector lists
      (:func:`service.language.scripts.function_words`: de es fr it pt nl ro tr vi id),
      empty for the rest.

    >>> {"के", "है", "में", "क्या", "जाता"} <= stop_words("hi"), "भारत" in stop_words("hi")
    (True, False)
    >>> {"کے", "ہے", "میں", "کی", "نہیں"} <= stop_words("ur"), "هیں" in stop_words("ur")
    (True, False)
    >>> "के" in stop_words("mr"), {"hai", "kya"} <= stop_words("hi-Latn")
    (True, True)
    >>> "yaad" in stop_words("hi-Latn"), "für" in stop_words("de"), stop_words("und")
    (False, True, frozenset())
    >>> "menschen" in stop_words("de"), "люди" in stop_words("ru"), "и" in stop_words("uk")
    (False, False, True)
    """
    from service.language.scripts import function_words

    base, _, script = language.partition("-")
    if base == "en":
        return ENGLISH_STOP_WORDS
    if base == "hi" and script.lower() == "latn":
        return _HINGLISH_FUNCTION
    pooled = next((group for group in _ISO_SCRIPTS if base in group), None)
    if pooled is None:  # main's rule exactly: the code as the detector gives it
        return function_words(language)
    # here: a tokeniser importing this module needs no 207 KB file
    import stopwordsiso

    out = set(function_words(base))
    if "hi" in pooled:
        out.update(_HINDI_QUESTION_WORDS | _HINDI_AUXILIARIES)
    if "ur" in pooled:
        out.update(_URDU_FUNCTION)
    for code in pooled - {"ur"}:  # (its list is garbled: see _URDU_FUNCTION)
        if stopwordsiso.has_lang(code):
            out.update(word.lower() for word in stopwordsiso.stopwords(code))
    return frozenset(out - _ISO_CONTENT)
