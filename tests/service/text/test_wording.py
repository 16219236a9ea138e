"""Harvest's merge rule (finding F6): similar wordings merge only when they ask the same
question — the same numbers, content words and question word — in the index and the stage.

Every expected verdict is worked out by hand from the pair (the differing tokens are named
in each case); the trigram Jaccard of the pairs the stage would have merged is checked first,
so each case is one the similarity alone merges."""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np
import pytest

from service.harvest.config import HarvestConfig
from service.harvest.neardup import NearDupIndex
from service.harvest.stage import HarvestStage
from service.harvest.store import MemoryCandidates
from service.harvest.text import comparison_form, jaccard, trigrams
from service.records import GoldQuestion
from service.text.wording import disagreement, known_disagreement, may_merge, wording
from tests.service.harvest.helpers import batch, event

REFUSED = {"refused": True, "topic": "awards", "language": "en"}

#: (one wording, another, why they differ): different questions.
APART = [
    # the trial's pair: year and award differ
    (
        "who won the oscar for best picture in 1976",
        "who won the oscar for best actor in 1975",
        "numbers",
    ),
    (
        "who won the oscar for best picture in 1976",
        "who won the oscar for best actor in 1976",
        "words",
    ),  # picture / actor
    (
        "when does dragon ball super episode 113 start",
        "when does dragon ball super episode 130 start",
        "numbers",
    ),
    (
        "who won the first season of america s got talent",
        "who won the fifth season of america s got talent",
        "numbers",
    ),  # 1 / 5
    ("who won the 2nd season of the voice", "who won the 3rd season of the voice", "numbers"),
    ("who won the super bowl in 2018", "who won the super bowl", "numbers"),  # {2018} / {}
    ("what is the ps4 release date", "what is the ps5 release date", "words"),  # digits: exact
    (
        "who plays nora on the young and the restless",
        "who plays noah on the young and the restless",
        "words",
    ),  # a substitution in 4 letters
    ("who plays marvin in the office", "who plays martin in the office", "words"),  # v, t
    ("who plays karen in the office", "who plays karel in the office", "words"),  # n, l: 5
    ("who won best actor", "who won best supporting actor", "words"),  # an added content word
    ("when did the titanic sink", "where did the titanic sink", "question"),
    ("no, that is not right", "that is right", "negation"),
    ("can't i pay the fee late", "can i pay the fee late", "negation"),  # "can t"
    ("¿No hay autobús hoy?", "hay autobús hoy", "negation"),
    ("hostel mein wifi nahi hai", "hostel mein wifi hai", "negation"),
    ("i haven't paid the fee", "i have paid the fee", "negation"),  # "haven t"
    ("je ne peux pas payer", "je peux payer", "negation"),  # French "ne ... pas"
    ("ce n'est pas gratuit", "c'est gratuit", "negation"),  # "n est pas"
    # session 32: a relation word where the other has another (each side one the other
    # lacks: before / after, without / with), every content word the same
    ("can I get a refund before the deadline?", "can i get a refund after the deadline", "words"),
    ("can i get a refund without the receipt", "can i get a refund with the receipt", "words"),
    # a review (session 32): only opposites split, and they are read in both directions
    ("transfer money from my savings", "transfer money to my savings", "words"),
    ("turn on the hallway lights", "turn off the hallway lights", "words"),
    ("what time is check in at the hotel", "what time is check out at the hotel", "words"),
    # French negation without "ne" ("c'est pas"), as Hinglish never writes it (the word
    # before "pas" is no Hinglish word of having)
    ("c'est pas gratuit le parking", "c'est gratuit le parking", "negation"),
    ("il n'y a plus de place", "il y a de la place", "negation"),
    # "don" outside "don t" is a name, not a negation: the word "don" differs
    ("who wrote don quixote", "who wrote quixote", "words"),
    # Spanish, German, French, Hindi, Hinglish, Chinese
    ("¿Quién ganó el Mundial de 2010?", "quien gano el mundial de 2014", "numbers"),
    ("¿Cuál es la capital de Francia?", "cual es la capital de españa", "words"),
    ("Wer gewann die Bundesliga 2019?", "wer gewann die bundesliga zwanzig", "numbers"),
    ("Quand a eu lieu la bataille de Verdun ?", "quand a eu lieu la bataille de la somme", "words"),
    ("भारत के पहले प्रधानमंत्री कौन थे", "भारत के दूसरे प्रधानमंत्री कौन थे", "words"),
    ("१९७६ में सर्वश्रेष्ठ फिल्म कौन सी थी", "1975 में सर्वश्रेष्ठ फिल्म कौन सी थी", "numbers"),
    ("hostel ki fees kab tak jama karni hai", "mess ki fees kab tak jama karni hai", "words"),
    ("2010年世界杯冠军是谁", "2014年世界杯冠军是谁", "numbers"),
]

#: (one wording, another): the same question typed differently.
TOGETHER = [
    ("Who is the President of France?", "who is the president of france"),  # case, punctuation
    ("whos the president of france", "who is the president of france?"),  # "whos" is "who"
    ("who is the president of france", "who is president of france"),  # a function word
    ("who is the presdient of france", "who is the president of france"),  # swapped letters
    ("what does the goverment do", "what does the government do"),  # a letter left out
    ("who is the presidant of france", "who is the president of france"),  # 9 letters: a slip
    ("when are the hostel fees due", "when is the hostel fee due"),  # plural
    ("who played harry in the films", "who plays harry in the film"),  # inflection
    ("who sang the superbowl anthem", "who sang the super bowl anthem"),  # split word
    ("who won the 1st battle of bull run", "who won the first battle of bull run"),
    ("how many people live in 1,000 islands", "how many people live in 1000 islands"),
    ("what year did the war end", "which year did the war end"),  # which / what
    ("which one is the fastest car", "which is the fastest car"),  # "one": no number asked
    ("१९७६ में सर्वश्रेष्ठ फिल्म कौन सी थी", "1976 में सर्वश्रेष्ठ फिल्म कौन सी थी"),  # digits
    ("¿Cuál es la capital de Francia?", "cual es la capital de francia"),
    ("Wie hoch sind die Studiengebühren?", "wie hoch sind die studiengebüren"),
    ("hostel ki fees kab tak jama karni hai", "hostel ki fees kab jama karni hai?"),
    ("谁是法国总统", "谁是法国的总统"),  # no spaces: only numbers are read
    ("i need directions to phoenix", "can you help me get directions to phoenix"),  # glue
    ("setting up direct deposit", "set up direct deposit"),  # doubled consonant
    ("please reset to factory settings at once", "reset to factory settings"),  # "once": weak
    ("sir is there a late bus atfer 7 pm", "is there a late bus after 7 pm"),  # a function word
    ("both my twins are studynig here", "both my twins are studying here"),  # in an ending
    ("good morning sir hostel fees kab tak bharni hai urgent", "hostel fees kab tak bharni h"),
    ("wen is the odd sem exam", "when is the odd semester exam"),  # chat spellings
    ("what is the hostal fee", "what is the hostel fee"),  # a vowel for a vowel
    ("who is in the rock n roll hall of fame", "who is in the rock and roll hall of fame"),
    ("don't i need a visa", "do i not need a visa"),  # both negate
    ("haven't i paid the fee", "have i not paid the fee"),  # both negate
    # session 32: "haven" outside "haven t" is the noun ("heaven": one letter inserted);
    # Hinglish "pas" (have, near) and "ne" (the ergative, or a split "pohochne") negate nothing
    ("is switzerland a tax haven", "is switzerland a tax heaven"),
    ("mere pas timer par kitna samay bacha hai", "mere timer par kitna samay bacha hai"),
    (
        "muje sonoma tak pohoch ne me kitna time lagega",
        "muje sonoma tak pohochne me kitna time lagega",
    ),
    # a review (session 32): relation words that are no opposites ask one question
    # (CLINC150 / BANKING77 pairs of one intent, and hand-made ones)
    ("i want to be talking to a real person", "i want to be talking with a real person"),
    ("how do i connect to my phone", "how do i connect with my phone"),
    ("can i top up from my apple watch", "can i top up with my apple watch"),
    ("is the library open till 5 pm", "is the library open until 5 pm"),
    ("is there a fee every month", "is there a fee each month"),
    ("show flights under 300 dollars", "show flights below 300 dollars"),
    ("transfer money to my savings", "transfer money into my savings"),
    # "n" far from "plus" is no French negation ("tom n jerry"); "paas" is "pas"
    ("is tom n jerry on disney plus", "is tom and jerry on disney plus"),
    ("mere paas kitne alarm hai", "mere pas kitne alarm hai"),
    # a final read: French negation only in a question with a French word ("kya pas",
    # "rock n roll plus" are none)
    ("kya paas mein koi atm hai", "kya pas mein koi atm hai"),
    ("is rock n roll plus on spotify", "is rock and roll plus on spotify"),
]


def _verdict(one: str, other: str, semantic: bool = False) -> str | None:
    return disagreement(wording(comparison_form(one)), wording(comparison_form(other)), semantic)


@pytest.mark.parametrize(("one", "other", "why"), APART)
def test_different_questions_do_not_merge(one: str, other: str, why: str) -> None:
    assert _verdict(one, other) == why
    assert _verdict(other, one) == why  # symmetric


@pytest.mark.parametrize(("one", "other"), TOGETHER)
def test_the_same_question_typed_differently_merges(one: str, other: str) -> None:
    assert _verdict(one, other) is None
    assert _verdict(other, one) is None


def test_a_pair_only_the_embedding_rule_matched_is_read_for_numbers_not_words() -> None:
    assert _verdict("how do i top up my card", "how do i add money to my card") == "words"
    assert _verdict("how do i top up my card", "how do i add money to my card", True) is None
    assert _verdict("top up 20 euros", "add 50 euros", True) == "numbers"
    assert _verdict("when can i top up", "where can i add money", True) == "question"
    # nor for a relation word (session 32): a paraphrase rewrites prepositions ("top up my
    # account with a cheque" / "use it to top off my account")
    before, after = "can i get a refund before the deadline", "can i get a refund after it"
    assert _verdict(before, after, True) is None


def test_the_verdict_is_symmetric_over_every_pair() -> None:
    texts = {comparison_form(t) for pair in APART + TOGETHER for t in pair[:2]}
    for one, other in itertools.product(sorted(texts), repeat=2):
        assert disagreement(wording(one), wording(other)) == disagreement(
            wording(other), wording(one)
        ), (one, other)


def test_the_index_with_the_rule_finds_the_same_question_only() -> None:
    picture, actor = (
        "who won the oscar for best picture in 1976",
        "who won the oscar for best actor in 1975",
    )
    assert jaccard(trigrams(picture), trigrams(actor)) >= 0.6  # the similarity alone merges them
    plain, ruled = NearDupIndex(0.6), NearDupIndex(0.6, rule=may_merge)
    for index in (plain, ruled):
        index.add("a", picture)
    assert plain.find(actor) is not None
    assert ruled.find(actor) is None
    assert ruled.find("who won the oscar for best pictrue in 1976") is not None  # typo
    # the nearest is refused, a farther one that asks the same question is kept
    ruled.add("b", "who won an oscar for the best actor in 1975")
    found = ruled.find(actor)
    assert found is not None and found[0] == "b"


class _SameVector:
    """A fake embedder: one unit vector for every text (every pair at cosine 1)."""

    name = "same"
    dim = 2

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return np.tile(np.array([1.0, 0.0], dtype=np.float32), (len(texts), 1))


def test_with_an_embedder_a_pair_refused_by_its_words_does_not_return_as_a_paraphrase() -> None:
    index = NearDupIndex(0.6, embedder=_SameVector(), cosine=0.8, rule=may_merge)
    index.add("picture", "who won the oscar for best picture in 1976")
    index.add("money", "how can i add money to my card")
    index.add("fifty", "add 50 euros")
    # a trigram match (Jaccard >= 0.6) whose content words differ: refused as a whole
    # (and the other two differ in numbers or question word)
    assert index.find("who won the oscar for best actor in 1976") is None
    # a paraphrase only the embedding matches (trigram Jaccard < 0.6): words not read
    paraphrase = "how do i top up my card"
    assert jaccard(trigrams(paraphrase), trigrams("how can i add money to my card")) < 0.6
    assert [key for key, _ in index.matches(index.probes([paraphrase])[0])] == ["money"]
    # numbers are read for it: 20 is not 50
    assert "fifty" not in [key for key, _ in index.matches(index.probes(["top up 20 euros"])[0])]


def test_the_stage_keeps_two_questions_apart_and_counts_each() -> None:
    wordings = [
        "Who won the Oscar for Best Picture in 1976?",
        "who won the oscar for best picture 1976",  # a function word less
        "who won the oscar for best pictrue in 1976",  # a typo
        "who won the oscar for best actor in 1975",  # another question
        "Who won the Oscar for Best Actor in 1975?",
    ]
    first = comparison_form(wordings[0])
    for other in wordings[1:]:  # each is a near-duplicate of the first by trigrams alone
        assert jaccard(trigrams(first), trigrams(comparison_form(other))) >= 0.6
    repo = MemoryCandidates()
    stage = HarvestStage(HarvestConfig(flush_interval_s=0.0), sinks=[repo])
    events = [event(f"e{i}", text, minute=i) for i, text in enumerate(wordings)]
    stage.process(batch(events, [REFUSED] * len(events)))
    rows = sorted(repo.all(), key=lambda row: row["question"])
    assert [(row["question"], row["count"]) for row in rows] == [
        ("Who won the Oscar for Best Picture in 1976?", 3),
        ("who won the oscar for best actor in 1975", 2),
    ]
    assert rows[0]["reasons"] == {"refused": 3} and rows[1]["reasons"] == {"refused": 2}


def test_the_stage_keeps_a_refund_before_and_after_the_deadline_apart() -> None:
    """Session 32: two live questions that differ only in a relation word are two
    suggestions (harvest reads relation words as known-question matching does)."""
    before, after = (
        "Can I get a refund before the deadline?",
        "can i get a refund after the deadline",
    )
    assert jaccard(trigrams(comparison_form(before)), trigrams(comparison_form(after))) >= 0.6
    repo = MemoryCandidates()
    stage = HarvestStage(HarvestConfig(flush_interval_s=0.0), sinks=[repo])
    events = [event("e0", before, minute=0), event("e1", after, minute=1),
              event("e2", "can i get a refund before the deadline", minute=2)]  # fmt: skip
    stage.process(batch(events, [REFUSED] * len(events)))
    assert sorted((row["question"], row["count"]) for row in repo.all()) == [
        ("Can I get a refund before the deadline?", 2),
        ("can i get a refund after the deadline", 1),
    ]


def test_a_question_near_a_gold_one_but_not_it_is_suggested() -> None:
    gold = [GoldQuestion("q-1", "Who won the Oscar for Best Picture in 1976?", ("p-1",))]
    stage = HarvestStage(HarvestConfig(flush_interval_s=0.0), known_questions=gold)
    stage.process(batch(
        [event("e1", "who won the oscar for best picture 1976"),  # the gold question
         event("e2", "who won the oscar for best actor in 1975")],  # not it
        [REFUSED, REFUSED],
    ))  # fmt: skip
    assert [(r["question"], r["count"]) for r in stage.records()] == [
        ("who won the oscar for best actor in 1975", 1)
    ]
    assert stage.pending_observations()["known"] == {"gold_set": 1}


def test_the_export_keeps_two_similar_suggestions_that_ask_different_questions() -> None:
    from service.harvest.ranking import select
    from service.harvest.suggestion import Suggestion

    config = HarvestConfig()
    picture = Suggestion("c-1", "who won the oscar for best picture in 1976",
                         "who won the oscar for best picture in 1976", count=3,
                         reasons={"refused": 3})  # fmt: skip
    actor = Suggestion("c-2", "who won the oscar for best actor in 1975",
                       "who won the oscar for best actor in 1975", count=2,
                       reasons={"refused": 2})  # fmt: skip
    typo = Suggestion("c-3", "who won the oscar for best pictrue in 1976",
                      "who won the oscar for best pictrue in 1976", count=1,
                      reasons={"refused": 1})  # fmt: skip
    # the typo is the first one's question (an LSH miss): dropped; the other question stays
    assert [s.id for s in select([picture, actor, typo], config)] == ["c-1", "c-2"]


@pytest.mark.parametrize(
    ("live", "gold", "why"),
    [
        # a detail of the gold question left out, nothing else: the gold question
        (
            "what time does the bus leave in the evening",
            "what time does the bus leave the campus in the evening",
            None,
        ),
        (
            "when do end semester exams start",
            "when do the odd semester end semester exams start in 2026",
            None,
        ),
        ("kitne baje library khuli hai", "library ko kitne baje tak khuli rehti hai", None),
        ("pls tell what time does the bus leave", "what time does the bus leave the campus", None),
        # the other way round, a detail added: not
        (
            "what time does the bus leave the campus in the evening",
            "what time does the bus leave in the evening",
            "words",
        ),
        ("when do exams start in 2026", "when do the odd semester exams start", "numbers"),
        # a word in the left-out detail's place (trial 13: "more" for "less"), negation, another
        # question word: not, whatever is left out
        ("who faced more access to education", "who faced less access to education", "words"),
        ("who did not win the cup", "who won the world cup", "negation"),
        ("when did the titanic sink", "where did the titanic sink in 1912", "numbers"),
        ("when did the titanic sink", "where did the titanic sink", "question"),
        # the review's cases: a weak number word of the gold row ("do": 2) stands for no
        # number the live one writes; one number of two left out changes the one asked; a
        # question word the gold row does not ask with; more than a third of the gold row's
        # content words left out ("university", "founded" of 4); Saturday's hours are not
        # the library's hours ("saturday", "rehti": 2 of 5)
        (
            "do i need 2 photos for the hostel form",
            "do i need 4 photos for the hostel form",
            "numbers",
        ),
        (
            "how do i pay the fee for 2nd semester",
            "how do i pay the fee for 1st semester",
            "numbers",
        ),
        ("7 am ke liye alarm set kare", "7 30 am ke liye alarm set kare", "numbers"),
        ("what are the available cards", "are cards available in the eu", "words"),
        (
            "when was the university founded",
            "when was the university medical school founded",
            "words",
        ),
        (
            "library kitne baje tak khuli hai",
            "library saturday ko kitne baje tak khuli rehti hai",
            "words",
        ),
        # an article and a Hindi courtesy word added, a negation written "hasn't"
        (
            "what time does a bus leave in the evening",
            "what time does the bus leave the campus in the evening",
            None,
        ),
        ("कृपया बताइए बस कब जाती है", "बस कैंपस से कब जाती है", None),
        ("my top up hasn t gone through", "my top up has not gone through", None),
    ],
)
def test_known_disagreement_allows_a_detail_left_out_by_the_live_side(
    live: str, gold: str, why: str | None
) -> None:
    assert known_disagreement(wording(live), wording(gold)) == why


@pytest.mark.parametrize(
    ("live", "gold", "less_detail", "why"),
    [
        # the final read's cases (session 31): a weak number word of the live question asks
        # for its number; a relation word standing where the other has another; an
        # unanswerable row's detail left out (less_detail=False: the symmetric rule only)
        (
            "what is the hostel fee for one semester",
            "what is the hostel fee for two semesters",
            True,
            "numbers",
        ),
        (
            "can a student get a full refund of fees before the admission deadline",
            "can a student get a full refund of fees after the admission deadline",
            True,
            "words",
        ),
        (
            "can i get a refund without the receipt",
            "can i get a refund with the receipt",
            True,
            "words",
        ),
        (
            "how much water does the rhine discharge at the border",
            "how much water does the rhine discharge at the french border",
            False,
            "words",
        ),
        # the same left-out detail of an answerable row: known
        (
            "how much water does the rhine discharge at the border",
            "how much water does the rhine discharge at the french border",
            True,
            None,
        ),
    ],
)
def test_known_disagreement_reads_weak_numbers_relations_and_unanswerable_rows(
    live: str, gold: str, less_detail: bool, why: str | None
) -> None:
    assert known_disagreement(wording(live), wording(gold), less_detail) == why
