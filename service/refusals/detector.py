"""Refusal detection over answer text: "does this reply decline to answer?".

Three sources of truth, in this order of precedence:

1. the producer's explicit flag (``answer.refused`` in an event, ``refused`` in an answers
   file) — always wins;
2. an optional :class:`RefusalModel` (TF-IDF + logistic regression) trained on the user's own
   labelled replies — when given, it decides (``combine="model"``, the default), or it is
   OR-ed with the patterns (``combine="any"``: more recall, less precision);
3. the deterministic multilingual patterns below, matched anywhere in the NFKC-casefolded
   text: English; Hindi in Devanagari and romanized (Hinglish); Spanish; and the other XQuAD
   languages (ar, de, el, ro, ru, th, tr, vi, zh) plus French, each with its "I don't know"
   and first-person "I could not find" forms ("I'm sorry, I couldn't find that", "मुझे नहीं
   पता", "我没有找到"; a bare English "I couldn't find …" only when nothing was found: "I
   couldn't find anything about this", not "I couldn't find the exact date, but …"),
   "outside what I can help with", and in English a reply naming its own sources as lacking
   the answer ("not covered by our material", "the provided documents do not mention",
   "outside the scope of the documents"; not "not covered by the policy"), and English scope
   refusals (:data:`SCOPE_REFUSALS`: "I can only answer questions about the news", "not
   covered by the news articles I have"). ``extra_patterns`` adds more.

Why the model decides when present: the user's examples encode their own system's phrasing and
its false friends ("No late fee is charged" is an answer), which generic patterns can't know.

Measured on the real replies of 11 LLMs in NoMIRACL (``tests/service/test_refusals.py``; label
= NoMIRACL's own reading of each reply as "I don't know" / "Yes, answer is present", replies it
calls invalid left out): patterns, English questions (4,727 replies, 1,076 refusals)
precision 0.994 / recall 1.000; Hindi questions (4,464 replies, 1,261 refusals; the replies
are mostly English) 1.000 / 0.997 (0.984 / 1.000 and 0.999 / 0.997 before the answer items
of the thirty-seventh session: a per-context listing that finds the answer in one context,
:data:`DEFAULT_ANSWER_ITEMS`, is an answer). A :class:`RefusalModel` fitted on the English-question
replies scores 0.997 / 0.998 on the Hindi-question ones. Recall is near 1 partly by
construction: the label keys on "I don't know", which the patterns cover. The
source-naming forms changed none of these figures: the 68 NoMIRACL replies they match (67
labelled refusals) were all matched already, so NoMIRACL does not measure them on their own;
they match none of 5,461 sentences of XQuAD's, SQuAD's and MultiHop-RAG's English passages.
The German first-person forms with a filler word ("Das weiß ich leider nicht", "dazu finde
ich nichts in unseren Unterlagen") changed none of the NoMIRACL figures either, and match none
of the 3,685 distinct sentences, questions and answers of XQuAD's German passages.
Trial 23 (a German help desk's "Leider konnte ich dazu nichts in unserer Dokumentation
finden." counted as an answer: its German refusal rate read 6.7 % for a true 13.7 %) added
the German first person with nothing found in either word order ("konnte ich dazu nichts …
finden", "habe ich leider nichts gefunden"), "habe ich keine Antwort", "kann ich nichts
sagen", the documentation named as lacking the answer in German, Spanish and French ("steht
nicht in unserer Dokumentation", "no aparece en nuestra documentación", "ne figure pas dans
notre documentation") and a line that is only "Keine Antwort gefunden" / "Aucune réponse
trouvée". Measured (``benchmarks.bench_refusal_patterns``): no NoMIRACL figure moved; they
flag none of XQuAD's German (3,685) and Spanish (3,522) sentences, questions and answers
(nor any other XQuAD language's: ru 1 and th 1 flagged before and after); on the trial's
log, against its ground truth, 655 refusals counted of 655 (557 before), German 13.5 % by
the detected language (6.7 % before; 13.7 % by the true one).
Trial 24 (an assistant's off-topic replies "Sorry, I can only answer questions about the
news." and "That is not covered by the news articles I have." counted as answers: 857
refusals counted of 993) added :data:`SCOPE_REFUSALS`. Measured
(``benchmarks.bench_refusal_patterns``): no NoMIRACL figure moved; of 91,596 texts of the
shared data that are no refusal (NQ-open, SQuAD 2.0, MultiHop-RAG, every XQuAD language,
BANKING77, CLINC150) the patterns flag 249 before and after (none newly); on the trial's log,
993 refusals counted of 993, and against its flag 528 of 528 (375 before).
Precision and recall on real replies exist for English only (NoMIRACL's replies, to Hindi
questions too, are mostly English): the shared data hold no German, Spanish or French
assistant replies, so :data:`_PATTERNS_CAVEAT` says "not measured" for every other language.

A reply with no answer in it is counted as a refusal: an empty or blank text (NoMIRACL: 33
aya-101 replies ``""``), a generation failure ("Unable to generate response.": 26
gpt-*-azure replies), a reply that is only the failure message of the serving stack
(:data:`GENERATION_FAILURE`: "Error: upstream timeout", "Internal server error", "Request
failed with status code 500", "502 Bad Gateway", "Rate limit exceeded"; the 38 such
messages of ``benchmarks.bench_refusal_patterns``, none of ~48,000 answers, passages and
questions of NQ-open, SQuAD 2.0, MultiHop-RAG, XQuAD, BANKING77 and CLINC150, and no NoMIRACL
figure moved) and an echo of the prompt's options with none chosen. There are two
verdicts, refused or answered, and the asker got no answer from any of these (a wave of
failures then shows as a rise of the refusal rate, where an operator looks; the reports'
method sentence says so whenever the patterns decided). An answer
object with neither text nor ``refused`` is no answer at all: not counted
(:func:`answer_text`). A system that wants failures apart sets ``answer.refused``.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

# the stdlib's own regex parser (3.11+); typeshed declares no private modules of ``re``
from re import _constants as sre_constants  # type: ignore[attr-defined]
from re import _parser as sre_parse  # type: ignore[attr-defined]
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from service.events import QueryLogEvent

#: The phrases of a serving stack's failure message (NFKC-casefolded), one of which a reply
#: must consist of to be :data:`GENERATION_FAILURE` (see there).
_FAILURE_PHRASES = (
    r"(?:an? )?(?:unexpected |unknown |internal |fatal )?(?:server |system |application |api "
    r"|service |network |connection |upstream |gateway |proxy )?error(?: (?:has )?occurr?ed)?",
    r"(?:the )?(?:request|call|generation|completion|query|connection) (?:has )?(?:failed"
    r"|timed out|was aborted|was cancell?ed|was reset|was refused)",
    r"(?:(?:upstream|gateway|connection|request|read|server|network|proxy) ){0,2}time[ -]?out"
    r"|timed out",
    r"(?:the )?(?:service|server|model|api|system) (?:is )?(?:currently |temporarily )?"
    r"(?:unavailable|overloaded|busy|down)(?: or not ready yet)?",
    r"(?:the )?server had an error(?: while processing your request)?",
    r"bad gateway|bad request|no healthy upstream|upstream connect error[^\n]{0,200}",
    r"something went wrong|(?:network|connection|upstream) (?:failure|failed|reset|refused)",
    r"(?:failed|unable) to (?:generate|get|fetch|retrieve|produce|complete)(?: (?:a|an|the))? "
    r"(?:response|answer|reply|completion|result)",
    r"no (?:response|reply|output|completion)(?: (?:was )?(?:received|generated|returned))?",
    r"rate limit(?:ed| exceeded| reached)?(?: for [^\n]{0,200})?|too many requests"
    r"|(?:quota|capacity) exceeded",
)
#: A reply that is only a failure message (``answer.text`` filled with the error a request
#: got): an optional code or label first (``Error:``, ``Error 503:``, ``HTTP 500``, ``502``),
#: then one or more :data:`_FAILURE_PHRASES` (joined by punctuation, ``with``, ``due to``),
#: then optionally ``please try again (later)`` / ``sorry about that``; anchored to the whole
#: text, so a sentence that mentions an error (an answer about one) is not matched.
GENERATION_FAILURE = (
    r"^[^\w\n]*(?:(?:(?:error|exception|failure|http(?: error)?|status(?: code)?)(?: [45]\d\d)?"
    r"|[45]\d\d)[^\w\n]+)?"
    rf"(?:{'|'.join(_FAILURE_PHRASES)})"
    r"(?:(?:[^\w\n]+|[^\w\n]*\b(?:with|due to|because of|from)\b[^\w\n]*)"
    r"(?:(?:status )?(?:code )?[45]\d\d\b|" + "|".join(_FAILURE_PHRASES) + r"))*"
    r"(?:[^\w\n]+(?:please try again(?: later)?|try again later|sorry about that))*"
    r"[^\w\n]*$"
)

#: English scope refusals (trial 24: an off-topic question answered "Sorry, I can only answer
#: questions about the news." or "That is not covered by the news articles I have.", both
#: counted as answers): the first person limited to a kind of question ("I can only help with
#: questions about …", "I'm only able to answer queries on …"; not "I can only answer for
#: myself", "we can only answer questions about it in court": no question named, or no first
#: person singular), and the reply's own sources, in the first person, named as lacking the
#: answer ("not covered by the documents I have"; not "not covered by the articles of the
#: treaty", "not mentioned in the reports": no "I have"). Part of :data:`DEFAULT_PATTERNS`;
#: named so ``benchmarks.bench_refusal_patterns`` measures what they add.
SCOPE_REFUSALS: tuple[str, ...] = (
    r"\bi(?: can|(?: am|'m|m) able to)? only (?:answer|help(?: you)? with|respond to"
    r"|assist(?: you)? with|take|handle|discuss) (?:[\w-]+ ){0,3}?(?:questions?|queries"
    r"|topics?|inquiries|requests)\b",
    r"\bi(?: am|'m|m) only able to (?:answer|help(?: you)? with|respond to|assist(?: you)? with"
    r"|discuss) (?:[\w-]+ ){0,3}?(?:questions?|queries|topics?|inquiries|requests)\b",
    r"(?:\bnot|n't) (?:covered|addressed|discussed|included|mentioned|found|reported) (?:by|in) "
    r"(?:the |my |any of the )?(?:[\w-]+ ){0,2}?(?:articles?|documents?|sources?|materials?"
    r"|texts?|passages?|documentation|stories|reports|news|data) (?:that )?(?:i|we) (?:have"
    r"|had|was given|were given|can access|have access to|can see)\b",
)

#: Default refusal patterns (regular expressions over NFKC-casefolded text).
DEFAULT_PATTERNS: tuple[str, ...] = (
    # English
    # not "I don't know why anyone doubts it: ..." nor "I can't say for sure, but ...": an
    # answer follows (trial 12); "I'm unable to help", "I cannot determine" are refusals
    r"\bi (?:do not|don't|dont) (?:have|find|know(?! why\b))\b",
    r"\bi(?: am|'m|m)? (?:cannot|can't|cant|unable to|not able to) (?:answer|help|find|provide"
    r"|determine|say(?! for (?:sure|certain)\b))",
    r"\b(?:no|not enough|insufficient) (?:relevant )?(?:information|context|data)\b",
    r"\bnot (?:mentioned|provided|specified|stated|available|covered|present|found) in the "
    r"(?:given |provided )?(?:context|passages?|documents?|sources?|text)",
    r"\b(?:the )?(?:context|passages?|documents?) (?:does|do) not (?:contain|mention|provide|say)",
    # the reply's source named as what lacks the answer: "that is not covered by our material",
    # "the provided documents do not mention it", "outside the scope of the documents" (not
    # "not covered by the policy", "not covered in any newspapers", "beyond the scope of
    # this article", "outside the scope of article 56": answers)
    r"(?:\bnot|n't) (?:covered|addressed|discussed|included|mentioned) (?:by|in) (?:the |our |my "
    r"|these |any of the )(?:given |provided |available |retrieved )?(?:materials?|documents?"
    r"|documentation|sources?|context|passages?|texts?|knowledge base)\b",
    r"\b(?:the |these |our |my )(?:given |provided |available |retrieved )?(?:contexts?"
    r"|passages?|documents?|documentation|sources?|materials?|texts?)(?: (?:given|provided))? "
    r"(?:does|do) ?(?:not|n't) (?:contain|mention|cover|include|address|discuss|say)\b",
    r"\b(?:outside|beyond) (?:of )?the scope of (?:the |our |my |these )?(?:given |provided "
    r"|available )?(?:materials?|documents?|documentation|sources?|context|passages?"
    r"|knowledge base)\b",
    r"\bnone of the (?:given |provided )?(?:contexts?|passages?|documents?|sources?) "
    r"(?:\w+ )?(?:answers?|contains?|mentions?|provides?)",
    r"\b(?:the )?answer is not (?:present|available|known|given)\b",
    r"\bi'?m (?:sorry|afraid)\b.*\b(?:not|no|unable|cannot|can't)\b",
    # "Unable to generate response." (NoMIRACL's gpt-*-azure replies when no reply came):
    # no answer reached the user, counted with the refusals as an empty reply is
    r"\bunable to (?:answer|determine|find|generate (?:a |an )?(?:response|answer|reply))\b",
    # a reply that is only a failure message of the serving stack (reviewers, s38): "Error:
    # upstream timeout", "Internal server error", "Request failed with status code 500", "502
    # Bad Gateway", "An error occurred. Please try again later.", "Rate limit exceeded". The
    # whole reply must be such phrases (an optional "Error 503:" / "HTTP 500" first, "please
    # try again later" last): "Error 404 means the page was not found", a bare "500" or "The
    # request failed because the card had expired" are answers, not failures.
    GENERATION_FAILURE,
    # a line that is only "not found" (trial 21: "Not found.", "नहीं मिला"; not "the body
    # was not found in the river", "उसे पुरस्कार नहीं मिला": answers)
    r"(?:^|\n)[^\S\n]*(?:(?:the )?answer )?not found[^\w\n]*(?=\n|$)",
    r"\bno answer\b",
    r"\bsorry\b\W+i (?:could not|couldn't|couldnt|was unable to|was not able to|wasn't able to) "
    r"(?:find|locate|answer|determine)\b",
    # a bare first-person "I couldn't find" with nothing found: "I couldn't find anything about
    # this in the documents" (not "I couldn't find the exact date, but it is 1990")
    r"\bi (?:could not|couldn't|couldnt|was unable to|was not able to|wasn't able to) find "
    r"(?:anything|any (?:relevant )?(?:information|details|documents?|sources?|answer)|an "
    r"answer|information (?:on|about)|(?:that|this) (?:in|anywhere))\b",
    r"\b(?:outside|beyond) (?:of )?(?:what i can (?:help|answer)|my (?:scope|knowledge))\b",
    *SCOPE_REFUSALS,
    # Hindi, Devanagari
    r"जानकारी (?:नहीं|उपलब्ध नहीं)",
    r"(?:पता|मालूम) नहीं",
    r"मुझे(?: \S+){0,4} नहीं (?:पता|मालूम)|मैं(?: \S+){0,3} नहीं जानत(?:ा|ी)",
    r"(?:उत्तर|जवाब)(?: \S+){0,2} (?:नहीं|देने में असमर्थ)",
    r"क्षमा करें|माफ़ कीजिए|माफ कीजिए",
    r"(?:^|\n)[^\S\n]*(?:(?:उत्तर|जवाब) )?नहीं मिल(?:ा|े|ी)[^\w\n]*(?=\n|$)",
    # Hindi, romanized
    r"\bjaa?nkari nahi?n?\b",
    r"\bpata nahi?n?\b|\bmaa?lu?m nahi?n?\b",
    r"\bmujhe(?: \w+){0,4} nahi?n? (?:pata|maa?lu?m)\b",
    r"\b(?:jawab|uttar) nahi?n?\b|\bmaaf (?:kijiye|karein|karen|kijie)\b",
    # Spanish
    r"\bno (?:tengo|dispongo de|hay) (?:suficiente )?informaci[oó]n\b",
    r"\bno (?:puedo|es posible) (?:responder|contestar|ayudar)",
    r"\bno (?:lo )?sé\b|\bno lo se\b",
    r"\bno se (?:menciona|especifica|indica)\b",
    r"\blo siento\b",
    r"\bno (?:pude|he podido|puedo) encontrar\b|\bno (?:encontr[ée]|he encontrado)\b",
    # the documentation named as lacking the answer, and "no data" in the first person
    # (trial 23: "Esa información no aparece en nuestra documentación", "La documentación no
    # menciona nada al respecto"; a bare "los documentos no mencionan" — historical
    # documents in a passage — needs "proporcionados"/"disponibles"/"facilitados")
    r"\bno (?:dispongo de|tengo|tenemos) (?:la |una |suficiente |suficientes )?(?:datos"
    r"|informaci[oó]n|respuesta)\b",
    r"\bno se (?:encontr[oó]|ha encontrado|han encontrado|pudo encontrar) (?:ninguna |ning[uú]n )?"
    r"(?:informaci[oó]n|respuesta|resultados?|datos)\b",
    r"\bno (?:aparece|figura|se encuentra|est[aá]|se menciona) en (?:la |nuestra |mi |los "
    r"|nuestros )(?:documentaci[oó]n|documentos|fuentes|contexto|base de conocimientos?)\b",
    r"\b(?:la |nuestra |mi )documentaci[oó]n no (?:menciona|contiene|incluye|dice|especifica"
    r"|indica)\b|\bel contexto(?: proporcionado)? no (?:menciona|contiene|incluye|dice"
    r"|especifica|indica)\b|\blos (?:documentos|textos|contextos|pasajes) (?:proporcionados"
    r"|disponibles|facilitados) no (?:mencionan|contienen|incluyen|dicen|especifican|indican)\b",
    # French
    r"\bje ne (?:le )?sais pas\b|\bje ne peux pas r[ée]pondre\b",
    r"\b(?:pas|aucune?) (?:d'|de |assez d')?informations?\b",
    r"\bn'est pas (?:mentionn[ée]|indiqu[ée]|pr[ée]cis[ée])|\bd[ée]sol[ée]\b",
    r"\bje n'ai pas (?:pu )?trouv[ée]|\bje ne (?:trouve|peux pas trouver)\b",
    # the documentation named as lacking the answer, "nothing found" (trial 23's review:
    # "Cette information ne figure pas dans notre documentation", "Je n'ai rien trouvé")
    r"\bne (?:figure|appara[iî]t|se trouve) pas dans (?:la |notre |ma |les |nos )(?:documentation"
    r"|documents?|sources?|contexte|base de connaissances)\b",
    r"\bles (?:documents|textes|passages) (?:fournis|disponibles) ne (?:mentionnent|contiennent"
    r"|indiquent|pr[ée]cisent)\b|\ble contexte(?: fourni)? ne (?:mentionne|contient|indique"
    r"|pr[ée]cise)\b|\b(?:la |notre )documentation ne (?:mentionne|contient|indique|pr[ée]cise)\b",
    r"\bje n'ai (?:rien|aucune? (?:information|r[ée]ponse|r[ée]sultat)s?) trouv[ée]",
    r"(?:^|\n)[^\S\n]*aucune? (?:r[ée]ponse|information|r[ée]sultat)s? trouv[ée]e?s?"
    r"[^\w\n]*(?=\n|$)",
    # German (casefold: ß → ss)
    r"\bich weiss (?:es |das )?nicht\b|\bkeine (?:ausreichenden |genauen )?informationen\b",
    r"\b(?:kann|können) (?:ich |wir )?(?:die|diese|ihre) frage nicht beantworten\b",
    r"\bnicht (?:im|in den) (?:kontext|text|dokumenten?|quellen) (?:erwähnt|enthalten)",
    r"\bdas weiss ich nicht\b|\bich (?:konnte|kann) (?:\w+ ){0,4}nicht finden\b",
    r"\bich (?:konnte|habe) (?:dazu |hierzu )?keine (?:\w+ ){0,2}(?:finden|gefunden)\b",
    # first-person forms with a filler word ("leider", "auch", "dazu"): "Das weiß ich leider
    # nicht", "Tut mir leid, dazu finde ich nichts in unseren Unterlagen", "Das kann ich
    # leider nicht beantworten" (an apology only with a negation after it, as in English:
    # not "Tut mir leid, dass Sie warten mussten: die Gebühr beträgt 300 Euro")
    r"\b(?:ich weiss|weiss ich) (?:\w+ ){0,3}nicht\b",
    r"\btut mir (?:\w+ )?leid\b.*\b(?:nicht|nichts|keine?n?)\b",
    r"\b(?:ich finde|finde ich|ich fand|fand ich) (?:\w+ ){0,3}(?:nichts|keine)\b",
    r"\b(?:ich kann|kann ich) (?:\w+ ){0,4}nicht (?:beantworten|sagen|helfen)\b",
    r"\bnicht in (?:unseren|meinen|den (?:vorliegenden|bereitgestellten)) (?:unterlagen"
    r"|dokumenten|quellen)\b",
    # trial 23 (German refusals counted as answers): the first person with nothing found in
    # German word order, a filler anywhere ("Leider konnte ich dazu nichts in unserer
    # Dokumentation finden", "Dazu habe ich leider nichts gefunden", "Ich habe dazu keine
    # Antwort gefunden"; not "Die Expedition fand nichts", "Es wurden keine Überlebenden
    # gefunden": no first person), "darauf habe ich keine Antwort", "dazu kann ich nichts
    # sagen"
    r"\b(?:ich (?:konnte|kann|habe)|(?:konnte|kann|habe) ich) (?:\w+ ){0,6}(?:nichts|keine "
    r"(?:\w+ ){0,2}(?:antwort|informationen?|angaben|hinweise|ergebnisse|daten)) (?:\w+ ){0,6}"
    r"(?:finden|gefunden)\b",
    r"\b(?:ich habe|habe ich) (?:\w+ ){0,3}keine (?:passende |genaue )?antwort\b",
    r"\b(?:ich kann|kann ich) (?:\w+ ){0,4}nichts (?:\w+ )?sagen\b",
    # the documentation named as lacking it ("Das steht nicht in unserer Dokumentation",
    # "Diese Information ist in unserer Dokumentation nicht enthalten", "Die Dokumente
    # enthalten dazu keine Angaben"; sources a passage cites, "in den Quellen wird er nicht
    # erwähnt", need "vorliegenden"/"bereitgestellten")
    r"\bnicht in (?:unserer|meiner|der (?:vorliegenden|bereitgestellten)) (?:dokumentation"
    r"|wissensdatenbank)\b",
    r"\bin (?:unserer (?:dokumentation|wissensdatenbank)|(?:unseren|meinen|den) (?:unterlagen"
    r"|dokumenten)|den (?:vorliegenden|bereitgestellten) (?:dokumenten|unterlagen|quellen"
    r"|texten|informationen)|dem (?:gegebenen |bereitgestellten )?kontext) (?:\w+ ){0,2}"
    r"(?:nicht (?:enthalten|erwähnt|vorhanden|angegeben|zu finden)|keine (?:angaben"
    r"|informationen|antwort|hinweise))\b",
    r"\b(?:(?:die|unsere|meine) dokumentation|(?:die|unsere) (?:dokumente|unterlagen)|die "
    r"(?:vorliegenden|bereitgestellten) (?:dokumente|unterlagen|quellen|informationen|texte)"
    r"|der (?:gegebene |bereitgestellte )?kontext) (?:enthält|enthalten|erwähnt|erwähnen"
    r"|nennt|nennen|beantwortet|beantworten) (?:\w+ ){0,2}(?:keine|nichts|nicht)\b",
    # a line that is only "no answer found" ("Keine Antwort gefunden.", "Nichts gefunden.")
    r"(?:^|\n)[^\S\n]*(?:leider )?(?:keine (?:antwort|informationen|ergebnisse|treffer"
    r"|angaben)|nichts) gefunden[^\w\n]*(?=\n|$)",
    # Russian
    r"\bя не знаю\b|\bне могу ответить\b|\bнет (?:информации|данных|ответа)\b",
    r"\bнедостаточно (?:информации|данных)\b|\bне (?:упоминается|указано|указан)\b|извините",
    r"\bне знаю\b|\bя не (?:могу|смог|смогла) найти\b|\bмне не удалось найти\b|\bя не наш[её]л",
    # Arabic
    r"لا (?:أعرف|اعرف|أعلم|اعلم|أدري|ادري)|لا (?:أستطيع|استطيع|يمكنني) (?:الإجابة|الاجابة)",
    r"لا (?:توجد|يوجد) (?:معلومات|إجابة|اجابة)|(?:عذرا|عذراً|آسف)",
    r"لم (?:أتمكن|اتمكن|أستطع|استطع) من (?:العثور|الإجابة|الاجابة)|لم (?:أجد|اجد) ",
    # Chinese (no word boundaries)
    r"我不知道|不清楚|无法(?:回答|确定|找到)|無法(?:回答|確定)|没有(?:相关|足够)?(?:的)?(?:信息|资料|答案)",
    r"沒有(?:相關)?(?:資訊|資料|答案)|(?:未|没有)(?:提及|提到)|抱歉",
    r"我(?:没有|没|未能|无法|沒有|無法)找到|我找不到",
    # Greek (casefold: final ς → σ)
    r"\bδεν (?:γνωρίζω|ξέρω)\b|\bδεν μπορώ να απαντήσω\b|\bδεν υπάρχουν πληροφορ",
    r"\bδεν (?:μπόρεσα να βρω|μπορώ να βρω|βρήκα)\b",
    # Romanian (ș and ş spellings)
    r"\bnu (?:[sșş]tiu|pot (?:s[aă] )?r[aă]spunde)\b|\bnu (?:exist[aă]|am) informa[țţt]ii\b",
    r"\bnu am (?:putut )?g[aă]s[iî]t?\b",
    # Turkish
    r"\bbilmiyorum\b|\bcevap veremiyorum\b|\byan[ıi]t veremiyorum\b|\bbilgi(?:m)? yok\b",
    r"\bbulamad[ıi]m\b|\bbilgi bulunamad[ıi]\b",
    # Vietnamese
    r"\btôi không biết\b|\bkhông có thông tin\b|\bkhông thể trả lời\b",
    r"\btôi không (?:tìm thấy|thể tìm)\b|\bkhông tìm thấy thông tin\b",
    # Thai (no word boundaries)
    r"ไม่ทราบ|ไม่มีข้อมูล|ไม่สามารถตอบ|ขออภัย",
    r"ไม่พบ(?:ข้อมูล|คำตอบ)|หาไม่พบ",
)

#: Said of the phrase patterns whenever they decided some answers: their quality is known on
#: NoMIRACL's LLM replies only, not on the user's traffic (the module docstring;
#: ``tests/service/test_refusals.py``), and only in English: NoMIRACL's replies to English and
#: to Hindi questions, which are mostly English (trial 23: a German help desk read "precision
#: 0.99" while its German refusals were missed). Every other language's patterns have no
#: measured precision or recall on replies, and the sentence says so.
#: The patterns' NoMIRACL figures and what they were measured against (trial 46, F10: a user
#: who counted every reply containing "don't know" as a refusal read "recall 1.00" and found
#: 348 of 374; the 26 missed all also say "Yes, answer is present", which NoMIRACL's own
#: reading calls an answer or leaves out). Counts: ``tests/service/test_refusals.py``.
_NOMIRACL_FIGURES = (
    "precision 0.99, recall 1.00 on NoMIRACL's LLM replies to English and Hindi questions "
    "(the replies mostly English), against NoMIRACL's own reading of each reply: \"I don't "
    'know" is a refusal, and a reply that also says "Yes, answer is present" is an answer '
    "or, with the other replies it reads as neither (1,809 of 11,000), left out"
)

_PATTERNS_CAVEAT = (
    f"phrase patterns not measured on this traffic; {_NOMIRACL_FIGURES}; not measured "
    "on replies in any other language; a reply with no answer in it (empty, "
    '"Unable to generate response.", an error message such as "Internal server error") '
    "counts as a refusal; set answer.refused for exact counts"
)


#: The phrase patterns' figures on NoMIRACL and the rules every reading of them shares: said
#: after this traffic's own measurement when there is one (:func:`patterns_caveat`).
_PATTERNS_ELSEWHERE = (
    f"{_NOMIRACL_FIGURES}; a reply with no answer in it (empty, "
    '"Unable to generate response.", an error message such as "Internal server error") '
    "counts as a refusal; set answer.refused for exact counts"
)


def patterns_caveat(against: Sequence[Mapping[str, Any]] = ()) -> str:
    """The phrase patterns' caveat in the method sentence: measured against
    ``answer.refused`` on this traffic when some answers set it and have a text (``against``:
    :func:`~service.quality.by_language.flag_agreement_rows`, whose ``few`` rows have too few
    flagged refusals to measure recall), else :data:`_PATTERNS_CAVEAT` ("not measured on this
    traffic"). Never "not measured" beside a measurement (trial 40, MEDIUM 2).

    >>> print(patterns_caveat([{"language": "en", "flagged": 1083, "both": 737,
    ...     "recall": 0.68052, "recall_low": 0.6522, "recall_high": 0.7076, "detected": 737,
    ...     "precision": 1.0, "few": False}, {"language": "hi-Latn", "flagged": 1, "both": 0,
    ...     "recall": 0.0, "detected": 0, "precision": None, "few": True}]))
    ... # doctest: +ELLIPSIS +NORMALIZE_WHITESPACE
    phrase patterns measured against answer.refused on this traffic (against_flag): en recall
    737/1083 0.681 [0.652, 0.708], precision 1.000; too few flagged refusals to measure
    recall in hi-Latn; not measured in any other language; precision 0.99, recall 1.00 on
    NoMIRACL's ...
    """
    if not against:
        return _PATTERNS_CAVEAT
    measured = [
        f"{row['language']} recall {row['both']}/{row['flagged']} {row['recall']:.3f} "
        f"[{row['recall_low']:.3f}, {row['recall_high']:.3f}], precision "
        + ("none read as refusals" if row.get("precision") is None
           else f"{row['precision']:.3f}")
        for row in against if not row.get("few")
    ]  # fmt: skip
    few = [str(row["language"]) for row in against if row.get("few")]
    parts = ["; ".join(measured)] if measured else []
    if few:
        parts.append(f"too few flagged refusals to measure recall in {', '.join(few)}")
    return ("phrase patterns measured against answer.refused on this traffic (against_flag): "
            f"{'; '.join(parts)}; not measured in any other language; "
            f"{_PATTERNS_ELSEWHERE}")  # fmt: skip


#: What reads an answer's text when the event does not set ``answer.refused``
#: (:func:`text_reader`): the phrase patterns alone, a :class:`RefusalModel` (``combine=
#: "model"``: the patterns then decide nothing) or either of them (``combine="any"``).
Reader = Literal["patterns", "model", "model or patterns"]

#: How the method sentence names each :data:`Reader` where it counts the answers it decided.
READER_NAMES: dict[str, str] = {
    "patterns": "phrase patterns",
    "model": "the refusal model",
    "model or patterns": "the refusal model or phrase patterns",
}


def text_reader(detector: RefusalDetector) -> Reader:
    """Which :data:`Reader` ``detector`` is: ``"patterns"`` without a model, else
    ``"model"`` or ``"model or patterns"`` by its ``combine``.

    >>> text_reader(RefusalDetector())
    'patterns'
    """
    if detector.model is None:
        return "patterns"
    return "model" if detector.combine == "model" else "model or patterns"


def _model_caveat(reader: Reader, measured: Sequence[str]) -> str:
    """The caveat of a :class:`RefusalModel` reader (``"model"`` or ``"model or patterns"``):
    what decided, where it is measured (``measured``: the languages whose answers set
    ``answer.refused`` and have a text, :func:`~service.quality.by_language.flag_agreement_rows`)
    and, with the patterns, their caveat too."""
    where = (f"measured against answer.refused on this traffic in {', '.join(measured)} only "
             "(against_flag)" if measured else
             "measured in no language: no answer on this traffic both sets answer.refused "
             "and has a text")  # fmt: skip
    if reader == "model":
        return ("the refusal model, learnt from the user's own labelled replies, read these "
                "answers, not the phrase patterns; goldwatch has no precision or recall of it "
                f"but against the producer's flag: {where}; an empty or blank reply counts as "
                "a refusal; set answer.refused for exact counts")  # fmt: skip
    return ("a reply counts as a refusal when the refusal model (learnt from the user's own "
            "labelled replies) or the phrase patterns read it as one; goldwatch has no "
            f"precision or recall of the model but against the producer's flag: {where}; "
            f"{_PATTERNS_CAVEAT}")  # fmt: skip


def refusal_rate_method(by_flag: int, by_patterns: int, answers: int | None = None,
                        refused_by: tuple[int, int] | None = None,
                        refused: int | None = None, reader: Reader = "patterns",
                        measured: Sequence[str] = (),
                        against: Sequence[Mapping[str, Any]] = ()) -> str:  # fmt: skip
    """How this run's refusals were decided, with both counts, for the replay text and HTML,
    the status page and ``GET /v1/refusals``: ``by_flag`` answers by the event's own
    ``answer.refused`` (exact), ``by_patterns`` by the answer text's ``reader``
    (:func:`text_reader` of the :class:`RefusalDetector`: the phrase patterns, measured on
    NoMIRACL's English replies only, so their caveat is added when they decided any; a
    :class:`RefusalModel`, measured by goldwatch only against ``answer.refused`` on this
    traffic, in the ``measured`` languages; or either of them, with both caveats).
    Counts are ≥ 0; with none of either, "no answers in this log". ``answers`` (the total,
    when known) above their sum adds how many were counted before the split was kept (totals
    of an older state file). ``refused_by`` (``(by flag, by patterns)``: of those answers,
    the refused ones) adds each side's refusals, so the refused count reconciles with the
    sources that decided it; ``refused`` (the total) above their sum adds how many refusals
    were counted before that split was kept. The counts are the annotation totals since the
    first start; ``reader`` is the running detector's (a reader changed across restarts is
    not told apart). ``against`` (:func:`~service.quality.by_language.flag_agreement_rows`):
    the patterns measured against ``answer.refused`` on this traffic, stated in their caveat
    instead of "not measured on this traffic" (:func:`patterns_caveat`).

    >>> refusal_rate_method(4000, 0)
    'answer.refused decided all 4000 answers'
    >>> refusal_rate_method(4000, 0, refused_by=(432, 0))
    'answer.refused decided all 4000 answers (432 refused)'
    >>> print(refusal_rate_method(3, 2, refused_by=(1, 2)))  # doctest: +ELLIPSIS
    answer.refused decided 3 answers (1 refused), phrase patterns 2 (2 refused) (phrase ...)
    >>> print(refusal_rate_method(0, 2, reader="model", measured=["de"]))
    ... # doctest: +ELLIPSIS +NORMALIZE_WHITESPACE
    the refusal model decided all 2 answers (the refusal model, ...; goldwatch has no
    precision or recall of it but against the producer's flag: measured against answer.refused
    on this traffic in de only (against_flag); ...)
    """
    earlier = max(0, (answers or 0) - by_flag - by_patterns)
    before = f"; {earlier} answers counted before this split was kept" if earlier else ""
    flag_refused = patterns_refused = ""
    if refused_by is not None:
        flag_refused, patterns_refused = (f" ({n} refused)" for n in refused_by)
        untold = max(0, (refused or 0) - sum(refused_by))
        if untold:
            before += f"; {untold} refusals counted before their split was kept"
    if by_flag + by_patterns == 0:
        return "no answers in this log" if not before else before[2:]
    if by_patterns == 0:
        return f"answer.refused decided all {by_flag} answers{flag_refused}{before}"
    name = READER_NAMES[reader]
    if reader == "patterns":
        caveat = patterns_caveat(against)
    else:
        caveat = _model_caveat(reader, measured)
    if by_flag == 0:
        return (f"{name} decided all {by_patterns} answers{patterns_refused} "
                f"({caveat}){before}")  # fmt: skip
    return (f"answer.refused decided {by_flag} answers{flag_refused}, {name} "
            f"{by_patterns}{patterns_refused} ({caveat}){before}")  # fmt: skip


#: Openings that mark a reply as an answer even when it later says part of the question is not
#: covered ("Yes, answer is present in [1]; no answer in the other contexts").
DEFAULT_ANSWER_OPENINGS: tuple[str, ...] = (
    r"^\W*(?:yes|sí|si|oui|ja|да|haa?n|हाँ|हां)\b",
    r"^\W*(?:the )?answer is\b(?! not)",
)

#: Lines that mark a reply as an answer wherever they stand, tried only on a text a refusal
#: pattern matched: a per-context listing's item for a context with the answer (``Context 1:
#: Yes, answer is present``, ``[1] "Yes, answer is present"``, other contexts "I don't know":
#: trial 21, 12 of its 15 false refusals), and a line "Yes, answer is present" with more on
#: it (``… (context [4])``, ``… in [1], [3]``, ``… -> Jawahar Tunnel is in …``). Not a bare
#: "Yes, answer is present" line nor a bare-numbered ``1. Yes, answer is present.`` followed
#: by ``2. I don't know.``: LLMs echo the prompt's two options that way and then answer
#: nothing (NoMIRACL: 17 such echoes; they stay refusals, a reply with no answer).
DEFAULT_ANSWER_ITEMS: tuple[str, ...] = (
    r"(?:^|\n)[^\S\n]*(?:(?:context|passage|document)[^\S\n]*\[?\d+\]?|\[\d+\])[^\w\n]*"
    r"(?:yes|sí|si|oui|ja|да|haa?n|हाँ|हां|(?:the )?answer is present)\b",
    r"(?:^|\n)[^\S\n]*(?:\d+[.)][^\S\n]*)?[\"'“]?yes,? answer is present\b[^\w\n]*\w",
)

Combine = Literal["model", "any"]


def _normalise(text: str) -> str:
    return unicodedata.normalize("NFKC", text).casefold().replace("’", "'")


def _required_in(items: Any) -> frozenset[str] | None:
    """Literal strings one of which every match of the parsed ``items`` contains, or
    ``None`` when no such set can be read off (see :func:`required_literals`)."""
    candidates: list[frozenset[str]] = []
    run: list[str] = []

    def close_run() -> None:
        if run:
            candidates.append(frozenset(["".join(run)]))
            run.clear()

    for op, av in items:
        if op is sre_constants.LITERAL:
            run.append(chr(av))
            continue
        close_run()
        found: frozenset[str] | None = None
        if op is sre_constants.SUBPATTERN:
            _group, add_flags, _del_flags, sub = av
            found = None if add_flags else _required_in(sub)
        elif op is sre_constants.BRANCH:
            parts = [_required_in(branch) for branch in av[1]]
            if all(part is not None for part in parts):
                found = frozenset().union(*parts)  # type: ignore[arg-type]
        elif op in (sre_constants.MAX_REPEAT, sre_constants.MIN_REPEAT,
                    sre_constants.POSSESSIVE_REPEAT) and av[0] >= 1:  # fmt: skip
            found = _required_in(av[2])
        elif op is sre_constants.ATOMIC_GROUP:
            found = _required_in(av)
        if found:
            candidates.append(found)
    close_run()
    if not candidates:
        return None
    # The most selective set: the longest shortest literal, then the fewest literals.
    return max(candidates, key=lambda lits: (min(map(len, lits)), -len(lits)))


def required_literals(pattern: str) -> frozenset[str] | None:
    """Literal strings such that any text ``pattern`` matches contains one of them, read off
    its parse tree (a run of literal characters; every alternative of a group; an item
    repeated at least once); ``None`` when it offers none (e.g. only character classes, or
    inline flags such as ``(?i)``) — then no text may be skipped for it.

    :class:`RefusalDetector` runs a pattern only on text holding one of its literals: through
    one alternation the ~40 default patterns cost ~170 µs on a 230-character answer (``re``
    tries every branch at every position), the substring checks a few µs.

    >>> sorted(required_literals(r"\\bno (?:tengo|hay) informaci[oó]n\\b"))
    [' informaci']
    >>> sorted(required_literals(r"我不知道|抱歉"))
    ['我不知道', '抱歉']
    >>> required_literals(r"\\w+") is None
    True
    """
    try:
        parsed = sre_parse.parse(pattern)
    except re.error:
        return None
    if parsed.state.flags & ~(re.UNICODE | re.DEBUG):
        return None
    found = _required_in(parsed.data)
    return None if not found or "" in found else found


def check_pattern(pattern: str) -> str:
    """Return ``pattern`` unchanged when :class:`RefusalDetector` can compile it (each
    pattern is compiled on its own, wrapped as ``(?:pattern)``, so a global inline flag such
    as ``(?i)`` is rejected here as it would be there); the settings validate
    ``analytics.refusal_patterns`` with it.

    Raises:
        ValueError: not a valid regular expression; the message gives the ``re`` reason.

    >>> check_pattern(r"cannot help with")
    'cannot help with'
    >>> check_pattern("(unclosed")
    Traceback (most recent call last):
    ...
    ValueError: invalid refusal pattern: missing ), unterminated subpattern at position 0
    """
    _compile([pattern], wrap=False)  # positions in the message are the pattern's own
    try:
        re.compile(f"(?:{pattern})")
    except re.error as exc:  # valid alone, not inside a group: a global flag such as (?i)
        raise ValueError(
            f"invalid refusal pattern: {exc.msg} once wrapped as (?:...), as the detector "
            "combines patterns; use a scoped flag such as (?i:...)"
        ) from None
    return pattern


def _compile(patterns: Iterable[str], *, wrap: bool = True) -> re.Pattern[str]:
    try:
        return re.compile("|".join(f"(?:{p})" if wrap else p for p in patterns))
    except re.error as exc:
        raise ValueError(f"invalid refusal pattern: {exc}") from None


#: Longest answer (characters) whose pattern verdict :class:`RefusalDetector` remembers: a
#: memo bounded by count alone would hold up to ``memo_size`` answers of any length (events
#: may be 1 MiB).
MEMO_MAX_CHARS = 2_048


class RefusalDetector:
    """Refusal classifier: multilingual patterns, optionally with a trained model.

    Args:
        patterns: regular expressions (matched anywhere, against NFKC-casefolded text);
            defaults to :data:`DEFAULT_PATTERNS`.
        extra_patterns: added to ``patterns`` (e.g. the system's own refusal template).
        answer_openings: patterns matched at the start of the text that make it an answer
            whatever follows; defaults to :data:`DEFAULT_ANSWER_OPENINGS` (``()`` disables).
        answer_items: patterns searched anywhere in a text a refusal pattern matched that
            make it an answer (a per-context listing with an answer in one context);
            defaults to :data:`DEFAULT_ANSWER_ITEMS` (``()`` disables).
        model: a fitted :class:`RefusalModel`; see the module docstring for precedence.
        combine: ``"model"`` (the model decides) or ``"any"`` (model OR patterns).
        memo_size: answer texts whose pattern verdict is remembered (a bot repeats its
            answers: its refusal templates, an FAQ's answers; 364 distinct of 19,960 in
            ``benchmarks.bench_production``'s log), then it starts afresh (cleared); 0: none.
            :meth:`matches_pattern` is a pure function of the text, so the size changes the
            time, never a verdict (scanning a ~850-character answer for the patterns'
            literals costs ~23 µs; a remembered one a dictionary look-up). Only answers of
            at most :data:`MEMO_MAX_CHARS` characters are remembered (longer ones are scanned
            every time), so the memo holds at most ``memo_size × 2,048`` characters: 8 MiB
            of ASCII text for the default 4,096 (32 MiB at 4 bytes a character), ~4 MiB at
            the benchmark's ~850 characters.

    Raises:
        ValueError: a pattern is not a valid regular expression (the message names it),
            ``combine`` is unknown or ``memo_size`` is negative.

    >>> RefusalDetector().is_refusal("I'm sorry, I don't have information about that.")
    True
    >>> RefusalDetector().is_refusal("The hostel fee is ₹85,000 per year.")
    False
    >>> RefusalDetector().is_refusal_many(["Ich weiß es nicht.", "Paris.", None])
    [True, False, True]
    """

    def __init__(
        self,
        patterns: Iterable[str] | None = None,
        *,
        extra_patterns: Iterable[str] = (),
        answer_openings: Iterable[str] | None = None,
        answer_items: Iterable[str] | None = None,
        model: RefusalModel | None = None,
        combine: Combine = "model",
        memo_size: int = 4_096,
    ) -> None:
        if combine not in ("model", "any"):
            raise ValueError(f"combine must be 'model' or 'any', got {combine!r}")
        if memo_size < 0:
            raise ValueError(f"memo_size must be >= 0, got {memo_size}")
        self.memo_size = memo_size
        self._memo: dict[str, bool] = {}
        chosen = (*(tuple(patterns) if patterns is not None else DEFAULT_PATTERNS),
                  *extra_patterns)  # fmt: skip
        # Each pattern with the literals one of which it needs (None: always tried).
        self._checks = [
            (None if lits is None else tuple(sorted(lits, key=len, reverse=True)),
             _compile([pattern]))
            for pattern in chosen
            for lits in [required_literals(pattern)]
        ]  # fmt: skip
        # The same checks indexed by literal: every distinct literal once, each with the
        # patterns (their indices in _checks) that need it, so a text is scanned once per
        # literal rather than once per (pattern, literal) pair.
        self._always = tuple(regex for lits, regex in self._checks if lits is None)
        by_literal: dict[str, list[int]] = {}
        for index, (lits, _) in enumerate(self._checks):
            for lit in lits or ():
                by_literal.setdefault(lit, []).append(index)
        self._literals = tuple(by_literal)
        self._by_literal = {lit: tuple(ixs) for lit, ixs in by_literal.items()}
        openings = tuple(DEFAULT_ANSWER_OPENINGS if answer_openings is None else answer_openings)
        self._opening = _compile(openings) if openings else None
        items = tuple(DEFAULT_ANSWER_ITEMS if answer_items is None else answer_items)
        self._items = _compile(items) if items else None
        self.model = model
        self.combine = combine

    def matches_pattern(self, text: str) -> bool:
        """True when a refusal pattern matches ``text`` and neither an answer opening nor an
        answer item does (no model, no empty-answer rule)."""
        text = _normalise(text)
        if self._opening is not None and self._opening.match(text):
            return False
        return self._refusal_pattern(text) and (
            self._items is None or self._items.search(text) is None
        )

    def _refusal_pattern(self, text: str) -> bool:
        """Whether a refusal pattern matches the normalised ``text``."""
        # = one alternation of every pattern .search(text): a pattern is tried only on
        # text holding one of its required literals (see required_literals); most texts hold
        # none, and then only the literal-free patterns run.
        for regex in self._always:
            if regex.search(text):
                return True
        present = [lit for lit in self._literals if lit in text]
        if not present:
            return False
        tried: set[int] = set()
        for lit in present:
            for index in self._by_literal[lit]:
                if index not in tried:
                    tried.add(index)
                    if self._checks[index][1].search(text):
                        return True
        return False

    def _remembered(self, text: str) -> bool:
        """:meth:`matches_pattern` of ``text``, remembered (see ``memo_size``)."""
        memo = self._memo
        verdict = memo.get(text)
        if verdict is None:
            verdict = self.matches_pattern(text)
            if self.memo_size and len(text) <= MEMO_MAX_CHARS:
                if len(memo) >= self.memo_size:
                    memo.clear()
                memo[text] = verdict
        return verdict

    def is_refusal(self, text: str | None) -> bool:
        """True when ``text`` declines to answer; an empty or missing answer counts as one."""
        return self.is_refusal_many([text])[0]

    def is_refusal_many(self, texts: Sequence[str | None]) -> list[bool]:
        """:meth:`is_refusal` for each text, in order; one model call for the whole list."""
        blank = [t is None or not t.strip() for t in texts]
        result = [b or self._remembered(t or "") for t, b in zip(texts, blank, strict=True)]
        if self.model is None:
            return result
        todo = [i for i, b in enumerate(blank) if not b]
        votes = self.model.predict_many([texts[i] or "" for i in todo])
        for i, vote in zip(todo, votes, strict=True):
            result[i] = vote or (self.combine == "any" and result[i])
        return result


class RefusalModel:
    """A refusal classifier learnt from the user's labelled replies.

    TF-IDF (word 1-2 grams ⊕ char_wb 2-5 grams, sublinear tf, NFKC-casefolded input) →
    logistic regression with balanced class weights. Saved as a versioned artefact (the same
    format as :class:`service.topics.model.TopicModel`).

    Attributes:
        version: hash of the training texts, labels and scikit-learn version.

    >>> texts = ["I don't know.", "No information.", "It is 42.", "Paris, in 1889."] * 3
    >>> model = RefusalModel.fit(texts, [True, True, False, False] * 3)
    >>> model.predict_many(["I don't know that.", "It is 1889."])
    [True, False]
    """

    def __init__(self, pipeline: Any, version: str) -> None:
        self._pipeline = pipeline
        self.version = version

    @classmethod
    def fit(cls, texts: Sequence[str], labels: Sequence[bool]) -> RefusalModel:
        """Train on replies ``texts`` with ``labels`` (True = refusal).

        Raises:
            ValueError: lengths differ, or the labels are not of two classes.
        """
        from sklearn.feature_extraction.text import TfidfVectorizer
        from sklearn.linear_model import LogisticRegression
        from sklearn.pipeline import FeatureUnion, make_pipeline

        from service.topics.model import TOKEN_PATTERN, data_version

        if len(texts) != len(labels):
            raise ValueError(f"{len(labels)} labels for {len(texts)} texts")
        if len({bool(label) for label in labels}) != 2:
            raise ValueError("need examples of both refusals and answers")
        features = FeatureUnion(
            [
                ("words", TfidfVectorizer(
                    token_pattern=TOKEN_PATTERN, ngram_range=(1, 2), sublinear_tf=True,
                    preprocessor=_normalise,
                )),
                ("chars", TfidfVectorizer(
                    analyzer="char_wb", ngram_range=(2, 5), sublinear_tf=True,
                    preprocessor=_normalise,
                )),
            ]
        )  # fmt: skip
        classifier = LogisticRegression(C=10.0, class_weight="balanced", max_iter=1000)
        pipeline = make_pipeline(features, classifier)
        pipeline.fit(list(texts), [bool(label) for label in labels])
        return cls(pipeline, data_version(texts, [bool(x) for x in labels], {"kind": "refusal"}))

    def predict_proba_many(self, texts: Sequence[str]) -> list[float]:
        """Probability of refusal per text, in [0, 1]; one ``predict_proba`` call."""
        if not texts:
            return []
        column = list(self._pipeline.classes_).index(True)
        # scikit-learn is untyped; a probability column's tolist() is Python floats
        probabilities: list[float] = self._pipeline.predict_proba(list(texts))[:, column].tolist()
        return probabilities

    def predict_many(self, texts: Sequence[str], threshold: float = 0.5) -> list[bool]:
        """True where the refusal probability is ``>= threshold``."""
        return [p >= threshold for p in self.predict_proba_many(texts)]

    def save(self, path: Path | str) -> None:
        """Write the model as a versioned joblib artefact."""
        from service.topics.model import save_artefact

        save_artefact(path, "refusal", self.version, self._pipeline)

    @classmethod
    def load(cls, path: Path | str) -> RefusalModel:
        """Read a model written by :meth:`save`.

        Raises:
            service.topics.model.ArtefactError: not a refusal model, or incompatible scikit-learn.
        """
        from service.topics.model import load_artefact

        header, pipeline = load_artefact(path, "refusal")
        return cls(pipeline, str(header["version"]))


def answer_text(event: QueryLogEvent) -> tuple[bool, str | None, bool | None]:
    """Return ``(has_answer, text, explicit_flag)`` of an event's answer.

    ``has_answer`` is False when the event carries no answer object, or one with neither text
    nor flag (e.g. a log of retrieval only).
    """
    answer = event.answer
    if answer is None or (answer.text is None and answer.refused is None):
        return False, None, None
    return True, answer.text, answer.refused
