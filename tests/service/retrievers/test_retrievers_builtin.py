"""Built-in retrievers on a tiny hand corpus; expected values worked out by hand."""

from __future__ import annotations

import math

import pytest

from service.records import Passage, ScoredDoc
from service.retrievers.bm25 import BM25Retriever
from service.retrievers.hybrid import HybridRetriever, fuse
from service.retrievers.text import tokenize
from service.retrievers.tfidf import TfidfRetriever

QUESTIONS = [
    "Is there a scholarship for students?",
    "scholarshp",
    "",
    "?!",
    "when does the library close",
    "zzzz qqqq",
    "term fee",
]


class Fixed:
    """A member retriever returning a fixed list; records the k it was asked for."""

    def __init__(self, name: str, doc_ids: list[str]) -> None:
        self.name = name
        self.docs = [ScoredDoc(d, 100.0 - i) for i, d in enumerate(doc_ids)]
        self.asked: list[int] = []

    def search(self, question: str, k: int) -> list[ScoredDoc]:
        self.asked.append(k)
        return self.docs[:k]

    def search_batch(self, questions: list[str], k: int) -> list[list[ScoredDoc]]:
        return [self.search(q, k) for q in questions]


def test_bm25_ranks_the_passage_with_the_rare_term_first(hand_corpus: list[Passage]) -> None:
    results = BM25Retriever(hand_corpus).search("scholarship students", 4)
    assert results[0].doc_id == "p1"  # 'students' is in all four, 'scholarship' only in p1
    assert {doc.doc_id for doc in results} == {"p1", "p2", "p3", "p4"}


def test_bm25_single_term_score_matches_the_formula_by_hand(hand_corpus: list[Passage]) -> None:
    # Lucene BM25 (no (k1+1) factor), N=4, df(scholarship)=1, tf=1, |p1|=9, avgdl=38/4=9.5,
    # k1=1.5, b=0.75: idf = ln(1 + 3.5/1.5) = 1.2039728;
    # tf part = 1 / (1 + 1.5 * (0.25 + 0.75 * 9/9.5)) = 1 / 2.4407895; score = 0.4932720
    assert [len(tokenize(p.text)) for p in hand_corpus] == [9, 9, 11, 9]
    (only,) = BM25Retriever(hand_corpus).search("scholarship", 3)
    assert only.doc_id == "p1"
    assert only.score == pytest.approx(0.4932720, rel=1e-6)


def test_unknown_or_empty_questions_give_nothing(hand_corpus: list[Passage]) -> None:
    bm25, tfidf = BM25Retriever(hand_corpus), TfidfRetriever(hand_corpus)
    hybrid = HybridRetriever([bm25, tfidf])
    for retriever in (bm25, tfidf, hybrid):
        assert retriever.search("", 5) == []
        assert retriever.search("?! ...", 5) == []
    assert bm25.search("zzzz qqqq scholarshp", 5) == []
    assert tfidf.search("zzzz", 5) == []  # 'zz'-grams exist nowhere in the corpus


def test_tfidf_finds_a_misspelt_word_through_character_ngrams(hand_corpus: list[Passage]) -> None:
    results = TfidfRetriever(hand_corpus).search("scholarshp", 4)
    assert results[0].doc_id == "p1"
    assert all(doc.score > 0 for doc in results)


def test_tfidf_scores_a_passage_against_itself_as_one(hand_corpus: list[Passage]) -> None:
    # Both views are unit vectors, so cos = 1 in each and w*1 + (1-w)*1 = 1 for any w.
    for weight in (0.0, 0.3, 1.0):
        best = TfidfRetriever(hand_corpus, word_weight=weight).search(hand_corpus[2].text, 1)
        assert best[0].doc_id == "p3"
        assert best[0].score == pytest.approx(1.0, abs=1e-5)


def test_k_larger_than_the_corpus(hand_corpus: list[Passage]) -> None:
    for retriever in (BM25Retriever(hand_corpus), TfidfRetriever(hand_corpus)):
        results = retriever.search("students", 50)
        assert sorted(doc.doc_id for doc in results) == ["p1", "p2", "p3", "p4"]


@pytest.mark.parametrize("kind", ["bm25", "tfidf", "hybrid"])
def test_search_batch_equals_search_one_by_one(kind: str, hand_corpus: list[Passage]) -> None:
    bm25, tfidf = BM25Retriever(hand_corpus), TfidfRetriever(hand_corpus)
    retriever = {"bm25": bm25, "tfidf": tfidf, "hybrid": HybridRetriever([bm25, tfidf])}[kind]
    for k in (1, 2, 10):
        assert retriever.search_batch(QUESTIONS, k) == [retriever.search(q, k) for q in QUESTIONS]
    assert retriever.search_batch([], 3) == []


def test_non_latin_scripts_do_not_crash_and_match() -> None:
    corpus = [
        Passage("zh", "超级碗50是一场美式橄榄球比赛。"),
        Passage("hi", "पैंथर्स डिफ़ेंस ने कितने अंक दिए"),
        Passage("en", "The Panthers defense gave up 308 points."),
    ]
    for retriever in (BM25Retriever(corpus), TfidfRetriever(corpus)):
        assert retriever.search("橄榄球比赛", 3)[0].doc_id == "zh"
        assert retriever.search("कितने अंक", 3)[0].doc_id == "hi"
        assert retriever.search("ภาษาไทย", 3) == []


def test_rrf_of_two_hand_lists() -> None:
    # A = a, b, c ; B = b, d, a ; rrf_k = 60
    # b: 1/61 + 1/62 = 0.0325224   a: 1/61 + 1/63 = 0.0322609   d: 1/62   c: 1/63
    a_list = [ScoredDoc("a", 3.0), ScoredDoc("b", 2.0), ScoredDoc("c", 1.0)]
    b_list = [ScoredDoc("b", 0.9), ScoredDoc("d", 0.8), ScoredDoc("a", 0.7)]
    fused = fuse([a_list, b_list], rrf_k=60)
    assert [doc.doc_id for doc in fused] == ["b", "a", "d", "c"]
    expected = [1 / 61 + 1 / 62, 1 / 61 + 1 / 63, 1 / 62, 1 / 63]
    assert [doc.score for doc in fused] == pytest.approx(expected, rel=1e-12)
    assert fused[0].score == pytest.approx(0.0325224, abs=1e-7)


def test_rrf_counts_a_repeated_id_once_at_its_first_place() -> None:
    # A = a, a, b (a user's retriever repeating a) reads as a, b; B = b:
    # a: 1/61   b: 1/62 + 1/61 (not 1/63 + 1/61, and a not 1/61 + 1/62)
    a_list = [ScoredDoc("a", 3.0), ScoredDoc("a", 3.0), ScoredDoc("b", 1.0)]
    fused = fuse([a_list, [ScoredDoc("b", 0.9)]], rrf_k=60)
    assert [doc.doc_id for doc in fused] == ["b", "a"]
    assert [doc.score for doc in fused] == pytest.approx([1 / 62 + 1 / 61, 1 / 61], rel=1e-12)


def test_rrf_ties_are_deterministic_and_member_order_free() -> None:
    x_first = fuse([[ScoredDoc("y", 1.0)], [ScoredDoc("x", 1.0)]])
    assert [doc.doc_id for doc in x_first] == ["x", "y"]  # equal 1/61: by id
    lists = [[ScoredDoc(d, 1.0) for d in order] for order in ("pqr", "qrp", "rpq")]
    fused = fuse(lists)  # every doc has ranks {1, 2, 3}
    assert fuse(lists[::-1]) == fused
    assert [doc.doc_id for doc in fused] == ["p", "q", "r"]
    assert len({doc.score for doc in fused}) == 1
    assert fused[0].score == math.fsum([1 / 61, 1 / 62, 1 / 63])


def test_hybrid_asks_members_for_a_deeper_list_and_cuts_to_k() -> None:
    first, second = Fixed("one", ["a", "b", "c"]), Fixed("two", ["b", "d", "a"])
    hybrid = HybridRetriever([first, second], rrf_k=60, depth=100)
    assert [doc.doc_id for doc in hybrid.search("q", 2)] == ["b", "a"]
    assert first.asked == [100] and second.asked == [100]
    hybrid.search("q", 150)
    assert first.asked[-1] == 150


def test_constructor_errors(hand_corpus: list[Passage]) -> None:
    with pytest.raises(ValueError, match="empty"):
        BM25Retriever([])
    with pytest.raises(ValueError, match="duplicate"):
        TfidfRetriever([Passage("a", "x"), Passage("a", "y")])
    with pytest.raises(ValueError):
        TfidfRetriever(hand_corpus, word_weight=1.5)
    with pytest.raises(ValueError):
        HybridRetriever([])
