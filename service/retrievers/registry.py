"""Build retrievers from their :class:`~service.settings.RetrieverConfig`.

``config.params`` become keyword arguments of the retriever's constructor, e.g.
``{"k1": 1.2, "stopwords": true}`` for bm25, ``{"word_weight": 0.5}`` for tfidf,
``{"depth": 200}`` for hybrid, ``{"concurrency": 8, "max_response_bytes": 1048576}`` for http.
``dense`` retrievers share one embedder: the one passed in, else the one the settings'
``analytics.embeddings`` section describes (:func:`~service.embeddings.model.shared_embedder`: one
per process and config, built only when a ``dense`` retriever is wanted), else the process
default.

>>> from service.records import Passage
>>> from service.settings import RetrieverConfig
>>> corpus = [Passage("a", "cats purr"), Passage("b", "dogs bark")]
>>> configs = {"bm25": RetrieverConfig(name="bm25", kind="bm25"),
...            "tfidf": RetrieverConfig(name="tfidf", kind="tfidf"),
...            "lex": RetrieverConfig(name="lex", kind="hybrid", members=("bm25", "tfidf"))}
>>> built = build_retrievers(["lex", "bm25"], configs.__getitem__, corpus)
>>> built["lex"].members[0] is built["bm25"]  # one bm25 index, shared
True
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any, Protocol

from service.embeddings.model import shared_embedder
from service.embeddings.protocol import Embedder
from service.files.fit_cache import Memo, digest, no_memo
from service.records import Passage
from service.retrievers.base import Retriever, mark_failed_retriever
from service.retrievers.bm25 import BM25Retriever
from service.retrievers.dense import DenseRetriever
from service.retrievers.entrypoint import EntrypointRetriever
from service.retrievers.hybrid import HybridRetriever
from service.retrievers.tfidf import TfidfRetriever
from service.settings import BUILTIN_HYBRIDS, BUILTIN_RETRIEVERS, RetrieverConfig

Resolve = Callable[[str], Retriever]


class SettingsLike(Protocol):
    """Anything with ``retriever(name) -> RetrieverConfig``, such as ``Settings``."""

    def retriever(self, name: str) -> RetrieverConfig: ...


def _construct(
    config: RetrieverConfig, factory: Callable[..., Retriever], *args: Any, **fixed: Any
) -> Retriever:
    """Call ``factory(*args, name=..., **fixed, **config.params)``; bad params → ValueError."""
    try:
        return factory(*args, name=config.name, **fixed, **config.params)
    except TypeError as exc:
        keys = ", ".join(sorted(config.params)) or "none"
        raise ValueError(
            f"retriever {config.name!r} (kind {config.kind}): bad params ({keys}): {exc}"
        ) from exc


def _default_resolve(corpus: Sequence[Passage] | None, embedder: Embedder | None) -> Resolve:
    """Resolve only the built-in names, with default configs (used when none is given)."""

    def resolve(name: str) -> Retriever:
        if name not in BUILTIN_RETRIEVERS or name in BUILTIN_HYBRIDS:
            raise ValueError(f"hybrid member {name!r} needs a resolver (use build_retrievers)")
        config = RetrieverConfig(name=name, kind=name)  # type: ignore[arg-type]
        return build_retriever(config, corpus, embedder=embedder)

    return resolve


def build_retriever(
    config: RetrieverConfig,
    corpus: Sequence[Passage] | None,
    resolve: Resolve | None = None,
    embedder: Embedder | None = None,
    memo: Memo = no_memo,
) -> Retriever:
    """Build one retriever.

    Args:
        config: what to build.
        corpus: the passages the built-ins (bm25, tfidf, dense) index; may be ``None``
            otherwise.
        resolve: maps a hybrid member name to its retriever; default: build ``bm25`` /
            ``tfidf`` / ``dense`` with default settings (other member names then fail).
        embedder: the embedding layer of ``dense`` (default: the process default).
        memo: may keep a ``bm25`` index between starts (:class:`~service.files.fit_cache.
            FitCache`, kind ``bm25-index-<name digest>``, keyed by the passages and params).

    Returns:
        A :class:`Retriever` named ``config.name``. HTTP retrievers hold a connection pool:
        call their ``close()`` when done.

    Raises:
        ValueError: a built-in without a corpus, bad params, an unloadable entry point, or an
            unresolvable hybrid member.
    """
    kind = config.kind
    if kind in ("bm25", "tfidf", "dense"):
        if corpus is None:
            raise ValueError(
                f"retriever {config.name!r} (kind {kind}) is built over the corpus, "
                "but no corpus was given (set corpus: in the configuration, or "
                "GOLDWATCH_CORPUS)"
            )
        if kind == "dense":
            return _construct(config, DenseRetriever, corpus, embedder=embedder)
        if kind == "bm25":
            return _bm25(config, corpus, memo)
        return _construct(config, TfidfRetriever, corpus)
    if kind == "hybrid":
        resolver = resolve if resolve is not None else _default_resolve(corpus, embedder)
        members = [resolver(member) for member in config.members]
        return _construct(config, HybridRetriever, members, rrf_k=config.rrf_k)
    if kind == "http":
        from service.retrievers.http import HttpRetriever  # here: httpx (~0.1 s of start-up)

        return _construct(
            config,
            HttpRetriever,
            config.url,
            timeout_s=config.timeout_s,
            retries=config.retries,
            backoff_s=config.backoff_s,
            headers=config.headers,
        )
    if kind == "entrypoint":
        return _construct(config, EntrypointRetriever, config.entrypoint)
    raise ValueError(f"retriever {config.name!r}: unknown kind {kind!r}")


def _bm25(config: RetrieverConfig, corpus: Sequence[Passage], memo: Memo) -> Retriever:
    """A ``bm25`` retriever, its index read from ``memo`` when kept there."""
    params = dict(config.params)
    try:
        # one kind per retriever name (a new entry evicts the older ones of its kind): a
        # changed corpus or params replaces the entry, and two bm25 retrievers with different
        # params (e.g. the scope's "bm25" and a tuned shadow one) are both kept
        kind = f"bm25-index-{digest(config.name)[:8]}"
        digest(params)
    except TypeError:  # params no key can hold: built, and refused by name if bad
        memo = no_memo
    if memo is no_memo:
        return _construct(config, BM25Retriever, corpus)
    inputs = [[passage.id for passage in corpus], [passage.text for passage in corpus], params]

    def fit() -> dict[str, Any]:
        built = _construct(config, BM25Retriever, corpus)
        assert isinstance(built, BM25Retriever)
        return built.fitted_state()

    return BM25Retriever.from_fitted(memo(kind, inputs, fit), name=config.name)


def build_retrievers(
    names: Iterable[str],
    lookup: Callable[[str], RetrieverConfig] | SettingsLike,
    corpus: Sequence[Passage] | None,
    embedder: Embedder | None = None,
    memo: Memo = no_memo,
) -> dict[str, Retriever]:
    """Build the named retrievers, each at most once.

    Hybrid members are resolved through the same cache, so a ``bm25`` index used both
    directly and inside ``hybrid`` is built once and shared.

    Args:
        names: the retrievers wanted (e.g. from the CLI).
        lookup: ``name -> RetrieverConfig`` — a function, or an object with a ``retriever``
            method such as :class:`~service.settings.Settings` (which knows the built-ins).
        corpus: the passages for the built-ins; ``None`` if none is needed.
        embedder: the embedding layer of ``dense`` retrievers; default: built from
            ``lookup.analytics.embeddings`` when ``lookup`` is a ``Settings`` (the ``tfidf``
            backend is then fitted on the corpus), else the process default.
        memo: may keep ``bm25`` indexes between starts (see :func:`build_retriever`).

    Returns:
        ``{name: retriever}`` for ``names``, in their order.

    Raises:
        KeyError: ``lookup`` does not know a name.
        ValueError: as :func:`build_retriever`, or hybrid members that form a cycle.
    """
    config_of = lookup.retriever if hasattr(lookup, "retriever") else lookup
    built: dict[str, Retriever] = {}
    building: list[str] = []
    shared: list[Embedder] = [] if embedder is None else [embedder]

    def dense_embedder() -> Embedder | None:
        if not shared:
            section = getattr(getattr(lookup, "analytics", None), "embeddings", None)
            if section is None:
                return None
            texts = [passage.text for passage in corpus] if corpus is not None else None
            shared.append(shared_embedder(section, fit_texts=texts))
        return shared[0]

    def resolve(name: str) -> Retriever:
        if name in built:
            return built[name]
        if name in building:
            raise ValueError(f"hybrid members form a cycle: {' -> '.join([*building, name])}")
        building.append(name)
        try:
            config = config_of(name)
            built[name] = build_retriever(
                config, corpus, resolve,
                embedder=dense_embedder() if config.kind == "dense" else None, memo=memo,
            )  # fmt: skip
        except Exception as exc:
            mark_failed_retriever(exc, name, "build")
            raise
        building.pop()
        return built[name]

    return {name: resolve(name) for name in names}
