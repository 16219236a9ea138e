"""Self-introduced names (:mod:`service.pii.names`) on real questions nobody here wrote.

A new user's trial (sixteenth session): "I am Alice Smith, phone <PHONE>. ..." reached the
suggestions and, through an accept, the gold set — the phone scrubbed, the name not. The
expected figures below were read by hand, utterance by utterance:

* CLINC150's ``change_user_name`` intent (150 utterances, all splits; lower case, as the data
  set is): 124 of them hold a name (or a form of address the person asks for: ``sir``,
  ``dad``, ``lord snugglebottom``), 26 none ("please change my name", "call me something
  else", "can you call me a different name"). Found: 112 of the 124, no span in the 26. The
  12 missed, all on purpose or beyond a cue-based detector: six lower-case ``i am jason`` /
  ``hi, i'm john`` (a weak cue needs Title case: "i am hungry"), "the name you should call
  me is janet", "use bob", "call be ray ray" (a typo), "anything besides bailey", "which is
  deb", "going to be sherlock".
* Every other text (CLINC150's other intents, BANKING77 train and test, NQ-open dev,
  Hinglish-TOP's three splits, both columns: 62,043 texts): 1 span, read — "correct my name
  to reflect that" (a false positive). NQ-open's titles stay whole ("when did my name is
  earl end", "who's the guy in call me maybe"); so does "be called" after anything but a
  wish (a second trial's "what shouldn't be called social classes?").
* XQuAD (every language, questions and paragraphs) and the SQuAD 2.0 and MultiHop-RAG
  samples (19,314 texts): none.

A third trial's cues (``hier ist``, ``yo soy``, ``main … bol raha hoon``, ``mujhe … bolte
hain``, ``hey its``, ``Name - X``, ``Signed,``, a ``--`` signature line) changed none of these
figures: every span above is the same span, and no text gained one. Neither did the
twenty-first session's particles and initials (``Regards, Maria de la Cruz``, ``I'm J. R.
Tolkien``): every span and every scrubbed text of the 81,357 texts as before; nor did
initials written together being a name's after strong cues and titles only, nor the capitals
of Latin Extended-A and -B (``Ł. Kowalski``, ``İ. Yılmaz``).
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from service.pii import scrub
from service.pii.names import find_names

pytestmark = pytest.mark.slow

#: The change_user_name utterances that hold a name the detector misses (read by hand).
MISSED_NAMES = {
    "i am jason", "i am camile", "i am john", "hi, i'm john", "i am david", "i am josh",
    "the name you should call me is janet", "when you talk to me, use bob",
    "i'd rather have you call be ray ray", "don't call me anything besides bailey",
    "ai answer my questions with my name first which is deb",
    "my name is going to be sherlock",
}  # fmt: skip


def _clinc(shared_data: Path) -> list[tuple[str, str]]:
    data = json.loads((shared_data / "clinc150" / "data_full.json").read_text())
    return [(text, intent) for split in data.values() for text, intent in split]


def test_clinc150_change_user_name_recall(shared_data: Path) -> None:
    utterances = [text for text, intent in _clinc(shared_data) if intent == "change_user_name"]
    assert len(utterances) == 150
    found = {text: [text[a:b] for a, b in find_names(text)] for text in utterances}
    missed = {text for text, names in found.items() if not names}
    assert MISSED_NAMES <= missed
    nameless = missed - MISSED_NAMES  # utterances holding no name at all
    assert len(nameless) == 26
    assert all("call me" in t or "name" in t for t in nameless)
    assert len(utterances) - len(missed) == 112  # of the 124 holding a name
    # spans are the names only, the cue kept
    assert found["please stop calling me dave, my name's bob"] == ["dave", "bob"]
    assert found["i'd like you to address me as lord snugglebottom"] == ["lord snugglebottom"]
    assert found["don't call me bill anymore - call me bob"] == ["bill", "bob"]
    assert scrub("my name is stu, not sue!").text == "my name is <NAME>, not sue!"


def other_questions(shared_data: Path) -> list[str]:
    """CLINC150's questions but ``change_user_name``, BANKING77 train and test, NQ-open dev,
    Hinglish-TOP's three splits (both columns): 62,043 texts."""
    texts = [text for text, intent in _clinc(shared_data) if intent != "change_user_name"]
    for name in ("train.csv", "test.csv"):
        with (shared_data / "banking77" / name).open(encoding="utf-8", newline="") as handle:
            texts += [row[0] for row in csv.reader(handle)]
    with (shared_data / "nq-open" / "NQ-open.dev.jsonl").open(encoding="utf-8") as handle:
        texts += [json.loads(line)["question"] for line in handle]
    for name in ("train.tsv", "validation.tsv", "test.tsv"):
        with (shared_data / "hinglish-top" / name).open(encoding="utf-8") as handle:
            for line in handle:
                texts += line.rstrip("\n").split("\t")[:2]
    return texts


def test_other_real_questions_keep_their_words(shared_data: Path) -> None:
    texts = other_questions(shared_data)
    assert len(texts) == 62_043
    hits = {text: [text[a:b] for a, b in find_names(text)] for text in texts}
    hits = {text: names for text, names in hits.items() if names}
    assert hits == {
        "My marital status has change, I got to correct my name to reflect that.": ["reflect"],
    }


def xquad_squad_multihop_texts(shared_data: Path) -> list[str]:
    """XQuAD's questions and paragraphs in all its languages, and the SQuAD 2.0 and
    MultiHop-RAG samples' texts (19,314)."""
    texts: list[str] = []
    for path in sorted((shared_data / "xquad").glob("xquad.*.json")):
        for article in json.loads(path.read_text(encoding="utf-8"))["data"]:
            for paragraph in article["paragraphs"]:
                texts += [qa["question"] for qa in paragraph["qas"]]
                texts.append(paragraph["context"])

    def strings(value: object) -> list[str]:
        if isinstance(value, str):
            return [value] if len(value) > 15 else []
        if isinstance(value, dict):
            value = list(value.values())
        if isinstance(value, list):
            return [s for item in value for s in strings(item)]
        return []

    for name in ("squad2-dev-sample500", "multihop-rag-sample500"):
        texts += strings(json.loads((shared_data / name / "queries.json").read_text()))
    return texts


def test_xquad_squad_and_multihop_texts_keep_their_words(shared_data: Path) -> None:
    """Texts full of Title-case names nobody introduced; none is taken."""
    texts = xquad_squad_multihop_texts(shared_data)
    assert len(texts) > 19_000
    assert [text for text in texts if list(find_names(text))] == []


def test_street_addresses_in_real_texts_are_the_four_navigation_requests(
    shared_data: Path,
) -> None:
    """The address detector on the 81,357 real texts (both sets above): it changes exactly
    the four Hinglish-TOP navigation requests that name a street address, read by hand, and
    keeps every year before a Title-case phrase (``in 1886, Robert Lane``, ``the 1978 Supreme
    Court case`` in XQuAD) and every XQuAD paragraph's street."""
    texts = other_questions(shared_data) + xquad_squad_multihop_texts(shared_data)
    changed = {t: scrub(t).text for t in texts if scrub(t).counts.get("address")}
    assert changed == {
        "how long will it take to drive to 118 Sunset Avenue":
            "how long will it take to drive to <ADDRESS>",
        "118 Sunset Avenue ke liye drive karne mei kitni der lagegi":
            "<ADDRESS> ke liye drive karne mei kitni der lagegi",
        "How long will it take me to get to 154 Jane street today":
            "How long will it take me to get to <ADDRESS> today",
        "mujhe aaj 154 Jane street tak pahunchne me kitna samay lagega":
            "mujhe aaj <ADDRESS> tak pahunchne me kitna samay lagega",
    }  # fmt: skip
