"""The embedding layer: the cache, each backend, the character n-gram mix and the factory's
configuration errors. Expected values are worked out by hand in the comments."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from service.embeddings.backends import (
    CharNgramEmbedder,
    MixedEmbedder,
    SentenceTransformerEmbedder,
    TfidfLsaEmbedder,
)
from service.embeddings.model import (
    CachedEmbedder,
    Embedder,
    EmbeddingConfig,
    WordLlamaEmbedder,
    build_embedder,
    l2_normalise,
    shared_embedder,
)
from service.embeddings.protocol import EmbeddingModelError
from service.settings import ConfigError, load_settings


class TableEmbedder:
    """Fixed vectors per text; records every batch it is asked for."""

    def __init__(self, table: dict[str, list[float]], name: str = "table") -> None:
        self.table = table
        self.dim = len(next(iter(table.values())))
        self.name = name
        self.calls: list[list[str]] = []

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.calls.append(list(texts))
        return np.array([self.table[t] for t in texts], dtype=np.float32).reshape(-1, self.dim)


# -- the cache --------------------------------------------------------------------------------


def test_cache_embeds_each_distinct_uncached_text_once_in_one_batch() -> None:
    inner = TableEmbedder({"a": [1, 0], "b": [0, 1], "c": [0.6, 0.8]})
    cached = CachedEmbedder(inner, capacity=10)
    first = cached.embed(["a", "b", "a"])
    assert inner.calls == [["a", "b"]]
    np.testing.assert_array_equal(first, [[1, 0], [0, 1], [1, 0]])
    second = cached.embed(["c", "b"])
    assert inner.calls == [["a", "b"], ["c"]]  # b came from the cache
    np.testing.assert_array_equal(second, np.array([[0.6, 0.8], [0, 1]], dtype=np.float32))
    # misses: a, b, c (a repeat within one call is embedded once, not a hit); hits: b
    assert (cached.hits, cached.misses) == (1, 3)


def test_cache_places_every_repeat_of_a_miss_among_hits() -> None:
    # misses scattered in one step: each repeat of a new text gets its own row, hits keep theirs
    inner = TableEmbedder({"a": [1, 0], "b": [0, 1], "c": [0.6, 0.8]})
    cached = CachedEmbedder(inner, capacity=10)
    cached.embed(["a"])
    got = cached.embed(["c", "a", "b", "c", "a", "b"])
    assert inner.calls == [["a"], ["c", "b"]]
    np.testing.assert_array_equal(
        got, np.array([[0.6, 0.8], [1, 0], [0, 1], [0.6, 0.8], [1, 0], [0, 1]], dtype=np.float32)
    )


def test_cache_evicts_the_least_recently_used() -> None:
    inner = TableEmbedder({"a": [1, 0], "b": [0, 1], "c": [0.6, 0.8]})
    cached = CachedEmbedder(inner, capacity=2)
    cached.embed(["a", "b"])
    cached.embed(["a"])  # a is now the most recent
    cached.embed(["c"])  # evicts b
    cached.embed(["a", "b"])
    assert inner.calls[-1] == ["b"]


def test_cache_keeps_rows_not_the_batch_they_came_from() -> None:
    # A cached row must own its 2 floats: a view of the inner embedder's (3 × 2) batch would
    # keep all 3 rows alive while any one of them is cached (the soak's RSS growth: the
    # cache pinned up to ``capacity`` whole batches).
    inner = TableEmbedder({"a": [1, 0], "b": [0, 1], "c": [0.6, 0.8]})
    cached = CachedEmbedder(inner, capacity=10)
    cached.embed(["a", "b", "c"])
    rows = list(cached._cache.values())
    assert len(rows) == 3
    for row in rows:
        assert row.base is None and row.flags.owndata
        assert row.nbytes == 2 * 4


def test_cache_caller_owns_the_rows_of_an_all_miss_call() -> None:
    # every text a distinct miss: the inner embedder's array is returned as it is; writing
    # into it must change no cached row (the cache holds copies)
    inner = TableEmbedder({"a": [1, 0], "b": [0, 1]})
    cached = CachedEmbedder(inner, capacity=10)
    got = cached.embed(["a", "b"])
    assert got.dtype == np.float32 and got.shape == (2, 2)
    got[:] = 7.0
    np.testing.assert_array_equal(cached.embed(["b", "a"]), [[0, 1], [1, 0]])
    assert inner.calls == [["a", "b"]]


class _OddEmbedder:
    """Returns what the test sets: a read-only array, or rows one column too wide."""

    def __init__(self, rows: np.ndarray, dim: int) -> None:
        self.rows, self.dim, self.name = rows, dim, "odd"

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return self.rows


def test_cache_all_miss_call_checks_width_and_never_hands_on_a_read_only_array() -> None:
    # the all-miss path returns the inner embedder's array only when it is what ``embed``
    # promises (shape (n, dim), float32, writable); a wrong width still fails as a mixed
    # call does, and a read-only array is copied into a fresh one the caller may write
    wide = _OddEmbedder(np.ones((1, 3), dtype=np.float32), dim=2)
    with pytest.raises(ValueError):
        CachedEmbedder(wide, capacity=10).embed(["a"])
    frozen = np.array([[1.0, 0.0]], dtype=np.float32)
    frozen.flags.writeable = False
    got = CachedEmbedder(_OddEmbedder(frozen, dim=2), capacity=10).embed(["a"])
    assert got.flags.writeable and got is not frozen
    got /= 2
    np.testing.assert_array_equal(frozen, [[1.0, 0.0]])


def test_cache_capacity_zero_and_negative() -> None:
    inner = TableEmbedder({"a": [1, 0]})
    cached = CachedEmbedder(inner, capacity=0)
    cached.embed(["a"])
    cached.embed(["a"])
    assert inner.calls == [["a"], ["a"]]
    with pytest.raises(ValueError, match="capacity must be >= 0"):
        CachedEmbedder(inner, capacity=-1)


def test_l2_normalise_keeps_zero_rows() -> None:
    out = l2_normalise(np.array([[3.0, 4.0], [0.0, 0.0]]))
    np.testing.assert_allclose(out, [[0.6, 0.8], [0.0, 0.0]])
    assert out.dtype == np.float32
    with pytest.raises(ValueError, match="2-D"):
        l2_normalise(np.zeros(3))


# -- character n-grams and the mix -------------------------------------------------------------


def test_char_ngram_cosine_by_hand() -> None:
    # char_wb pads each word with spaces: " cat " has 3-grams " ca", "cat", "at ", 4-grams
    # " cat", "cat ", 5-gram " cat " (6 grams); " cats " has " ca", "cat", "ats", "ts ",
    # " cat", "cats", "ats ", " cats", "cats " (9). Shared: " ca", "cat", " cat" (3), each
    # once, so cos = 3 / sqrt(6 * 9) = 0.408248 (a 2^16-wide space: no collision here).
    emb = CharNgramEmbedder(dim=2**16)
    v = emb.embed(["cat", "cats", "CAT", ""])
    assert float(v[0] @ v[1]) == pytest.approx(3 / np.sqrt(54), abs=1e-6)
    assert float(v[0] @ v[2]) == pytest.approx(1.0, abs=1e-6)  # case-folded
    assert not v[3].any()  # no n-gram: the zero vector
    assert emb.embed([]).shape == (0, 2**16)


def test_char_ngrams_never_span_two_words_or_two_texts() -> None:
    # " cat dog " has exactly the n-grams of " cat " and of " dog " (6 each), so its count
    # vector is c(cat) + c(dog) and, normalised, (v(cat) + v(dog)) / |v(cat) + v(dog)|.
    emb = CharNgramEmbedder(dim=2**16)
    cat, dog = emb.embed(["cat"])[0], emb.embed(["dog"])[0]
    expected = (cat + dog) / np.linalg.norm(cat + dog)
    np.testing.assert_allclose(emb.embed(["cat dog"])[0], expected, atol=1e-6)
    np.testing.assert_array_equal(emb.embed(["cat", "dog"]), np.stack([cat, dog]))


def _char_counts_by_hand(text: str, dim: int) -> np.ndarray:
    """The hashed char_wb 3-5-gram counts of one text, n-gram by n-gram in Python (the
    reference of the embedder's batch passes): a window of the padded, normalised text with
    no space inside; hash ``n·P^n + Σ p_k·P^(n-1-k)`` mod 2^64, splitmix64's finaliser,
    column ``h mod dim``, sign the top bit."""
    from service.text import normalise

    mask, poly, mix = (1 << 64) - 1, 0x9E3779B97F4A7C15, 0xBF58476D1CE4E5B9
    padded = " " + normalise(text, separators="whitespace") + " "
    counts = np.zeros(dim)
    for n in range(3, 6):
        for i in range(len(padded) - n + 1):
            gram = padded[i : i + n]
            if " " in gram[1:-1]:
                continue
            h = n * pow(poly, n, 1 << 64)
            for k, char in enumerate(gram):
                h += ord(char) * pow(poly, n - 1 - k, 1 << 64)
            h &= mask
            h ^= h >> 29
            h = (h * mix) & mask
            h ^= h >> 32
            counts[h % dim] += -1.0 if h >> 63 else 1.0
    return counts


@pytest.mark.parametrize("dim", [512, 500])  # a power of two (a mask) and not (a modulo)
def test_char_ngrams_are_the_hashes_by_hand_on_real_text(shared_data: Path, dim: int) -> None:
    import random

    texts = random.Random(dim).sample(_real_questions(shared_data), 400) + ODD_TEXTS
    expected = l2_normalise(np.stack([_char_counts_by_hand(text, dim) for text in texts]))
    got = CharNgramEmbedder(dim=dim).embed(texts)
    assert np.array_equal(got.view(np.uint32), expected.view(np.uint32))


def test_char_ngram_bad_arguments() -> None:
    with pytest.raises(ValueError, match=">= 16"):
        CharNgramEmbedder(dim=8)
    with pytest.raises(ValueError, match="n-gram range"):
        CharNgramEmbedder(ngram_range=(4, 2))


def test_mixed_cosine_is_the_weighted_sum() -> None:
    # semantic cos = 1*0.6 + 0*0.8 = 0.6; char cos = 0; w = 0.25:
    # mixed cos = (1 - 0.25) * 0.6 + 0.25 * 0 = 0.45
    semantic = TableEmbedder({"x": [1, 0], "y": [0.6, 0.8]}, name="sem")
    chars = TableEmbedder({"x": [1, 0, 0], "y": [0, 1, 0]}, name="chr")
    mixed = MixedEmbedder(semantic, chars, char_weight=0.25)
    v = mixed.embed(["x", "y"])
    assert v.shape == (2, 5) and mixed.dim == 5 and mixed.name == "sem+chr@0.25"
    assert float(v[0] @ v[1]) == pytest.approx(0.45, abs=1e-6)
    np.testing.assert_allclose(np.linalg.norm(v, axis=1), [1, 1], atol=1e-6)
    for bad in (0.0, 1.0, -0.1):
        with pytest.raises(ValueError, match=r"char_weight must be in \(0, 1\)"):
            MixedEmbedder(semantic, chars, char_weight=bad)


# -- TF-IDF/LSA fallback -----------------------------------------------------------------------


def test_tfidf_lsa_embedder_fits_on_the_given_texts() -> None:
    texts = ["hostel fee per semester", "hostel fee yearly", "exam schedule for term two",
             "exam date sheet", "library opening hours", "library closes at midnight"]  # fmt: skip
    emb = TfidfLsaEmbedder(texts, components=4)
    assert emb.dim == 4 and emb.name == "tfidf-lsa:4:6"
    v = emb.embed(["hostel fee", "exam date", "hostel fee"])
    assert v.shape == (3, 4) and v.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(v, axis=1), 1, atol=1e-5)
    assert float(v[0] @ v[2]) == pytest.approx(1.0, abs=1e-6)
    assert float(v[0] @ v[1]) < float(v[0] @ v[2])
    with pytest.raises(ValueError, match="at least 3 texts"):
        TfidfLsaEmbedder(["a b", "c d"])


# -- WordLlama (the shipped model) -------------------------------------------------------------


def test_wordllama_ranks_a_paraphrase_above_another_topic() -> None:
    emb = WordLlamaEmbedder()
    v = emb.embed(["I lost my debit card", "my bank card is missing", "when is the exam"])
    assert v.shape == (3, 256)
    np.testing.assert_allclose(np.linalg.norm(v, axis=1), 1, atol=1e-5)
    assert float(v[0] @ v[1]) > float(v[0] @ v[2]) + 0.1
    assert isinstance(emb, Embedder)


def test_wordllama_pooling_is_the_librarys_own_to_the_bit() -> None:
    # The reference is wordllama's own embed (its tokenizer padding each 64-text chunk to the
    # longest text): every demo question, gold question and odd text, in chunks that mix
    # token counts, must get the very same float32 vector (the golden reports depend on it).
    import json

    from wordllama import WordLlama

    from service.demo import demo_path
    from service.embeddings.model import _wordllama_folder

    with demo_path("querylog.jsonl").open(encoding="utf-8") as log:
        texts = [json.loads(line)["question"] for line in log if line.strip()]
    with demo_path("gold.jsonl").open(encoding="utf-8") as gold:
        texts += [json.loads(line)["question"] for line in gold if line.strip()]
    odd = ["", "   ", "?", "a", "🙂🙂 fee?", "परीक्षा कब है", "word " * 300, "Hostel  FEE!!"]
    texts = list(dict.fromkeys(texts)) + odd
    assert len(texts) > 500
    reference = WordLlama.load(config="l2_supercat", dim=256, cache_dir=_wordllama_folder(),
                               disable_download=True)  # fmt: skip
    assert reference.tokenizer.padding is not None  # the library pads: a real comparison
    ours = WordLlamaEmbedder()
    for start in range(0, len(texts), 173):
        chunk = texts[start : start + 173]
        expected = l2_normalise(reference.embed(chunk, norm=False))
        got = ours.embed(chunk)
        # the bits, not the values (== cannot see -0.0 vs 0.0)
        bits = np.asarray(expected, dtype=np.float32).view(np.uint32)
        assert got.dtype == np.float32 and np.array_equal(got.view(np.uint32), bits), start
    assert not ours.embed([""]).any()  # no token: a zero row


def test_wordllama_pooling_is_the_librarys_own_on_real_text(shared_data: Path) -> None:
    # The pooling is one sparse product (texts x vocabulary) @ table, summing each text's
    # token rows from zeros in token order: the library's own vectors, bit for bit, on a
    # sample of real questions of every source and script, in chunks of 250 (the live
    # micro-batches' size), with repeated tokens and texts of one token count together.
    import random

    from wordllama import WordLlama

    from service.embeddings.model import _wordllama_folder

    reference = WordLlama.load(config="l2_supercat", dim=256, cache_dir=_wordllama_folder(),
                               disable_download=True)  # fmt: skip
    # a sum from zeros and one from the first row differ only in the sign of a zero: the
    # table holds none (nor a non-finite value), so the sums are the same bits
    table = reference.embedding
    assert np.isfinite(table).all() and not (np.signbit(table) & (table == 0)).any()
    texts = random.Random(7).sample(_real_questions(shared_data), 3_000) + ODD_TEXTS
    ours = WordLlamaEmbedder()
    for start in range(0, len(texts), 250):
        chunk = texts[start : start + 250]
        expected = np.asarray(l2_normalise(reference.embed(chunk, norm=False)), np.float32)
        got = ours.embed(chunk)
        assert np.array_equal(got.view(np.uint32), expected.view(np.uint32)), start


def _real_questions(shared_data: Path) -> list[str]:
    """Distinct real questions and paragraphs: NQ-open, CLINC150, BANKING77, Hinglish-TOP
    (both columns), XQuAD's questions in all twelve languages and its paragraphs in en, hi
    and es."""
    import csv
    import json

    texts = []
    with (shared_data / "nq-open" / "NQ-open.dev.jsonl").open(encoding="utf-8") as handle:
        texts += [json.loads(line)["question"] for line in handle]
    clinc = json.loads((shared_data / "clinc150" / "data_full.json").read_text())
    texts += [text for split in clinc.values() for text, _ in split]
    with (shared_data / "banking77" / "test.csv").open(encoding="utf-8", newline="") as handle:
        texts += [row[0] for row in csv.reader(handle)]
    with (shared_data / "hinglish-top" / "test.tsv").open(encoding="utf-8") as handle:
        for line in handle:
            texts += line.rstrip("\n").split("\t")[:2]
    for path in sorted((shared_data / "xquad").glob("xquad.*.json")):
        lang = path.name.split(".")[1]
        for article in json.loads(path.read_text(encoding="utf-8"))["data"]:
            for paragraph in article["paragraphs"]:
                if lang in ("en", "hi", "es"):
                    texts.append(paragraph["context"])
                texts += [qa["question"] for qa in paragraph["qas"]]
    return list(dict.fromkeys(texts))


#: Texts at the edges of the word split: spaces (none, leading, trailing, runs), other
#: whitespace, the word mark itself, added tokens, byte fallback, empty.
ODD_TEXTS = [
    "", " ", "  ", "a", " a", "a ", "a  b", "   three leading", "trailing   ", "tab\there",
    "new\nline \n next", "\u2581already marked", "mid\u2581word", "a </s> b", "<s>", "x<unk>y",
    "🙂🙂 fee?", "परीक्षा कब है", "ü ö ä ß", "word " * 300, "Hostel  FEE!!", "<EMAIL> mailed",
    "\u00a0non-breaking\u00a0space", "zero\u200bwidth",
]  # fmt: skip


def test_word_tokens_are_the_librarys_ids_on_real_text(shared_data: Path) -> None:
    # The reference is the library's own encode_batch of each text whole; every real question
    # (and the odd texts) must get the very same ids with the word memo cold, warm, and
    # cleared every few words.
    from service.embeddings.model import WordTokens, words_never_merge

    model = WordLlamaEmbedder()._load()
    tokenizer = model.tokenizer
    assert words_never_merge(tokenizer)  # the shipped tokenizer takes the word path
    texts = _real_questions(shared_data) + ODD_TEXTS
    assert len(texts) > 25_000
    expected = [e.ids for e in tokenizer.encode_batch(texts, add_special_tokens=False)]
    memo = WordTokens(tokenizer)
    assert memo.by_word
    for _ in range(2):  # cold, then every word known
        assert memo(texts) == expected
    assert WordTokens(tokenizer, capacity=3)(texts) == expected  # cleared all the time
    # a text without spaces is one word: tokenized, not remembered (the memo's bytes)
    chinese = "请问图书馆周末几点开门以及如何办理借书证和续借手续" * 6
    fresh = WordTokens(tokenizer)
    assert fresh([chinese, "a b"]) == [
        tokenizer.encode(chinese, add_special_tokens=False).ids,
        tokenizer.encode("a b", add_special_tokens=False).ids]  # fmt: skip
    assert set(fresh._memo) == {"a", "b"}  # keyed without the word's first mark
    # the marked texts went to the library: a space inside a word is not a word boundary
    assert memo(["a\u2581b"]) == [tokenizer.encode("a\u2581b", add_special_tokens=False).ids]


def test_word_tokens_leave_other_tokenizers_to_the_library() -> None:
    # A tokenizer that truncates, or whose vocabulary holds a token with the mark inside
    # (a merge across two words), is encoded whole, as the library does.
    from tokenizers import Tokenizer
    from tokenizers.models import BPE

    from service.embeddings.model import WordTokens, words_never_merge

    shipped = WordLlamaEmbedder()._load().tokenizer
    truncating = Tokenizer.from_str(shipped.to_str())
    truncating.enable_truncation(3)
    assert not words_never_merge(truncating)
    words = WordTokens(truncating)
    assert not words.by_word
    text = "one two three four five"
    assert words([text]) == [truncating.encode(text, add_special_tokens=False).ids]
    assert len(words([text])[0]) == 3

    mark = "\u2581"
    vocab = {mark: 0, "a": 1, "b": 2, mark + "a": 3, mark + "b": 4, "a" + mark: 5,
             "a" + mark + "b": 6}  # fmt: skip
    crossing = Tokenizer(BPE(vocab, [("a", mark), ("a" + mark, "b"), (mark, "a"), (mark, "b")]))
    crossing.normalizer = Tokenizer.from_str(shipped.to_str()).normalizer
    assert not words_never_merge(crossing)  # "a▁" and "a▁b" cross a word boundary
    # "a b" is normalised to ▁a▁b; the first merge (a, ▁) spans the two words: ▁ + a▁b,
    # where the words alone would be ▁a + ▁b
    assert crossing.encode("a b").ids == [0, 6]
    assert [[t.id for t in crossing.model.tokenize(w)] for w in (mark + "a", mark + "b")] == [
        [3], [4]]  # fmt: skip
    assert WordTokens(crossing)(["a b"]) == [[0, 6]]


# -- the factory and its configuration ---------------------------------------------------------


def test_factory_default_is_wordllama_with_the_char_mix() -> None:
    emb = build_embedder(EmbeddingConfig())
    assert isinstance(emb, CachedEmbedder) and emb.capacity == 20_000
    assert emb.name == "wordllama:l2_supercat:256+char3-5:512@0.35"
    assert emb.dim == 256 + 512
    plain = build_embedder(EmbeddingConfig(char_weight=0, cache_size=5))
    assert (plain.name, plain.dim, plain.capacity) == ("wordllama:l2_supercat:256", 256, 5)


def test_factory_tfidf_needs_fit_texts() -> None:
    config = EmbeddingConfig(backend="tfidf", tfidf_components=3)
    with pytest.raises(ValueError, match="pass fit_texts"):
        build_embedder(config)
    texts = ["hostel fee", "fee yearly", "exam date", "exam hall"]
    emb = build_embedder(config, fit_texts=texts)
    assert emb.name.startswith("tfidf-lsa:3:") and emb.dim == 3  # no char mix on tfidf


def test_shared_embedder_is_one_per_config_and_fit_texts() -> None:
    config = EmbeddingConfig(cache_size=7)
    assert shared_embedder(config) is shared_embedder(EmbeddingConfig(cache_size=7))
    assert shared_embedder(config) is not shared_embedder(EmbeddingConfig(cache_size=8))
    tfidf = EmbeddingConfig(backend="tfidf", tfidf_components=2)
    texts = ["hostel fee", "fee yearly", "exam date", "exam hall"]
    first = shared_embedder(tfidf, texts)
    assert shared_embedder(tfidf, list(texts)) is first
    assert shared_embedder(tfidf, [*texts, "library hours"]) is not first


def test_settings_section_errors_name_the_field(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"analytics\.embeddings: .*needs 'model_path'"):
        load_settings(analytics={"embeddings": {"backend": "sentence-transformers"}})
    with pytest.raises(ConfigError, match=r"analytics\.embeddings: .*only read by backend"):
        load_settings(analytics={"embeddings": {"model_path": str(tmp_path)}})
    with pytest.raises(ConfigError, match=r"analytics\.embeddings\.backend"):
        load_settings(analytics={"embeddings": {"backend": "openai"}})
    with pytest.raises(ConfigError, match=r"analytics\.embeddings\.char_weight"):
        load_settings(analytics={"embeddings": {"char_weight": 1.0}})
    with pytest.raises(ConfigError, match=r"analytics\.embeddings\.cache_size"):
        load_settings(analytics={"embeddings": {"cache_size": -1}})
    settings = load_settings(analytics={"embeddings": {"backend": "tfidf"}})
    assert settings.analytics.embeddings.backend == "tfidf"


def test_sentence_transformers_folder_without_a_model(tmp_path: Path) -> None:
    """Refused with the configuration (so ``config check`` and every start name the field);
    a configuration built without validation is refused at load, as a bad configuration
    (a ``ValueError`` the commands report with exit 2), naming the setting."""
    with pytest.raises(
        ConfigError, match=r"analytics\.embeddings: 'model_path' .*\(no modules\.json"
    ):
        load_settings(analytics={"embeddings": {"backend": "sentence-transformers",
                                                "model_path": str(tmp_path)}})  # fmt: skip
    config = EmbeddingConfig.model_construct(
        backend="sentence-transformers", model_path=tmp_path, char_weight=0.35, cache_size=0
    )
    with pytest.raises(EmbeddingModelError, match=r"embeddings\.model_path: .*no modules\.json"):
        build_embedder(config)
    assert issubclass(EmbeddingModelError, ValueError) and issubclass(
        EmbeddingModelError, RuntimeError
    )


def test_a_folder_that_does_not_load_is_a_clean_error(tmp_path: Path) -> None:
    """A ``modules.json`` that is no model (here an empty list of modules): the load fails
    inside sentence-transformers; goldwatch says which setting points at it."""
    pytest.importorskip("sentence_transformers")
    (tmp_path / "modules.json").write_text("[]", encoding="utf-8")
    config = EmbeddingConfig(backend="sentence-transformers", model_path=tmp_path, char_weight=0)
    with pytest.raises(EmbeddingModelError, match=r"analytics\.embeddings\.model_path: "):
        build_embedder(config)


def _tiny_sentence_transformer(folder: Path) -> Path:
    """A 1-layer, 16-d BERT with random weights and a 57-token WordPiece vocabulary, saved as
    a sentence-transformers folder (mean pooling). Built here: nothing is downloaded."""
    import torch
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer import modules as models
    from transformers import BertConfig, BertModel, BertTokenizerFast

    torch.manual_seed(0)
    letters = "abcdefghijklmnopqrstuvwxyz"
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *letters, *("##" + c for c in letters)]
    (folder / "vocab.txt").write_text("\n".join(vocab) + "\n", encoding="utf-8")
    tokenizer = BertTokenizerFast(vocab_file=str(folder / "vocab.txt"))
    config = BertConfig(
        vocab_size=len(vocab), hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
        intermediate_size=32, max_position_embeddings=64,
    )  # fmt: skip
    BertModel(config).save_pretrained(folder / "hf")
    tokenizer.save_pretrained(folder / "hf")
    modules = [models.Transformer(str(folder / "hf"), max_seq_length=32),
               models.Pooling(16, "mean")]  # fmt: skip
    SentenceTransformer(modules=modules, device="cpu").save(str(folder / "st"))
    return folder / "st"


@pytest.mark.slow  # imports torch and transformers (~10-25 s on a loaded CI machine)
def test_sentence_transformers_backend_loads_a_local_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("sentence_transformers")  # the 'embeddings' extra (.ci/run installs it)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    folder = _tiny_sentence_transformer(tmp_path)
    emb = build_embedder(EmbeddingConfig(backend="sentence-transformers", model_path=folder,
                                         char_weight=0))  # fmt: skip
    assert (emb.name, emb.dim) == ("sentence-transformers:st:16", 16)
    texts = ["hostel fee", "exam date", "hostel fee"]
    v = emb.embed(texts)
    np.testing.assert_allclose(np.linalg.norm(v, axis=1), 1, atol=1e-5)
    # the model's own output, normalised independently, is what the backend returns
    from sentence_transformers import SentenceTransformer

    raw = SentenceTransformer(str(folder), device="cpu").encode(texts)
    expected = raw / np.linalg.norm(raw, axis=1, keepdims=True)
    np.testing.assert_allclose(v, expected, atol=1e-5)
    mixed = build_embedder(EmbeddingConfig(backend="sentence-transformers", model_path=folder))
    assert mixed.dim == 16 + 512 and mixed.name.endswith("+char3-5:512@0.35")
    assert isinstance(mixed.inner.semantic, SentenceTransformerEmbedder)  # type: ignore[attr-defined]
