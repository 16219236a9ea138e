"""Known-question matching asks harvest's "same question" rule (trial 13, finding 1).

A gold row at or above the n-gram threshold is a match only if the wording rule
(:func:`service.text.wording.known_disagreement`: numbers, negation, content words, question
word, a detail of the gold row left out allowed; session 31) accepts it; otherwise the
next-best row at or above the threshold, or none, and the live-quality report counts the
near-match it turned down. The pairs are the trial's (SQuAD 2.0's unanswerable twins of
answerable gold questions, hand-checked); each test fails on the index before session 30 (it
matched by n-grams and numbers alone)."""

from __future__ import annotations

from collections.abc import Sequence

from service.data.goldset import GoldSet
from service.events import QueryLogEvent
from service.pipeline import Batch
from service.quality.known import KnownMatch, KnownQuestionIndex, KnownRejection
from service.quality.stage import LiveQualityStage
from service.records import GoldQuestion
from service.refusals.scope import KnownScope

KHANBALIQ = "What modern city did Khanbaliq become?"
EDUCATION = "Who has limited productive potential when faced with less access to education?"
NOT_BECOME = "What modern city did Khanbaliq not become?"  # SQuAD 2.0, unanswerable
MORE_ACCESS = "Who has limited productive potential when faced with more access to education?"


def trial_gold() -> GoldSet:
    """The trial's two answerable rows (g-013, g-019) and an unanswerable one."""
    return GoldSet((
        GoldQuestion("g-013", KHANBALIQ, ("sq-0093",)),
        GoldQuestion("g-019", EDUCATION, ("sq-0148",)),
        GoldQuestion("g-040", "Who won the 1990 World Cup?", (), kind="unanswerable"),
    ))  # fmt: skip


def test_the_trials_negated_and_antonym_twins_are_not_known() -> None:
    index = KnownQuestionIndex(trial_gold())  # threshold 0.9, the default
    negated, antonym = index.lookup_many([NOT_BECOME, MORE_ACCESS])
    # both reach the threshold by n-grams (on the trial's 48-row gold set 0.97 and 0.94)
    # and are turned down: "not" negates one side only; "less" (a content word) has no
    # counterpart ("more" is a function word, as "most", "much", "many")
    assert negated.match is None and antonym.match is None
    assert negated.rejected is not None and antonym.rejected is not None
    assert (negated.rejected.gold_id, negated.rejected.reason) == ("g-013", "negation")
    assert (antonym.rejected.gold_id, antonym.rejected.reason) == ("g-019", "words")
    assert min(negated.rejected.similarity, antonym.rejected.similarity) >= 0.9
    assert index.match_many([NOT_BECOME, MORE_ACCESS]) == [None, None]


def test_true_paraphrases_still_match() -> None:
    index = KnownQuestionIndex(trial_gold())
    found = index.lookup_many(
        [
            "what modern city has Khanbaliq become",  # "has" for "did": both function words
            "Who has limited productive potential when faced with less acess to education",  # slip
            "who won the world cup in 1990 ?",  # reordered, the same number
            "WHAT MODERN CITY DID KHANBALIQ BECOME",  # exact after normalisation
        ]
    )
    assert [f.match and f.match.gold_id for f in found] == ["g-013", "g-019", "g-040", "g-013"]
    assert all(f.rejected is None for f in found)
    assert found[3].match == KnownMatch("g-013", 1.0)
    assert all(f.match is not None and f.match.similarity >= 0.9 for f in found)


def test_a_rejected_best_row_falls_back_to_the_next_best_that_asks_the_same() -> None:
    # the two rows tie by n-grams ("not" and "sir": one 3-letter word each, each in one row),
    # so the first in file order would match; it negates, the live question does not
    live = "When did the Titanic sink in the North Atlantic Ocean?"
    gold = GoldSet((
        GoldQuestion("g-1", "When did the Titanic not sink in the North Atlantic Ocean?", ("a",)),
        GoldQuestion("g-2", "When did the Titanic sink in the North Atlantic Ocean, sir?", ("b",)),
    ))  # fmt: skip
    (found,) = KnownQuestionIndex(gold).lookup_many([live])
    assert found.match is not None and found.match.gold_id == "g-2"
    assert found.rejected == KnownRejection("g-1", found.match.similarity, "negation")


def test_the_out_of_scope_stage_s_known_questions_use_the_rule_too() -> None:
    # an unanswerable twin must not take its answerable gold row's "in scope"
    assert KnownScope(trial_gold()).verdicts([NOT_BECOME, MORE_ACCESS, KHANBALIQ]) == [
        (None, None),
        (None, None),
        ("g-013", True),
    ]


def _event(n: int, question: str, refused: bool) -> QueryLogEvent:
    return QueryLogEvent.model_validate({
        "event_id": f"n-{n}", "timestamp": f"2026-12-01T00:{n:02d}:00Z", "question": question,
        "user": {"role": "staff"},
        "retrieval": {"results": [{"id": "sq-0093", "score": 9, "rank": 1}]},
        "answer": {"text": "I don't know." if refused else "Beijing.", "refused": refused},
    })  # fmt: skip


def test_the_trials_repro_counts() -> None:
    """The trial's t_near log: 4 × (NOT_BECOME refused, MORE_ACCESS refused, KHANBALIQ
    answered). Before: 12 known, 8 of 12 answerable refused (all correct refusals of the
    unanswerable twins). By hand now: the 4 exact KHANBALIQ events are known (answerable,
    answered: 0 refused); the 8 twins are not known, counted as near-matches rejected,
    4 by negation and 4 by words, none matched another row."""
    events: Sequence[QueryLogEvent] = [
        _event(3 * i + j + 1, question, refused)
        for i in range(4)
        for j, (question, refused) in enumerate(
            ((NOT_BECOME, True), (MORE_ACCESS, True), (KHANBALIQ, False))
        )
    ]
    stage = LiveQualityStage(KnownQuestionIndex(trial_gold()), None)
    batch = Batch.of(events, source="test")
    for notes, e in zip(batch.annotations, events, strict=True):
        notes["refused"] = e.answer.refused if e.answer else None  # as RefusalStage would
    stage.process(batch)
    report = stage.report()
    assert report["refusals"] == {
        "known_answerable": 4,
        "refused_answerable": 0,
        "known_unanswerable": 0,
        "answered_unanswerable": 0,
    }
    assert report["known"]["production"]["n_known"] == 4
    assert report["near_matches_rejected"] == {
        "events": 8,
        "matched_another": 0,
        "by_reason": {"numbers": 0, "negation": 4, "words": 4, "question": 0},
    }
    assert [n["known"] and n["known"]["gold_id"] for n in batch.annotations] == [
        None,
        None,
        "g-013",
    ] * 4
    # kept in the state, and back after a restore
    again = LiveQualityStage(KnownQuestionIndex(trial_gold()), None)
    again.restore(stage.state_snapshot())
    assert again.report()["near_matches_rejected"] == report["near_matches_rejected"]


BUS = "What time does the college bus leave the campus in the evening?"
EXAMS = "When do the odd-semester end-semester exams start in 2026?"


def detail_gold() -> GoldSet:
    """Two of the demo's gold rows, written with more detail than people ask them."""
    return GoldSet((
        GoldQuestion("q-bus", BUS, ("p-0050",)),
        GoldQuestion("q-see", EXAMS, ("p-0038",)),
    ))  # fmt: skip


def test_a_gold_question_asked_with_a_detail_left_out_is_known() -> None:
    # the demo log's wordings; by hand: each live word is in the gold row (or a slip of one,
    # "exms"), the gold row's "campus" / "odd" and "2026" are left out, nothing is added
    # but courtesy ("pls tell", "sir", "hi")
    index = KnownQuestionIndex(detail_gold(), threshold=0.75)  # the demo's threshold
    found = index.lookup_many([
        "What time does the college bus leave in the evening?",
        "What time does the college bus leave in the evening? pls",
        "hi what time does the college bus leave in the evening?",
        "When do the end semester exams start sir",
        "When do the end semester exms start",
    ])  # fmt: skip
    assert [f.match and f.match.gold_id for f in found] == ["q-bus"] * 3 + ["q-see"] * 2
    assert all(f.rejected is None for f in found)


def test_a_detail_added_or_changed_is_another_question() -> None:
    index = KnownQuestionIndex(detail_gold(), threshold=0.75)
    added_year, changed_word = index.lookup_many([
        # a number the gold row does not have: a detail added
        "what time does the college bus leave in the evening in 2026 ??",
        # "more" stands where the gold row has "odd": a function word other than courtesy
        "When do the more end-semester exams start in 2026?",
    ])  # fmt: skip
    assert added_year.match is None and changed_word.match is None
    assert added_year.rejected is not None and added_year.rejected.reason == "numbers"
    assert changed_word.rejected is not None and changed_word.rejected.reason == "words"


def test_the_less_detailed_side_must_be_the_live_one() -> None:
    # the same pair the other way round: the gold row is the less detailed, the live question
    # adds "campus"; by hand that is a detail added, so not known
    gold = GoldSet((GoldQuestion("q-1", "What time does the college bus leave in the evening?",
                                 ("p-0050",)),))  # fmt: skip
    (found,) = KnownQuestionIndex(gold, threshold=0.75).lookup_many([BUS])
    assert found.match is None
    assert found.rejected is not None and found.rejected.reason == "words"


def test_a_restore_onto_a_changed_gold_set_keeps_the_rejections_of_rows_left_alone() -> None:
    """Final read (session 31): the snapshot listed only measured rows' versions, so a
    restore onto a gold set with *another* row changed dropped every row only ever turned
    down; the same change in process kept them. By hand: one event turned down on g-013
    (negation); g-019 is then edited; g-013's rejection stays, in process and after a restore."""
    stage = LiveQualityStage(KnownQuestionIndex(trial_gold()), None)
    batch = Batch.of([_event(1, NOT_BECOME, True)], source="test")
    batch.annotations[0]["refused"] = True
    stage.process(batch)
    edited = GoldSet((
        GoldQuestion("g-013", KHANBALIQ, ("sq-0093",)),
        GoldQuestion("g-019", EDUCATION + " (edited)", ("sq-0148",)),
        GoldQuestion("g-040", "Who won the 1990 World Cup?", (), kind="unanswerable"),
    ))  # fmt: skip
    expected = {
        "events": 1,
        "matched_another": 0,
        "by_reason": {"numbers": 0, "negation": 1, "words": 0, "question": 0},
    }
    restored = LiveQualityStage(KnownQuestionIndex(edited), None)
    restored.restore(stage.state_snapshot())
    assert restored.report()["near_matches_rejected"] == expected
    stage.index = KnownQuestionIndex(edited)  # the same change in process
    assert stage.report()["near_matches_rejected"] == expected


def test_a_polarity_word_of_the_gold_row_is_no_detail_to_leave_out() -> None:
    # trial 15 (MultiHop-RAG): the live question says the song reached the top, the gold row
    # that it failed to (answers yes / no). Both "negate" through the title's Spanish "No", so
    # the negation check passes; by hand the live words are all in the gold row and only
    # "failing" is left out (1 of 28 content words, under MAX_LEFT_OUT) — a detail before
    title = 'Did the article from Music Business Worldwide about "Iñigo Quintero\'s Si No Estás" '
    rest = (" the top of Spotify's Global Top 50 and the article from Music Business Worldwide "
            "discussing Capitol Music Group's status as the top-performing label both indicate "
            "a leading position in their respective music industry categories?")  # fmt: skip
    gold = GoldSet((GoldQuestion("q-038", f"{title}failing to reach{rest}", ("mh-1",)),))
    index = KnownQuestionIndex(gold, threshold=0.75)
    reached, reach = index.lookup_many([f"{title}reaching{rest}", f"{title}reach{rest}"])
    assert reached.match is None and reach.match is None
    assert reached.rejected is not None and reached.rejected.reason == "words"
    # the gold row itself, and a slip elsewhere, still match
    same, slip = index.lookup_many(
        [
            f"{title}failing to reach{rest}",
            f"{title}failing to reach{rest}".replace("leading", "leadng"),
        ]
    )
    assert same.match is not None and slip.match is not None


def test_an_inflected_polarity_word_is_no_polarity_left_out() -> None:
    # review of trial 15 LOW 7's fix: the live question says "failed" where the gold row says
    # "fails" and leaves out "in physics" (one detail); it asks the same thing, and matched
    # before the polarity rule. Dropping the polarity word altogether is still no match.
    gold = GoldSet((GoldQuestion("q-1", "what happens if a student fails the final exam in "
                                 "physics", ("p-1",)),))  # fmt: skip
    index = KnownQuestionIndex(gold, threshold=0.75)
    failed, passed = index.lookup_many(
        [
            "what happens if a student failed the final exam",
            "what happens if a student passes the final exam",
        ]
    )
    assert failed.match is not None
    assert passed.match is None
