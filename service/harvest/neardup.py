"""Near-duplicate lookup of questions: MinHash LSH candidates, verified by exact Jaccard.

Two questions are near-duplicates when the Jaccard similarity of their character-trigram
sets (:func:`service.harvest.text.trigrams`) is at least ``threshold``. Comparing a new
question with every stored one costs O(n); datasketch's ``MinHashLSH`` returns, in about
constant time, the stored keys likely to be that similar, and each is then checked exactly, so
the LSH only affects recall (a pair it misses stays two entries), never precision.

Why datasketch and not scikit-learn character n-grams: the set grows while the stream runs,
so there is no vocabulary to fit up front, and a brute-force cosine over a hashed matrix is
linear in the entries per lookup. MinHash signatures use CRC-32 of each trigram (zlib), so
they are identical in every process and replica, and ``MinHash.bulk`` computes a batch at
once (about 35 µs per question on this machine).

The LSH is asked for candidates at ``threshold - 0.25`` (at least 0.1) to lower its
false-negative rate around the threshold.

>>> index = NearDupIndex(threshold=0.6)
>>> index.add("a", "when are the hostel fees due")
>>> index.find("when are hostel fees due")  # 24 shared trigrams of 28: 6/7
('a', 0.8571428571428571)
>>> index.find("library opening hours") is None
True
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from typing import NamedTuple

from datasketch import MinHash, MinHashLSH

from service.harvest.text import jaccard, trigrams

__all__ = ["NearDupIndex", "Probe"]

_LSH_SLACK = 0.25
_EMPTY = frozenset({b"   "})


class Probe(NamedTuple):
    """A normalised text with its trigram set and MinHash signature (computed once)."""

    text: str
    grams: frozenset[bytes]
    signature: MinHash


class NearDupIndex:
    """Keys with their normalised texts; :meth:`matches` lists the stored keys similar to a
    text, :meth:`find` the best of them.

    Args:
        threshold: Jaccard from which two texts match, in (0, 1].
        num_perm: MinHash permutations (more: fewer LSH misses, slower).

    Raises:
        ValueError: ``threshold`` outside (0, 1] or ``num_perm < 2``.
    """

    def __init__(self, threshold: float = 0.6, num_perm: int = 64) -> None:
        if not 0 < threshold <= 1:
            raise ValueError(f"threshold must be in (0, 1], got {threshold}")
        if num_perm < 2:
            raise ValueError(f"num_perm must be >= 2, got {num_perm}")
        self.threshold = threshold
        self.num_perm = num_perm
        self._lsh = MinHashLSH(threshold=max(0.1, threshold - _LSH_SLACK), num_perm=num_perm)
        self._grams: dict[str, frozenset[bytes]] = {}

    def __len__(self) -> int:
        return len(self._grams)

    def __contains__(self, key: object) -> bool:
        return key in self._grams

    def probes(self, texts: Sequence[str]) -> list[Probe]:
        """Probes of normalised ``texts`` (one bulk MinHash call), in order."""
        sets = [trigrams(text) for text in texts]
        signatures = MinHash.bulk(
            [grams or _EMPTY for grams in sets], num_perm=self.num_perm, hashfunc=zlib.crc32
        )
        return [Probe(*row) for row in zip(texts, sets, signatures, strict=True)]

    def add(self, key: str, probe: Probe | str) -> None:
        """Store ``key`` with a probe or normalised text (a key already stored is replaced)."""
        if isinstance(probe, str):
            probe = self.probes([probe])[0]
        if key in self._grams:
            self.remove(key)
        self._lsh.insert(key, probe.signature, check_duplication=False)
        self._grams[key] = probe.grams

    def remove(self, key: str) -> None:
        """Forget ``key`` (no-op when absent)."""
        if self._grams.pop(key, None) is not None:
            self._lsh.remove(key)

    def matches(self, probe: Probe) -> list[tuple[str, float]]:
        """``[(key, jaccard)]`` of the stored texts at least ``threshold`` similar to the
        probe's, most similar first (ties by key)."""
        if not self._grams:
            return []
        found = []
        size = len(probe.grams)
        for key in self._lsh.query(probe.signature):
            grams = self._grams[key]
            # Jaccard <= smaller / larger set: most LSH candidates fail this without a set op
            if min(size, len(grams)) < self.threshold * max(size, len(grams)):
                continue
            score = jaccard(probe.grams, grams)
            if score >= self.threshold:
                found.append((key, score))
        found.sort(key=lambda row: (-row[1], row[0]))
        return found

    def find(self, text: str) -> tuple[str, float] | None:
        """The best of :meth:`matches` for a normalised text, or ``None``."""
        found = self.matches(self.probes([text])[0])
        return found[0] if found else None
