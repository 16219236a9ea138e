"""AccessPolicy: who may read which passage; violations of a ranking; gold rows as their role."""

from __future__ import annotations

from service.data.corpus import Corpus, load_corpus
from service.data.goldset import load_gold_set
from service.demo import demo_path
from service.quality.acl import AccessPolicy
from service.records import GoldQuestion, Passage

CORPUS = Corpus(
    (
        Passage("p-1", "Fees are due in July."),
        Passage("p-2", "Hostel rules.", acl=("student", "parent", "staff")),
        Passage("p-9", "Salary circular.", acl=("staff",)),
        Passage("p-8", "Invigilation note.", acl=("staff", "examiner")),
    )
)


def test_from_corpus_restricted_and_roles() -> None:
    policy = AccessPolicy.from_corpus(CORPUS)
    assert policy.restricted == {"p-2", "p-9", "p-8"}
    assert policy.roles == ("examiner", "parent", "staff", "student")


def test_allowed() -> None:
    policy = AccessPolicy.from_corpus(CORPUS)
    assert policy.allowed("p-1", "student")  # empty acl: everyone
    assert policy.allowed("p-2", "parent")
    assert not policy.allowed("p-9", "student")
    assert policy.allowed("p-9", "staff")
    assert not policy.allowed("p-9", "Staff")  # exact names
    assert policy.allowed("p-404", "student")  # unknown passage
    assert policy.allowed("p-9", None)  # no role: nothing checked


def test_staff_only_passage_to_a_student_is_one_violation() -> None:
    policy = AccessPolicy.from_corpus(CORPUS)
    assert policy.violations(["p-1", "p-9", "p-2"], "student") == ["p-9"]
    assert policy.violations(["p-8", "p-1", "p-9", "p-9"], "parent") == ["p-8", "p-9"]
    assert policy.violations(["p-8", "p-9"], "staff") == []
    assert policy.violations(["p-8"], "examiner") == []


def test_role_none_and_unknown_ids_are_never_violations() -> None:
    policy = AccessPolicy.from_corpus(CORPUS)
    assert policy.violations(["p-9", "p-8"], None) == []
    assert policy.violations(["p-404", "x"], "student") == []
    assert AccessPolicy({}).violations(["p-9"], "student") == []
    assert AccessPolicy({"p-1": []}).restricted == frozenset()


def test_gold_rows_are_evaluated_as_their_role() -> None:
    policy = AccessPolicy.from_corpus(CORPUS)
    student = GoldQuestion("q-1", "DA rate?", (), kind="role-restricted", role="student")
    staff = GoldQuestion("q-2", "DA rate?", ("p-9",), kind="role-restricted", role="staff")
    anyone = GoldQuestion("q-3", "Fees?", ("p-1",))
    assert policy.gold_violations(student, ["p-9", "p-1"]) == ["p-9"]
    assert policy.gold_violations(staff, ["p-9", "p-1"]) == []
    assert policy.gold_violations(anyone, ["p-9"]) == []  # no role on the row
    assert policy.gold_violations(anyone, ["p-9"], role="parent") == ["p-9"]  # role overrides
    assert policy.readable_gold(staff) == ("p-9",)
    assert policy.readable_gold(staff, role="student") == ()
    assert policy.readable_gold(anyone, role="student") == ("p-1",)


def test_label_is_bounded() -> None:
    policy = AccessPolicy.from_corpus(CORPUS)
    assert [policy.label(r) for r in ("staff", "alumni", None)] == ["staff", "other", "unknown"]


def test_demo_corpus_role_restricted_gold_rows() -> None:
    corpus = load_corpus(demo_path("corpus.jsonl"))
    gold = load_gold_set(demo_path("gold.jsonl"))
    policy = AccessPolicy.from_corpus(corpus)
    staff_only = {p.id for p in corpus if p.acl == ("staff",)}
    assert len(staff_only) == 7  # salary circular 4 + invigilation note 3
    assert policy.restricted == {p.id for p in corpus}  # every passage lists its roles
    # but only the staff-only ones are kept from a role: the others list all three roles
    assert policy.restricted_from_a_role == staff_only
    assert set(policy.violations(corpus.ids, "student")) == staff_only
    assert policy.violations(corpus.ids, "alumni") == list(corpus.ids)  # not on any list
    assert policy.roles == ("parent", "staff", "student")
    for question in gold:
        # every gold row's gold passages are readable by its own role
        assert policy.gold_violations(question, question.gold) == []
    staff_rows = [q for q in gold if q.kind == "role-restricted" and q.role == "staff"]
    assert staff_rows and all(policy.readable_gold(q, role="student") == () for q in staff_rows)
