"""Refusal detection: multilingual patterns, the trained model, the stage, and NoMIRACL replies.

NoMIRACL ground truth: the prompt asks every model to reply "Yes, answer is present" or
"I don't know". Each reply is labelled the way NoMIRACL's own evaluation reads it
(``nomiracl/prompts/template.py``, ``VanillaTemplate.postprocess``, re-implemented here):
lower-cased, "i don't know" and "yes, answer is present" both present → an answer if the
latter occurs more than once, else invalid; only "i don't know" → refusal; "(yes, )answer is
present" → answer; "answer is not present" → refusal; anything else → invalid. Invalid,
empty and null replies are left out. The label keys on the canonical refusal string, which
the default patterns also cover, so recall here mostly checks that nothing else interferes;
precision is the informative figure (mixed replies, per-context listings, echoed prompts).
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from service.events import QueryLogEvent
from service.pipeline import Pipeline, Stage
from service.refusals.detector import (
    GENERATION_FAILURE,
    SCOPE_REFUSALS,
    RefusalDetector,
    RefusalModel,
    refusal_rate_method,
    text_reader,
)
from service.refusals.stage import RefusalStage
from service.topics.model import ArtefactError

REFUSALS = {
    "en": "The provided passages do not contain that information.",
    "en-none": "None of the contexts mention the fee.",
    "hi": "मुझे इस बारे में जानकारी नहीं है।",
    "hi-answer": "इस प्रश्न का उत्तर नहीं दिया जा सकता।",
    "hi-Latn": "Sorry, mujhe iska jawab nahi pata.",
    "es": "No sé la respuesta.",
    "fr": "Je ne sais pas.",
    "de": "Dazu habe ich keine Informationen.",
    "ru": "Я не знаю ответа на этот вопрос.",
    "ar": "لا أعرف الإجابة.",
    "zh": "抱歉，我不知道。",
    "el": "Δεν γνωρίζω την απάντηση.",
    "ro": "Nu știu răspunsul.",
    "tr": "Bu konuda bilgim yok.",
    "vi": "Tôi không biết.",
    "th": "ขออภัย ไม่มีข้อมูล",
}
ANSWERS = {
    "en": "The hostel fee is ₹85,000 per year.",
    "en-mixed": "Yes, answer is present in [1]. No answer is present in the other contexts.",
    "es": "No se cobra recargo antes del 15 de julio.",
    "de": "Die Gebühr beträgt 300 Euro.",
    "zh": "学费是每年五千元。",
    "hi": "छात्रावास शुल्क 85,000 रुपये प्रति वर्ष है।",
}


@pytest.mark.parametrize("lang", sorted(REFUSALS))
def test_multilingual_refusals(lang: str) -> None:
    assert RefusalDetector().is_refusal(REFUSALS[lang])


@pytest.mark.parametrize("lang", sorted(ANSWERS))
def test_multilingual_answers(lang: str) -> None:
    assert not RefusalDetector().is_refusal(ANSWERS[lang])


#: Trial user 3: common refusals the patterns missed (the first two printed as not refused),
#: and the same "I could not find" / "I don't know" forms in the other pattern languages.
MISSED_REFUSALS = (
    "I'm sorry, I couldn't find that in the news archive.",
    "Sorry, I could not find the date of that paper.",
    "मुझे नहीं पता।",
    "मुझे इस बारे में नहीं पता।",
    "मुझे जानकारी नहीं है।",
    "मैं नहीं जानता।",
    "Mujhe nahi pata.",
    "No pude encontrar la respuesta.",
    "Je n'ai pas trouvé cette information.",
    "Das weiß ich nicht.",
    "Ich konnte dazu keine Informationen finden.",
    "Не знаю.",
    "Я не смог найти ответ.",
    "لم أتمكن من العثور على إجابة.",
    "我没有找到相关信息。",
    "Δεν βρήκα πληροφορίες.",
    "Nu am găsit răspunsul.",
    "Bunu bulamadım.",
    "Tôi không tìm thấy thông tin.",
    "ไม่พบข้อมูล",
    # the production benchmark's own refusal templates, two of its three missed before
    "I couldn't find anything about this in the documents I can search.",
    "Sorry, that is outside what I can help with here.",
    "I could not find any information on that topic.",
    "I couldn't find that in the news archive.",
    # trial user 5: 428 replies "That is not covered by our material…" were counted as answers;
    # the reply names its source as lacking the answer, in common LLM phrasings
    "That is not covered by our material, please ask the help desk.",
    "Sorry, that isn't covered in the documentation.",
    "The provided documents do not mention this.",
    "The documents provided don't contain the answer.",
    "The given sources do not address your question.",
    "This question is outside the scope of the provided documents.",
    # trial user6: German first-person refusals with a filler word (145 unflagged replies of
    # two of these forms were counted as answers), and the same forms worded otherwise
    "Das weiß ich leider nicht.",
    "Ich weiß es leider auch nicht.",
    "Tut mir leid, dazu finde ich nichts in unseren Unterlagen.",
    "Es tut mir sehr leid, aber darauf habe ich keine Antwort.",
    "Leider finde ich keine Angaben dazu.",
    "Das kann ich Ihnen leider nicht beantworten.",
    "Ich kann Ihnen dabei leider nicht helfen.",
    "Das steht nicht in unseren Unterlagen.",
    # trial 23: a German help desk's refusals counted as answers (de refusal rate 6.7 % for a
    # true 13.7 %), the same forms worded otherwise, and Spanish and French ones naming the
    # documentation as lacking the answer
    "Leider konnte ich dazu nichts in unserer Dokumentation finden.",
    "Ich konnte dazu nichts finden.",
    "Dazu habe ich leider nichts gefunden.",
    "Das steht nicht in unserer Dokumentation.",
    "Entschuldigung, darauf habe ich keine Antwort.",
    "Ich habe dazu leider keine Antwort gefunden.",
    "Diese Information ist in unserer Dokumentation nicht enthalten.",
    "Die Dokumente enthalten dazu keine Angaben.",
    "Dazu kann ich leider nichts sagen.",
    "Keine Antwort gefunden.",
    "Esa información no aparece en nuestra documentación.",
    "La documentación no menciona nada al respecto.",
    "No dispongo de datos sobre eso.",
    "Los documentos proporcionados no contienen esa información.",
    "Cette information ne figure pas dans notre documentation.",
    "Je n'ai rien trouvé à ce sujet.",
    # trial 24: an assistant's two replies to off-topic questions (136 of 993 refusals were
    # counted as answers), then the same scope refusals worded otherwise
    "Sorry, I can only answer questions about the news.",
    "That is not covered by the news articles I have.",
    "I can only help with questions about our products and services.",
    "I'm only able to answer questions related to the course catalogue.",
    "I can only answer HR-related questions.",
    "Sorry, I can only assist with queries about your account.",
    "That isn't covered in the documents I have access to.",
)
#: Real answers that contain "sorry", "could not find", "नहीं पता" or a third person's
#: "did not find": none is a refusal.
NOT_REFUSALS = (
    "I'm sorry to hear that your card couldn't be used abroad; enable international "
    "payments in the app.",
    "Sorry for the wait: the fee is 300 euros.",
    "The police could not find the suspect until 1998.",
    "उन्हें यह नहीं पता था कि ट्रेन देर से आएगी, इसलिए वे स्टेशन पहुँचे।",
    "La policía no encontró al sospechoso hasta 1998.",
    "Полиция не смогла найти подозреваемого до 1998 года.",
    "Die Polizei konnte den Täter nicht finden.",
    "警方没有找到嫌疑人。",
    "I couldn't find the exact date, but the bridge opened in 1990.",
    "I could not find a cheaper flight than the one at 9:40, which costs 120 euros.",
    "It lies outside my jurisdiction's rules: file the form with the state office.",
    # "not covered" / "outside the scope" of something other than the reply's sources (the
    # last three are sentences of XQuAD's and SQuAD's Wikipedia passages)
    "Flood damage is not covered by the standard policy.",
    "Roaming is not covered by the data plan.",
    "His arrest was not covered in any newspapers in the days after it happened.",
    "Secondary education falls outside the scope of article 56.",
    "Who may be classified as terrorists is beyond the scope of this article.",
    "The sources do not agree on the date; some say 1990.",
    "Es tut mir leid, dass Sie warten mussten: die Gebühr beträgt 300 Euro.",
    "Ich weiß, dass die Gebühr 300 Euro beträgt.",
    "Ich finde, die Gebühr von 300 Euro ist angemessen.",
    # nothing found, but by a third person, or a source that is no reply's documentation
    "Die Expedition fand nichts.",
    "Es wurden keine Überlebenden gefunden.",
    "Die Frage, ob er schuldig war, konnte das Gericht nicht beantworten.",
    "In den Quellen wird er nicht erwähnt, aber sein Bruder schon.",
    "Laut unserer Dokumentation: 1885.",
    "Los documentos de la época no mencionan su nombre.",
    "No hay cargo por cancelación.",
    # "only answer", "not covered by the articles" without a question named, the first person
    # singular or "I have" (trial 24's patterns must not take these)
    "I can only answer for myself: the others left at noon.",
    "We can only answer questions about it in court, the minister said.",
    "The right is not covered by the articles of the treaty.",
    "The merger was not mentioned in the reports until 2019.",
    "I can only recommend the 9:40 train; it arrives at noon.",
)


@pytest.mark.parametrize("text", MISSED_REFUSALS)
def test_common_refusals_the_patterns_missed(text: str) -> None:
    assert RefusalDetector().is_refusal(text)


@pytest.mark.parametrize("text", NOT_REFUSALS)
def test_answers_with_sorry_or_not_found_are_not_refusals(text: str) -> None:
    assert not RefusalDetector().is_refusal(text)


def test_extra_patterns_and_batch_api() -> None:
    detector = RefusalDetector(extra_patterns=[r"please contact the office"])
    texts = ["Please contact the office.", "Route 4.", "", None, "I don't know."]
    assert detector.is_refusal_many(texts) == [True, False, True, True, True]
    assert not RefusalDetector().is_refusal("Please contact the office.")
    with pytest.raises(ValueError, match="combine"):
        RefusalDetector(combine="all")  # type: ignore[arg-type]


TRAIN = [
    ("Please contact the admissions office for that.", True),
    ("That is outside what I can help with; please contact the office.", True),
    ("Kindly reach out to the office for this query.", True),
    ("Sorry, please contact the office.", True),
    ("No late fee is charged before 15 July.", False),
    ("The fee is ₹85,000 per year.", False),
    ("Route 4 leaves at 8 am.", False),
    ("Results are announced in June.", False),
]


@pytest.fixture(scope="module")
def model() -> RefusalModel:
    texts, labels = zip(*(TRAIN * 2), strict=True)
    return RefusalModel.fit(list(texts), list(labels))


def test_model_learns_the_systems_own_phrasing(model: RefusalModel) -> None:
    probe = ["Please contact the office about hostels.", "No late fee is charged in June."]
    assert model.predict_many(probe) == [True, False]
    detector = RefusalDetector(model=model)
    assert detector.is_refusal_many([*probe, "", None]) == [True, False, True, True]
    # The model decides by default; "any" also lets the patterns fire.
    assert not detector.is_refusal("I don't know.") or model.predict_many(["I don't know."])[0]
    assert RefusalDetector(model=model, combine="any").is_refusal("I don't know.")


def test_model_save_load_and_errors(model: RefusalModel, tmp_path: Path) -> None:
    path = tmp_path / "refusal.joblib"
    model.save(path)
    loaded = RefusalModel.load(path)
    assert loaded.version == model.version
    texts = ["Please contact the office.", "Route 4."]
    assert loaded.predict_proba_many(texts) == pytest.approx(model.predict_proba_many(texts))
    with pytest.raises(ArtefactError, match="not 'topics-embedding'"):
        from service.topics.model import TopicModel

        TopicModel.load(path)
    with pytest.raises(ValueError, match="both refusals and answers"):
        RefusalModel.fit(["a", "b"], [True, True])
    with pytest.raises(ValueError, match="1 labels for 2 texts"):
        RefusalModel.fit(["a", "b"], [True])


def _event(i: int, answer: dict[str, Any] | None) -> QueryLogEvent:
    at = datetime(2026, 11, 29, tzinfo=UTC)
    return QueryLogEvent(event_id=f"e-{i}", timestamp=at, question="fee?", answer=answer)


def test_stage_flag_wins_and_missing_answer_is_none() -> None:
    answers = [
        {"text": "I don't know.", "refused": None},
        {"text": "Route 4.", "refused": True},  # explicit flag wins
        {"text": "I don't know.", "refused": False},
        {"text": "The fee is ₹85,000."},
        {"text": ""},  # an empty reply counts as a refusal
        None,  # no answer logged
        {"citations": ["p-1"]},  # neither text nor flag
    ]
    stage = RefusalStage()
    assert isinstance(stage, Stage)
    batch = Pipeline([stage]).process([_event(i, a) for i, a in enumerate(answers)], "file")
    assert [n["refused"] for n in batch.annotations] == [
        True, True, False, False, True, None, None,
    ]  # fmt: skip


def test_stage_reads_the_text_of_flagged_answers_without_changing_the_verdict() -> None:
    """Trial 23: the patterns are measured against ``answer.refused`` where both exist; the
    flag still decides, and a blank or missing text is not read."""
    answers = [
        {"text": "Ich konnte dazu nichts finden.", "refused": True},  # both refused
        {"text": "Laut unserer Dokumentation: 1885.", "refused": True},  # text: an answer
        {"text": "I don't know.", "refused": False},  # text: a refusal
        {"text": "I don't know."},  # no flag: the patterns decide, nothing to compare
        {"text": "  ", "refused": True},  # blank: nothing read
        {"refused": True},  # no text
    ]
    batch = Pipeline([RefusalStage()]).process([_event(i, a) for i, a in enumerate(answers)],
                                               "file")  # fmt: skip
    assert [n["refused"] for n in batch.annotations] == [True, True, False, True, True, True]
    assert [n.get("text_refused") for n in batch.annotations] == [
        True, False, True, None, None, None,
    ]  # fmt: skip


NO, YES = "i don't know", "yes, answer is present"


def nomiracl_label(reply: str) -> bool | None:
    """True = declines, False = answers, None = invalid (see the module docstring)."""
    text = reply.replace("\n", " ").replace("\t", " ").lower()
    if NO in text and YES in text:
        return False if text.count(YES) > 1 else None
    if NO in text:
        return True
    if "answer is present" in text:
        return False
    if "answer is not present" in text:
        return True
    return None


def nomiracl_replies(root: Path, lang: str) -> list[tuple[str, bool]]:
    rows = []
    for subset in ("non_relevant", "relevant"):
        path = root / "nomiracl-baselines" / subset / f"{lang}.test.vanilla_prompt.jsonl"
        for line in path.read_text(encoding="utf-8").splitlines():
            for reply in json.loads(line)["results"].values():
                label = nomiracl_label(reply) if reply and reply.strip() else None
                if label is not None:
                    rows.append((reply, label))
    return rows


def precision_recall(predicted: list[bool], truth: list[bool]) -> tuple[float, float]:
    hits = sum(p and t for p, t in zip(predicted, truth, strict=True))
    return hits / sum(predicted), hits / sum(truth)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("lang", "min_precision", "min_recall"),
    [("en", 0.98, 0.99), ("hi", 0.99, 0.99)],  # measured: en 0.994 / 1.000, hi 1.000 / 0.997
)
def test_nomiracl_pattern_precision_recall(
    shared_data: Path, lang: str, min_precision: float, min_recall: float
) -> None:
    rows = nomiracl_replies(shared_data, lang)
    assert len(rows) > 4000
    texts, truth = zip(*rows, strict=True)
    predicted = RefusalDetector().is_refusal_many(list(texts))
    precision, recall = precision_recall(predicted, list(truth))
    assert precision >= min_precision
    assert recall >= min_recall


@pytest.mark.slow
def test_nomiracl_model_trained_on_english_transfers_to_hindi(shared_data: Path) -> None:
    """A model fitted on the English-question replies, scored on the Hindi-question ones."""
    train = nomiracl_replies(shared_data, "en")
    test = nomiracl_replies(shared_data, "hi")
    texts, labels = zip(*train, strict=True)
    model = RefusalModel.fit(list(texts), list(labels))
    predicted = model.predict_many([text for text, _ in test])
    precision, recall = precision_recall(predicted, [label for _, label in test])
    assert precision >= 0.95
    assert recall >= 0.95


def test_no_german_sentence_of_xquad_is_a_refusal(shared_data: Path) -> None:
    """The German patterns (first-person "weiß ich nicht", "finde ich nichts", "tut mir leid …
    nicht") match none of the 3,685 distinct sentences, questions and answers of XQuAD's
    German Wikipedia passages (none of which is a refusal)."""
    data = json.loads((shared_data / "xquad" / "xquad.de.json").read_text(encoding="utf-8"))
    sentences: list[str] = []
    for article in data["data"]:
        for paragraph in article["paragraphs"]:
            sentences += re.split(r"(?<=[.!?])\s+", paragraph["context"])
            for qa in paragraph["qas"]:
                sentences += [qa["question"], *(a["text"] for a in qa["answers"])]
    distinct = list(dict.fromkeys(s for s in sentences if s.strip()))
    assert len(distinct) == 3685
    flagged = [s for s, r in zip(distinct, RefusalDetector().is_refusal_many(distinct),
                                 strict=True) if r]  # fmt: skip
    assert flagged == []


def test_no_spanish_sentence_of_xquad_is_a_refusal(shared_data: Path) -> None:
    """The Spanish patterns (trial 23's "no aparece en nuestra documentación", "no dispongo
    de datos" with the former ones) match none of the 3,522 distinct sentences, questions and
    answers of XQuAD's Spanish Wikipedia passages (none of which is a refusal)."""
    data = json.loads((shared_data / "xquad" / "xquad.es.json").read_text(encoding="utf-8"))
    sentences: list[str] = []
    for article in data["data"]:
        for paragraph in article["paragraphs"]:
            sentences += re.split(r"(?<=[.!?])\s+", paragraph["context"])
            for qa in paragraph["qas"]:
                sentences += [qa["question"], *(a["text"] for a in qa["answers"])]
    distinct = list(dict.fromkeys(s for s in sentences if s.strip()))
    assert len(distinct) == 3522
    flagged = [s for s, r in zip(distinct, RefusalDetector().is_refusal_many(distinct),
                                 strict=True) if r]  # fmt: skip
    assert flagged == []


def test_scope_refusal_patterns_flag_no_english_text_of_the_shared_data(
    shared_data: Path,
) -> None:
    """Trial 24's scope refusals (:data:`SCOPE_REFUSALS`: "I can only answer questions about
    …", "not covered by the … articles I have") match none of 15,974 distinct texts of the
    shared data that are no refusal: XQuAD's English sentences, questions and answers, SQuAD
    2.0's sample (context sentences, questions, answers), NQ-open's questions and answers,
    MultiHop-RAG's answers and evidence (``benchmarks.bench_refusal_patterns`` gives the same
    with every pattern: 249 of 91,596 texts flagged before and after, BANKING77's and
    CLINC150's first-person questions mostly; NoMIRACL's figures unchanged)."""
    texts: list[str] = []
    xquad = json.loads((shared_data / "xquad" / "xquad.en.json").read_text(encoding="utf-8"))
    for article in xquad["data"]:
        for paragraph in article["paragraphs"]:
            texts += re.split(r"(?<=[.!?])\s+", paragraph["context"])
            for qa in paragraph["qas"]:
                texts += [qa["question"], *(a["text"] for a in qa["answers"])]
    squad = shared_data / "squad2-dev-sample500"
    for query in json.loads((squad / "queries.json").read_text(encoding="utf-8"))["queries"]:
        texts += [query["question"], *re.split(r"(?<=[.!?])\s+", query["context"])]
    truth = json.loads((squad / "ground_truth.json").read_text(encoding="utf-8"))
    texts += [answer for row in truth.values() for answer in row["answers"]]
    for line in (shared_data / "nq-open" / "NQ-open.dev.jsonl").open(encoding="utf-8"):
        row = json.loads(line)
        texts += [row["question"], *row["answer"]]
    hop = json.loads((shared_data / "multihop-rag-sample500" / "ground_truth.json")
                     .read_text(encoding="utf-8"))  # fmt: skip
    texts += [row["answer"] for row in hop.values()]
    texts += [fact["fact"] for row in hop.values() for fact in row["evidence_list"]]
    distinct = list(dict.fromkeys(t for t in texts if t.strip()))
    assert len(distinct) == 15_974
    scope = RefusalDetector(SCOPE_REFUSALS, answer_items=())
    flagged = [t for t, r in zip(distinct, scope.is_refusal_many(distinct), strict=True) if r]
    assert flagged == []


@pytest.mark.parametrize(
    ("reply", "refused"),
    [  # trial 12: four of twelve ordinary phrasings were misread
        ("I'm unable to help with that request.", True),
        ("Based on the passages, I cannot determine the answer.", True),
        ("I'm not able to answer this question.", True),
        ("I don't know why anyone doubts it: the Panthers allowed 308 points.", False),
        ("I can't say for sure, but it is most likely 1754.", False),
        # unchanged: a bare "I can't say", "I don't know if/whether" (NoMIRACL's refusals)
        ("I can't say.", True),
        ("I don't know if any of the contexts answer the question.", True),
    ],
)
def test_ordinary_phrasings_of_a_refusal_and_of_an_answer(reply: str, refused: bool) -> None:
    """Measured with the change on NoMIRACL's replies, same run: English precision 0.9844,
    recall 1.0000; Hindi 0.9992, 0.9968 — as before it."""
    assert RefusalDetector().is_refusal(reply) is refused


@pytest.mark.parametrize(
    ("reply", "refused"),
    [  # trial 21 (LOW 5): per-context listings that find the answer in one context are answers
        ("\nContext 1: Yes, answer is present\nContext 2: I don't know\nContext 3: I don't know",
         False),
        ('\n[1] "Yes, answer is present"\n[2] "I don\'t know" (While the context does provide '
         "information that Girish Karnad voiced Kalam's autobiography", False),
        ("\nContext 1: No, answer is not present\nContext 2: Yes, answer is present - Mercury",
         False),
        ("I don't know (contexts [1], [2], [5])\n\nYes, answer is present (context [4])\n\n"
         "Answer: The Battle of Jutland", False),
        ("\nPlease answer the question based on the contexts provided.\n\nYes, answer is "
         "present in [1], [3], [5].\n\nNo, answer is not present in [2]", False),
        # every context without the answer: still a refusal
        ("\nContext 1: I don't know\nContext 2: No, answer is not present", True),
        ("\n1. I don't know.\n2. I don't know.", True),
        # the prompt's two options echoed, nothing chosen: no answer, as before
        ("Please select one of the following options:\n\nYes, answer is present\nI don't know",
         True),
        ('Please respond with "Yes, answer is present" or "I don\'t know" for each context.\n\n'
         "1. Yes, answer is present.\n2. I don't know.", True),
        # LOW 6: a generation failure is no answer, counted with the refusals as "" is
        ("Unable to generate response.", True),
        ("", True),
        # LOW 7: a line that is only "not found", in English and Hindi
        ("Not found.", True),
        ("Answer not found", True),
        ("नहीं मिला", True),
        ("नहीं मिले\n\nPlease answer the question based on the given contexts.", True),
        ("उत्तर नहीं मिला।", True),
        ("The body was not found until 1998.", False),
        ("उसे पुरस्कार नहीं मिला, पर उसका नाम सूची में था।", False),
        ("Context 3 says the treasure was never found.", False),
    ],
)  # fmt: skip
def test_listings_non_answers_and_not_found(reply: str, refused: bool) -> None:
    """Measured with the change on all NoMIRACL en and hi replies, same run (module
    docstring's labels): English precision 0.9844 → 0.9935, recall 1.0000 → 1.0000; Hindi
    0.9992 → 1.0000, 0.9968 → 0.9968. 49 of the 11,000 replies changed verdict, each read
    by hand: 20 became answers (12 per-context listings, 6 "I don't know (…) / Yes, answer is
    present (context [4])", 2 with a line "Yes, answer is present in [1] …" / "… -> <the
    answer>"), 29 refusals (26 "Unable to generate response.", 3 "नहीं मिला/मिले"; none of
    these 29 has a NoMIRACL label)."""
    assert RefusalDetector().is_refusal(reply) is refused


def test_answer_items_can_be_turned_off() -> None:
    listing = "Context 1: Yes, answer is present\nContext 2: I don't know"
    assert not RefusalDetector().is_refusal(listing)
    assert RefusalDetector(answer_items=()).is_refusal(listing)


@pytest.mark.parametrize(
    "reply",
    [  # reviewers (s38): generation failures passed on as the answer counted as answers
        "Error: upstream timeout",
        "Internal server error",
        "Request failed",
        "Request failed with status code 500",
        "HTTP 500 Internal Server Error",
        "502 Bad Gateway",
        "Error 503: Service Unavailable",
        "504 Gateway Time-out",
        "upstream request timeout",
        "An error occurred. Please try again later.",
        "Something went wrong",
        "Rate limit exceeded",
        "429 Too Many Requests",
        "  error : connection refused  ",
        "Failed to generate response",
    ],
)
def test_a_reply_that_is_only_a_failure_message_is_a_refusal(reply: str) -> None:
    """No answer reached the asker: counted with the refusals, as an empty reply and "Unable
    to generate response." are (``benchmarks.bench_refusal_patterns``: 38 of 38 such
    messages, none of ~48,000 answers, passages and questions of six data sets)."""
    assert RefusalDetector().is_refusal(reply)
    assert RefusalDetector([GENERATION_FAILURE]).is_refusal(reply)


@pytest.mark.parametrize(
    "reply",
    [  # a failure named inside an answer, or a bare code or status word, is an answer
        "Error 404 means the page was not found.",
        "The request failed because the card had expired.",
        "500",
        "Timeout is 30 seconds.",
        "The error occurred in 1990 when the bridge fell.",
        "Internal server error codes start with 5.",
        "Please try again later.",
        "Unavailable",
        "The service is available 24/7.",
        "No, the request failed only once.",
    ],
)
def test_a_failure_named_in_an_answer_is_no_failure_message(reply: str) -> None:
    assert not RefusalDetector([GENERATION_FAILURE]).is_refusal(reply)


def test_the_method_sentence_says_failures_count_as_refusals() -> None:
    """The reports' refusal method sentence says what README and the runbook say: a reply
    with no answer in it (empty, a generation failure) counts as a refusal."""
    method = refusal_rate_method(0, 5, refused_by=(0, 2))
    assert 'a reply with no answer in it (empty, "Unable to generate response."' in method
    assert 'an error message such as "Internal server error") counts as a refusal' in method
    assert "counts as a refusal" not in refusal_rate_method(5, 0)  # the flag decided: exact


def test_the_method_sentence_names_the_reader_of_the_texts(model: RefusalModel) -> None:
    """Session 39: with a :class:`RefusalModel` the sentence still said "phrase patterns"
    and quoted their NoMIRACL figures, for answers the model had read. It names what read
    the texts (the patterns, the model, or either) and, for a model, the languages it is
    measured in (against ``answer.refused`` on this traffic: goldwatch has no other
    measure of a user's model); the patterns' sentence is unchanged."""
    assert text_reader(RefusalDetector()) == "patterns"
    assert text_reader(RefusalDetector(model=model)) == "model"
    assert text_reader(RefusalDetector(model=model, combine="any")) == "model or patterns"
    patterns = refusal_rate_method(3, 2, refused_by=(1, 1))
    assert patterns == refusal_rate_method(3, 2, refused_by=(1, 1), reader="patterns",
                                           measured=["de"])  # fmt: skip
    assert patterns.startswith("answer.refused decided 3 answers (1 refused), phrase patterns 2")
    alone = refusal_rate_method(3, 2, refused_by=(1, 1), reader="model", measured=["de", "en"])
    assert alone.startswith(
        "answer.refused decided 3 answers (1 refused), the refusal model 2 "
        "(1 refused) (the refusal model, learnt from the user's own "
        "labelled replies, read these answers, not the phrase patterns"
    )
    assert "measured against answer.refused on this traffic in de, en only" in alone
    assert "NoMIRACL" not in alone and "phrase patterns not measured" not in alone
    assert "an empty or blank reply counts as a refusal" in alone
    unmeasured = refusal_rate_method(0, 2, reader="model")
    assert unmeasured.startswith("the refusal model decided all 2 answers (")
    assert "measured in no language: no answer on this traffic both sets answer.refused" in (
        unmeasured)  # fmt: skip
    either = refusal_rate_method(0, 2, reader="model or patterns", measured=["de"])
    assert either.startswith("the refusal model or phrase patterns decided all 2 answers (a "
                             "reply counts as a refusal when the refusal model (learnt from "
                             "the user's own labelled replies) or the phrase patterns read it "
                             "as one;")  # fmt: skip
    assert "in de only" in either and "NoMIRACL's LLM replies to English and Hindi" in either
    # the flag alone decided: no reader named, whichever it is
    assert refusal_rate_method(5, 0, reader="model") == refusal_rate_method(5, 0)


#: Trial 46's NoMIRACL "don't know" replies the patterns read as answers (F10): both say
#: "I don't know" for some contexts and "Yes, answer is present" for another.
MIXED_LISTINGS = (
    "Yes, answer is present in context [1].\nI don't know in context [2].\n"
    "I don't know in context [3].\nYes, answer is present in context [4].\nI don't know",
    "Yes, answer is present in context [1].\nI don't know for contexts [2], [3], [4], [5], "
    "[6], [7], [8], [9], and [10].",
)


def test_the_nomiracl_figures_say_what_they_were_measured_against() -> None:
    """Trial 46 (F10): "recall 1.00 on NoMIRACL's LLM replies" read as recall on every reply
    saying "don't know"; a user who labelled that way found 348 of 374. The figure is
    against NoMIRACL's own reading of each reply (the module docstring), which calls a reply
    that also says "Yes, answer is present" an answer or leaves it out; the sentence says so.
    By NoMIRACL's label (re-implemented here) the first listing is an answer (two "yes"),
    the second invalid (one), and the patterns read both as answers."""
    assert [nomiracl_label(t) for t in MIXED_LISTINGS] == [False, None]
    assert RefusalDetector().is_refusal_many(list(MIXED_LISTINGS)) == [False, False]
    for method in (refusal_rate_method(0, 5, refused_by=(0, 2)),
                   refusal_rate_method(3, 2, refused_by=(1, 1), reader="model or patterns",
                                       measured=["en"])):  # fmt: skip
        assert ("recall 1.00 on NoMIRACL's LLM replies to English and Hindi questions (the "
                "replies mostly English), against NoMIRACL's own reading of each reply: \"I "
                "don't know\" is a refusal, and a reply that also says \"Yes, answer is "
                "present\" is an answer or, with the other replies it reads as neither "
                "(1,809 of 11,000), left out") in method  # fmt: skip


@pytest.mark.slow
def test_the_left_out_count_in_the_method_sentence(shared_data: Path) -> None:
    """The "(1,809 of 11,000)" the sentence quotes: every reply of NoMIRACL's English and
    Hindi vanilla-prompt files, both subsets, and those with no label (invalid, empty or
    null) counted from the files by :func:`nomiracl_label`."""
    total = left_out = 0
    for lang in ("en", "hi"):
        for subset in ("non_relevant", "relevant"):
            path = shared_data / "nomiracl-baselines" / subset / f"{lang}.test.vanilla_prompt.jsonl"
            for line in path.read_text(encoding="utf-8").splitlines():
                for reply in json.loads(line)["results"].values():
                    total += 1
                    left_out += not (reply and reply.strip()) or nomiracl_label(reply) is None
    said = f"({left_out:,} of {total:,}), left out"
    assert said in refusal_rate_method(0, 5, refused_by=(0, 2)), said
