"""Access control over corpus passages: which role may read which passage.

A passage's ``acl`` (corpus row, design brief "Data contracts") lists the roles allowed to
read it; an empty ``acl`` means everyone. A retriever that returns a passage to a user whose
role is not on its list exposes it (to the generator's context, and maybe to the answer):
that is a *violation*. When the answer also cites the passage, it is a *leak*.

Rules, chosen so that missing data never produces a false alarm:

* role ``None`` (the event carries no role): nothing is checked, no violations;
* a passage id the corpus does not know is not a violation (it may be newer than the corpus
  file goldwatch loaded);
* role names are compared exactly (``"Staff"`` is not ``"staff"``).

Gold rows with a ``role`` are evaluated as that role (:meth:`AccessPolicy.gold_violations`).

>>> from service.data.corpus import Corpus
>>> from service.records import Passage
>>> policy = AccessPolicy.from_corpus(Corpus((Passage("p-1", "Fees."),
...                                           Passage("p-2", "Pay scales.", acl=("staff",)))))
>>> policy.violations(["p-1", "p-2", "p-404"], "student"), policy.violations(["p-2"], None)
(['p-2'], [])
>>> sorted(policy.restricted), policy.roles
(['p-2'], ('staff',))
>>> AccessPolicy({"p-1": ["staff", "student"], "p-2": ["staff"]}).restricted_from_a_role
frozenset({'p-2'})
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from service.data.corpus import Corpus
from service.records import GoldQuestion, Passage

__all__ = ["AccessPolicy"]


class AccessPolicy:
    """Which roles may read each restricted passage.

    Args:
        acl: ``{passage id: roles allowed}``; an empty collection means everyone (such
            passages need not be listed). Built from a corpus with :meth:`from_corpus`.
    """

    def __init__(self, acl: Mapping[str, Iterable[str]]) -> None:
        frozen = {pid: frozenset(roles) for pid, roles in acl.items()}
        self._acl: dict[str, frozenset[str]] = {pid: r for pid, r in frozen.items() if r}
        self._roles = tuple(sorted({role for roles in self._acl.values() for role in roles}))

    @classmethod
    def from_corpus(cls, corpus: Corpus | Iterable[Passage]) -> AccessPolicy:
        """Return the policy of a corpus: each passage's ``acl`` (empty = everyone)."""
        return cls({p.id: p.acl for p in corpus})

    @property
    def restricted(self) -> frozenset[str]:
        """Ids of the passages not everyone may read."""
        return frozenset(self._acl)

    @property
    def restricted_from_a_role(self) -> frozenset[str]:
        """Ids of the passages that at least one role named in the ACLs (:attr:`roles`) may
        not read — what "restricted" means to a reader: ``["student", "parent", "staff"]``
        on a corpus of those three roles restricts nothing, ``["staff"]`` does. (Roles no
        ACL names are refused every passage with an ACL: :attr:`restricted` counts those.)"""
        everyone = frozenset(self._roles)
        return frozenset(pid for pid, roles in self._acl.items() if not everyone <= roles)

    @property
    def roles(self) -> tuple[str, ...]:
        """Every role named in an ACL, sorted (a bounded set: use it for metric labels)."""
        return self._roles

    def allowed(self, passage_id: str, role: str | None) -> bool:
        """True when ``role`` may read ``passage_id``.

        Unrestricted and unknown passages are readable by anyone; a restricted one only by
        the roles on its ACL. Role ``None`` (unknown asker) is never refused here: with no
        role there is nothing to check.
        """
        roles = self._acl.get(passage_id)
        return roles is None or role is None or role in roles

    def violations(self, ranking: Sequence[str], role: str | None) -> list[str]:
        """Return the passage ids of ``ranking`` that ``role`` may not read, in ranking order,
        each once. ``role is None`` → ``[]``; unknown passage ids are not violations."""
        if role is None or not self._acl:
            return []
        acl = self._acl
        return [pid for pid in dict.fromkeys(ranking) if pid in acl and role not in acl[pid]]

    def gold_violations(
        self, question: GoldQuestion, ranking: Sequence[str], role: str | None = None
    ) -> list[str]:
        """Violations of a retriever's ``ranking`` for a gold question, evaluated as the
        question's ``role`` (``role`` overrides it, e.g. a live asker's role). A gold row
        without a role is checked as nobody: ``[]``."""
        return self.violations(ranking, role if role is not None else question.role)

    def readable_gold(self, question: GoldQuestion, role: str | None = None) -> tuple[str, ...]:
        """The question's gold passage ids that its role (or ``role``) may read, in order.

        ``()`` for a role that may read none of them: for that asker the question is
        unanswerable, and the right behaviour is a refusal.
        """
        asker = role if role is not None else question.role
        return tuple(pid for pid in question.gold if self.allowed(pid, asker))

    def label(self, role: str | None) -> str:
        """Return a bounded metric label for ``role``: one of :attr:`roles`, else ``"other"``;
        ``None`` → ``"unknown"``."""
        if role is None:
            return "unknown"
        return role if role in self._roles else "other"
