"""Trial 41 (M2): on a bilingual (en + hi) gold set without topic labels, the unsupervised
topic model's Hindi cluster was labelled with Hindi function words ("के, है, में") and
``topic-7`` had no label at all. Now no label term is a stop word of its text's language
(:func:`service.text.stop_words.stop_words`: stopwords-iso's lists, Hindi question words,
romanized Hindi) and no unsupervised topic is labelled with its bare id."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from service.text.stop_words import ENGLISH_STOP_WORDS, stop_words
from service.topics.config import TopicConfig
from service.topics.model import TopicInfo, TopicModel, _top_terms

FEES = [
    "how much is the tuition fee",
    "when is the fee payment deadline",
    "can I pay the fee in instalments",
    "what is the late fee for tuition",
]
EXAMS = [
    "when are the final exams",
    "where is the exam hall",
    "what is the exam timetable",
    "can I resit the exam",
]


def test_hindi_stop_words_are_no_label_terms() -> None:
    # trial 41's Hindi cluster: its c-TF-IDF top terms were के, है, में. By hand on these four
    # questions (one topic, so A = its word count L and w = c/L · ln(1 + L/c) orders by the
    # count c): के 3 (questions 2, 3, 4), है 3 (1, 2, 3), then 2 each: में, भारत, क्या, नदी; the
    # rest once (a topic of 4 needs a term in 2 of its questions). के and है tie and sort by
    # code point (क U+0915 < ह U+0939). With the languages, के, है, में and क्या (a question
    # word stopwords-iso's Hindi list lacks) are stop words: भारत and नदी are the terms.
    texts = ["भारत की सबसे लंबी नदी कौन सी है?", "हिमालय के पास भारत में क्या है?",
             "गंगा नदी के किनारे क्या है?", "दिल्ली में के बारे"]  # fmt: skip
    assigned = np.array([0, 0, 0, 0])
    ((plain, note),) = _top_terms(texts, assigned, 1, 3)
    assert plain == ("के", "है", "क्या") and note is None
    ((terms, note),) = _top_terms(texts, assigned, 1, 3, ["hi"] * 4)
    assert terms == ("नदी", "भारत") and note is None
    assert not set(terms) & stop_words("hi")


def test_a_topic_is_never_left_without_a_label() -> None:
    # topic 0: four questions sharing no word but stop words (trial 41's topic-7): left are
    # asa, larsson, largest, synagogue, sadr, azam, binary, search, one question each, every
    # one weighing 1/L · ln(1 + A/1): the first three by spelling, and the note says so.
    # topic 1: only English stop words and numbers: no term, and the note says why
    texts = [
        "Where was Asa Larsson from?",
        "Where is the largest synagogue?",
        "Who is Sadr Azam?",
        "What is binary search?",
        "what is the 2",
        "is it the 3",
    ]
    found = _top_terms(texts, np.array([0, 0, 0, 0, 1, 1]), 2, 3)
    (terms, note), (none, why) = found
    assert terms == ("asa", "azam", "binary") and note == "each term in one of its 4 questions"
    assert none == ()
    assert why == ("no term qualifies: every word of its 2 questions is a stop word, a number "
                   "or in more than half of the topics")  # fmt: skip


def test_the_label_says_its_note_and_is_never_a_bare_id() -> None:
    assert TopicInfo("topic-3", ("card", "lost"), 5, id=3).label == "topic-3: card, lost"
    once = TopicInfo("topic-7", ("asa", "azam", "binary", "search"), 4, id=7,
                     label_note="each term in one of its 4 questions")  # fmt: skip
    assert once.label == "topic-7: asa, azam, binary (each term in one of its 4 questions)"
    bare = TopicInfo("topic-2", (), 2, id=2, label_note="no term qualifies: why")
    assert bare.label == "topic-2 (no term qualifies: why)"
    assert TopicInfo("fees", (), 4).label == "fees"  # supervised: the label is the name


def test_the_note_is_saved_with_the_model(tmp_path: Path) -> None:
    # a fitted unsupervised model's topics each have terms or a note, none an English stop
    # word; a note in the fitted state survives a save and load (TopicInfo(**topic)), so a
    # served model's label is the fitted one
    config = TopicConfig(n_topics=2, novelty_percentile=10, novelty_hubness=0)
    model = TopicModel.fit(FEES + EXAMS, config)
    assert not model.supervised
    for topic in model.topics:
        assert topic.top_terms or topic.label_note, topic
        assert not set(topic.top_terms) & ENGLISH_STOP_WORDS
    state = model.fitted_state()
    state["topics"] = [dict(t) for t in state["topics"]]
    state["topics"][0]["label_note"] = "each term in one of its 4 questions"
    TopicModel(state, model.version).save(tmp_path / "t.joblib")
    loaded = TopicModel.load(tmp_path / "t.joblib")
    first = loaded.topics[0]
    assert first.label_note == "each term in one of its 4 questions"
    assert (
        first.label
        == f"{first.name}: {', '.join(first.top_terms[:3])} (each term in one of its 4 questions)"
    )
    assert [t.label for t in loaded.topics[1:]] == [t.label for t in model.topics[1:]]


def test_content_words_of_the_iso_lists_stay_label_terms() -> None:
    # review s41: stopwords-iso lists these as stop words; they name topics
    kept = {"es": "trabajo empleo tiempo estados lugar general",
            "it": "mondo vita anno paese stato", "ru": "время мир работа жизнь вода год страна",
            "pt": "trabalho estado tempo",
            "hi": "काम घर", "de": "jahr zeit tag"}  # fmt: skip
    for language, words in kept.items():
        assert not set(words.split()) & stop_words(language), language
    assert not {"काम", "घर"} & stop_words("mr")  # Marathi, pooled with Hindi
    assert {"de", "la", "que"} <= stop_words("es") and {"и", "в"} <= stop_words("ru")
    # romanized Hindi: its function words, not its content words (weather, work)
    assert {"hai", "kya", "ka"} <= stop_words("hi-Latn")
    assert not {"mausam", "kaam"} & stop_words("hi-Latn")
