"""Settings of the topic model: a light module (pydantic only) so the configuration can nest
it without importing scikit-learn."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

#: Bounds of ``n_topics`` (inclusive), shared by the configuration and ``topics fit``.
N_TOPICS_MIN = 2
N_TOPICS_MAX = 1000


class TopicConfig(BaseModel):
    """Topic-model settings (frozen).

    Attributes:
        n_topics: clusters to fit; ``None`` means ``min(max_topics, round(sqrt(n)))``, at
            least 2. Ignored in supervised mode.
        max_topics: upper bound for the default rule.
        svd_components: LSA dimensions (capped at ``features - 1`` and ``n - 1``).
        novelty_percentile: percentile of the training texts' leave-one-out nearest-neighbour
            similarities used as the novelty threshold, in [0, 50]; 0 disables novelty.
        max_reference: most training vectors kept for the nearest-neighbour novelty check.
        names: ``{cluster index: name}`` for unsupervised topics.
        n_terms: top terms kept per topic.
        seed: random state of SVD, KMeans and the reference sample.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    n_topics: int | None = Field(default=None, ge=N_TOPICS_MIN, le=N_TOPICS_MAX)
    max_topics: int = Field(default=50, ge=2, le=1000)
    svd_components: int = Field(default=150, ge=2, le=2000)
    novelty_percentile: float = Field(default=5.0, ge=0, le=50)
    max_reference: int = Field(default=20_000, ge=10, le=1_000_000)
    names: dict[int, str] = Field(default_factory=dict)
    n_terms: int = Field(default=8, ge=1, le=50)
    seed: int = 0
