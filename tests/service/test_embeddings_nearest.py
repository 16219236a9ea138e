"""The nearest gold similarities the out-of-scope detector computes, taken by the topic
stage's novelty check instead of a second product (:mod:`service.embeddings.nearest`)."""

from __future__ import annotations

import types
from collections.abc import Sequence

import numpy as np
import pytest

from service.data.corpus import load_corpus
from service.data.goldset import GoldSet, load_gold_set
from service.demo import demo_path
from service.embeddings.model import CachedEmbedder, default_embedder
from service.embeddings.nearest import NearestMemo
from service.records import GoldQuestion
from service.refusals.scope import EmbeddingScope
from service.refusals.stage import EmbeddingScopeStage
from service.runtime.analytics import build_analytics
from service.runtime.live import known_index
from service.settings import AnalyticsConfig
from service.topics.model import TopicConfig, TopicModel, embedding_texts
from service.topics.stage import TopicStage

FEES = ["what is the hostel fee", "hostel fee per semester", "when is the tuition fee due",
        "late fee for tuition payment", "fee refund after withdrawal"]  # fmt: skip
EXAMS = ["when is the exam timetable published", "exam hall ticket download",
         "supplementary exam dates", "exam results announcement"]  # fmt: skip


def test_recall_is_by_text_and_reference_content_of_the_last_batch_only() -> None:
    memo = NearestMemo()
    gold = np.array([[1, 0], [0, 1]], dtype=np.float32)
    memo.remember(gold, ["a", "b"], np.array([0.5, 0.25]))
    # an equal matrix held by another object is the same reference
    assert memo.recall(gold.copy(), ["b", "c", "a"]) == [0.25, None, 0.5]
    other = gold.copy()
    other[0, 0] = 0.5
    assert memo.recall(other, ["a"]) == [None]  # another content
    assert memo.recall(gold.astype(np.float64), ["a"]) == [None]  # another dtype
    memo.remember(gold, ["c"], np.array([0.75]))
    assert memo.recall(gold, ["a", "c"]) == [None, 0.75]  # the last batch replaced the first
    assert (memo.hits, memo.misses) == (3, 4)
    with pytest.raises(ValueError, match="2 values for 1 texts"):
        memo.remember(gold, ["a"], np.array([0.5, 0.5]))


def test_a_reference_is_its_multiset_of_rows_whatever_their_order() -> None:
    # the out-of-scope detector holds its gold rows in canonical order, the topic model in
    # the file's: the nearest similarity to a set of rows does not depend on their order
    memo = NearestMemo()
    gold = np.array([[1, 0], [0, 1], [0.6, 0.8]], dtype=np.float32)
    memo.remember(gold, ["a"], np.array([0.5]))
    assert memo.recall(gold[[2, 0, 1]], ["a"]) == [0.5]
    assert memo.recall(gold[::-1].copy(), ["a"]) == [0.5]
    assert memo.recall(gold[[0, 0, 1]], ["a"]) == [None]  # a row twice, one missing
    assert memo.recall(gold[:, ::-1].copy(), ["a"]) == [None]  # columns swapped: other rows
    assert memo.recall(gold.reshape(2, 3), ["a"]) == [None]  # the same bytes, other rows


class TableEmbedder:
    """A fixed unit vector per text (angles in the plane)."""

    name = "table"
    dim = 2

    def __init__(self, angles: dict[str, float]) -> None:
        self.table = {text: np.array([np.cos(np.radians(a)), np.sin(np.radians(a))], np.float32)
                      for text, a in angles.items()}  # fmt: skip

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return np.stack([self.table[t] for t in texts]) if texts else np.zeros((0, 2), np.float32)


def test_the_scope_detector_remembers_each_questions_nearest_gold_question() -> None:
    # answerable at 0° and 10°, unanswerable at 80° and 90°: a question at 30° is nearest
    # to 10° (cos 20°), one at 85° to 80° and 90° (cos 5°), one at 45° to 10° and 80° (cos 35°)
    gold = [GoldQuestion("a0", "in 0", ("p",)), GoldQuestion("a1", "in 1", ("p",)),
            GoldQuestion("u0", "out 0", ()), GoldQuestion("u1", "out 1", ())]  # fmt: skip
    angles = {"in 0": 0, "in 1": 10, "out 0": 80, "out 1": 90, "x": 30, "y": 85, "z": 45}
    embedder = CachedEmbedder(TableEmbedder(angles))
    detector = EmbeddingScope(embedder, gold, n_boot=0)
    detector.score_support(["x", "y", "z"])
    cos = [float(np.cos(np.radians(a))) for a in (20, 5, 35)]
    found = embedder.nearest.recall(detector.gold_vectors.copy(), ["x", "y", "z", "in 0"])
    assert found[:3] == pytest.approx(cos, abs=1e-6) and found[3] is None


@pytest.fixture(scope="module")
def model() -> TopicModel:
    # the defaults: uncentred, k = 1, no hubness penalty
    return TopicModel.fit(FEES + EXAMS, TopicConfig(n_topics=2))


def test_the_topic_novelty_takes_a_remembered_value_for_equal_gold_vectors(
    model: TopicModel,
) -> None:
    embedder = default_embedder()
    gold = embedder.embed(embedding_texts(FEES + EXAMS))  # the model's reference, re-embedded
    # a value no product gives (the question's true nearest similarity is far from it), so
    # the novelty read from the memo is told apart from one computed
    embedder.nearest.remember(gold, ["bus pass for students"], np.array([0.875]))
    found = model.assign_many(["bus pass for students", "exam hall ticket"])
    assert found[0].neighbour == 0.875
    q = embedder.embed(["exam hall ticket"]).astype(np.float64)[0]
    by_hand = max(float(q @ v) for v in gold.astype(np.float64))
    assert found[1].neighbour == pytest.approx(by_hand, abs=1e-6)
    embedder.nearest.remember(gold[:-1], ["exam results"], np.array([0.875]))  # other rows
    assert model.assign("exam results").neighbour != 0.875


def test_a_centred_topic_model_never_takes_the_remembered_value() -> None:
    centred = TopicModel.fit(FEES + EXAMS, TopicConfig(n_topics=2, novelty_centring=True))
    embedder = default_embedder()
    gold = embedder.embed(embedding_texts(FEES + EXAMS))
    embedder.nearest.remember(gold, ["bus pass for students"], np.array([0.875]))
    assert centred.assign("bus pass for students").neighbour != 0.875


def _memo_hits(scope: EmbeddingScopeStage, topic: TopicStage) -> int:
    """Run one two-question batch through the scope stage, then the topic stage; the topic
    model's nearest-similarity memo hits it counted (2: both taken from the scope's products)."""
    questions = ["is there a bus from the railway station to campus",
                 "Can I bring my pet iguana to the convocation ceremony?"]  # fmt: skip
    events = [types.SimpleNamespace(question=q, retrieval=None) for q in questions]
    notes: list[dict[str, object]] = [{"refused": False, "language": "en"} for _ in questions]
    batch = types.SimpleNamespace(events=events, annotations=notes)
    memo = topic.model.embedder.nearest  # type: ignore[attr-defined]
    hits = memo.hits
    scope.process(batch)  # type: ignore[arg-type]
    topic.process(batch)  # type: ignore[arg-type]
    return int(memo.hits - hits)


@pytest.mark.slow
def test_the_scope_stage_runs_before_the_topic_stage_which_takes_its_values() -> None:
    demo = load_gold_set(demo_path("gold.jsonl"))
    # without its Hinglish rows, which the topic model embeds without their Hindi function
    # words (embedding_texts): its gold vectors are then the detector's, and shared
    gold = GoldSet(tuple(q for q in demo if embedding_texts([q.question]) == [q.question]))
    assert 0 < len(gold) < len(demo)
    analytics = build_analytics(AnalyticsConfig(), gold, load_corpus(demo_path("corpus.jsonl")))
    names = [stage.name for stage in analytics.stages]
    assert names.index("scope") < names.index("topic")
    scope = next(st for st in analytics.stages if isinstance(st, EmbeddingScopeStage))
    topic = next(st for st in analytics.stages if isinstance(st, TopicStage))
    assert _memo_hits(scope, topic) == 2  # both questions' novelty from the scope's products


@pytest.mark.slow
def test_the_sharing_holds_when_the_file_order_differs_from_the_canonical_one() -> None:
    """The scope stage fits and matches on its rows in canonical order (trial 49, H1), and
    so does the topic model (trial 50, M1: by text first, as the scope's order): with the
    demo's rows reversed the two gold matrices are still equal, row for row, the topic stage
    takes the scope's nearest similarities, and live quality still gets the scope stage's
    known-question index for the set in either order."""
    demo = load_gold_set(demo_path("gold.jsonl"))
    rows = [q for q in demo if embedding_texts([q.question]) == [q.question]][::-1]
    gold = GoldSet(tuple(rows))
    analytics = build_analytics(AnalyticsConfig(), gold, load_corpus(demo_path("corpus.jsonl")))
    scope = next(st for st in analytics.stages if isinstance(st, EmbeddingScopeStage))
    topic = next(st for st in analytics.stages if isinstance(st, TopicStage))
    assert [q.id for q in scope.known.index.gold] != [q.id for q in gold]  # type: ignore[union-attr]
    scope_vectors = scope.detector.gold_vectors
    topic_vectors = topic.model._reference
    assert scope_vectors.shape == topic_vectors.shape
    assert np.array_equal(scope_vectors, topic_vectors)  # the file's order read by neither ...
    assert _memo_hits(scope, topic) == 2  # ... and one product for both stages
    config = AnalyticsConfig()
    for order in (rows, rows[::-1]):
        index = known_index(analytics, GoldSet(tuple(order)), config.scope_known_threshold)
        assert index is scope.known.index  # type: ignore[union-attr]
