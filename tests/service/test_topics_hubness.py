"""The hubness correction of topic novelty (``analytics.topics.novelty_hubness``, CSLS's
gold-side term), on four hand-placed 2-D gold vectors whose figures are worked out by hand.

Gold (unit vectors): a = (1, 0) and b = (0.6, 0.8) labelled ``x``; c = (0, 1) and
d = (−0.6, 0.8) labelled ``y``. Cosines: ab 0.6, ac 0, ad −0.6, bc 0.8, bd 0.28, cd 0.8.
With h = 1 each gold question's penalty is half its largest cosine to another gold question:
a 0.3, b 0.4, c 0.4, d 0.4.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

from service.topics.config import TopicConfig
from service.topics.model import TopicModel, _hubness_penalty

VECTORS = {
    "refund of the fee": (1.0, 0.0),
    "fee refund deadline": (0.6, 0.8),
    "exam timetable": (0.0, 1.0),
    "exam results date": (-0.6, 0.8),
    "question": (0.8, 0.6),
}
GOLD = list(VECTORS)[:4]
LABELS = ["x", "x", "y", "y"]
CONFIG = TopicConfig(novelty_hubness=1, novelty_percentile=10)


class TableEmbedder:
    """A fixed unit vector per text (unit tests of this module only)."""

    name = "table"
    dim = 2

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return np.array([VECTORS[t] for t in texts], dtype=np.float32)


@pytest.fixture(scope="module")
def model() -> TopicModel:
    return TopicModel.fit(GOLD, CONFIG, labels=LABELS, embedder=TableEmbedder())


def test_penalty_is_half_the_mean_similarity_to_the_h_nearest_other_gold_questions() -> None:
    gold = TableEmbedder().embed(GOLD)
    assert _hubness_penalty(gold, 1) == pytest.approx([0.3, 0.4, 0.4, 0.4], abs=1e-6)
    # h = 2: a (0.6 + 0) / 4, b (0.8 + 0.6) / 4, c (0.8 + 0.8) / 4, d (0.8 + 0.28) / 4
    assert _hubness_penalty(gold, 2) == pytest.approx([0.15, 0.35, 0.4, 0.27], abs=1e-6)
    assert _hubness_penalty(gold[:1], 3).tolist() == [0.0]  # no neighbour to measure


def test_novelty_similarity_subtracts_each_gold_questions_penalty(model: TopicModel) -> None:
    """q = (0.8, 0.6): cosines a 0.8, b 0.96, c 0.6, d 0 → minus penalties 0.5, 0.56, 0.2,
    −0.4 → 0.56 (uncorrected: 0.96)."""
    assert model.novelty_hubness == 1
    assert model.assign("question").neighbour == pytest.approx(0.56, abs=1e-6)


def test_threshold_is_the_percentile_of_the_corrected_leave_one_out_similarities(
    model: TopicModel,
) -> None:
    """Leave-one-out, corrected: a max(0.6 − 0.4, 0 − 0.4, −0.6 − 0.4) = 0.2, b max(0.6 − 0.3,
    0.8 − 0.4, 0.28 − 0.4) = 0.4, c 0.4, d 0.4; 10th percentile of [0.2, 0.4, 0.4, 0.4]:
    position 0.3 → 0.2 + 0.3 × 0.2 = 0.26 (uncorrected: [0.6, 0.8, 0.8, 0.8] → 0.66)."""
    assert model.threshold == pytest.approx(0.26, abs=1e-6)
    # the gold side of the like-for-like comparison: a is novel (0.2 < 0.26); b goes to x,
    # c and d to y (nearest centroid: labels this small are counted by the model's prediction)
    assert model.gold_counts(GOLD, LABELS) == {"novel": 1, "x": 1, "y": 2}


def test_quality_is_leave_one_topic_out_with_penalties_among_the_other_topics(
    model: TopicModel,
) -> None:
    """Negatives (leave-one-out): 1 − [0.2, 0.4, 0.4, 0.4] = [0.8, 0.6, 0.6, 0.6].
    Positives: topic x held out, penalties among {c, d}: 0.4 each → a max(0, −0.6) − 0.4 =
    −0.4, b 0.8 − 0.4 = 0.4; topic y held out, penalties among {a, b}: 0.3 each → c 0.8 − 0.3
    = 0.5, d 0.28 − 0.3 = −0.02; novelty [1.4, 0.6, 0.5, 1.02]. Pairs won of 16: 1.4 and 1.02
    beat all four (8), 0.6 ties three 0.6 (1.5), 0.5 none → 9.5 / 16 = 0.59375."""
    quality = model.novelty_quality
    assert quality is not None and quality.n_pos == quality.n_neg == 4
    assert quality.auc == pytest.approx(9.5 / 16, abs=1e-9)


def test_off_by_default_and_an_artefact_of_before_scores_uncorrected(model: TopicModel) -> None:
    """h = 0 (off) by default; a model state without ``novelty_hubness``/``novelty_penalty``
    (written before them) scores by the plain nearest gold question, as it was calibrated."""
    assert TopicConfig().novelty_hubness == 0
    state = {k: v for k, v in model.fitted_state().items()
             if k not in ("novelty_hubness", "novelty_penalty")}  # fmt: skip
    old = TopicModel(state, model.version, TableEmbedder())
    assert old.novelty_hubness == 0
    assert old.assign("question").neighbour == pytest.approx(0.96, abs=1e-6)
