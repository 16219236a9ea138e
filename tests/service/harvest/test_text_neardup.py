"""Normalising, ids and near-duplicate lookup, on hand-worked trigram counts."""

from __future__ import annotations

import random
import re
import unicodedata
import zlib

import numpy as np
import pytest
from datasketch import MinHash, MinHashLSH

from service.harvest.neardup import NearDupIndex, Probe, lsh_parameters, signatures
from service.harvest.text import candidate_id, jaccard, trigrams
from service.harvest.text import comparison_form as normalise


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("  Hostel FEES??  ", "hostel fees"),
        ("fee_structure / 2026", "fee structure 2026"),
        ("ＦＥＥＳ", "fees"),  # NFKC folds full-width letters
        ("छात्रावास शुल्क?", "छात्रावास शुल्क"),  # Devanagari vowel signs survive
        ("Mail <EMAIL> now", "mail email now"),
        ("???", ""),
        # "_" runs and non-word runs are separate matches of the pattern: one space each
        ("a _ b", "a   b"),
        ("__init__ file", "init  file"),
        ("Tab\tand\nnew-line", "tab and new line"),
    ],
)
def test_normalise(text: str, expected: str) -> None:
    assert normalise(text) == expected


def test_normalise_ascii_fast_path_matches_the_pattern_definition() -> None:
    # the module docstring's rule, written as the pattern: NFKC, casefold, runs -> " ", strip
    pattern = re.compile(r"[^\w\u0300-\u036f\u064b-\u065f\u0900-\u0dff\u0e00-\u0eff]+|_+")
    rng = random.Random(7)
    alphabet = [chr(c) for c in range(128)] + list("ab_ _.,-") * 8
    for _ in range(20_000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 16)))
        folded = unicodedata.normalize("NFKC", text).casefold()
        assert normalise(text) == pattern.sub(" ", folded).strip(), repr(text)


def test_candidate_id_is_stable_and_depends_on_text_only() -> None:
    assert candidate_id("hostel fees") == candidate_id(normalise("Hostel fees?"))
    assert candidate_id("hostel fees") != candidate_id("hostel fee")
    assert candidate_id("hostel fees").startswith("c-") and len(candidate_id("x")) == 18


def test_trigrams_and_jaccard_hand_worked() -> None:
    # " abc " -> " ab", "abc", "bc "; " abd " -> " ab", "abd", "bd ": 1 shared of 5
    assert trigrams("abc") == {b" ab", b"abc", b"bc "}
    assert jaccard(trigrams("abc"), trigrams("abd")) == pytest.approx(1 / 5)
    assert jaccard(frozenset(), frozenset()) == 0.0


def test_index_finds_near_duplicate_and_not_distinct_text() -> None:
    index = NearDupIndex(threshold=0.6)
    index.add("a", "when are the hostel fees due")
    index.add("b", "library opening hours")
    # dropping "the " keeps 24 of the 28 trigrams: 24 / 28
    assert index.find("when are hostel fees due") == ("a", pytest.approx(24 / 28))
    assert index.find("what is the bus route to kamptee") is None
    index.remove("a")
    assert index.find("when are hostel fees due") is None
    assert len(index) == 1 and "b" in index


def test_crowded_buckets_keep_exactly_the_keys_added_and_not_removed() -> None:
    # 30 keys of one text share all 21 bands; remove them in a shuffled order: after each
    # removal the candidates are exactly the keys left, and the matches are those keys at
    # Jaccard 1 (ties by key); the tables hold 21 entries per key left plus the freed rows'
    # ones, never more of those than of the others (then they are rebuilt)
    index = NearDupIndex(threshold=0.6)
    text = "when are the hostel fees due"
    keys = [f"k{i:02d}" for i in range(30)]
    for key in keys:
        index.add(key, text)
    probe = index.probes([text])[0]
    assert len(index._band_keys) + len(index._delta_keys) == 30 * 21
    left = set(keys)
    for key in random.Random(5).sample(keys, len(keys)):
        index.remove(key)
        left.discard(key)
        assert index.candidates(probe) == left
        assert index.matches(probe) == [(k, 1.0) for k in sorted(left)]
        if left:
            entries = len(index._band_keys) + len(index._delta_keys)
            assert entries - index._stale == 21 * len(left)
            assert 2 * index._stale <= entries
    assert len(index) == 0 and index.candidates(probe) == set()


def _sharing(bands: dict[str, tuple[bytes, ...]], probe: Probe) -> set[str]:
    """The keys of ``bands`` (key -> its band values) sharing a band value with ``probe``:
    ``MinHashLSH.query``'s definition, by hand."""
    return {key for key, mine in bands.items()
            if any(a == b for a, b in zip(mine, probe.bands, strict=True))}  # fmt: skip


def test_candidates_are_the_keys_sharing_a_band_through_adds_removes_and_reused_rows() -> None:
    """Random adds, removes and replacements (freed rows reused, their old band entries left
    in the tables until a rebuild): the candidates are always the keys stored now that share
    a band value with the probe."""
    rng = random.Random(23)
    words = "when are the hostel fees due library hours bus route exam".split()
    texts = sorted({" ".join(rng.choices(words, k=rng.randint(1, 4))) for _ in range(200)})
    index = NearDupIndex(threshold=0.6)
    bands = {text: probe.bands for text, probe in zip(texts, index.probes(texts), strict=True)}
    stored: dict[str, tuple[bytes, ...]] = {}
    rebuilt = 0
    for step in range(1_500):
        key = f"k{rng.randrange(60)}"
        if key in stored and rng.random() < 0.5:
            index.remove(key)
            del stored[key]
        else:
            text = rng.choice(texts)
            index.add(key, text)
            stored[key] = bands[text]
        if step % 7 == 0:
            stale = index._stale
            probe = index.probes([rng.choice(texts)])[0]
            assert index.candidates(probe) == _sharing(stored, probe)
            rebuilt += index._stale < stale
    assert rebuilt > 3  # the freed rows' entries were dropped several times


def test_band_key_collisions_never_make_a_candidate(monkeypatch: pytest.MonkeyPatch) -> None:
    """A band key is a 64-bit hash of the band's values; with one key for every band (all
    collide) the look-up still returns only the keys sharing a band value."""
    from service.harvest import neardup

    monkeypatch.setattr(neardup, "_band_keys", lambda values, bands: np.zeros(
        (len(values), bands), dtype=np.uint64))  # fmt: skip
    index = NearDupIndex(threshold=0.6)
    texts = ["when are the hostel fees due", "when are hostel fees due", "library hours",
             "bus route to kamptee", "hostel fee due date"]  # fmt: skip
    probes = index.probes(texts)
    for text, probe in zip(texts[:3], probes[:3], strict=True):
        index.add(text, probe)
    stored = {text: probe.bands for text, probe in zip(texts[:3], probes[:3], strict=True)}
    for probe in probes:  # stored after the batch was made: matched through its partners
        sharing = _sharing(stored, probe)
        assert index.candidates(probe) == sharing
        scores = [(key, jaccard(probe.grams, trigrams(key))) for key in sharing]
        want = sorted([(k, j) for k, j in scores if j >= 0.6], key=lambda r: (-r[1], r[0]))
        assert index.matches(probe) == want
    assert index.candidates(probes[3]) == set()  # no band shared with any of them
    assert index.find("when are hostel fees due") == ("when are hostel fees due", 1.0)


def test_matches_are_the_exact_jaccard_of_every_lsh_candidate() -> None:
    # matches() counts shared trigrams of all candidates in one numpy pass; the definition:
    # jaccard() of the trigram sets of each LSH candidate, those >= threshold, best first
    rng = random.Random(7)
    words = "when are the hostel fees due library hours bus route exam form card".split()
    texts = sorted({" ".join(rng.choices(words, k=rng.randint(1, 6))) for _ in range(400)})
    index = NearDupIndex(threshold=0.5)
    for i, text in enumerate(texts[:200]):
        index.add(f"k{i}", text)
    stored = {f"k{i}": trigrams(text) for i, text in enumerate(texts[:200])}
    checked = 0
    for probe in index.probes(texts[200:]):
        scores = [(key, jaccard(probe.grams, stored[key])) for key in index.candidates(probe)]
        want = sorted([(k, j) for k, j in scores if j >= 0.5], key=lambda r: (-r[1], r[0]))
        assert index.matches(probe) == want
        checked += bool(want)
    assert checked > 50  # most probes have a match: the comparison is not vacuous


def test_bitmaps_are_one_bit_per_crc32_and_bound_the_shared_trigrams() -> None:
    from service.harvest.neardup import _bitmaps, _crc32s

    sets = [trigrams("ab"), frozenset(), trigrams("hostel ka fee — कब")]
    want = [sum({1 << (zlib.crc32(g) % 512) for g in grams}) for grams in sets]
    assert _bitmaps(sets, _crc32s(sets)) == want and want[1] == 0
    # |A ∩ B| <= (|A| + |B| - popcount(bits A xor bits B)) / 2, on pairs of every overlap
    rng = random.Random(3)
    words = "when are the hostel fees due कब है फीस library hours bus exam".split()
    texts = [" ".join(rng.choices(words, k=rng.randint(1, 8))) for _ in range(120)]
    grams = [trigrams(text) for text in texts]
    bits = _bitmaps(grams, _crc32s(grams))
    tight = 0
    for i in range(len(texts)):
        for j in range(i):
            shared = len(grams[i] & grams[j])
            bound = (len(grams[i]) + len(grams[j]) - (bits[i] ^ bits[j]).bit_count()) // 2
            assert shared <= bound
            tight += shared == bound
    assert tight > 1000  # mostly exact with few collisions: the bound is not vacuous


def test_matches_near_the_threshold_are_the_exact_jaccard_of_every_lsh_candidate() -> None:
    # the size and bitmap bounds skip candidates: never one at or above the threshold
    rng = random.Random(11)
    base = [
        "when are the hostel fees due this semester",
        "how do i top up my card online",
        "library opening hours during the exam weeks",
        "bus route from the north campus",
    ]

    def mutate(text: str) -> str:
        chars = list(text)
        for _ in range(rng.randint(0, 8)):
            chars[rng.randrange(len(chars))] = rng.choice("abcdefghij ")
        return "".join(chars)

    texts = sorted({mutate(rng.choice(base)) for _ in range(600)})
    index = NearDupIndex(threshold=0.6)
    stored = {}
    for i, text in enumerate(texts[:300]):
        index.add(f"k{i}", text)
        stored[f"k{i}"] = trigrams(text)
    near = 0
    for probe in index.probes(texts[300:]):
        scores = [(key, jaccard(probe.grams, stored[key])) for key in index.candidates(probe)]
        want = sorted([(k, j) for k, j in scores if j >= 0.6], key=lambda r: (-r[1], r[0]))
        assert index.matches(probe) == want
        near += sum(0.5 <= j < 0.6 for _, j in scores)
    assert near > 100  # many candidates just below the threshold were checked


def test_threshold_is_checked_exactly() -> None:
    # "abc" vs "abd" is 1/5 similar: below 0.25, above 0.15
    strict, loose = NearDupIndex(threshold=0.25), NearDupIndex(threshold=0.15)
    for index in (strict, loose):
        index.add("k", "abc")
    assert strict.find("abd") is None
    assert loose.find("abd") == ("k", pytest.approx(1 / 5))  # MinHash is seeded: no flakiness


def test_bad_arguments() -> None:
    with pytest.raises(ValueError, match="threshold"):
        NearDupIndex(threshold=0)
    with pytest.raises(ValueError, match="num_perm"):
        NearDupIndex(num_perm=1)


def test_signatures_and_candidates_are_datasketchs() -> None:
    """The vectorised MinHash and the band tables give what ``MinHash.bulk`` and
    ``MinHashLSH.query`` give (so the index's recall is datasketch's)."""
    texts = [normalise(q) for q in (
        "When are the hostel fees due?", "when are hostel fees due", "hostel fee due date",
        "Hostel ka fee semester wise dena hai ya yearly?", "hostel fee semester wise",
        "library opening hours", "library hours on sunday", "छात्रावास शुल्क कब देना है",
        "¿cuánto sale?", "a", "", "bus route to kamptee", "bus routes kamptee",
    )]  # fmt: skip
    sets = [trigrams(t) for t in texts]
    reference = MinHash.bulk([s or {b"   "} for s in sets], num_perm=64, hashfunc=zlib.crc32)
    assert (signatures(sets, 64) == np.array([m.hashvalues for m in reference])).all()

    index, lsh = NearDupIndex(threshold=0.6, num_perm=64), MinHashLSH(threshold=0.35, num_perm=64)
    assert (index.bands, index.rows) == (lsh.b, lsh.r)
    for key, probe, minhash in zip(texts[:7], index.probes(texts[:7]), reference[:7], strict=True):
        index.add(key, probe)
        lsh.insert(key, minhash)
    for probe, minhash in zip(index.probes(texts), reference, strict=True):
        assert index.candidates(probe) == set(lsh.query(minhash))


def test_lsh_parameters_are_datasketchs_and_must_match_num_perm() -> None:
    """The parameters a fit cache keeps are datasketch's own (permutations of ``MinHash``,
    bands and rows of ``MinHashLSH`` at the threshold minus the slack), and an index refuses
    parameters of another permutation count."""
    params = lsh_parameters(0.6, 64)
    lsh = MinHashLSH(threshold=0.35, num_perm=64)
    assert (params.bands, params.rows) == (lsh.b, lsh.r)
    assert (params.permutations == MinHash(num_perm=64, hashfunc=zlib.crc32).permutations).all()
    given = NearDupIndex(0.6, 64, parameters=params)
    assert (given.bands, given.rows) == (lsh.b, lsh.r)
    with pytest.raises(ValueError, match="num_perm=32"):
        NearDupIndex(0.6, 32, parameters=params)


def test_probes_count_and_hash_each_distinct_trigram_once() -> None:
    """Probes hash ASCII texts by position without building their trigram sets: the count,
    bitmap and signature are still those of the set (repeated trigrams once), and the
    3-byte CRC tables give ``zlib.crc32``."""
    from service.harvest.neardup import _CRC3

    t0, t1, t2, c = _CRC3
    rng = random.Random(13)
    for message in [bytes(rng.randrange(256) for _ in range(3)) for _ in range(20_000)]:
        assert zlib.crc32(message) == int(t0[message[0]] ^ t1[message[1]] ^ t2[message[2]] ^ c)
    words = "aaaa abab abcabc when are the fees due कब है fee ¿cuánto".split()
    texts = ["", "a", "aaaaaaa", "abcabcabc abcabc"] + [
        " ".join(rng.choices(words, k=rng.randint(1, 7))) for _ in range(300)
    ]
    index = NearDupIndex(threshold=0.6)
    probes = index.probes(texts)
    sets = [trigrams(text) for text in texts]
    assert [p.size for p in probes] == [len(s) for s in sets]
    assert [p.grams for p in probes] == sets
    bitmaps = [sum({1 << (zlib.crc32(g) % 512) for g in s}) for s in sets]
    assert [p.bitmap for p in probes] == bitmaps
    width = np.dtype((np.void, 4 * index.rows))
    bands = signatures(sets, 64)[:, : index.bands * index.rows].copy().view(width).tolist()
    assert [p.bands for p in probes] == [tuple(row) for row in bands]
    assert probes[2].size == 3  # " aa", "aaa", "aa ": 9 positions, 3 trigrams


def test_probes_made_before_adds_and_removes_match_what_is_stored_at_match_time() -> None:
    """A probe checks the keys stored when it was made in one batch; keys stored, removed
    or replaced afterwards are accounted for when it is matched: the definition (the exact
    Jaccard of every LSH candidate now) holds."""
    rng = random.Random(17)
    words = "when are the hostel fees due library hours bus route exam".split()
    texts = sorted({" ".join(rng.choices(words, k=rng.randint(2, 6))) for _ in range(300)})
    index = NearDupIndex(threshold=0.5)
    stored: dict[str, str] = {}
    for i, text in enumerate(texts[:100]):
        index.add(f"k{i}", text)
        stored[f"k{i}"] = text

    def definition(probe: Probe) -> list[tuple[str, float]]:
        grams = trigrams(probe.text)
        scores = [(k, jaccard(grams, trigrams(stored[k]))) for k in index.candidates(probe)]
        return sorted([(k, j) for k, j in scores if j >= 0.5], key=lambda r: (-r[1], r[0]))

    probes = index.probes(texts[200:])
    assert all(p.found is not None for p in probes)
    for i, probe in enumerate(probes[::2]):  # some of the batch stored, in turn, as a stage does
        assert index.matches(probe) == definition(probe)
        index.add(f"p{i}", probe)
        stored[f"p{i}"] = probe.text
    # the batch's keys are found among the partners of its probes
    assert [index.matches(probe) for probe in probes] == [definition(p) for p in probes]
    assert sum(k.startswith("p") for p in probes for k, _ in index.matches(p)) > 60
    for i, text in enumerate(texts[100:200]):  # stored after the probes were made
        index.add(f"n{i}", text)
        stored[f"n{i}"] = text
    # others stored since: the probes look for them among every candidate
    assert [index.matches(probe) for probe in probes] == [definition(p) for p in probes]
    for i in range(0, 100, 3):  # removed after
        index.remove(f"k{i}")
        del stored[f"k{i}"]
    for i in range(1, 100, 3):  # replaced after: another text under the same key
        index.add(f"k{i}", texts[-1 - i])
        stored[f"k{i}"] = texts[-1 - i]
    checked = 0
    for probe in probes:
        want = definition(probe)
        assert index.matches(probe) == want
        checked += any(k.startswith("n") for k, _ in want)
    assert checked > 20  # keys stored after the probes were matched: not vacuous


def test_probes_without_a_match_are_the_definition_before_and_after_later_adds() -> None:
    """Most new texts of a novel stream match nothing: :meth:`NearDupIndex.matches` returns
    at once for a probe that found nothing when made (and, with keys stored since, nothing
    among them either). Its result is still the definition (the exact Jaccard of every LSH
    candidate now), for probes with and without matches, before and after keys stored
    since, some of which match probes that had none."""
    rng = random.Random(29)
    words = "when are the hostel fees due library hours bus route exam form card".split()
    texts = sorted({" ".join(rng.choices(words, k=rng.randint(1, 6))) for _ in range(500)})
    rng.shuffle(texts)
    index = NearDupIndex(threshold=0.6)
    stored: dict[str, str] = {}
    for i, text in enumerate(texts[:60]):
        index.add(f"k{i}", text)
        stored[f"k{i}"] = text

    def definition(probe: Probe) -> list[tuple[str, float]]:
        grams = trigrams(probe.text)
        scores = [(k, jaccard(grams, trigrams(stored[k]))) for k in index.candidates(probe)]
        return sorted([(k, j) for k, j in scores if j >= 0.6], key=lambda r: (-r[1], r[0]))

    probes = index.probes(texts[300:])
    before = [index.matches(probe) for probe in probes]
    assert before == [definition(p) for p in probes]
    empty = [p for p, found in zip(probes, before, strict=True) if not found]
    assert len(empty) > 20 and len(empty) < len(probes)  # both kinds: not vacuous
    for i, text in enumerate(texts[60:300]):  # stored after the probes were made
        index.add(f"n{i}", text)
        stored[f"n{i}"] = text
    after = [index.matches(probe) for probe in probes]
    assert after == [definition(p) for p in probes]
    assert any(index.matches(p) for p in empty)  # a later key matches a probe that had none
    assert any(not index.matches(p) for p in empty)


def test_matches_through_delta_merges_rebuilds_and_a_rebuilt_index_are_the_reference() -> None:
    """Batches as a stage makes them (probes first, then some stored under new or existing
    keys), evictions between them, against an independent reference: datasketch's
    ``MinHashLSH`` (insert, remove, query) for the candidates and ``jaccard`` of the trigram
    sets for the scores. The band tables' small delta (entries since the main tables last
    took them in) is searched at most look-ups, joins the main tables several times and goes
    with the rebuilds; an index rebuilt by adding the stored keys (a restore) matches alike."""
    rng = random.Random(29)
    words = "when are the hostel fees due library hours bus route exam date fee".split()
    texts = sorted({" ".join(rng.choices(words, k=rng.randint(2, 6))) for _ in range(900)})
    sets = [trigrams(t) for t in texts]
    minhash = dict(zip(texts, MinHash.bulk(sets, num_perm=64, hashfunc=zlib.crc32), strict=True))
    index, lsh = NearDupIndex(threshold=0.6), MinHashLSH(threshold=0.35, num_perm=64)
    stored: dict[str, str] = {}

    def store(key: str, text: str, probe: Probe | str) -> None:
        index.add(key, probe)
        if key in stored:
            lsh.remove(key)
        lsh.insert(key, minhash[text])
        stored[key] = text

    def reference(text: str) -> list[tuple[str, float]]:
        scores = [
            (k, jaccard(trigrams(text), trigrams(stored[k]))) for k in lsh.query(minhash[text])
        ]
        return sorted([(k, j) for k, j in scores if j >= 0.6], key=lambda r: (-r[1], r[0]))

    for i, text in enumerate(rng.sample(texts, 300)):
        store(f"k{i}", text, text)
    with_delta = merged = rebuilt = 0
    serial = 300
    for _ in range(80):
        batch = rng.sample(texts, 30)
        main = len(index._band_keys)
        probes = index.probes(batch)
        with_delta += len(index._delta_keys) > 0
        merged += len(index._delta_keys) == 0 and len(index._band_keys) > main
        rebuilt += len(index._band_keys) < main
        for text, probe in zip(batch, probes, strict=True):
            assert index.matches(probe) == reference(text)
            if rng.random() < 0.6:  # a new key, or one stored before (replaced)
                key = f"k{serial}" if rng.random() < 0.8 else rng.choice(list(stored))
                serial += 1
                store(key, text, probe)
        for key in rng.sample(list(stored), max(0, len(stored) - 300)):  # evictions
            index.remove(key)
            lsh.remove(key)
            del stored[key]
    assert with_delta > 40 and merged > 3 and rebuilt > 1
    restored = NearDupIndex(threshold=0.6)
    for key, text in stored.items():
        restored.add(key, text)
    batch = rng.sample(texts, 200)
    for text, live, fresh in zip(batch, index.probes(batch), restored.probes(batch), strict=True):
        assert index.matches(live) == restored.matches(fresh) == reference(text)


def _entries_of(index: NearDupIndex, key: str) -> str:
    """Where the band-table entries of stored ``key`` are: ``pending`` (not yet taken in by
    a look-up), ``delta`` or ``main`` (a freed row's stale entries are only ever older than
    its current key's: in the main table when the current ones are in the delta)."""
    row = index._row[key]
    if row in index._added:
        return "pending"
    return "delta" if bool((index._delta_rows == row).any()) else "main"


@pytest.mark.parametrize(("seed", "mask"), [(41, None), (43, 7)])
def test_raw_candidates_through_merges_removals_and_a_restore_are_the_brute_force(
    monkeypatch: pytest.MonkeyPatch, seed: int, mask: int | None
) -> None:
    """The raw LSH look-up (``candidates`` of a probe, and ``_lookup`` of a whole batch, what
    ``probes`` checks) against a brute force computed here: the stored keys whose datasketch
    ``MinHash`` (``MinHash.bulk``, not the index's signatures) equals the probe's on every row
    of at least one band. Matches (the Jaccard filter) would hide an extra candidate, and a
    missing one below the threshold. Texts of one to three words, so many pairs share a band;
    50 keys added, replaced, removed and re-added, the look-ups between them taking the rows
    in, so keys are removed before they are taken in, from the delta and from the main table,
    the delta joins the main table several times and the freed rows' entries go with rebuilds;
    then an index rebuilt from the stored entries (a restore, some as probes, as
    ``HarvestStage`` does) is checked alike, and changed further. ``mask``: the 64-bit band
    keys cut to 3 bits, so every look-up runs into long runs of equal keys from other bands
    and other values, which only the comparison of the band values turns away."""
    from service.harvest import neardup

    if mask is not None:
        full, cut = neardup._band_keys, np.uint64(mask)
        monkeypatch.setattr(neardup, "_band_keys", lambda values, bands: full(values, bands) & cut)
    rng = random.Random(seed)
    pool = 50  # keys k0 .. k49
    words = "when are the hostel fees due library hours bus".split()
    texts = sorted({" ".join(rng.choices(words, k=rng.randint(1, 3))) for _ in range(300)})
    index = NearDupIndex(threshold=0.6)
    bands, rows = index.bands, index.rows
    # the brute force: text i and text j share a band when all `rows` values of one band of
    # their MinHash signatures (band k: values k·rows .. (k+1)·rows - 1) are equal
    reference = MinHash.bulk([trigrams(t) for t in texts], num_perm=64, hashfunc=zlib.crc32)
    grid = np.array([m.hashvalues for m in reference])[:, : bands * rows]
    grid = grid.reshape(len(texts), bands, rows)
    share = (grid[:, None] == grid[None, :]).all(axis=3).any(axis=2)
    at = {text: i for i, text in enumerate(texts)}
    assert 0.1 < share.mean() < 0.9  # pairs that share a band and pairs that do not, many

    def expected(stored: dict[str, str], text: str) -> set[str]:
        return {key for key, other in stored.items() if share[at[text], at[other]]}

    def check(index: NearDupIndex, stored: dict[str, str], batch: list[str]) -> list[Probe]:
        probes = index.probes(batch)  # takes the pending rows in
        for text, probe in zip(batch, probes, strict=True):
            assert index.candidates(probe) == expected(stored, text), text
        which, found = index._lookup(np.stack([probe.values for probe in probes]))
        pairs = list(zip(which.tolist(), [index._keys[row] for row in found.tolist()], strict=True))
        want = {(i, key) for i, text in enumerate(batch) for key in expected(stored, text)}
        assert set(pairs) == want
        flat = which * len(index._keys) + found  # each pair once, by probe then row
        assert len(flat) == len(want) and bool((np.diff(flat) > 0).all())
        return probes

    removed_from = {"pending": 0, "delta": 0, "main": 0}
    counts = {"with_delta": 0, "merged": 0, "rebuilt": 0}

    def run(index: NearDupIndex, stored: dict[str, str], steps: int) -> None:
        last: tuple[str, str] | None = None
        for step in range(steps):
            roll = rng.random()
            if stored and roll < 0.35:  # half the time one of the last keys stored
                key = rng.choice(list(stored)[-6:] if roll < 0.17 else list(stored))
                removed_from[_entries_of(index, key)] += 1
                index.remove(key)
                last = (key, stored.pop(key))
            elif last is not None and roll < 0.5:  # the key just removed, back with its text
                index.add(*last)
                stored.pop(last[0], None)
                stored[last[0]] = last[1]
                last = None
            else:  # a new key or a replaced one (stored last: in order of storing)
                key, text = f"k{rng.randrange(pool)}", rng.choice(texts)
                index.add(key, text)
                stored.pop(key, None)
                stored[key] = text
            if step % 5 == 4:  # every stored key's text, and a few others
                batch = sorted(set(stored.values())) + rng.sample(texts, 3)
                main, stale = len(index._band_keys), index._stale
                probes = check(index, stored, batch)
                counts["with_delta"] += len(index._delta_keys) > 0
                counts["merged"] += len(index._delta_keys) == 0 and len(index._band_keys) > main
                counts["rebuilt"] += index._stale < stale
                if rng.random() < 0.3:  # stored from the batch's probes, as a stage does
                    slot = rng.randrange(len(batch))
                    key = f"k{rng.randrange(pool)}"
                    index.add(key, probes[slot])
                    stored.pop(key, None)
                    stored[key] = batch[slot]

    stored: dict[str, str] = {}
    run(index, stored, 400)
    assert min(removed_from.values()) > 15, removed_from  # 22 / 26 pending, 27 / 28 delta
    assert counts["with_delta"] > 30 and counts["merged"] > 10 and counts["rebuilt"] > 5, counts
    if mask is not None:
        # runs of ~60 equal keys in the main table, nearly all of other values
        assert len(np.unique(index._band_keys)) <= mask + 1 < len(index._band_keys) // 40
    restored = NearDupIndex(threshold=0.6)
    made = restored.probes(list(stored.values()))
    for i, (key, text) in enumerate(stored.items()):
        restored.add(key, made[i] if i % 2 else text)
    check(restored, stored, texts)  # every text of the pool, stored or not
    check(index, stored, texts)
    run(restored, stored, 60)
