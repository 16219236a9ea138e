"""Near-duplicate lookup of questions: MinHash LSH candidates, verified by exact Jaccard.

Two questions are near-duplicates when the Jaccard similarity of their character-trigram
sets (:func:`service.harvest.text.trigrams`) is at least ``threshold``. Comparing a new
question with every stored one costs O(n); MinHash locality-sensitive hashing returns, in
about constant time, the stored keys likely to be that similar, and each is then checked
exactly, so the LSH only affects recall (a pair it misses stays two entries), never precision.

Why datasketch and not scikit-learn character n-grams: the set grows while the stream runs,
so there is no vocabulary to fit up front, and a brute-force cosine over a hashed matrix is
linear in the entries per lookup. The scheme is datasketch's: its ``MinHash`` (``affine32``,
CRC-32 of each trigram, so signatures are identical in every process and replica) gives the
permutations and its ``MinHashLSH`` the banding (``b`` bands of ``r`` rows) for the LSH
threshold. The signatures and band tables are computed here, though, because datasketch's
per-object path (one ``MinHash`` per question, one byte-swapped copy and one storage call
per band) cost about 150 µs per new question on a high-novelty stream: :meth:`probes` hashes
a whole batch in one numpy pass (MurmurHash3's 32-bit finaliser, then ``a·h + b`` modulo
2³², as ``MinHash.update_batch`` does), and the bands are plain dictionaries. A test pins the
signatures and candidates to ``MinHash.bulk`` and ``MinHashLSH.query``.

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
from functools import lru_cache
from itertools import chain
from typing import NamedTuple

import numpy as np
from datasketch import MinHash, MinHashLSH

from service.harvest.text import trigrams

__all__ = ["NearDupIndex", "Probe", "signatures"]

_LSH_SLACK = 0.25
_EMPTY = frozenset({b"   "})
#: MurmurHash3's 32-bit finaliser constants (datasketch's pre-mix of the ``affine32`` scheme).
_FMIX = (np.uint32(16), np.uint32(0x85EBCA6B), np.uint32(13), np.uint32(0xC2B2AE35))


class Probe(NamedTuple):
    """A normalised text with its trigram set and LSH band keys (computed once)."""

    text: str
    grams: frozenset[bytes]
    bands: tuple[bytes, ...]


@lru_cache(maxsize=8)
def _permutations(num_perm: int) -> np.ndarray:
    """datasketch's ``(a, b)`` permutation parameters (seed 1, ``affine32``)."""
    return MinHash(num_perm=num_perm, hashfunc=zlib.crc32).permutations  # type: ignore[no-any-return]


def signatures(sets: Sequence[frozenset[bytes]], num_perm: int) -> np.ndarray:
    """MinHash signatures of trigram ``sets`` as a ``(len(sets), num_perm)`` ``uint32`` array,
    equal to ``MinHash.bulk(sets, num_perm=num_perm, hashfunc=zlib.crc32)``'s hash values
    (an empty set hashes as ``{b"   "}``)."""
    sets = [grams or _EMPTY for grams in sets]
    if not sets:
        return np.empty((0, num_perm), dtype=np.uint32)
    a, b = _permutations(num_perm)
    sizes = [len(grams) for grams in sets]
    hv = np.fromiter(map(zlib.crc32, chain.from_iterable(sets)), np.uint32, sum(sizes))
    s1, m1, s2, m2 = _FMIX
    hv = hv ^ (hv >> s1)
    hv = hv * m1
    hv = hv ^ (hv >> s2)
    hv = hv * m2
    hv = hv ^ (hv >> s1)
    phv = np.multiply.outer(a, hv)  # (num_perm, trigrams): uint32 wraps, modulo 2^32
    phv += b[:, None]
    starts = np.zeros(len(sets), dtype=np.intp)
    np.cumsum(sizes[:-1], out=starts[1:])
    return np.ascontiguousarray(np.minimum.reduceat(phv, starts, axis=1).T)


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
        lsh = MinHashLSH(threshold=max(0.1, threshold - _LSH_SLACK), num_perm=num_perm)
        self.bands, self.rows = lsh.b, lsh.r
        # band value -> the key, or a tuple of keys when several share it: strings and
        # tuples of strings are not tracked by the garbage collector, sets would be (one per
        # band and text: ~100,000 objects each full collection walks)
        self._tables: list[dict[bytes, str | tuple[str, ...]]] = [{} for _ in range(self.bands)]
        self._grams: dict[str, tuple[frozenset[bytes], tuple[bytes, ...]]] = {}

    def __len__(self) -> int:
        return len(self._grams)

    def __contains__(self, key: object) -> bool:
        return key in self._grams

    def probes(self, texts: Sequence[str]) -> list[Probe]:
        """Probes of normalised ``texts`` (one vectorised MinHash pass), in order."""
        if not texts:
            return []
        sets = [trigrams(text) for text in texts]
        signed = signatures(sets, self.num_perm)[:, : self.bands * self.rows]
        width = np.dtype((np.void, 4 * self.rows))  # one band of one row as one bytes value
        keys = np.ascontiguousarray(signed).view(width).tolist()
        return [Probe(text, grams, tuple(row))
                for text, grams, row in zip(texts, sets, keys, strict=True)]  # fmt: skip

    def add(self, key: str, probe: Probe | str) -> None:
        """Store ``key`` with a probe or normalised text (a key already stored is replaced)."""
        if isinstance(probe, str):
            probe = self.probes([probe])[0]
        if key in self._grams:
            self.remove(key)
        for table, band in zip(self._tables, probe.bands, strict=True):
            found = table.get(band)
            if found is None:
                table[band] = key
            elif type(found) is str:
                table[band] = (found, key)
            else:
                table[band] = (*found, key)
        self._grams[key] = (probe.grams, probe.bands)

    def remove(self, key: str) -> None:
        """Forget ``key`` (no-op when absent)."""
        stored = self._grams.pop(key, None)
        if stored is None:
            return
        for table, band in zip(self._tables, stored[1], strict=True):
            found = table[band]
            if type(found) is str:
                del table[band]
                continue
            rest = tuple(k for k in found if k != key)
            table[band] = rest[0] if len(rest) == 1 else rest

    def candidates(self, probe: Probe) -> set[str]:
        """The stored keys sharing at least one LSH band with the probe (``MinHashLSH.query``)."""
        found: set[str] = set()
        for hit in map(dict.get, self._tables, probe.bands):  # one C-level pass
            if hit is None:
                continue
            if type(hit) is str:
                found.add(hit)
            else:
                found.update(hit)
        return found

    def matches(self, probe: Probe) -> list[tuple[str, float]]:
        """``[(key, jaccard)]`` of the stored texts at least ``threshold`` similar to the
        probe's, most similar first (ties by key)."""
        if not self._grams:
            return []
        threshold, stored = self.threshold, self._grams
        mine = probe.grams
        size = len(mine)
        found = []
        for key in self.candidates(probe):
            grams = stored[key][0]
            other = len(grams)
            # Jaccard <= smaller / larger set: most LSH candidates fail this without a set op
            if (size if size < other else other) < threshold * (size if size > other else other):
                continue
            shared = len(mine & grams)
            union = size + other - shared
            score = shared / union if union else 0.0  # service.harvest.text.jaccard
            if score >= threshold:
                found.append((key, score))
        found.sort(key=lambda row: (-row[1], row[0]))
        return found

    def find(self, text: str) -> tuple[str, float] | None:
        """The best of :meth:`matches` for a normalised text, or ``None``."""
        found = self.matches(self.probes([text])[0])
        return found[0] if found else None
