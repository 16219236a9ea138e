"""Known questions: normalisation, near-duplicate matching in batches, live scores."""

from __future__ import annotations

from typing import Any

import pytest

from service.demo import demo_path
from service.goldset import GoldSet, load_gold_set
from service.known import KnownMatch, KnownQuestionIndex, live_scores, normalize
from service.records import GoldQuestion

MCA = "What is the annual tuition fee for the MCA programme?"
LIBRARY = "When does the library close on Saturday?"
CUP = "Who won the 1990 World Cup?"


def gold_set() -> GoldSet:
    return GoldSet(
        (
            GoldQuestion("q-1", MCA, ("p-2",)),
            GoldQuestion("q-2", LIBRARY, ("p-5", "p-6"), kind="multi-passage"),
            GoldQuestion("q-3", CUP, (), kind="unanswerable"),
        )
    )


@pytest.fixture(scope="module")
def index() -> KnownQuestionIndex:
    return KnownQuestionIndex(gold_set())


def test_normalize_folds_case_width_punctuation_and_spaces() -> None:
    assert normalize("  WHAT’s the FEE?!  ") == "what s the fee"
    assert (
        normalize("ｆｅｅ\u3000２０２６") == "fee 2026"
    )  # NFKC: full-width letters, digits, space
    assert normalize("Straße") == "strasse"
    assert normalize("हॉस्टल के लिए।") == "हॉस्टल के लिए"  # vowel signs kept, danda dropped


def test_exact_after_normalisation_is_similarity_one(index: KnownQuestionIndex) -> None:
    matches = index.match_many(
        ["  when does the LIBRARY close on saturday ?? ", "who won the 1990 world cup"]
    )
    assert matches == [KnownMatch("q-2", 1.0), KnownMatch("q-3", 1.0)]


def test_typo_matches_unrelated_does_not(index: KnownQuestionIndex) -> None:
    typo, other = index.match_many(
        [
            "What is the anual tuition fee for the MCA programme?",
            "Is there a bus to the railway station?",
        ]
    )
    assert typo is not None and typo.gold_id == "q-1"
    assert 0.9 <= typo.similarity < 1.0
    assert other is None


def test_threshold_is_inclusive_and_tunable() -> None:
    question = "when does the library close"  # a shorter paraphrase, similarity about 0.82
    (loose,) = KnownQuestionIndex(gold_set(), threshold=0.8).match_many([question])
    (strict,) = KnownQuestionIndex(gold_set()).match_many([question])
    assert loose is not None and loose.gold_id == "q-2" and strict is None
    (same,) = KnownQuestionIndex(gold_set(), threshold=loose.similarity).match_many([question])
    assert same == loose


def test_a_question_containing_a_gold_question_plus_more_is_not_a_duplicate(
    index: KnownQuestionIndex,
) -> None:
    # Unseen n-grams keep their weight (hashing, not a gold vocabulary), so the extra clause
    # lowers the cosine instead of being ignored.
    (match,) = index.match_many([MCA + " And the hostel fee for a double room with AC?"])
    assert match is None


def test_numbers_must_agree(index: KnownQuestionIndex) -> None:
    assert index.match_many(["Who won the 1994 World Cup?"]) == [None]
    (match,) = KnownQuestionIndex(gold_set(), threshold=0.5).match_many(["who won the 1990 cup"])
    assert match is not None and match.gold_id == "q-3"


def test_one_transform_and_one_product_per_batch(monkeypatch: pytest.MonkeyPatch) -> None:
    index = KnownQuestionIndex(gold_set())  # a fresh cache
    calls: list[int] = []
    original = index._hasher.transform

    def counting(texts: Any) -> Any:
        calls.append(len(texts))
        return original(texts)

    monkeypatch.setattr(index._hasher, "transform", counting)
    questions = [MCA, LIBRARY, "unrelated question", CUP] * 50
    matches = index.match_many(questions)
    assert calls == [4]  # one transform of the batch's distinct questions
    assert [m and m.gold_id for m in matches[:4]] == ["q-1", "q-2", None, "q-3"]
    assert [m and m.gold_id for m in matches] == [m and m.gold_id for m in matches[:4]] * 50
    assert index.match_many([]) == [] and calls == [4]
    # remembered: a later batch transforms only the questions it has not seen
    again = index.match_many([LIBRARY.upper(), "another unrelated one"])
    assert calls == [4, 1] and again[0] is not None and again[0].gold_id == "q-2"


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [({"threshold": 0.0}, "threshold"), ({"threshold": 1.5}, "threshold"),
     ({"ngram_range": (4, 3)}, "ngram_range"), ({"ngram_range": (0, 3)}, "ngram_range")],
)  # fmt: skip
def test_bad_arguments(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        KnownQuestionIndex(gold_set(), **kwargs)


def test_empty_gold_set_is_rejected() -> None:
    with pytest.raises(ValueError, match="no questions"):
        KnownQuestionIndex(GoldSet(()))


def test_live_scores_by_hand() -> None:
    multi = gold_set().by_id["q-2"]
    # One of the two gold passages, at rank 2: recall 1/2, hit 1, RR 1/2.
    assert live_scores(multi, ["p-9", "p-6", "p-7"], k=10) == {"recall": 0.5, "hit": 1.0, "rr": 0.5}
    # Both, ranks 1 and 3, cut at k=2: only p-5 counts.
    assert live_scores(multi, ["p-5", "p-1", "p-6"], k=2) == {"recall": 0.5, "hit": 1.0, "rr": 1.0}
    assert live_scores(multi, ["p-1", "p-5"], k=1) == {"recall": 0.0, "hit": 0.0, "rr": 0.0}
    assert live_scores(multi, [], k=5) == {"recall": 0.0, "hit": 0.0, "rr": 0.0}
    # Repeated ids keep their first place (p-5 at rank 2, p-6 at rank 3).
    assert live_scores(multi, ["p-1", "p-5", "p-5", "p-6"], k=3)["recall"] == 1.0


def test_live_scores_graded_relevance_uses_level_one() -> None:
    graded = GoldQuestion("q-9", "?", ("a", "b"), relevance={"a": 2, "b": 1})
    assert live_scores(graded, ["b"], k=5) == {"recall": 0.5, "hit": 1.0, "rr": 1.0}


def test_live_scores_readable_filter_and_unanswerable() -> None:
    multi = gold_set().by_id["q-2"]
    only_p6 = live_scores(multi, ["p-6"], k=5, readable=lambda pid: pid != "p-5")
    assert only_p6 == {"recall": 1.0, "hit": 1.0, "rr": 1.0}
    with pytest.raises(ValueError, match="no \\(readable\\) gold"):
        live_scores(gold_set().by_id["q-3"], ["p-1"], k=5)
    with pytest.raises(ValueError, match="no \\(readable\\) gold"):
        live_scores(multi, ["p-5"], k=5, readable=lambda pid: False)
    with pytest.raises(ValueError, match="k must be >= 1|cutoff k"):
        live_scores(multi, ["p-5"], k=0)


def test_every_demo_gold_question_finds_itself() -> None:
    gold = load_gold_set(demo_path("gold.jsonl"))
    index = KnownQuestionIndex(gold)
    matches = index.match_many([q.question for q in gold])
    assert [m.gold_id if m else None for m in matches] == [q.id for q in gold]
    assert all(m is not None and m.similarity == 1.0 for m in matches)
