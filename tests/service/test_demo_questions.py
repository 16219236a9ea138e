"""The demo's question bank (service/demo/questions.yaml) and its loader: the packaged file's
content, the parsing rules, and an error naming the file, the line and the entry for each kind
of mistake an editor of the file can make.

The packaged figures (40 intents, 429 questions, 8 planted) were counted from the Python
literals the bank was moved from (``service/demo/variants.py`` before the move); the
byte-for-byte check of ``querylog.jsonl`` (tests/service/test_demo_querylog.py) pins the rest.
"""

from __future__ import annotations

import fnmatch
import tomllib
from pathlib import Path

import pytest

from service.data.corpus import DataFileError
from service.demo import DEMO_DIR
from service.demo.questions import (
    DEFAULT_PATH,
    Intent,
    PlantedPii,
    QuestionBankError,
    load_question_bank,
    question_bank,
)

ROOT = Path(__file__).resolve().parents[2]

# A valid two-intent bank; the cases below break one thing each. Line numbers matter.
GOOD = """\
intents:
  - topic: fees
    name: late-fee
    questions:
      hi: |
        late fee कितनी लगती है?
      en: |

        What is the penalty for paying fees late?
            how much late fine per day for fees

  - topic: out-of-scope
    name: out-of-scope
    scope: out
    schedule: true
    questions:
      en: |
        tell me a joke
planted_pii:
  - at: 0.5
    question: "late fee? mail me at a.b@example.com"
    topic: fees
    intent: late-fee
    language: en
    role: parent
    pii: [email]
"""


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "bank.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def _problems(tmp_path: Path, text: str) -> tuple[str, ...]:
    path = _write(tmp_path, text)
    with pytest.raises(QuestionBankError) as info:
        load_question_bank(path)
    assert info.value.path == path
    assert str(path) in str(info.value)
    return info.value.problems


# -- the packaged bank --------------------------------------------------------------------------


def test_packaged_bank_counts_and_first_and_last_entries() -> None:
    bank = question_bank()
    assert bank.path == DEFAULT_PATH == DEMO_DIR / "questions.yaml"
    assert len(bank.intents) == 40
    assert sum(len(qs) for i in bank.intents for qs in i.questions.values()) == 429
    first, last = bank.intents[0], bank.intents[-1]
    assert (first.topic, first.name, first.scope) == ("fees", "tuition", "in")
    assert first.schedule is False
    assert first.questions["en"][0] == "How much is the B.Tech fee for one year?"
    assert first.questions["hi"][-1] == "B.Tech की fees कितनी है?"
    assert (last.topic, last.scope, len(last.questions["hi-Latn"])) == ("out-of-scope", "out", 5)
    assert sum(i.schedule for i in bank.intents) == 3
    assert [p.at for p in bank.planted_pii] == [0.04, 0.13, 0.22, 0.31, 0.52, 0.63, 0.81, 0.93]
    assert bank.planted_pii[5].pii == ("email", "phone")


def test_packaged_bank_is_read_once() -> None:
    assert question_bank() is question_bank()


def test_every_demo_data_file_is_package_data() -> None:
    """The wheel ships a file of service/demo only if a package-data glob matches it."""
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    globs = pyproject["tool"]["setuptools"]["package-data"]["service"]
    data_files = sorted(p.name for p in DEMO_DIR.iterdir() if p.suffix in (".yaml", ".jsonl"))
    assert "questions.yaml" in data_files
    for name in data_files:
        assert any(fnmatch.fnmatch(f"demo/{name}", g) for g in globs), name


# -- parsing -------------------------------------------------------------------------------------


def test_blocks_become_stripped_questions_in_language_order_with_defaults(tmp_path: Path) -> None:
    bank = load_question_bank(_write(tmp_path, GOOD))
    assert bank.intents[0] == Intent(
        "fees",
        "late-fee",
        "in",
        {
            "en": (
                "What is the penalty for paying fees late?",
                "how much late fine per day for fees",
            ),
            "hi": ("late fee कितनी लगती है?",),
        },
        False,
    )
    assert list(bank.intents[0].questions) == ["en", "hi"]  # LANGUAGES order, not file order
    assert (bank.intents[1].scope, bank.intents[1].schedule) == ("out", True)
    assert bank.planted_pii == (
        PlantedPii(0.5, "late fee? mail me at a.b@example.com", "fees", "late-fee", "en",
                   "parent", ("email",)),
    )  # fmt: skip


# -- errors: one per kind of mistake, each naming file, line, entry and field --------------------


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        ("    scope: out\n", "    scope: outside\n",
         "line 12, intents[1] (out-of-scope/out-of-scope), field 'scope': unknown value, "
         "input should be 'in', 'unanswerable' or 'out'"),
        ("    schedule: true\n", "    shedule: true\n",
         "line 12, intents[1] (out-of-scope/out-of-scope), field 'shedule': unknown field"),
        ("    name: late-fee\n", "", "line 2, intents[0] (fees/?), field 'name': is required"),
        ("    name: late-fee\n", "    name: Late Fee\n",
         "line 2, intents[0] (fees/Late Fee), field 'name': String should match pattern"),
        ("    schedule: true\n", "    schedule: 'yes'\n",
         "line 12, intents[1] (out-of-scope/out-of-scope), field 'schedule': Input should be a "
         "valid boolean"),
        ("      hi: |\n        late fee कितनी लगती है?\n", "      mr: |\n        फी किती?\n",
         "line 2, intents[0] (fees/late-fee), field 'questions.mr': unknown key, input should "
         "be 'en', 'hi-Latn' or 'hi'"),
        ("      en: |\n        tell me a joke\n", "      en: [tell me a joke]\n",
         "line 12, intents[1] (out-of-scope/out-of-scope), field 'questions.en': Input should "
         "be a valid string"),
        ("      en: |\n        tell me a joke\n", "      en: |\n\n",
         "line 12, intents[1] (out-of-scope/out-of-scope), field 'questions.en': no questions"),
        ("        tell me a joke\n", "        how much late fine per day for fees\n",
         "line 12, intents[1] (out-of-scope/out-of-scope), field 'questions.en': question 1 is "
         "already in line 2, intents[0] (fees/late-fee)"),
        ("  - topic: out-of-scope\n    name: out-of-scope\n",
         "  - topic: fees\n    name: late-fee\n",
         "line 12, intents[1] (fees/late-fee), field 'name': repeats the intent on line 2"),
        ("    intent: late-fee\n", "    intent: late-fees\n",
         "line 20, planted_pii[0], field 'intent': no intent 'fees/late-fees' in 'intents'"),
        ("  - at: 0.5\n", "  - at: 1.0\n",
         "line 20, planted_pii[0], field 'at': Input should be less than 1"),
        ("    pii: [email]\n", "    pii: [e-mail]\n",
         "line 20, planted_pii[0], field 'pii': unknown kind(s) ['e-mail']; known: url, "
         "secret, email"),
        ("    role: parent\n", "    role: teacher\n",
         "line 20, planted_pii[0], field 'role': unknown value, input should be 'student', "
         "'parent' or 'staff'"),
        ("    question: \"late fee? mail me at a.b@example.com\"\n", "    question: ' late fee'\n",
         "line 20, planted_pii[0], field 'question': must not be blank or start or end with "
         "spaces"),
        ("      en: |\n        tell me a joke\n",
         "      en: |\n        tell me a joke\n      en: |\n        tell me another\n",
         "line 19: key 'en' repeated"),
    ],
)  # fmt: skip
def test_each_mistake_is_named(tmp_path: Path, old: str, new: str, expected: str) -> None:
    assert GOOD.count(old) == 1, old
    problems = _problems(tmp_path, GOOD.replace(old, new))
    path = tmp_path / "bank.yaml"
    assert any(p.startswith(f"{path}, {expected}") for p in problems), problems


def test_every_problem_is_listed_not_only_the_first(tmp_path: Path) -> None:
    text = GOOD.replace("    scope: out\n", "    scope: outside\n").replace(
        "    role: parent\n", "    role: teacher\n"
    )
    problems = _problems(tmp_path, text)
    assert [p.split(", field")[0].split(", ", 1)[1] for p in problems] == [
        "line 12, intents[1] (out-of-scope/out-of-scope)",
        "line 20, planted_pii[0]",
    ]


def test_a_broken_intent_is_one_problem_not_also_one_per_planted_question(tmp_path: Path) -> None:
    text = GOOD.replace("    name: late-fee\n", "    name: late-fee\n    scope: maybe\n")
    problems = _problems(tmp_path, text)
    assert len(problems) == 1
    assert "intents[0] (fees/late-fee), field 'scope': unknown value" in problems[0]


def test_same_position_twice(tmp_path: Path) -> None:
    planted = GOOD[GOOD.index("  - at: 0.5") :]
    problems = _problems(tmp_path, GOOD + planted)
    assert problems == (
        f"{tmp_path / 'bank.yaml'}, line 27, planted_pii[1], field 'at': same position as line 20",
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("intents: [\n", ", line 2: not valid YAML"),
        ("- a\n- b\n", ": must be a mapping with the keys 'intents' and 'planted_pii'"),
        ("", ": must be a mapping with the keys 'intents' and 'planted_pii'"),
        (GOOD + "extra: 1\n", ": unknown top-level key 'extra'"),
        (GOOD[: GOOD.index("planted_pii:")], ": 'planted_pii' must be a non-empty list"),
    ],
)
def test_file_level_mistakes(tmp_path: Path, text: str, expected: str) -> None:
    problems = _problems(tmp_path, text)
    assert any(p.startswith(f"{tmp_path / 'bank.yaml'}{expected}") for p in problems), problems


def test_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "bank.yaml"
    path.write_bytes(GOOD.encode("utf-8").replace("कितनी".encode(), b"\xff\xfe"))
    with pytest.raises(QuestionBankError, match=r"bank\.yaml: not UTF-8 \(byte \d+\)"):
        load_question_bank(path)


def test_error_is_a_data_file_error_and_a_value_error(tmp_path: Path) -> None:
    with pytest.raises(DataFileError) as info:
        load_question_bank(_write(tmp_path, "[]\n"))
    assert isinstance(info.value, ValueError)
    assert str(info.value).startswith(f"1 problem(s) in {tmp_path / 'bank.yaml'}:")


def test_missing_file_is_an_os_error(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        load_question_bank(tmp_path / "absent.yaml")
