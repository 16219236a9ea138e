"""The embedding protocol (:class:`Embedder`) and the row normalisation every backend ends
with: a leaf module, so the backends (:mod:`service.embeddings.model`,
:mod:`service.embeddings.backends`) and their consumers share it without importing each other.

>>> import numpy as np
>>> l2_normalise(np.array([[3.0, 4.0], [0.0, 0.0]])).tolist()
[[0.6000000238418579, 0.800000011920929], [0.0, 0.0]]
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np

from service.errors import GoldwatchError


class EmbeddingModelError(GoldwatchError, ValueError, RuntimeError):
    """The configured embedding model cannot be loaded: an optional package is missing, or
    the folder ``analytics.embeddings.model_path`` names holds no loadable model. The message
    names the setting at fault (and the ``pip install`` to run for a missing package), never
    a question.

    A ``ValueError``, so the commands report it as the bad configuration it is (exit 2, no
    traceback); a ``RuntimeError`` for callers of the releases that raised that.
    """

    safe_text = True  # paths, setting and package names only


@runtime_checkable
class Embedder(Protocol):
    """Maps texts to L2-normalised float32 vectors.

    Attributes:
        name: backend and model, e.g. ``"wordllama:l2_supercat:256"`` (recorded in artefacts,
            so a model fitted on one embedder is never applied with another).
        dim: vector length, > 0.
    """

    name: str
    dim: int

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Shape ``(len(texts), dim)``, float32, each row of L2 norm 1 (or all zero): a new
        array the caller owns (it may write to it; an embedder keeps no reference to it)."""
        ...


def l2_normalise(matrix: np.ndarray) -> np.ndarray:
    """Rows scaled to L2 norm 1 (zero rows stay zero), as float32. Shape unchanged."""
    matrix = np.asarray(matrix, dtype=np.float32)
    if matrix.ndim != 2:
        raise ValueError(f"expected a 2-D array, got shape {matrix.shape}")
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    np.divide(matrix, norms, out=matrix, where=norms > 0)
    return matrix
