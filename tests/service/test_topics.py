"""Topic model on the embedding layer: fitting, naming and labels, stable ids, novelty and its
quality, like-for-like gold counts, artefacts, the pipeline stage."""

from __future__ import annotations

import hashlib
import json
import math
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

from service.data.goldset import GoldSet, GoldSetError
from service.embeddings.model import default_embedder
from service.evaluation.detector_quality import roc_auc
from service.events import QueryLogEvent
from service.pipeline import Pipeline, Stage
from service.records import GoldQuestion
from service.runtime.analytics import fit_topic_model, topic_label_rule
from service.topics.model import (
    KIND,
    NOVEL,
    ArtefactError,
    TopicConfig,
    TopicModel,
    _mean_top_k,
    _top_k_similarity,
    embedding_texts,
    save_artefact,
    text_languages,
    topic_sort_key,
)
from service.topics.model import (
    _top_terms as _top_terms_noted,
)
from service.topics.stage import TopicStage

FEES = [
    "what is the hostel fee",
    "hostel fee per semester",
    "when is the tuition fee due",
    "late fee for tuition payment",
    "can I pay the fee in instalments",
    "fee refund after withdrawal",
]
EXAMS = [
    "when is the exam timetable published",
    "exam hall ticket download",
    "re-evaluation of exam answer sheet",
    "supplementary exam dates",
    "exam results announcement",
    "how many marks to pass the exam",
]
BUSES = [
    "which bus goes to the north campus",
    "college bus timings in the morning",
    "bus pass for students",
    "is there a bus on sunday",
    "bus route from the railway station",
    "last bus back from campus",
]
# The novelty figures below are worked out by hand without the hubness correction (its own
# maths: test_topics_hubness.py).
CONFIG = TopicConfig(n_topics=2, novelty_percentile=10, novelty_hubness=0)


def _content_name(texts: list[str]) -> str:
    """The content id of a topic of ``texts``, worked out here: the smallest first-8-bytes
    sha256 of a member's case-folded, whitespace-collapsed text, modulo 10,000."""
    hashes = [int(hashlib.sha256(" ".join(t.lower().split()).encode()).hexdigest()[:16], 16)
              for t in texts]  # fmt: skip
    return f"topic-{min(hashes) % 10_000}"


def _top_terms(*args: Any, **kwargs: Any) -> list[tuple[str, ...]]:
    """The terms of :func:`service.topics.model._top_terms`, without their notes."""
    return [terms for terms, _ in _top_terms_noted(*args, **kwargs)]


@pytest.fixture(scope="module")
def model() -> TopicModel:
    return TopicModel.fit(FEES + EXAMS, CONFIG)


def test_two_topics_separate_fees_from_exams(model: TopicModel) -> None:
    found = model.assign_many(["hostel fee refund", "exam results date"])
    assert found[0].nearest != found[1].nearest
    assert all(-1.0 <= a.similarity <= 1.0 for a in found)
    assert set(model.names) == {_content_name(FEES), _content_name(EXAMS)}
    assert found[0].nearest == _content_name(FEES)
    fee_topic = next(t for t in model.topics if t.name == found[0].nearest)
    assert fee_topic.top_terms[0] == "fee" and set(fee_topic.examples) <= set(FEES)
    assert fee_topic.label == f"{fee_topic.name}: {', '.join(fee_topic.top_terms[:3])}"
    assert sorted(t.size for t in model.topics) == [6, 6]


def test_default_topic_count_rule() -> None:
    texts = [f"{w} question number {i}" for i, w in enumerate(["fee", "exam", "bus"] * 10)]
    fitted = TopicModel.fit(texts, TopicConfig(max_topics=4))
    assert len(fitted.topics) == 4  # min(max_topics=4, round(sqrt(30)) = 5)


def test_names_from_config_by_topic_id() -> None:
    fees = int(_content_name(FEES).split("-")[1])
    named = TopicModel.fit(FEES + EXAMS, CONFIG.model_copy(update={"names": {fees: "fees"}}))
    assert set(named.names) == {"fees", _content_name(EXAMS)}
    topic = next(t for t in named.topics if t.name == "fees")
    assert topic.id == fees and topic.label.startswith("fees: ")


def test_topics_sort_numerically() -> None:
    """Twelve clusters: topic-10 and topic-11 come after topic-9, not after topic-1."""
    texts = FEES + EXAMS + BUSES
    fitted = TopicModel.fit(texts, TopicConfig(n_topics=12, novelty_percentile=0))
    ids = sorted(t.id for t in fitted.topics if t.id is not None)
    assert len(set(ids)) == 12 and fitted.names == tuple(f"topic-{i}" for i in ids)
    assert sorted(["topic-10", "topic-9", "topic-2"], key=topic_sort_key) == [
        "topic-2", "topic-9", "topic-10",
    ]  # fmt: skip


def _centred_gold(texts: list[str], rows: list[int] | None = None) -> list[list[float]]:
    """The gold vectors as the novelty score reads them, worked out here in float64: each
    vector minus the mean of the gold vectors (of ``rows`` only, when given), scaled to
    length 1."""
    vectors = default_embedder().embed(texts).astype(np.float64)
    kept = [vectors[i] for i in (rows if rows is not None else range(len(vectors)))]
    centre = [sum(column) / len(kept) for column in zip(*kept, strict=True)]
    out = []
    for vector in vectors:
        diff = [float(x) - c for x, c in zip(vector, centre, strict=True)]
        length = math.sqrt(sum(x * x for x in diff))
        out.append([x / length for x in diff])
    return out


def _dot(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


def _mean_of_top3(values: list[float]) -> float:
    top = sorted(values, reverse=True)[:3]
    return sum(top) / len(top)


def test_unrelated_question_is_novel_and_batch_equals_single(model: TopicModel) -> None:
    odd = "zebra xylophone quantum"
    assert model.assign(odd).topic == NOVEL and model.assign(odd).novel
    assert model.assign(odd).nearest in model.names
    batch = model.assign_many([odd, FEES[0]])
    single = model.assign(odd)  # the same up to float32 rounding of the batched product
    assert batch[0].topic == single.topic and batch[0].nearest == single.nearest
    assert batch[0].similarity == pytest.approx(single.similarity, abs=1e-6)
    assert batch[0].neighbour == pytest.approx(single.neighbour, abs=1e-6)
    assert not batch[1].novel and batch[1].neighbour == pytest.approx(1.0, abs=1e-5)
    assert model.assign_many([]) == []


def test_novelty_threshold_is_the_leave_one_out_percentile(model: TopicModel) -> None:
    """Worked out here: each gold question's best cosine similarity to the *other* eleven,
    then numpy's 10th percentile of the twelve (linear interpolation)."""
    vectors = default_embedder().embed(FEES + EXAMS).astype(np.float64)
    loo = [max(float(vectors[i] @ vectors[j]) for j in range(12) if j != i) for i in range(12)]
    ordered = sorted(loo)
    expected = ordered[1] + 0.1 * (ordered[2] - ordered[1])  # position 0.1 * 11 = 1.1
    assert model.threshold == pytest.approx(expected, abs=1e-5)


def test_novelty_quality_is_leave_one_topic_out_auc(model: TopicModel) -> None:
    """Positives: each question against the other topic's questions only; negatives: the same
    question against all other questions. ROC AUC recomputed here by pair counting."""
    vectors = default_embedder().embed(FEES + EXAMS).astype(np.float64)
    assigned = model.assign_many(FEES + EXAMS)
    topic = [a.nearest for a in assigned]
    pos, neg = [], []
    for i in range(12):
        others = [float(vectors[i] @ vectors[j]) for j in range(12) if j != i]
        other_topic = [float(vectors[i] @ vectors[j]) for j in range(12) if topic[j] != topic[i]]
        neg.append(1 - max(others))
        pos.append(1 - max(other_topic))
    pairs = [1.0 if p > n else 0.5 if p == n else 0.0 for p in pos for n in neg]
    quality = model.novelty_quality
    assert quality is not None and quality.n_pos == quality.n_neg == 12
    assert quality.auc == pytest.approx(sum(pairs) / len(pairs), abs=1e-6)
    assert quality.auc == pytest.approx(roc_auc(pos, neg), abs=1e-6)
    assert quality.low <= quality.auc <= quality.high


CENTRED = CONFIG.model_copy(update={"novelty_neighbours": 3, "novelty_centring": True})


@pytest.fixture(scope="module")
def centred() -> TopicModel:
    return TopicModel.fit(FEES + EXAMS, CENTRED)


def test_novelty_similarity_is_the_mean_of_the_3_nearest_centred_gold_questions(
    centred: TopicModel,
) -> None:
    """A gold question's own novelty similarity: itself (1.0) and its two nearest other gold
    questions, all centred on the gold mean — recomputed here from the raw vectors."""
    gold = _centred_gold(FEES + EXAMS)
    own = [_dot(gold[0], row) for row in gold]
    assert max(own) == pytest.approx(1.0)
    expected = _mean_of_top3(own)
    assert expected < 0.99  # not the nearest neighbour's 1.0 of before
    assert centred.assign(FEES[0]).neighbour == pytest.approx(expected, abs=1e-5)


def test_centred_novelty_threshold_is_the_leave_one_out_percentile(centred: TopicModel) -> None:
    """Worked out here: each gold question's mean centred cosine similarity to its 3 most
    similar *other* gold questions, then numpy's 10th percentile of the twelve (linear
    interpolation)."""
    gold = _centred_gold(FEES + EXAMS)
    loo = [_mean_of_top3([_dot(gold[i], gold[j]) for j in range(12) if j != i])
           for i in range(12)]  # fmt: skip
    ordered = sorted(loo)
    expected = ordered[1] + 0.1 * (ordered[2] - ordered[1])  # position 0.1 * 11 = 1.1
    assert centred.threshold == pytest.approx(expected, abs=1e-5)


@pytest.mark.parametrize("mixed", [False, True])
def test_centred_novelty_quality_is_leave_one_topic_out_auc(
    centred: TopicModel, mixed: bool
) -> None:
    """Positives: each question against the other topic's questions only, centred on *their*
    mean (the gold set without the question's topic); negatives: the same question against
    all other questions, centred on the whole gold set's mean (both: mean of the 3 nearest).
    ROC AUC recomputed here by pair counting. ``mixed``: supervised labels alternating over
    fees and exams, so the held-out topic's look-alikes stay in the others (an AUC below 1)."""
    gold = _centred_gold(FEES + EXAMS)
    if mixed:
        topic = ["a", "b"] * 6
        fitted = TopicModel.fit(FEES + EXAMS, CENTRED, labels=topic)
    else:
        fitted = centred
        topic = [a.nearest for a in centred.assign_many(FEES + EXAMS)]
    pos, neg = [], []
    for i in range(12):
        others = [_dot(gold[i], gold[j]) for j in range(12) if j != i]
        rest = [j for j in range(12) if topic[j] != topic[i]]
        without = _centred_gold(FEES + EXAMS, rest)
        other_topic = [_dot(without[i], without[j]) for j in rest]
        neg.append(1 - _mean_of_top3(others))
        pos.append(1 - _mean_of_top3(other_topic))
    pairs = [1.0 if p > n else 0.5 if p == n else 0.0 for p in pos for n in neg]
    quality = fitted.novelty_quality
    assert quality is not None and quality.n_pos == quality.n_neg == 12
    assert quality.auc == pytest.approx(sum(pairs) / len(pairs), abs=1e-6)
    assert quality.auc == pytest.approx(roc_auc(pos, neg), abs=1e-6)
    assert quality.low <= quality.auc <= quality.high
    assert quality.auc < 1  # the uncentred nearest neighbour of before: 1.0 unmixed


def test_one_neighbour_scores_by_the_nearest_centred_gold_question() -> None:
    fitted = TopicModel.fit(FEES + EXAMS, CONFIG.model_copy(update={"novelty_centring": True}))
    gold = _centred_gold(FEES + EXAMS)
    assert fitted.assign(EXAMS[2]).neighbour == pytest.approx(1.0, abs=1e-5)
    loo = sorted(max(_dot(gold[i], gold[j]) for j in range(12) if j != i) for i in range(12))
    assert fitted.threshold == pytest.approx(loo[1] + 0.1 * (loo[2] - loo[1]), abs=1e-5)


def test_an_artefact_of_before_keeps_its_uncentred_nearest_neighbour_score(
    centred: TopicModel,
) -> None:
    """A model state without ``novelty_centre``/``novelty_neighbours`` (artefacts written
    before them) scores by the plain nearest gold question, as it was calibrated."""
    vectors = default_embedder().embed(FEES + EXAMS)
    state = {k: v for k, v in centred._state.items()
             if k not in ("novelty_centre", "novelty_neighbours")}  # fmt: skip
    old = TopicModel({**state, "reference": vectors}, centred.version)
    question = "refund of the exam fee"
    q = default_embedder().embed([question]).astype(np.float64)[0]
    expected = max(float(q @ v) for v in vectors.astype(np.float64))
    assert old.novelty_neighbours == 1
    assert old.assign(question).neighbour == pytest.approx(expected, abs=1e-5)


def test_mean_top_k_ignores_held_out_entries() -> None:
    """Rows (k = 2): [0.9, 0.1, 0.5] → (0.9 + 0.5) / 2 = 0.7; [-inf, 0.3, -inf] → 0.3 (one
    finite entry); all -inf → -inf."""
    sims = np.array([[0.9, 0.1, 0.5], [-np.inf, 0.3, -np.inf], [-np.inf] * 3], np.float32)
    got = _mean_top_k(sims, 2)
    assert got[:2].tolist() == pytest.approx([0.7, 0.3]) and got[2] == -np.inf
    chunked = _top_k_similarity(
        np.eye(2, dtype=np.float32), np.array([[1, 0], [0.6, 0.8], [0, 1]], np.float32), 2, chunk=1
    )
    assert chunked.tolist() == pytest.approx([0.8, 0.9])  # (1 + .6) / 2, (1 + .8) / 2
    nearest = _top_k_similarity(
        np.eye(2, dtype=np.float32), np.array([[1, 0], [0.6, 0.8], [0, 1]], np.float32), 1, chunk=2
    )
    assert nearest.tolist() == pytest.approx([1.0, 1.0])


def test_supervised_topics_use_the_gold_labels() -> None:
    labels = ["fees"] * len(FEES) + ["exams"] * len(EXAMS)
    fitted = TopicModel.fit(FEES + EXAMS, CONFIG, labels=labels)
    assert fitted.supervised and fitted.names == ("exams", "fees")
    assert fitted.identity() is None  # the labels are the identities
    assert [a.nearest for a in fitted.assign_many(["fee refund", "exam results"])] == [
        "fees",
        "exams",
    ]
    assert fitted.labels() == {"exams": "exams", "fees": "fees"}


def test_top_terms_are_class_based_tfidf_without_stop_words() -> None:
    """Hand computation: topic 0 has card 2, lost 1, stolen 1 (4 words), the same for topic 1;
    A = 8 / 2 = 4; w(card) = 2/4 · ln(1 + 4/2) = 0.549 > w(lost) = 1/4 · ln(1 + 4/1) = 0.402.
    'my', 'the', 'is', 'a' are English stop words, '2' a number, 'x' a one-letter token."""
    texts = ["the card is lost", "my card is stolen x", "a exam date 2", "the exam hall"]
    terms = _top_terms(texts, np.array([0, 0, 1, 1]), 2, 5)
    assert terms == [("card", "lost", "stolen"), ("exam", "date", "hall")]


def test_function_words_of_a_few_german_texts_are_no_label_terms() -> None:
    """Trial finding 8 (sixteenth session): a gold set with 14 German rows (fewer than the
    50 a language needs for its data stop words) had topics labelled "für, ein". By hand:
    topic 0 has 12 words, topic 1 eleven, so A = 11.5; w(gebühr) = w(semester) = w(für) =
    2/12 · ln(1 + 11.5/2) = 0.318, w(hoch) = 1/12 · ln(1 + 11.5) = 0.210. With the
    languages, "für", "ein", "wie", "ist", "die", "das" (German function words) are dropped:
    gebühr, semester, hoch. Without them "für" ties "gebühr" and sorts first, as before. An
    English text keeps "war" (a German function word, an English content word). "hoch", in
    stopwords-iso's German list, stays a term: Latin-script languages keep the detector's
    function words alone (review s42: that list holds content words)."""
    texts = [
        "Wie hoch ist die Gebühr für ein Semester?",
        "Gebühr für das Semester",
        "Prüfung im Januar",
        "Wann ist die Prüfung im Januar?",
        "the war was long",
    ]
    assigned = np.array([0, 0, 1, 1, 1])
    german = ["de", "de", "de", "de", "en"]
    terms = _top_terms(texts, assigned, 2, 3, german)
    assert terms[0] == ("gebühr", "semester", "hoch")
    assert _top_terms(texts, assigned, 2, 3)[0] == ("für", "gebühr", "semester")
    assert "war" in _top_terms(["war war", "der Krieg"], np.array([0, 0]), 1, 3, ["en", "de"])[0]


def test_top_terms_of_real_topics_are_whole_clean_words(model: TopicModel) -> None:
    words = {w.lower() for text in FEES + EXAMS for w in text.replace("-", " ").split()}
    for topic in model.topics:
        assert topic.top_terms
        for term in topic.top_terms:
            assert term in words and term not in ENGLISH_STOP_WORDS and " " not in term


@pytest.mark.parametrize(
    ("texts", "labels", "message"),
    [
        (["a b", "c d"], None, "at least 3 texts"),
        (FEES, ["x"] * 5, "5 labels for 6 texts"),
        (FEES, ["x"] * 6, "at least 2 distinct labels"),
        (FEES, ["novel", "x"] * 3, "reserved"),
    ],
)
def test_fit_rejects_bad_input(texts: list[str], labels: list[str] | None, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        TopicModel.fit(texts, CONFIG, labels=labels)


def test_hinglish_questions_are_embedded_without_their_hindi_function_words() -> None:
    """'ka', 'dena', 'hai' are strong words of the Hinglish lexicon, 'ya' a weak one; the
    English question and a text of nothing but Hindi function words stay as they are."""
    assert embedding_texts([
        "Hostel ka fee semester wise dena hai ya yearly?",
        "Remind me to call the hostel office at 5 pm",
        "mujhe kab",
    ]) == ["Hostel fee semester wise yearly?", "Remind me to call the hostel office at 5 pm",
           "mujhe kab"]  # fmt: skip


def test_a_hinglish_question_finds_its_topic_by_its_content_words() -> None:
    """Gold: English fee and exam questions plus two Hinglish fee questions; the Hinglish exam
    questions share only Hindi function words with those and must go to exams (embedded with
    the function words, all three went to fees)."""
    gold_hinglish = ["mujhe hostel ka fee kab tak dena hai kya",
                     "kya mujhe late fee bhi dena padega"]  # fmt: skip
    texts = [*FEES, *gold_hinglish, *EXAMS]
    fitted = TopicModel.fit(texts, CONFIG, labels=["fees"] * 8 + ["exams"] * 6)
    probes = ["mujhe exam ka result kab tak milega kya", "kya mujhe exam dena padega",
              "mujhe bhi exam kab tak dena hai kya"]  # fmt: skip
    assert [a.nearest for a in fitted.assign_many(probes)] == ["exams"] * 3


# -- stable identities ---------------------------------------------------------------------


def test_refit_on_a_changed_gold_set_keeps_the_ids_through_json() -> None:
    """A restart with the gold set in another order (a cold k-means run may number the
    clusters differently) keeps every topic's id, given the identity read back from JSON."""
    first = TopicModel.fit(FEES + EXAMS + BUSES, TopicConfig(n_topics=3))
    identity = json.loads(json.dumps(first.identity()))
    again = TopicModel.fit((FEES + EXAMS + BUSES)[::-1], TopicConfig(n_topics=3),
                           previous=identity)  # fmt: skip
    assert again.names == first.names
    probes = ["hostel fee refund", "exam results", "bus to campus"]
    assert [a.topic for a in again.assign_many(probes)] == [
        a.topic for a in first.assign_many(probes)
    ]


def test_a_refit_given_the_previous_model_names_topics_as_a_fresh_fit() -> None:
    """Content ids need no history: a refit given the model it replaces and a fit without it
    name every topic alike (trial 46 F2: a replica restarted without its state numbered the
    topics differently); a third subject gets the content id of its questions."""
    before = TopicModel.fit(FEES + EXAMS, CONFIG)
    grown = CONFIG.model_copy(update={"n_topics": 3})
    after = TopicModel.fit(FEES + EXAMS + BUSES, grown, previous=before)
    fresh = TopicModel.fit((FEES + EXAMS + BUSES)[::-1], grown)
    assert after.names == fresh.names
    assert set(after.names) == {_content_name(FEES), _content_name(EXAMS), _content_name(BUSES)}
    assert after.assign("hostel fee").topic == before.assign("hostel fee").topic
    assert after.assign("bus timings").topic == _content_name(BUSES)
    assert after.identity()["scheme"] == "content"  # type: ignore[index]


def _legacy(model: TopicModel, ids: list[int], next_id: int) -> dict[str, Any]:
    """An identity as a goldwatch of before content ids stored it: ``model``'s centroids
    under ``ids``, no ``scheme``."""
    identity = dict(model.identity() or {})
    del identity["scheme"]
    return {**identity, "ids": ids, "next_id": next_id}


def test_an_identity_of_before_keeps_its_ids_where_a_centroid_matches() -> None:
    """The upgrade: the stored ids of before win where a new centroid matches (cosine >= 0.8),
    the model says so (``matched``) and keeps matching at the next refit; with
    ``id_min_similarity`` 1.0 neither moved centroid matches and both get content ids."""
    before = TopicModel.fit(FEES + EXAMS, CONFIG)
    fee = before.names.index(_content_name(FEES))
    identity = _legacy(before, [7 if i == fee else 3 for i in range(2)], 8)
    more = FEES + EXAMS + ["fee receipt", "exam seat"]
    after = TopicModel.fit(more, CONFIG, previous=json.loads(json.dumps(identity)))
    assert after.assign("hostel fee").topic == "topic-7"
    assert after.assign("exam dates").topic == "topic-3"
    assert after.identity()["scheme"] == "matched" and after.next_id == 8  # type: ignore[index]
    again = TopicModel.fit(more[::-1], CONFIG, previous=after)
    assert again.names == after.names
    strict = CONFIG.model_copy(update={"id_min_similarity": 1.0})
    moved = TopicModel.fit(more, strict, previous=identity)
    assert set(moved.names) == {_content_name([*FEES, "fee receipt"]),
                                _content_name([*EXAMS, "exam seat"])}  # fmt: skip
    assert moved.identity()["scheme"] == "content"  # type: ignore[index]


def test_an_identity_from_another_embedder_is_not_matched() -> None:
    before = TopicModel.fit(FEES + EXAMS, CONFIG)
    identity = {**_legacy(before, [0, 1], 2), "embedder": "tfidf:other"}
    after = TopicModel.fit(FEES + EXAMS, CONFIG, previous=identity)
    assert set(after.names) == {_content_name(FEES), _content_name(EXAMS)}


def test_accepted_rows_join_the_written_topics_and_move_no_centroid() -> None:
    """Topics are fitted on the written rows: an accepted in-domain question (and two) joins
    its nearest topic, the names and the centroids stay (the same assignment key)."""
    before = TopicModel.fit(FEES + EXAMS + BUSES, TopicConfig())
    for extra in (
        ["can the exam fee be paid online"],
        ["can the exam fee be paid online", "bus stop near the library"],
    ):
        after = TopicModel.fit(FEES + EXAMS + BUSES + extra, TopicConfig(),
                               accepted=[False] * 18 + [True] * len(extra))  # fmt: skip
        assert after.names == before.names
        assert after.assignment_key() == before.assignment_key()
        assert sum(t.size for t in after.topics) == 18 + len(extra)
    # the same question written by the user is a hand edit: a written row is fitted on
    edited = TopicModel.fit(FEES + EXAMS + BUSES + ["can the exam fee be paid online"],
                            TopicConfig())  # fmt: skip
    assert edited.assignment_key() != before.assignment_key()


def test_an_accept_moves_no_language_centre() -> None:
    """With ``language_centring`` the centres are the written rows' (review s48-f2: centres
    of every row moved with each accept, and with them every centroid and the assignment
    key, restarting the topic windows): an accepted in-domain question leaves the model's
    assignment key as it was, unsupervised and supervised (whose fit never reads an accepted
    row: it has no topic)."""
    config = TopicConfig(language_centring=True)
    before = TopicModel.fit(FEES + EXAMS + BUSES, config)
    after = TopicModel.fit(FEES + EXAMS + BUSES + ["can the exam fee be paid online"], config,
                           accepted=[False] * 18 + [True])  # fmt: skip
    assert after.names == before.names
    assert after.assignment_key() == before.assignment_key()
    labelled = [(t, "fees") for t in FEES] + [(t, "exams") for t in EXAMS]
    supervised = fit_topic_model(_gold(labelled), config=config)
    accepted = GoldSet((*_gold(labelled), GoldQuestion("a-0", "can the exam fee be paid online",
                                                       ("p-1",), harvest_id="c-0")))  # fmt: skip
    grown = fit_topic_model(accepted, config=config)
    assert grown.supervised and grown.assignment_key() == supervised.assignment_key()


def test_a_close_group_of_accepted_rows_far_from_every_topic_is_a_topic() -> None:
    """Six accepted bus questions next to 12 written fee and exam rows (2 topics of 6: the bar
    is max(3, ceil(6 / 2)) = 3 rows) make a topic of their own, named by their content; two
    accepted bus questions are under the bar and join a written topic."""
    written = FEES + EXAMS
    grown = TopicModel.fit(written + BUSES, CONFIG, accepted=[False] * 12 + [True] * 6)
    assert set(grown.names) == {_content_name(FEES), _content_name(EXAMS), _content_name(BUSES)}
    assert [a.nearest for a in grown.assign_many(BUSES)] == [_content_name(BUSES)] * 6
    few = TopicModel.fit(written + BUSES[:2], CONFIG, accepted=[False] * 12 + [True] * 2)
    assert set(few.names) == {_content_name(FEES), _content_name(EXAMS)}


# -- like-for-like gold counts -------------------------------------------------------------


def test_gold_counts_are_cross_validated_for_supervised_topics() -> None:
    """A label with one gold row can never be predicted for that row once it is held out, so
    the gold counts (as live traffic would see that question) give it 0 rows."""
    texts = [*FEES, *EXAMS, "where can I park my car"]
    labels = ["fees"] * 6 + ["exams"] * 6 + ["parking"]
    config = CONFIG.model_copy(update={"novelty_percentile": 0, "cv_min_class": 1})
    fitted = TopicModel.fit(texts, config, labels=labels)
    counts = fitted.gold_counts(texts, labels)
    assert counts.get("parking", 0) == 0 and sum(counts.values()) == 13
    assert counts["fees"] >= 6 and counts["exams"] >= 6
    assert fitted.assign("where can I park my car").topic == "parking"  # in-sample it would


def test_gold_rows_of_labels_under_cv_min_class_are_counted_in_sample() -> None:
    """Default ``cv_min_class`` 10: every label here is smaller, so each row gets the fitted
    model's own prediction — parking's one row is parking, as a live repeat of it would be."""
    texts = [*FEES, *EXAMS, "where can I park my car"]
    labels = ["fees"] * 6 + ["exams"] * 6 + ["parking"]
    fitted = TopicModel.fit(texts, CONFIG.model_copy(update={"novelty_percentile": 0}),
                            labels=labels)  # fmt: skip
    expected: dict[str, int] = {}
    for found in fitted.assign_many(texts):
        expected[found.nearest] = expected.get(found.nearest, 0) + 1
    assert fitted.gold_counts(texts, labels) == expected and expected["parking"] == 1


def test_gold_counts_flag_novel_rows_leave_one_out(model: TopicModel) -> None:
    """With the 10th-percentile threshold of 12 leave-one-out similarities (position 1.1), two
    gold rows lie below it: 2 novel, the other 10 by their nearest centroid."""
    counts = model.gold_counts(FEES + EXAMS)
    assert counts[NOVEL] == 2 and sum(counts.values()) == 12
    assert model.gold_counts([]) == {}


# -- artefacts -----------------------------------------------------------------------------


def test_save_load_round_trip_and_version(model: TopicModel, tmp_path: Path) -> None:
    path = tmp_path / "topics.joblib"
    model.save(path)
    loaded = TopicModel.load(path)
    assert loaded.version == model.version and len(model.version) == 12
    texts = ["hostel fee refund", "zebra xylophone"]
    assert loaded.assign_many(texts) == model.assign_many(texts)
    assert loaded.topics == model.topics and loaded.novelty_quality == model.novelty_quality
    other = TopicModel.fit(FEES + EXAMS[:-1], CONFIG)
    assert other.version != model.version
    again = TopicModel.fit(FEES + EXAMS, CONFIG)
    assert again.version == model.version


def test_load_refuses_other_sklearn_major_old_lsa_models_and_other_files(tmp_path: Path) -> None:
    path = tmp_path / "old.joblib"
    save_artefact(path, KIND, "abc", {"x": 1})
    lines = path.read_bytes().split(b"\n", 1)
    header = json.loads(lines[0]) | {"sklearn": "0.24.2"}
    path.write_bytes(json.dumps(header).encode() + b"\n" + lines[1])
    with pytest.raises(ArtefactError, match=r"scikit-learn 0\.24\.2.*different major"):
        TopicModel.load(path)
    save_artefact(path, "refusal", "abc", {"x": 1})
    with pytest.raises(ArtefactError, match=f"'refusal' model, not '{KIND}'"):
        TopicModel.load(path)
    save_artefact(path, "topics", "abc", {"pipeline": None})  # a TF-IDF/LSA model of before
    with pytest.raises(ArtefactError, match=f"'topics' model, not '{KIND}'"):
        TopicModel.load(path)
    save_artefact(path, KIND, "abc", {"x": 1})
    with pytest.raises(ArtefactError, match="unknown topic-model payload"):
        TopicModel.load(path)
    path.write_bytes(b"\x80\x04junk")
    with pytest.raises(ArtefactError, match="not a goldwatch model artefact"):
        TopicModel.load(path)


def test_load_refuses_a_model_fitted_with_another_embedder(
    model: TopicModel, tmp_path: Path
) -> None:
    class Other:
        name, dim = "other:model:256", 256

        def embed(self, texts: list[str]) -> np.ndarray:  # pragma: no cover - never called
            raise AssertionError

    path = tmp_path / "topics.joblib"
    model.save(path)
    with pytest.raises(ArtefactError, match="embedder 'wordllama.*running 'other:model:256'"):
        TopicModel.load(path, Other())


def test_stage_annotates_each_event(model: TopicModel) -> None:
    at = datetime(2026, 11, 29, tzinfo=UTC)
    questions = ["hostel fee refund", "zebra xylophone quantum"]
    events = [
        QueryLogEvent(event_id=f"e-{i}", timestamp=at, question=q) for i, q in enumerate(questions)
    ]
    stage = TopicStage(model)
    assert isinstance(stage, Stage)
    batch = Pipeline([stage]).process(events, source="file")
    assert batch.annotations[1]["topic"] == NOVEL
    assert batch.annotations[0]["topic"] in model.names
    assert isinstance(batch.annotations[0]["topic_similarity"], float)
    assert not math.isnan(batch.annotations[0]["topic_similarity"])


#: Function words from grammar, not from the data: German articles, pronouns, prepositions,
#: auxiliaries and question words; Hindi postpositions, auxiliaries and question words.
GERMAN_FUNCTION_WORDS = {"der", "die", "das", "den", "dem", "des", "ein", "eine", "und", "in",
                         "im", "von", "zu", "mit", "ist", "war", "wurde", "hat", "wie", "wer",
                         "was", "wann", "wo", "welche", "viele"}  # fmt: skip
HINDI_FUNCTION_WORDS = {"का", "की", "के", "में", "ने", "को", "से", "पर", "है", "हैं", "था", "थे",
                        "थी", "क्या", "किस", "कौन", "कितने", "कब", "और"}  # fmt: skip


def test_language_clusters_are_labelled_by_subject_not_function_words(shared_data: Path) -> None:
    """Trial finding 10 on real XQuAD questions (Super Bowl 50, Warsaw, Normans in English,
    German and Hindi), one topic per language and article, as an English-centric embedding
    splits them. Without the languages, the German and Hindi labels were function words
    ("der, wie, den", "में, के, ने"); with them, each label holds fewer (at most one: "wann",
    "कब" are what the Warsaw questions ask) and names its article; English is unchanged."""
    articles = {"Super_Bowl_50": ("bowl", "बाउल"), "Warsaw": ("warschau", "वारसॉ"),
                "Normans": ("normannen", "नॉर्मन्स")}  # fmt: skip
    texts: list[str] = []
    topics: list[int] = []
    for offset, lang in ((0, "en"), (3, "de"), (6, "hi")):
        data = json.loads((shared_data / "xquad" / f"xquad.{lang}.json").read_text())
        for article in data["data"]:
            if article["title"] in articles:
                for qa in (qa for p in article["paragraphs"] for qa in p["qas"]):
                    texts.append(qa["question"])
                    topics.append(offset + list(articles).index(article["title"]))
    assigned = np.array(topics)
    before = _top_terms(texts, assigned, 9, 8)
    after = _top_terms(texts, assigned, 9, 8, text_languages(texts))
    assert after[:3] == before[:3]
    for topic, names in enumerate(articles.values()):
        for lang, words in ((1, GERMAN_FUNCTION_WORDS), (2, HINDI_FUNCTION_WORDS)):
            old, new = before[3 * lang + topic][:3], after[3 * lang + topic][:3]
            assert len(set(new) & words) < len(set(old) & words) and len(set(new) & words) <= 1
            assert any(term.startswith(names[lang - 1]) for term in new), new
    assert before[3][0] in GERMAN_FUNCTION_WORDS and before[6][0] in HINDI_FUNCTION_WORDS


def test_devanagari_sentence_ends_are_not_part_of_label_words() -> None:
    # U+0964 (danda) ends Hindi sentences; "थे।" was a label term beside "थे"
    terms = _top_terms(["वे वहां थे।", "वे कहां थे", "टेस्ला कंपनी।", "टेस्ला कार"], np.array([0, 0, 1, 1]),
                       2, 5)  # fmt: skip
    assert all("।" not in term for topic in terms for term in topic)
    assert "थे" in terms[0] and "टेस्ला" in terms[1]


# -- partly labelled gold sets ---------------------------------------------------------------


def _gold(rows: list[tuple[str, str | None]]) -> GoldSet:
    return GoldSet(tuple(GoldQuestion(f"q-{i}", text, ("p-1",), topic=topic)
                         for i, (text, topic) in enumerate(rows)))  # fmt: skip


def test_one_gold_row_without_a_topic_keeps_the_labels_as_topics() -> None:
    """An accepted suggestion is written without a topic (what a person did not confirm is no
    label). That row must not turn the gold set's labels into clusters — a new user saw the
    gold side become topic-0…7 while live traffic kept the old labels, and topic drift fired
    on unchanged traffic. The labelled rows train; the unlabelled one is counted as live
    traffic is, by the model's prediction: 'hostel fee refund' is a fees question."""
    labelled = [(t, "fees") for t in FEES] + [(t, "exams") for t in EXAMS]
    config = CONFIG.model_copy(update={"novelty_percentile": 0})
    before = fit_topic_model(_gold(labelled), config=config)
    after = fit_topic_model(_gold([*labelled, ("hostel fee refund", None)]), config=config)
    assert before.supervised and after.supervised and after.names == ("exams", "fees")
    assert after.version == before.version  # the same fit: the new row is not trained on
    rows = [*labelled, ("hostel fee refund", None)]
    counts = after.gold_counts([t for t, _ in rows], [label for _, label in rows])
    in_sample = before.gold_counts([t for t, _ in labelled], [label for _, label in labelled])
    assert counts == {**in_sample, "fees": in_sample["fees"] + 1}
    assert after.assign("hostel fee refund").topic == "fees"


def test_one_label_on_every_labelled_row_is_a_gold_set_error_naming_the_way_out() -> None:
    """A new user's single-topic gold set ended replay in a traceback; now it is a gold-set
    error (the CLI prints it and exits 2) saying what to do, without echoing the label."""
    gold = _gold([(t, "fees") for t in FEES] + [("exam hall ticket", None)])
    with pytest.raises(GoldSetError) as caught:
        fit_topic_model(gold, config=CONFIG)
    message = str(caught.value)
    assert "need at least 2 distinct labels" in message and "use_gold_topics: false" in message
    assert "'fees'" not in message
    assert fit_topic_model(gold, config=CONFIG, use_gold_topics=False).supervised is False


def test_a_few_labelled_rows_on_an_unlabelled_gold_set_give_clusters_and_a_notice() -> None:
    """Trial user5: one accept with the documented optional ``topic`` on a gold set of 55
    unlabelled rows made the gold set unloadable (every start, replay and config check exit
    2). One labelled row among 12 unlabelled answerable ones cannot be the topics (every live
    question would be that topic or novel): the topics are the clusters of all 13 questions,
    the same fit as without the label, and a notice says how many rows would be needed."""
    rows = [(t, None) for t in FEES + EXAMS] + [("when does the library close", "library")]
    model = fit_topic_model(_gold(rows), config=CONFIG)
    assert model.supervised is False and len(model.names) == 2  # CONFIG.n_topics
    unlabelled = TopicModel.fit([t for t, _ in rows], CONFIG)
    assert model.version == unlabelled.version  # the label is ignored, not trained on
    notice = topic_label_rule(_gold(rows)).notice
    assert notice is not None and "1 of 13 gold rows carry a topic label" in notice
    assert "they need 12" in notice and "library" not in notice  # 12 unlabelled answerable


def test_labels_are_topics_once_labelled_rows_match_the_answerable_unlabelled_ones() -> None:
    """The threshold: labelled rows >= max(3, answerable rows without a label); unanswerable
    rows without one do not count against the labels."""

    def rows(labelled: int, unlabelled: int, unanswerable: int = 0) -> list[GoldQuestion]:
        out = [GoldQuestion(f"l-{i}", "?", ("p-1",), topic=("a", "b")[i % 2])
               for i in range(labelled)]  # fmt: skip
        out += [GoldQuestion(f"u-{i}", "?", ("p-1",)) for i in range(unlabelled)]
        return out + [GoldQuestion(f"n-{i}", "?", (), kind="unanswerable")
                      for i in range(unanswerable)]  # fmt: skip

    assert topic_label_rule(rows(6, 6, 4)) == (True, None, None)
    assert topic_label_rule(rows(6, 7)).supervised is False
    assert "they need 7" in str(topic_label_rule(rows(6, 7)).notice)
    assert topic_label_rule(rows(2, 0)).supervised is False  # fewer than 3 labelled rows
    assert topic_label_rule(rows(6, 7), use_gold_topics=False) == (False, None, None)
    assert topic_label_rule(rows(0, 7)) == (False, None, None)  # no labels: no notice


def test_pii_placeholders_are_no_label_terms() -> None:
    """Trial 9: accepting a gold question "... (asked by <EMAIL>)" named a topic "topic-6:
    asked, city, email". Every scrubbed-data placeholder is left out of the terms; the plain
    word stays one ("change my email")."""
    texts = ["Which city hosts the fair? (asked by <EMAIL>)",
             "Which city has the fair, call <PHONE> or <EMAIL>",
             "Fair city tickets <NAME> <EMAIL> <CARD>",
             "How do I change my email address?", "Where is the email address form?"]  # fmt: skip
    terms = _top_terms(texts, np.array([0, 0, 0, 1, 1]), 2, 10)
    # topic 0's words by hand: city 3, fair 3, asked 1, hosts 1, tickets 1 ("which", "has",
    # "call", "by", "or" are stop words; no placeholder)
    assert sorted(terms[0]) == ["asked", "city", "fair", "hosts", "tickets"]
    assert {"email", "address"} <= set(terms[1])  # the word itself, typed by the asker
