"""Trial 51, M2: the same question with a courtesy word ("... was zu tun?" and "... was zu tun?
Danke.") was suggested twice, and both copies were accepted (gold rows q-004 and q-005, the
same question and passage, counted twice by eval). The known-question rule, the harvest merge
and the accept's duplicate check now read one rule (:mod:`service.text.wording`): phrases of
thanks, please and greetings at a question's start or end ask nothing (inside it they are its
words), a Devanagari danda separates words, and an opening "Quick question:" asks nothing;
harvest's trigram gate and the accept's check compare the texts without them. The questions
are the trial's (its traffic's reworded events: a courtesy word appended or an opening
prefixed).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from service.data.goldset import GoldSet
from service.harvest.config import HarvestConfig
from service.harvest.labelling import DuplicatesGold, Labelling, duplicated_gold_row
from service.harvest.stage import HarvestStage
from service.harvest.store import MemoryCandidates, StateStoreCandidates
from service.harvest.text import comparison_form
from service.quality.known import KnownQuestionIndex
from service.records import GoldQuestion
from service.state import StateStore
from service.text.wording import core_form, disagreement, known_disagreement, wording
from tests.service.harvest.helpers import batch, event
from tests.service.harvest.test_labelling_api import AUTH, labelling_client

GANDHI = "Gandhi bezog sich oft auf Shelleys Gedicht in seinen Bemühungen, was zu tun?"
REFUSED = {"refused": True, "language": "de"}

#: (plain question, the trial's courtesy variant of it)
PAIRS = [
    (GANDHI, GANDHI + " Danke."),
    ("¿Quién decidió no visitar el país en 2013?",
     "¿Quién decidió no visitar el país en 2013? Gracias."),
    ("Wohin lief der Gletscherabfluss in Europa in der letzten Eiszeit?",
     "Kurze Frage: Wohin lief der Gletscherabfluss in Europa in der letzten Eiszeit?"),
    ("When did the y. pestis reach England?",
     "Quick question: When did the y. pestis reach England?"),
    ("Una pregunta: ¿Quién decidió no visitar el país en 2013?",
     "¿Quién decidió no visitar el país en 2013?"),
    ("आईपीसीसी का पहला अध्यक्ष कौन था?", "आईपीसीसी का पहला अध्यक्ष कौन था? धन्यवाद।"),
    ("Кто написал Войну и мир?", "Кто написал Войну и мир? Спасибо."),
]  # fmt: skip


def _wordings(a: str, b: str) -> tuple[object, object]:
    return wording(comparison_form(a)), wording(comparison_form(b))


@pytest.mark.parametrize(("plain", "courteous"), PAIRS)
def test_a_courtesy_word_or_opening_asks_nothing_in_both_rules(plain: str, courteous: str) -> None:
    a, b = _wordings(plain, courteous)
    assert disagreement(a, b) is None  # harvest's merge and the accept's duplicate check
    assert known_disagreement(b, a) is None  # known-question matching, both ways
    assert known_disagreement(a, b) is None


@pytest.mark.parametrize(
    ("one", "other"),
    [  # still other questions: a content word, a number or the question word differs
        (GANDHI + " Danke.", GANDHI.replace("Shelleys", "Goethes") + " Danke."),
        ("¿Quién decidió no visitar el país en 2013? Gracias.",
         "¿Quién decidió no visitar el país en 2014? Gracias."),
        ("Quick question: When did the y. pestis reach England?",
         "Quick question: Where did the y. pestis reach England?"),
        # "question" is a content word past the opening
        ("What is the question asked in the plugs-out test?",
         "What is asked in the plugs-out test?"),
    ],
)  # fmt: skip
def test_courtesy_does_not_merge_other_questions(one: str, other: str) -> None:
    assert disagreement(*_wordings(one, other)) is not None  # type: ignore[arg-type]


def test_harvest_merges_the_trials_pair_into_one_suggestion() -> None:
    repo = MemoryCandidates()
    stage = HarvestStage(HarvestConfig(flush_interval_s=0.0), sinks=[repo])
    stage.process(batch([event("e1", GANDHI, minute=1), event("e2", GANDHI + " Danke.", minute=2),
                         event("e3", GANDHI, minute=3)], [REFUSED] * 3))  # fmt: skip
    (row,) = repo.all()
    assert row["count"] == 3
    assert row["question"] == GANDHI  # the first asked
    assert row["variants"] == [GANDHI, GANDHI + " Danke."]


def test_known_questions_match_the_courtesy_variant() -> None:
    gold = GoldSet((GoldQuestion("q-004", GANDHI, ("de:Civil_disobedience#0",)),))
    (found,) = KnownQuestionIndex(gold, threshold=0.9).lookup_many([GANDHI + " Danke."])
    assert found.match is not None and found.match.gold_id == "q-004"


@pytest.fixture
def suggested(tmp_path: Path) -> tuple[Labelling, Path, str]:
    """The trial's second suggestion ("... Danke."), harvested without the gold set, and a
    gold file whose q-004 is the first one, accepted before."""
    gold = tmp_path / "gold.jsonl"
    row = {"id": "q-004", "question": GANDHI, "gold": ["de:Civil_disobedience#0"],
           "kind": "plain", "language": "de"}  # fmt: skip
    gold.write_text(json.dumps(row) + "\n", encoding="utf-8")
    repo = StateStoreCandidates(StateStore.in_memory())
    HarvestStage(HarvestConfig(flush_interval_s=0), sinks=[repo]).process(
        batch([event("e1", GANDHI + " Danke.", minute=1)], [REFUSED])
    )
    labelling = Labelling(repo, gold, HarvestConfig())
    (item,) = labelling.list().items
    return labelling, gold, str(item["id"])


def test_accepting_the_courtesy_variant_of_a_gold_row_is_refused_naming_it(
    suggested: tuple[Labelling, Path, str],
) -> None:
    labelling, gold, candidate = suggested
    assert duplicated_gold_row(GANDHI + " Danke.", [json.loads(gold.read_text())], 0.6) == "q-004"
    before = gold.read_bytes()
    with pytest.raises(DuplicatesGold, match="gold row q-004") as caught:
        labelling.accept(candidate, ["de:Civil_disobedience#0"], "plain")
    assert caught.value.gold_id == "q-004" and "Gandhi" not in str(caught.value)
    assert gold.read_bytes() == before


def test_the_api_answers_409_naming_the_row_without_the_users_text(
    suggested: tuple[Labelling, Path, str],
) -> None:
    labelling, gold, candidate = suggested
    before = gold.read_bytes()
    answer = labelling_client(labelling).post(
        f"/v1/gold-candidates/{candidate}/accept", headers=AUTH,
        json={"gold": ["de:Civil_disobedience#0"], "kind": "plain"},
    )  # fmt: skip
    assert answer.status_code == 409
    body = json.dumps(answer.json(), ensure_ascii=False)
    assert "gold row q-004" in body
    assert "Gandhi" not in body and "Danke" not in body and "Shelley" not in body
    assert gold.read_bytes() == before


# Review of the fix (RG): courtesy is a phrase read at a text's edges only.

#: B1: a word that is courtesy only in a phrase ("muchas gracias", "vielen Dank") or only at an
#: edge is a word of the question elsewhere: these pairs are different questions.
DIFFERENT = [
    ("¿Hay muchas oficinas en Madrid?", "¿Hay oficinas en Madrid?"),
    ("Wie sagt man bitte auf Englisch?", "Wie sagt man danke auf Englisch?"),
    ("Is Hola the CEO of the company?", "Is Merci the CEO of the company?"),
    ("Who is Hola Dank in the org chart?", "Who is in the org chart?"),
    ("Hilft die Uni vielen Studenten beim Wohnen?", "Hilft die Uni Studenten beim Wohnen?"),
]  # fmt: skip

#: B2 and B3: "por favor" is courtesy; an opening or edge courtesy on a short question, whose
#: whole text shares too few trigrams with the plain one, asks nothing either.
SAME = [
    ("¿Cómo cambio mi contraseña, por favor?", "¿Cómo cambio mi contraseña?"),
    ("Kurze Frage: Wann ist Zahltag?", "Wann ist Zahltag?"),
    ("Quick question: is the office open?", "Is the office open?"),
    ("Hallo, wann öffnet die Bibliothek? Vielen Dank!", "Wann öffnet die Bibliothek?"),
    ("Por favor, ¿dónde está la biblioteca? Muchas gracias.", "¿Dónde está la biblioteca?"),
    ("Merci beaucoup ! Où est la bibliothèque ?", "Où est la bibliothèque ?"),
]  # fmt: skip


def _suggestions(first: str, second: str) -> list[dict[str, object]]:
    repo = MemoryCandidates()
    stage = HarvestStage(HarvestConfig(flush_interval_s=0.0), sinks=[repo])
    stage.process(batch([event("e1", first, minute=1), event("e2", second, minute=2)],
                        [REFUSED] * 2))  # fmt: skip
    return list(repo.all())


@pytest.mark.parametrize(("one", "other"), DIFFERENT)
def test_a_courtesy_word_inside_a_question_is_a_word_of_it(one: str, other: str) -> None:
    assert duplicated_gold_row(one, [{"id": "g-1", "question": other}], 0.6) is None
    assert duplicated_gold_row(other, [{"id": "g-1", "question": one}], 0.6) is None
    assert len(_suggestions(one, other)) == 2
    assert len(_suggestions(other, one)) == 2


@pytest.mark.parametrize(("courteous", "plain"), SAME)
def test_edge_courtesy_and_openings_merge_short_questions(courteous: str, plain: str) -> None:
    assert duplicated_gold_row(courteous, [{"id": "g-1", "question": plain}], 0.6) == "g-1"
    assert duplicated_gold_row(plain, [{"id": "g-1", "question": courteous}], 0.6) == "g-1"
    for first, second in ((courteous, plain), (plain, courteous)):
        (row,) = _suggestions(first, second)
        assert row["count"] == 2 and row["question"] == first  # the first asked is shown


def test_the_trigram_gate_reads_the_text_without_its_edges() -> None:
    # the whole texts share 16 of 28 distinct trigrams (0.57 < 0.6); without the opening, all
    assert core_form(comparison_form("Kurze Frage: Wann ist Zahltag?")) == "wann ist zahltag"
    assert core_form("por favor cambio mi contraseña por favor") == "cambio mi contraseña"
    # never every word, and nothing from the middle: the text itself
    for text in ("danke", "vielen dank", "por favor", "kurze frage", "hay muchas oficinas"):
        assert core_form(text) == text


@pytest.mark.parametrize("alone", ["Danke!", "Bitte", "Hola", "Merci", "Спасибо", "Por favor"])
def test_a_text_that_is_only_courtesy_stays_its_own_suggestion(alone: str) -> None:
    assert len(_suggestions(alone, "Wann ist Zahltag?")) == 2
