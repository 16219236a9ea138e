"""Nearest-row similarities of a batch's questions, shared by the stages that compute them.

The out-of-scope detector (:meth:`~service.refusals.scope.EmbeddingScope.score_support`:
each question's nearest answerable and nearest unanswerable gold question) and the topic
stage's novelty check (:meth:`~service.topics.model.TopicModel.assign_many`: the nearest gold
question, with the default uncentred, unpenalised ``k = 1``) multiply each micro-batch's new
questions by the same gold vectors — one embedder, one gold set: equal matrices, held by two
objects. That product (477 gold rows × 768 dimensions on the production-shaped benchmark) was
~6.7 µs of one core per distinct question, paid twice. :class:`NearestMemo` (one per
:class:`~service.embeddings.model.CachedEmbedder`, so per process and embedding
configuration) keeps the last batch's nearest similarities by text, so the stage that runs
second takes them instead of multiplying again.

A value is a function of its text alone, to the last bit or so: the vector is the embedder's
for that text, and the reference is identified by its content as a set of rows (a digest
taken the first time each array object is seen: reference matrices are fitted state, never
written after). The nearest similarity to a matrix's rows does not depend on their order, so
neither does the digest (its rows' digests, sorted): the out-of-scope detector holds its gold
rows in canonical order (:func:`~service.refusals.scope.canonical_rows`, so that its fit is
one of the set of rows, not of the file's order) and the topic model in the file's order,
and still share one product. The
last bit is not guaranteed: an OpenBLAS ``sgemm`` element may differ by one float32 ulp with
where its row and column sit in the matrices multiplied (measured: ~2 % of a batch's
elements when its rows are shifted by one), so the maximum over two blocks (answerable,
unanswerable) may differ by an ulp from the maximum over the whole gold matrix, as a
question's similarities already did from one micro-batch to another.
"""

from __future__ import annotations

import hashlib
import threading
import weakref
from collections.abc import Sequence

import numpy as np

__all__ = ["NearestMemo"]


class NearestMemo:
    """Each text's largest similarity to a reference matrix's rows, from the last batch that
    remembered them, by text and reference content. Thread-safe.

    Memory: the last batch's texts and values, and one 16-byte digest per reference array
    alive.

    >>> memo = NearestMemo()
    >>> gold = np.eye(3, dtype=np.float32)
    >>> memo.remember(gold, ["a", "b"], np.array([0.5, 0.25]))
    >>> memo.recall(gold.copy(), ["b", "c", "a"]), memo.recall(gold[:2], ["a"])
    ([0.25, None, 0.5], [None])
    >>> memo.recall(gold[[2, 0, 1]], ["a"])  # the same rows in another order
    [0.5]
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        # id(array) -> (weak reference to it, digest of its shape, dtype and bytes)
        self._digests: dict[int, tuple[weakref.ref[np.ndarray], bytes]] = {}
        # the last batch remembered: (reference digest, {text: nearest similarity})
        self._last: tuple[bytes, dict[str, float]] | None = None
        self.hits = 0
        self.misses = 0

    def _digest(self, reference: np.ndarray) -> bytes:
        """The content digest of ``reference`` as a multiset of rows (its shape, dtype and
        its rows' own digests in sorted order: equal for any permutation of the rows, as
        each row's nearest similarity is), taken once per array object (the caller holds the
        lock)."""
        entry = self._digests.get(id(reference))
        if entry is not None and entry[0]() is reference:
            return entry[1]
        data = np.ascontiguousarray(reference)
        digest = hashlib.blake2b(f"{data.shape}{data.dtype.str}".encode(), digest_size=16)
        rows = data.reshape(data.shape[0], -1) if data.ndim and data.size else data.reshape(1, -1)
        for row in sorted(hashlib.blake2b(r.tobytes(), digest_size=16).digest() for r in rows):
            digest.update(row)
        for key in [key for key, (ref, _) in self._digests.items() if ref() is None]:
            del self._digests[key]
        self._digests[id(reference)] = (weakref.ref(reference), digest.digest())
        return self._digests[id(reference)][1]

    def remember(self, reference: np.ndarray, texts: Sequence[str], nearest: np.ndarray) -> None:
        """Keep ``nearest`` (shape ``(len(texts),)``: each text's largest cosine similarity
        to a row of ``reference``, computed from the shared embedder's vector of the text) in
        place of the last batch's. ``reference`` must not be written after.

        Raises:
            ValueError: ``nearest`` is not one value per text.
        """
        if len(nearest) != len(texts):
            raise ValueError(f"{len(nearest)} values for {len(texts)} texts")
        values = dict(zip(texts, np.asarray(nearest, dtype=np.float64).tolist(), strict=True))
        with self._lock:
            self._last = (self._digest(reference), values)

    def recall(self, reference: np.ndarray, texts: Sequence[str]) -> list[float | None]:
        """Per text, its nearest similarity to ``reference``'s rows as the last batch
        remembered it (a reference of equal content), or ``None``."""
        with self._lock:
            last = self._last
            if last is None or last[0] != self._digest(reference):
                found: list[float | None] = [None] * len(texts)
            else:
                values = last[1]
                found = [values.get(text) for text in texts]
            hits = len(found) - found.count(None)
            self.hits += hits
            self.misses += len(found) - hits
        return found
