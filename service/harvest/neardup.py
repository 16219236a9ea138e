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
2³², as ``MinHash.update_batch`` does). A test pins the signatures and candidates to
``MinHash.bulk`` and ``MinHashLSH.query``.

The band tables are numpy arrays, not one dictionary per band (whose 21 look-ups and stores
per stored or evicted key, a Python loop, were ~20 % of the harvest stage on a high-novelty
stream): every stored key's band values (``_values``, one row per key) and one sorted array
of all their band *keys* (a 64-bit mix of the band's number and its ``r`` values,
:func:`_band_keys`) with the row each came from. Storing or removing a key only notes its row;
the next look-up takes the noted rows in (:meth:`NearDupIndex._merge_bands`): inserted into
a small sorted *delta* array, which joins the main one once it holds a quarter as many
entries (LSM style: inserting into the ~150,000-entry main array at every batch was the
largest cost of a look-up on ``benchmarks.bench_production``'s stream), and a look-up finds
a whole batch's candidates with two ``searchsorted`` calls on each. A key is a hash, so two
band values may share one: each candidate's
band values are compared with the probe's, so the candidates are exactly the keys sharing a
band value (``MinHashLSH.query``'s).

The LSH is asked for candidates at ``threshold - 0.25`` (at least 0.1) to lower its
false-negative rate around the threshold. So few candidates are near-duplicates (on the
20,000 events of ``benchmarks.bench_production``'s log: 175,114 candidates in 8,714
lookups, 550 matches), and an exact Jaccard (a set intersection) for each was the largest
cost of a lookup. Two exact bounds turn them away first (there: 139,175 pass the first,
663 the second): the sizes (Jaccard ≤ smaller / larger), then a 512-bit *bitmap* of each
trigram set (bit ``crc32(trigram) mod 512``; the bitmap filter of Sandes, Teodoro and Melo,
"Bitmap filter: speeding up exact set similarity joins with bitwise operations"): every bit
set in one bitmap only stands for at least one trigram in one set only, so ``|A ∩ B| ≤
(|A| + |B| - popcount(bits(A) xor bits(B))) / 2``, and a candidate whose Jaccard cannot
reach the threshold even then is never intersected. Both only skip pairs below the
threshold: the matches are the same. :meth:`NearDupIndex.probes` applies both bounds to
every LSH candidate of a whole batch of new texts in one numpy pass (~20 candidates each; a
Python loop cost ~1 µs per candidate), so only the few that pass are intersected; keys
stored after a probe was made are checked when it is matched. An ASCII text's trigrams are
hashed by position in numpy (CRC-32 of 3 bytes from three 256-entry tables, its distinct
trigrams counted by their CRCs, which are distinct on 3-byte messages); its trigram set is
built only if a pair passes both bounds.

Paraphrases share meaning, not trigrams ("how do I top up" ~ "add money to my account"), so
with an ``embedder`` (:mod:`service.embeddings.model`) two texts also match when the cosine of their
vectors is at least ``cosine``: the rule is *trigram Jaccard ≥ threshold OR cosine ≥ cosine*.
:meth:`NearDupIndex.probes` embeds a whole batch in one call and scores it against a matrix of
the stored vectors in one product (``(stored, dim) @ (dim, batch)``); keys stored after a probe
was made are scored when it is matched. :meth:`NearDupIndex.matches` lists the trigram matches
first (by Jaccard), then the keys only the embedding rule matched (by cosine), so the nearest
by trigrams wins when both rules match. Measured by
``python -m benchmarks.bench_neardup_embeddings`` (pools of 2,000 test questions, each merged
into its match, right when both carry the same intent; precision / recall; the default layer,
WordLlama + the character block). The OR rule at cosine 0.8 (``harvest.embedding_similarity``)
finds ~60 % more paraphrases at the trigram rule's precision (within a point):

==============================  ===============  ===============
rule                            BANKING77 P / R  CLINC150 P / R
==============================  ===============  ===============
trigram Jaccard ≥ 0.6 (alone)   .890 / .174      .973 / .202
cosine ≥ 0.8 (alone)            .915 / .268      .975 / .296
Jaccard ≥ 0.6 OR cosine ≥ 0.85  .899 / .205      .977 / .256
Jaccard ≥ 0.6 OR cosine ≥ 0.8   .890 / .282      .965 / .321
Jaccard ≥ 0.6 OR cosine ≥ 0.75  .896 / .396      .957 / .400
==============================  ===============  ===============

Similar is not the same question: "who won best picture in 1976" and "who won best actor in
1975" share most trigrams. With a ``rule`` (harvest's: :func:`service.text.wording.may_merge`,
numbers, content words and question word), :meth:`NearDupIndex.matches` keeps only the pairs
it lets merge; it runs on the pairs that matched, after the bounds and the exact Jaccard.

>>> index = NearDupIndex(threshold=0.6)
>>> index.add("a", "when are the hostel fees due")
>>> index.find("when are hostel fees due")  # 24 shared trigrams of 28: 6/7
('a', 0.8571428571428571)
>>> index.find("library opening hours") is None
True
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Iterable, Sequence
from functools import lru_cache
from itertools import chain
from typing import TYPE_CHECKING, NamedTuple, cast

import numpy as np

from service.harvest.text import trigrams

if TYPE_CHECKING:
    from service.embeddings.protocol import Embedder

__all__ = ["NearDupIndex", "Probe", "signatures"]

_LSH_SLACK = 0.25
#: Odd 64-bit multipliers of :func:`_band_keys` (a band's number, then each of its values).
_MIX = (np.uint64(0x9E3779B97F4A7C15), np.uint64(0xBF58476D1CE4E5B9))
_EMPTY = frozenset({b"   "})
#: The delta band tables join the main ones once they hold more entries than this share of
#: the main ones' (:meth:`NearDupIndex._merge_bands`): a batch's insert copies the delta
#: tables, and the main ones only every few batches.
_DELTA_SHARE = 0.25
#: Bits of a trigram set's bitmap (module docstring): a bit of ``crc32(trigram)``'s low ones.
_BITMAP_BITS = 512
#: MurmurHash3's 32-bit finaliser constants (datasketch's pre-mix of the ``affine32`` scheme).
_FMIX = (np.uint32(16), np.uint32(0x85EBCA6B), np.uint32(13), np.uint32(0xC2B2AE35))


class Probe:
    """A normalised text with its LSH band keys, trigram count (``size``) and bitmap
    (``bitmap``, module docstring), computed once; its trigram set (``grams``) computed when
    first read (the bounds settle most comparisons without it). When the index has an
    embedder: its unit vector (``(dim,)`` float32) and the stored keys whose cosine with it
    reached the index's ``cosine`` when it was made (``near``: ``(key, cosine)``, most
    similar first). ``serial``: the index's add counter when it was made (keys stored later
    are checked at match time). ``found``: the keys stored when it was made whose trigram
    Jaccard with it reaches the threshold and that share an LSH band with it (``(key,
    Jaccard)``, in no order; :meth:`NearDupIndex.probes` checks a whole batch at once),
    ``None``: not checked (:meth:`NearDupIndex.matches` then checks every candidate).
    ``core``: the text its trigrams are of (the index's ``gate`` of ``text``; ``text`` itself
    without one)."""

    __slots__ = ("_bands", "_grams", "_values", "_width", "batch", "bitmap", "core", "found",
                 "near", "partners", "serial", "size", "slot", "text", "vector")  # fmt: skip

    def __init__(
        self,
        text: str,
        bands: tuple[bytes, ...] | None,
        size: int,
        bitmap: int,
        grams: frozenset[bytes] | None = None,
        vector: np.ndarray | None = None,
        near: tuple[tuple[str, float], ...] = (),
        serial: int = 0,
        found: tuple[tuple[str, float], ...] | None = None,
        core: str | None = None,
    ) -> None:
        self.text, self._bands, self.size, self.bitmap = text, bands, size, bitmap
        self.core = text if core is None else core
        self._grams, self.vector, self.near = grams, vector, near
        self.serial, self.found = serial, found
        # set by a checked batch: its number, this probe's position in it, and the probes of
        # the batch that match it, (position, Jaccard)
        self.batch, self.slot = 0, 0
        self.partners: tuple[tuple[int, float], ...] = ()
        # its band values, (bands × rows,) uint32, and a band's width in bytes: set by the
        # index that made it (bands None), or read from ``bands``
        self._values: np.ndarray | None = None
        self._width = 0

    @property
    def bands(self) -> tuple[bytes, ...]:
        """Its LSH band keys: each band's ``rows`` MinHash values as one ``bytes`` value."""
        if self._bands is None:
            raw, width = cast("np.ndarray", self._values).tobytes(), self._width
            self._bands = tuple([raw[at : at + width] for at in range(0, len(raw), width)])
        return self._bands

    @property
    def values(self) -> np.ndarray:
        """The MinHash values of its bands, ``(bands × rows,)`` ``uint32`` (``bands`` as
        numbers)."""
        if self._values is None:
            self._values = np.frombuffer(b"".join(self.bands), dtype=np.uint32)
        return self._values

    @property
    def grams(self) -> frozenset[bytes]:
        """The character trigrams of its ``core`` (:func:`service.harvest.text.trigrams`)."""
        if self._grams is None:
            self._grams = trigrams(self.core)
        return self._grams


@lru_cache(maxsize=8)
def _permutations(num_perm: int) -> np.ndarray:
    """datasketch's ``(a, b)`` permutation parameters (seed 1, ``affine32``)."""
    from datasketch import MinHash  # here: datasketch imports scipy.integrate (start-up time)

    return MinHash(num_perm=num_perm, hashfunc=zlib.crc32).permutations  # type: ignore[no-any-return]


class LshParameters(NamedTuple):
    """The MinHash LSH scheme of an index: datasketch's permutations and banding.

    Attributes:
        permutations: ``(a, b)``, shape ``(2, num_perm)`` (:func:`_permutations`).
        bands, rows: ``MinHashLSH``'s ``b`` bands of ``r`` rows for the index's threshold.
    """

    permutations: np.ndarray
    bands: int
    rows: int


def lsh_parameters(threshold: float, num_perm: int) -> LshParameters:
    """The :class:`LshParameters` of a :class:`NearDupIndex` of ``threshold`` and
    ``num_perm``: datasketch's, which it computes by numerical integration (importing
    datasketch and scipy.integrate costs ~0.3 s of a start; a service keeps these in its
    fit cache, :mod:`service.files.fit_cache`).

    Raises:
        ValueError: ``threshold`` outside (0, 1] or ``num_perm < 2``.
    """
    if not 0 < threshold <= 1:
        raise ValueError(f"threshold must be in (0, 1], got {threshold}")
    if num_perm < 2:
        raise ValueError(f"num_perm must be >= 2, got {num_perm}")
    from datasketch import MinHashLSH

    lsh = MinHashLSH(threshold=max(0.1, threshold - _LSH_SLACK), num_perm=num_perm)
    return LshParameters(np.asarray(_permutations(num_perm)), int(lsh.b), int(lsh.r))


def signatures(sets: Sequence[frozenset[bytes]], num_perm: int,
               permutations: np.ndarray | None = None) -> np.ndarray:  # fmt: skip
    """MinHash signatures of trigram ``sets`` as a ``(len(sets), num_perm)`` ``uint32`` array,
    equal to ``MinHash.bulk(sets, num_perm=num_perm, hashfunc=zlib.crc32)``'s hash values
    (an empty set hashes as ``{b"   "}``). ``permutations``: datasketch's ``(a, b)`` for
    ``num_perm`` (:class:`LshParameters`), computed when ``None``."""
    return _signatures(_crc32s(sets), num_perm, permutations)


def _crc_tables() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.uint32]:
    """``(t0, t1, t2, c)``: ``zlib.crc32(bytes((x, y, z))) == t0[x] ^ t1[y] ^ t2[z] ^ c`` for
    every 3-byte message (CRC-32 is affine over GF(2): ``crc(u ^ v) = crc(u) ^ crc(v) ^
    crc(0)`` for messages of one length)."""
    zero = zlib.crc32(b"\0\0\0")
    t0 = np.array([zlib.crc32(bytes((v, 0, 0))) ^ zero for v in range(256)], dtype=np.uint32)
    t1 = np.array([zlib.crc32(bytes((0, v, 0))) ^ zero for v in range(256)], dtype=np.uint32)
    t2 = np.array([zlib.crc32(bytes((0, 0, v))) ^ zero for v in range(256)], dtype=np.uint32)
    return t0, t1, t2, np.uint32(zero)


_CRC3 = _crc_tables()


def _text_hashes(
    texts: Sequence[str],
) -> tuple[tuple[np.ndarray, list[int]], list[int], list[frozenset[bytes] | None]]:
    """What :meth:`NearDupIndex.probes` needs of normalised ``texts``, without building the
    trigram sets of ASCII ones: ``(hashes, sizes, sets)`` — ``hashes`` as :func:`_crc32s`
    gives them but with an ASCII text's trigrams once per position (repeats change neither
    a MinHash signature nor a bitmap), ``sizes`` the distinct trigrams of each text and
    ``sets`` the trigram set of each text that is not ASCII or empty (``None`` for the
    others). An ASCII trigram is 3 bytes, and CRC-32 is one-to-one on 3-byte messages (its
    degree, 32, exceeds their 24 bits), so its distinct CRCs count its distinct trigrams."""
    ascii_at = [i for i, text in enumerate(texts) if text and text.isascii()]
    sets: list[frozenset[bytes] | None] = [None] * len(texts)
    sizes = [0] * len(texts)
    pieces: list[np.ndarray | None] = [None] * len(texts)
    if ascii_at:
        widths = np.array([len(texts[i]) for i in ascii_at], dtype=np.intp)  # trigrams
        raw = np.frombuffer("".join([f" {texts[i]} " for i in ascii_at]).encode("ascii"),
                            dtype=np.uint8)  # fmt: skip
        total = int(widths.sum())
        # text j's windows start at its padded offset (widths[j] + 2 bytes before it)
        starts = np.zeros(len(widths), dtype=np.intp)
        np.cumsum(widths[:-1], out=starts[1:])
        first = np.zeros(len(widths), dtype=np.intp)
        np.cumsum(widths[:-1] + 2, out=first[1:])
        at = np.arange(total) + np.repeat(first - starts, widths)
        t0, t1, t2, c = _CRC3
        crcs = t0[raw[at]] ^ t1[raw[at + 1]] ^ t2[raw[at + 2]] ^ c
        owner = np.repeat(np.arange(len(widths), dtype=np.uint64), widths)
        # sorted by text already (the high bits): a stable sort takes those runs as they
        # are (~4x faster than the default on a batch's ~9,000 trigrams; equal values
        # either way)
        keyed = np.sort((owner << np.uint64(32)) | crcs.astype(np.uint64), kind="stable")
        distinct = keyed[np.concatenate(([True], keyed[1:] != keyed[:-1]))]  # np.unique's
        counts = np.bincount((distinct >> np.uint64(32)).astype(np.intp), minlength=len(widths))
        if len(ascii_at) == len(texts):  # the usual batch: no piece to join
            return (crcs, widths.tolist()), counts.tolist(), sets
        bounds = np.append(starts, total).tolist()
        for j, (i, size) in enumerate(zip(ascii_at, counts.tolist(), strict=True)):
            sizes[i] = size
            pieces[i] = crcs[bounds[j] : bounds[j + 1]]
    for i, text in enumerate(texts):
        if pieces[i] is None:
            grams = sets[i] = trigrams(text)
            sizes[i] = len(grams)
            hashed = grams or _EMPTY
            pieces[i] = np.fromiter(map(zlib.crc32, hashed), np.uint32, len(hashed))
    segments = cast("list[np.ndarray]", pieces)
    return (np.concatenate(segments), [len(piece) for piece in segments]), sizes, sets


def _crc32s(sets: Sequence[frozenset[bytes]]) -> tuple[np.ndarray, list[int]]:
    """The CRC-32 of every trigram of ``sets`` (an empty set as ``{b"   "}``), in order, as
    ``uint32``, and how many each set has."""
    sets = [grams or _EMPTY for grams in sets]
    sizes = [len(grams) for grams in sets]
    return np.fromiter(map(zlib.crc32, chain.from_iterable(sets)), np.uint32, sum(sizes)), sizes


def _bitmaps(sets: Sequence[frozenset[bytes]], hashes: tuple[np.ndarray, list[int]]
             ) -> list[int]:  # fmt: skip
    """The bitmap of each of ``sets`` (module docstring): bit ``crc32 mod 512`` of each
    trigram set (``hashes``: :func:`_crc32s` of ``sets``); 0 for an empty set."""
    packed = _packed_bitmaps(hashes, [len(grams) for grams in sets])
    return _bitmap_ints(packed)


def _packed_bitmaps(hashes: tuple[np.ndarray, list[int]], sizes: Sequence[int]) -> np.ndarray:
    """:func:`_bitmaps` as ``(len(sizes), 64)`` bytes (``uint8``; bit ``i``: byte ``i // 8``,
    bit ``i % 8``) from the CRCs of each set's trigrams (``hashes``) and its size (a zero row
    for an empty set)."""
    crcs, segments = hashes
    rows = np.repeat(np.arange(len(segments)), segments)
    bits = np.zeros((len(segments), _BITMAP_BITS), dtype=bool)
    bits[rows, crcs % _BITMAP_BITS] = True
    packed = np.packbits(bits, axis=1, bitorder="little")
    empty = [i for i, size in enumerate(sizes) if not size]
    if empty:
        packed[empty] = 0
    return packed


def _bitmap_ints(packed: np.ndarray) -> list[int]:
    """Each row of :func:`_packed_bitmaps`'s ``(n, 64)`` ``uint8`` array as one ``int``
    (byte ``i`` little-endian: bit ``i``), from one ``bytes`` copy (``tolist`` made 64
    Python ints a row first)."""
    raw, width = packed.tobytes(), packed.shape[1]
    return [int.from_bytes(raw[at : at + width], "little") for at in range(0, len(raw), width)]


#: Set bits of each byte value (numpy < 2 has no ``bitwise_count``).
_BYTE_BITS = np.array([bin(i).count("1") for i in range(256)], dtype=np.int64)


def _distinct(values: np.ndarray) -> np.ndarray:
    """``np.unique(values)`` of a 1-d integer array (sorted, each value once) by a sort and
    a comparison of neighbours: numpy 2's ``np.unique`` hashes first, then sorts what it
    kept, ~15 times slower on the few thousand candidate pairs of a batch."""
    ordered = np.sort(values)
    if len(ordered) < 2:
        return ordered
    return ordered[np.concatenate(([True], ordered[1:] != ordered[:-1]))]


def _popcounts(words: np.ndarray) -> np.ndarray:
    """Set bits of each row of ``words`` (``(n, w)`` ``uint64``), as ``(n,)`` ``int64``."""
    count = getattr(np, "bitwise_count", None)
    if count is not None:
        return count(words).sum(axis=1, dtype=np.int64)  # type: ignore[no-any-return]
    octets = np.ascontiguousarray(words).view(np.uint8).reshape(len(words), -1)
    return _BYTE_BITS[octets].sum(axis=1)  # type: ignore[no-any-return]


def _band_keys(values: np.ndarray, bands: int) -> np.ndarray:
    """``(n, bands)`` ``uint64`` keys of the bands of ``values`` (``(n, bands × rows)``
    ``uint32``: each row's band values, band after band): a multiplicative mix of the band's
    number and its values, so equal band values of one band have one key (two different ones
    may share a key too: :meth:`NearDupIndex._lookup` compares the values)."""
    n = len(values)
    parts = values.reshape(n, bands, -1).astype(np.uint64)
    band_mix, value_mix = _MIX
    keys = np.broadcast_to(np.arange(1, bands + 1, dtype=np.uint64) * band_mix, (n, bands))
    for j in range(parts.shape[2]):
        keys = (keys ^ parts[:, :, j]) * value_mix
        keys ^= keys >> np.uint64(31)
    return np.ascontiguousarray(keys)


def _entries(keys: np.ndarray, rows: np.ndarray, wanted: np.ndarray, order: np.ndarray
             ) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    """``(rows, needles)``: for each entry of the sorted band table ``keys`` (with its rows
    ``rows``) equal to one of the sorted ``wanted`` keys, its row and that key's place
    before sorting (``order[i]`` for ``wanted[i]``), as ``(n,)`` ``intp`` arrays (by wanted
    key, then by place in the table). Most wanted keys are in no table entry: the end of
    each run of equal entries is searched for those found only."""
    none = np.zeros(0, dtype=np.intp)
    if not len(keys):
        return none, none
    low = np.searchsorted(keys, wanted, side="left")
    found = np.flatnonzero(keys[np.minimum(low, len(keys) - 1)] == wanted)
    if not len(found):
        return none, none
    low = low[found]
    counts = np.searchsorted(keys, wanted[found], side="right") - low
    total = int(counts.sum())
    ends = np.cumsum(counts)
    entries = np.repeat(low - (ends - counts), counts) + np.arange(total)
    return rows[entries], np.repeat(order[found], counts)


def _merged(keys: np.ndarray, rows: np.ndarray, more_keys: np.ndarray, more_rows: np.ndarray
            ) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    """The sorted band table ``keys`` (``(n,)`` ``uint64``, with its rows ``rows``) with the
    sorted ``more_keys`` (``more_rows``) merged in, each new entry before the equal ones
    already there, new equal ones in their order: what ``np.insert(keys, np.searchsorted(keys,
    more_keys), more_keys)`` gives, and the rows likewise, by one stable sort of the two runs
    (a merge of two runs to timsort; ``np.insert`` sorted its positions and masked, each
    time: ~3x the time on a batch's delta insert)."""
    both = np.concatenate((more_keys, keys))
    order = np.argsort(both, kind="stable")
    return both[order], np.concatenate((more_rows, rows))[order]


def _signatures(hashes: tuple[np.ndarray, list[int]], num_perm: int,
                permutations: np.ndarray | None = None) -> np.ndarray:  # fmt: skip
    """:func:`signatures` from the sets' :func:`_crc32s`."""
    hv, sizes = hashes
    if not sizes:
        return np.empty((0, num_perm), dtype=np.uint32)
    a, b = _permutations(num_perm) if permutations is None else permutations
    s1, m1, s2, m2 = _FMIX
    hv = hv ^ (hv >> s1)
    hv = hv * m1
    hv = hv ^ (hv >> s2)
    hv = hv * m2
    hv = hv ^ (hv >> s1)
    phv = np.multiply.outer(a, hv)  # (num_perm, trigrams): uint32 wraps, modulo 2^32
    phv += b[:, None]
    starts = np.zeros(len(sizes), dtype=np.intp)
    np.cumsum(sizes[:-1], out=starts[1:])
    return np.ascontiguousarray(np.minimum.reduceat(phv, starts, axis=1).T)


class NearDupIndex:
    """Keys with their normalised texts; :meth:`matches` lists the stored keys similar to a
    text, :meth:`find` the best of them.

    Args:
        threshold: Jaccard from which two texts match, in (0, 1].
        num_perm: MinHash permutations (more: fewer LSH misses, slower).
        embedder: with one, texts whose vectors' cosine reaches ``cosine`` match too (module
            docstring); ``None``: trigrams only. Memory: ``4 × dim`` bytes per stored key
            (5,000 keys × 768-d ≈ 15 MB).
        cosine: cosine from which two texts' vectors match, in (0, 1]; read with
            ``embedder`` only.
        parameters: ``lsh_parameters(threshold, num_perm)`` computed before (a fit cache's);
            ``None`` computes them.
        rule: ``rule(text, stored_text, semantic)``: whether a probe's normalised text may
            match a stored one that the similarity matched (``semantic``: by the embedding
            rule only); a pair it refuses is no match. Harvest's is
            :func:`service.text.wording.may_merge` (numbers, content words, question
            word). ``None``: every pair the similarity matches. Called only on those pairs
            (a few per look-up), so it costs next to nothing.
        gate: ``gate(text)``: the text whose trigrams (MinHash, bounds, Jaccard) stand for a
            normalised text; the rule, the embedder and the stored text still read the text
            itself. Harvest's is :func:`service.text.wording.core_form` (without an opening
            and edge courtesy: "Kurze Frage: Wann ist Zahltag?" has the trigrams of "Wann ist
            Zahltag?"). ``None``: the text itself. Must return its argument for a text it
            would not change, and be idempotent (a stored probe's text is gated again).

    Raises:
        ValueError: ``threshold`` or ``cosine`` outside (0, 1] or ``num_perm < 2``, or
            ``parameters`` of another ``num_perm``.
    """

    def __init__(
        self,
        threshold: float = 0.6,
        num_perm: int = 64,
        embedder: Embedder | None = None,
        cosine: float = 0.8,
        parameters: LshParameters | None = None,
        rule: Callable[[str, str, bool], bool] | None = None,
        gate: Callable[[str], str] | None = None,
    ) -> None:
        if not 0 < threshold <= 1:
            raise ValueError(f"threshold must be in (0, 1], got {threshold}")
        if not 0 < cosine <= 1:
            raise ValueError(f"cosine must be in (0, 1], got {cosine}")
        if num_perm < 2:
            raise ValueError(f"num_perm must be >= 2, got {num_perm}")
        self.threshold = threshold
        self.num_perm = num_perm
        self.embedder = embedder
        self.cosine = cosine
        self.rule = rule
        self.gate = gate
        if parameters is None:
            parameters = lsh_parameters(threshold, num_perm)
        if parameters.permutations.shape != (2, num_perm):
            raise ValueError(f"LSH parameters of {parameters.permutations.shape[-1]} "
                             f"permutations for num_perm={num_perm}")  # fmt: skip
        self._permutations = parameters.permutations
        self.bands, self.rows = parameters.bands, parameters.rows
        # the LSH band tables (module docstring): row i's band values _values[i] (written
        # when merged), and the merged rows' band keys sorted (_band_keys) with their rows
        # (_band_rows); rows stored since the last merge (row -> band values) and freed
        # since (their entries leave at a rebuild)
        self._values = np.zeros((0, self.bands * self.rows), dtype=np.uint32)
        self._band_keys = np.zeros(0, dtype=np.uint64)
        self._band_rows = np.zeros(0, dtype=np.intp)
        # the entries merged since the main tables last took them in, sorted likewise (a
        # look-up searches both; they join the main tables past _DELTA_SHARE of them)
        self._delta_keys = np.zeros(0, dtype=np.uint64)
        self._delta_rows = np.zeros(0, dtype=np.intp)
        self._added: dict[int, np.ndarray] = {}
        self._removed: list[int] = []
        # rows holding a key as the band tables know it (written when merged), and the
        # entries of freed rows still in the tables
        self._live = np.zeros(0, dtype=bool)
        self._stale = 0
        # key -> (trigram count, bitmap, normalised text, add number, the text its trigrams
        # are of: gate(text)): untracked by the garbage collector; the trigram set is built
        # again when a check needs it
        self._grams: dict[str, tuple[int, int, str, int, str]] = {}
        # row i is _keys[i]'s (None when free), stored at add number _serials[i], with its
        # trigram count _sizes[i], bitmap _words[i] and vector _matrix[i] (zero when free; no
        # columns without an embedder); rows [0, _size) are in use or free
        dim = embedder.dim if embedder is not None else 0
        self._matrix = np.zeros((0, dim), dtype=np.float32)
        self._serials = np.zeros(0, dtype=np.int64)
        self._sizes = np.zeros(0, dtype=np.int64)
        self._words = np.zeros((0, _BITMAP_BITS // 64), dtype=np.uint64)
        self._keys: list[str | None] = []
        self._row: dict[str, int] = {}
        self._free: list[int] = []
        # row -> (trigram count, bitmap) of rows stored since _sizes and _words were written
        self._unwritten: dict[int, tuple[int, int]] = {}
        self._size = 0
        self._serial = 0
        # the last batch of checked probes (number _batch, made at add number _batch_from)
        # and, by position, the (key, add number) each was stored under since: while every
        # key stored since came from one of them and none of those was removed (_clean), a
        # probe of the batch finds the keys stored after it among its partners
        self._batch, self._batch_from, self._clean = 0, 0, False
        self._batch_keys: list[tuple[tuple[str, int], ...]] = []

    def __len__(self) -> int:
        return len(self._grams)

    def __contains__(self, key: object) -> bool:
        return key in self._grams

    def probes(self, texts: Sequence[str]) -> list[Probe]:
        """Probes of normalised ``texts`` (one vectorised MinHash pass and, with an
        embedder, one embedding call and one matrix product against the stored vectors), in
        order, each with its trigram matches among the keys stored now (``Probe.found``:
        the size and bitmap bounds of every probe's LSH candidates in one numpy pass, the
        exact Jaccard of those that pass)."""
        return self._probes(texts, check=True)

    def _probes(self, texts: Sequence[str], check: bool) -> list[Probe]:
        """:meth:`probes`; ``found`` left ``None`` unless ``check``."""
        if not texts:
            return []
        gate = self.gate
        cores = texts if gate is None else [gate(text) for text in texts]
        hashes, sizes, sets = _text_hashes(cores)
        signed = _signatures(hashes, self.num_perm, self._permutations)
        signed = np.ascontiguousarray(signed[:, : self.bands * self.rows])
        packed = _packed_bitmaps(hashes, sizes)
        bitmaps = _bitmap_ints(packed)
        serial, width = self._serial, 4 * self.rows
        made = [
            Probe(text, None, size, bit, grams, serial=serial, core=core)
            for text, core, size, bit, grams in zip(
                texts, cores, sizes, bitmaps, sets, strict=True
            )  # fmt: skip
        ]
        for probe, values in zip(made, signed, strict=True):
            probe._values, probe._width = values, width
        if check:
            for probe, hits in zip(made, self._check_all(made, packed, signed), strict=True):
                probe.found = hits
            self._batch += 1
            self._batch_from, self._clean = serial, True
            self._batch_keys = [() for _ in made]
            partnered = self._partners(made, signed, packed)
            for slot, (probe, partners) in enumerate(zip(made, partnered, strict=True)):
                probe.batch, probe.slot, probe.partners = self._batch, slot, partners
        if self.embedder is not None:
            vectors = np.asarray(self.embedder.embed(list(texts)), dtype=np.float32)
            near = self._near(vectors, self._size)
            for probe, vector, close in zip(made, vectors, near, strict=True):
                probe.vector, probe.near = vector, close
        return made

    def _check_all(self, probes: Sequence[Probe], packed: np.ndarray, values: np.ndarray
                   ) -> list[tuple[tuple[str, float], ...]]:  # fmt: skip
        """For each probe (its :func:`_packed_bitmaps` row in ``packed``, its band values
        in ``values``), the stored keys sharing a band with it whose Jaccard reaches the
        threshold, ``(key, Jaccard)``: :meth:`_check` of every pair, the two bounds in one
        numpy pass over all of them."""
        if not self._grams:
            return [() for _ in probes]
        self._write_rows()
        which, at = self._lookup(values)
        found: list[list[tuple[str, float]]] = [[] for _ in probes]
        if not len(at):
            return [() for _ in probes]
        threshold = self.threshold
        mine = np.array([probe.size for probe in probes], dtype=np.int64)[which]
        other = self._sizes[at]
        # Jaccard <= smaller / larger set (as _check: skipped when smaller < t * larger)
        keep = np.flatnonzero(np.minimum(mine, other) >= threshold * np.maximum(mine, other))
        which, at, mine, other = which[keep], at[keep], mine[keep], other[keep]
        words = packed.view("<u8")
        most = (mine + other - _popcounts(words[which] ^ self._words[at])) >> 1
        union = mine + other - most
        keep = np.flatnonzero(most > 0)  # as _check: skipped when most <= 0 or the bound < t
        keep = keep[most[keep] / union[keep] >= threshold]
        keys, stored = self._keys, self._grams
        for i, row in zip(which[keep].tolist(), at[keep].tolist(), strict=True):
            key, probe = cast("str", keys[row]), probes[i]
            size, other_size = probe.size, stored[key][0]
            shared = len(probe.grams & trigrams(stored[key][4]))
            union_size = size + other_size - shared
            score = shared / union_size if union_size else 0.0  # service.harvest.text.jaccard
            if score >= threshold:
                found[i].append((key, score))
        return [tuple(hits) for hits in found]

    def _near(self, vectors: np.ndarray, size: int, newer_than: int | None = None
              ) -> list[tuple[tuple[str, float], ...]]:  # fmt: skip
        """For each of ``vectors`` (``(m, dim)``), the keys of rows ``[0, size)`` (only those
        stored after add number ``newer_than`` when given) whose cosine reaches ``cosine``,
        most similar first (ties by key)."""
        if not size:
            return [() for _ in range(len(vectors))]
        rows = np.arange(size) if newer_than is None else np.flatnonzero(
            self._serials[:size] > newer_than)  # fmt: skip
        if not len(rows):
            return [() for _ in range(len(vectors))]
        matrix = self._matrix[:size] if newer_than is None else self._matrix[rows]
        sims = vectors @ matrix.T  # (m, rows): unit vectors, so cosines
        out: list[list[tuple[str, float]]] = [[] for _ in range(len(vectors))]
        keys = self._keys
        for j, i in zip(*np.nonzero(sims >= self.cosine), strict=True):
            key = keys[rows[i]]
            if key is not None:  # a free row is zero: never reaches cosine > 0 anyway
                out[j].append((key, float(sims[j, i])))
        return [tuple(sorted(hits, key=lambda h: (-h[1], h[0]))) for hits in out]

    def add(self, key: str, probe: Probe | str) -> None:
        """Store ``key`` with a probe or normalised text (a key already stored is replaced)."""
        if isinstance(probe, str) or (self.embedder is not None and probe.vector is None):
            probe = self._probes([probe if isinstance(probe, str) else probe.text], False)[0]
        if key in self._grams:
            self.remove(key)
        bitmap = probe.bitmap
        self._serial += 1
        if self._clean:  # still clean when the probe is of the last batch
            if probe.batch == self._batch:
                self._batch_keys[probe.slot] += ((key, self._serial),)
            else:
                self._clean = False
        self._grams[key] = (probe.size, bitmap, probe.text, self._serial, probe.core)
        self._added[self._store(key, probe.vector, probe.size, bitmap)] = probe.values

    def _merge_bands(self) -> None:
        """Take the rows stored and freed since the last call into the band tables (module
        docstring): write the stored rows' band values and insert their keys in order into
        the small delta tables (a pass over those only), which join the main ones when they
        hold more than ``_DELTA_SHARE`` of their entries (one pass over the main tables every
        few batches, not every batch). A freed row's entries stay (a look-up skips them: the
        row is not live, or holds another key whose values decide) until they are as many
        as the others; then the tables are rebuilt from the live rows."""
        live, added = self._live, self._added
        if self._removed:
            live[self._removed] = False
            self._removed.clear()
        entries = len(self._band_keys) + len(self._delta_keys)
        if added:
            rows = np.fromiter(added.keys(), dtype=np.intp, count=len(added))
            values = np.stack(list(added.values()))
            self._values[rows] = values
            live[rows] = True
            added.clear()
            if 2 * self._stale <= entries:
                keys = _band_keys(values, self.bands).ravel()
                order = np.argsort(keys)
                keys, owners = keys[order], np.repeat(rows, self.bands)[order]
                delta_keys, delta_rows = _merged(self._delta_keys, self._delta_rows, keys, owners)
                if len(delta_keys) > _DELTA_SHARE * len(self._band_keys):
                    self._band_keys, self._band_rows = _merged(
                        self._band_keys, self._band_rows, delta_keys, delta_rows)  # fmt: skip
                    delta_keys, delta_rows = delta_keys[:0], delta_rows[:0]
                self._delta_keys, self._delta_rows = delta_keys, delta_rows
                entries += len(keys)
        if self._stale and 2 * self._stale > entries:
            rows = np.flatnonzero(live)
            keys = _band_keys(self._values[rows], self.bands).ravel()
            order = np.argsort(keys)
            self._band_keys, self._band_rows = keys[order], np.repeat(rows, self.bands)[order]
            self._delta_keys, self._delta_rows = self._delta_keys[:0], self._delta_rows[:0]
            self._stale = 0

    def _lookup(self, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(which, rows)``: each pair of a probe (its index in ``values``, ``(m, bands ×
        rows)`` band values) and a stored row sharing at least one band value with it, once,
        ordered by probe then row (``MinHashLSH.query`` of each probe)."""
        self._merge_bands()
        bands, width = self.bands, self.rows
        wanted = _band_keys(values, bands).ravel()
        order = np.argsort(wanted)  # sorted needles: each search starts where the last ended
        wanted = wanted[order]
        rows, needles = _entries(self._band_keys, self._band_rows, wanted, order)
        if len(self._delta_keys):  # the delta tables' entries too (the pairs are sorted)
            more, also = _entries(self._delta_keys, self._delta_rows, wanted, order)
            rows, needles = np.concatenate((rows, more)), np.concatenate((needles, also))
        if not len(rows):
            return np.zeros(0, dtype=np.intp), np.zeros(0, dtype=np.intp)
        which, band = np.divmod(needles, bands)
        # a key is a hash, and a freed row's entries stay: the row must be live and hold
        # the band's very values (compared a column at a time through flat offsets: a 2-d
        # gather of (entries, width) cost ten times more)
        stored, wanted_values = self._values.reshape(-1), values.reshape(-1)
        offset = band * width
        mine, theirs = rows * (bands * width) + offset, which * (bands * width) + offset
        same = self._live[rows]
        for column in range(width):
            same &= stored[mine + column] == wanted_values[theirs + column]
        capacity = len(self._keys)
        pairs = _distinct(which[same] * capacity + rows[same])
        return np.divmod(pairs, capacity)

    def _write_rows(self) -> None:
        """Write the trigram counts and bitmaps of the rows stored since the last call into
        ``_sizes`` and ``_words`` (in one pass: a row at a time cost more than its check)."""
        unwritten = self._unwritten
        if not unwritten:
            return
        rows = np.fromiter(unwritten.keys(), dtype=np.intp, count=len(unwritten))
        self._sizes[rows] = [size for size, _ in unwritten.values()]
        octets = b"".join([bitmap.to_bytes(_BITMAP_BITS // 8, "little")
                           for _, bitmap in unwritten.values()])  # fmt: skip
        self._words[rows] = np.frombuffer(octets, dtype="<u8").reshape(len(rows), -1)
        unwritten.clear()

    def _store(self, key: str, vector: np.ndarray | None, size: int, bitmap: int) -> int:
        """Put ``key``'s vector, trigram count and bitmap in a free row (the arrays double
        when full); return the row."""
        if self._free:
            row = self._free.pop()
        else:
            row = self._size
            if row == len(self._matrix):
                grown = max(64, 2 * len(self._matrix))
                matrix = np.zeros((grown, self._matrix.shape[1]), dtype=np.float32)
                matrix[:row] = self._matrix[:row]
                serials = np.zeros(grown, dtype=np.int64)
                serials[:row] = self._serials[:row]
                sizes = np.zeros(grown, dtype=np.int64)
                sizes[:row] = self._sizes[:row]
                words = np.zeros((grown, self._words.shape[1]), dtype=np.uint64)
                words[:row] = self._words[:row]
                values = np.zeros((grown, self._values.shape[1]), dtype=np.uint32)
                values[:row] = self._values[:row]
                live = np.zeros(grown, dtype=bool)
                live[:row] = self._live[:row]
                self._matrix, self._serials, self._live = matrix, serials, live
                self._sizes, self._words, self._values = sizes, words, values
                self._keys.extend([None] * (grown - len(self._keys)))
            self._size += 1
        if self.embedder is not None:  # the vectors and add numbers are read with one only
            self._matrix[row] = 0.0 if vector is None else vector
            self._serials[row] = self._serial
        self._unwritten[row] = (size, bitmap)
        self._keys[row] = key
        self._row[key] = row
        return row

    def remove(self, key: str) -> None:
        """Forget ``key`` (no-op when absent)."""
        stored = self._grams.pop(key, None)
        if stored is None:
            return
        if stored[3] > self._batch_from:  # stored since the last batch's probes
            self._clean = False
        row = self._row.pop(key, None)
        if row is not None:
            if self._added.pop(row, None) is None:  # merged: its entries are now stale
                self._stale += self.bands
            self._removed.append(row)
            if self.embedder is not None:
                self._matrix[row] = 0.0
            self._keys[row] = None
            self._free.append(row)

    def candidates(self, probe: Probe) -> set[str]:
        """The stored keys sharing at least one LSH band with the probe (``MinHashLSH.query``)."""
        if not self._grams:
            return set()
        _, rows = self._lookup(probe.values[None, :])
        keys = self._keys
        return {cast("str", keys[row]) for row in rows.tolist()}

    def matches(self, probe: Probe) -> list[tuple[str, float]]:
        """``[(key, score)]`` of the stored texts matching the probe: first those whose
        trigram Jaccard reaches ``threshold`` (score: the Jaccard, most similar first), then,
        with an embedder, those only whose cosine reaches ``cosine`` (score: the cosine, most
        similar first); ties by key. With a ``rule``, only the pairs it lets match."""
        if not self._grams:
            return []
        stored, serial = self._grams, probe.serial
        if probe.found is None:
            found = self._check(probe, self.candidates(probe))
        else:  # checked when made: those still stored unchanged, and the keys stored since
            found = [(key, score) for key, score in probe.found
                     if (entry := stored.get(key)) is not None and entry[3] <= serial
                     ] if probe.found else []  # fmt: skip
            if self._serial > serial:
                found.extend(self._later(probe))
        if not found and (self.embedder is None or probe.vector is None):
            return found  # most new texts on a novel stream: no match, nothing to judge
        # a trigram match is judged as one (the rule reads its words) and never again as a
        # semantic match
        seen = {key for key, _ in found}
        rule = self.rule
        if rule is not None and found:
            found = [row for row in found if rule(probe.text, stored[row[0]][2], False)]
        found.sort(key=lambda row: (-row[1], row[0]))
        if self.embedder is None or probe.vector is None:
            return found
        row_of, serials = self._row, self._serials
        # near: stored when the probe was made and not replaced since; later keys: now
        semantic = [(key, score) for key, score in probe.near
                    if key not in seen and key in row_of
                    and serials[row_of[key]] <= probe.serial]  # fmt: skip
        if self._serial > probe.serial:
            later_near = self._near(probe.vector[None, :], self._size, newer_than=probe.serial)
            semantic.extend(hit for hit in later_near[0] if hit[0] not in seen)
            semantic.sort(key=lambda row: (-row[1], row[0]))
        if rule is not None and semantic:
            semantic = [row for row in semantic if rule(probe.text, stored[row[0]][2], True)]
        return found + semantic

    def _later(self, probe: Probe) -> list[tuple[str, float]]:
        """``(key, Jaccard)`` of the keys stored after the probe was made that match it
        (among its batch's partners while every key stored since came from that batch)."""
        stored, serial = self._grams, probe.serial
        if not (self._clean and probe.batch == self._batch):
            return self._check(probe, [k for k in self.candidates(probe) if stored[k][3] > serial])
        keys = self._batch_keys
        return [(key, score) for slot, score in probe.partners for key, added in keys[slot]
                if (entry := stored.get(key)) is not None and entry[3] == added]  # fmt: skip

    def _partners(self, probes: Sequence[Probe], values: np.ndarray, packed: np.ndarray
                  ) -> list[tuple[tuple[int, float], ...]]:  # fmt: skip
        """For each of a batch's probes (their band values ``values`` and
        :func:`_packed_bitmaps` rows ``packed``), ``(position, Jaccard)`` of the probes of the
        batch (itself included) sharing an LSH band with it whose Jaccard reaches the
        threshold: what :meth:`_check` gives once one is stored. The pairs sharing a band
        key (their band values compared: a key is a hash) and the two bounds in numpy, the
        exact Jaccard of the pairs that pass both."""
        bands = self.bands
        keys = _band_keys(values, bands).ravel()
        order = np.argsort(keys, kind="stable")
        ordered = keys[order]
        # each entry paired with every later one of its run of equal keys
        first = np.flatnonzero(np.concatenate(([True], ordered[1:] != ordered[:-1])))
        runs = np.diff(np.append(first, len(ordered)))
        after = np.repeat(first + runs, runs) - np.arange(len(ordered)) - 1  # later in the run
        total = int(after.sum())
        threshold = self.threshold
        partners: list[list[tuple[int, float]]] = [
            [(i, 1.0)] if probe.size else [] for i, probe in enumerate(probes)
        ]  # a text with trigrams is its own match (Jaccard 1)
        if total:
            left = np.repeat(np.arange(len(ordered)), after)
            right = left + np.arange(total) - np.repeat(np.cumsum(after) - after, after) + 1
            (one, band), (two, other_band) = np.divmod(order[left], bands), np.divmod(
                order[right], bands)  # fmt: skip
            width, flat, stride = self.rows, values.reshape(-1), values.shape[1]
            same = (band == other_band) & (one != two)
            mine, theirs = one * stride + band * width, two * stride + band * width
            for column in range(width):  # as _lookup: a column at a time, flat offsets
                same &= flat[mine + column] == flat[theirs + column]
            low, high = np.minimum(one[same], two[same]), np.maximum(one[same], two[same])
            pairs = _distinct(low * len(probes) + high)  # by (j, i), j < i
            js, is_ = np.divmod(pairs, len(probes))
            sizes = np.array([probe.size for probe in probes], dtype=np.int64)
            mine, other = sizes[is_], sizes[js]
            # the bounds of _check: smaller / larger set, then the bitmaps'
            fits = np.minimum(mine, other) >= threshold * np.maximum(mine, other)
            js, is_, mine, other = js[fits], is_[fits], mine[fits], other[fits]
            words = packed.view("<u8")
            most = (mine + other - _popcounts(words[is_] ^ words[js])) >> 1
            keep = np.flatnonzero(most > 0)
            keep = keep[most[keep] / (mine + other - most)[keep] >= threshold]
            for j, i in zip(js[keep].tolist(), is_[keep].tolist(), strict=True):
                size, other_size = probes[i].size, probes[j].size
                shared = len(probes[i].grams & probes[j].grams)
                union = size + other_size - shared
                score = shared / union if union else 0.0
                if score >= threshold:
                    partners[i].append((j, score))
                    partners[j].append((i, score))
        return [tuple(row) for row in partners]

    def _check(self, probe: Probe, keys: Iterable[str]) -> list[tuple[str, float]]:
        """``(key, Jaccard)`` of the stored ``keys`` whose trigram Jaccard with the probe
        reaches the threshold (exact bounds first, module docstring), in no order."""
        threshold, stored = self.threshold, self._grams
        size, bits = probe.size, probe.bitmap
        found = []
        for key in keys:
            other, theirs, _, _, core = stored[key]
            # Jaccard <= smaller / larger set: a fifth of the LSH candidates fail this
            if (size if size < other else other) < threshold * (size if size > other else other):
                continue
            # |A ∩ B| <= (|A| + |B| - popcount(bits xor theirs)) / 2 (module docstring): most
            # of the others fail this; the score is monotone in the intersection, and so is
            # its rounding, so a bound below the threshold means a score below it
            most = (size + other - (bits ^ theirs).bit_count()) >> 1
            if most <= 0 or most / (size + other - most) < threshold:
                continue
            shared = len(probe.grams & trigrams(core))
            union = size + other - shared
            score = shared / union if union else 0.0  # service.harvest.text.jaccard
            if score >= threshold:
                found.append((key, score))
        return found

    def find(self, text: str) -> tuple[str, float] | None:
        """The best of :meth:`matches` for a normalised text, or ``None``."""
        found = self.matches(self.probes([text])[0])
        return found[0] if found else None
