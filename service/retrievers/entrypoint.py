"""A retriever given as a Python entry point ``"package.module:attribute"``.

The attribute may be:

* a function ``(question: str, k: int) -> results``;
* an object with a ``search(question, k)`` method (e.g. another :class:`Retriever`), and
  optionally ``search_batch(questions, k)``, which is then used for batches;
* a class, instantiated once with the config's ``params`` as keyword arguments, giving one of
  the above.

``results`` is a list of ``(id, score)`` tuples, of ``{"id": ..., "score": ...}`` dicts, or of
:class:`ScoredDoc`; ids are strings or integers (turned into strings), scores finite real
numbers. Results are re-sorted by score descending (stable), a repeated id keeps its first
occurrence, and at most ``k`` are returned.
"""

from __future__ import annotations

import importlib
import inspect
import math
import numbers
from collections.abc import Callable, Sequence
from typing import Any

from service.records import ScoredDoc
from service.retrievers.base import RetrieverError, ReturnedOrder, top_k_ids
from service.retrievers.text import check_k


def load_entrypoint(entrypoint: str) -> Any:
    """Import ``"module:attribute"`` (dots allowed in both parts) and return the attribute.

    Raises:
        ValueError: malformed, module not importable or attribute missing — the message names
            the entry point and the cause.
    """
    module_name, sep, attr_path = entrypoint.partition(":")
    if not sep or not module_name or not attr_path:
        raise ValueError(f"entrypoint {entrypoint!r} must look like 'package.module:callable'")
    try:
        target: Any = importlib.import_module(module_name)
    except Exception as exc:  # ImportError, or any error raised while executing the module
        raise ValueError(
            f"entrypoint {entrypoint!r}: cannot import {module_name!r} ({type(exc).__name__}: "
            f"{exc})"
        ) from exc
    for part in attr_path.split("."):
        if not hasattr(target, part):
            raise ValueError(f"entrypoint {entrypoint!r}: {module_name!r} has no {attr_path!r}")
        target = getattr(target, part)
    return target


class EntrypointRetriever:
    """Wrap a Python callable or object as a :class:`Retriever` (see the module docstring).

    Args:
        entrypoint: ``"module:attribute"``.
        name: the retriever's name.
        **params: keyword arguments for the attribute when it is a class.

    Raises:
        ValueError: the entry point cannot be loaded, is not callable and has no ``search``,
            or ``params`` are given for a non-class / rejected by the class.
    """

    def __init__(self, entrypoint: str, *, name: str = "entrypoint", **params: Any) -> None:
        self.name = name
        self.entrypoint = entrypoint
        #: the lists as returned, before sorting: ``eval`` warns of distances from it
        self.returned_order = ReturnedOrder()
        target = load_entrypoint(entrypoint)
        if inspect.isclass(target):
            try:
                target = target(**params)
            except Exception as exc:
                raise ValueError(
                    f"entrypoint {entrypoint!r}: constructing it failed ({type(exc).__name__})"
                ) from exc
        elif params:
            raise ValueError(f"entrypoint {entrypoint!r} is not a class; params are not allowed")
        search = getattr(target, "search", None)
        self._search: Callable[[str, int], Any]
        if callable(search):
            self._search = search
        elif callable(target):
            self._search = target
        else:
            raise ValueError(f"entrypoint {entrypoint!r} is neither callable nor has search()")
        batch = getattr(target, "search_batch", None)
        self._batch: Callable[[list[str], int], Any] | None = batch if callable(batch) else None

    def search(self, question: str, k: int) -> list[ScoredDoc]:
        """Call the entry point once; validate and return at most ``k`` results.

        Raises:
            ValueError: ``k < 1``.
            RetrieverError: the callable raised, or returned something invalid.
        """
        check_k(k)
        return self._validate(self._call(self._search, question, k), k)

    def search_batch(self, questions: Sequence[str], k: int) -> list[list[ScoredDoc]]:
        """Use the target's ``search_batch`` when it has one, else loop over :meth:`search`."""
        check_k(k)
        if self._batch is None:
            return [self.search(question, k) for question in questions]
        raw = self._call(self._batch, list(questions), k)
        if not isinstance(raw, list | tuple) or len(raw) != len(questions):
            raise self._bad("search_batch must return one list per question")
        return [self._validate(results, k) for results in raw]

    def _call(self, function: Callable[[Any, int], Any], argument: Any, k: int) -> Any:
        try:
            return function(argument, k)
        except Exception as exc:  # the user's code; the question stays out of our message
            raise RetrieverError(
                f"retriever {self.name!r}: entrypoint {self.entrypoint!r} raised "
                f"{type(exc).__name__}"
            ) from exc

    def _bad(self, reason: str) -> RetrieverError:
        return RetrieverError(f"retriever {self.name!r}: entrypoint returned {reason}")

    def _validate(self, raw: Any, k: int) -> list[ScoredDoc]:
        if not isinstance(raw, list | tuple):
            raise self._bad(f"{type(raw).__name__}, expected a list of results")
        docs = [self._item(item, index) for index, item in enumerate(raw)]
        self.returned_order.observe(docs)
        return top_k_ids(docs, k)

    def _item(self, item: Any, index: int) -> ScoredDoc:
        if isinstance(item, dict):
            doc_id, score = item.get("id"), item.get("score")
        elif isinstance(item, tuple | list) and len(item) == 2:  # ScoredDoc is a tuple too
            doc_id, score = item
        else:
            raise self._bad(f"item {index} that is not (id, score), a dict or a ScoredDoc")
        if isinstance(doc_id, bool) or not isinstance(doc_id, str | int) or doc_id == "":
            raise self._bad(f"item {index} whose id is missing or not a non-empty string")
        if isinstance(score, bool) or not isinstance(score, numbers.Real):
            raise self._bad(f"item {index} whose score is missing or not a number")
        if not math.isfinite(float(score)):
            raise self._bad(f"item {index} whose score is not finite")
        return ScoredDoc(str(doc_id), float(score))
