"""Retrievers: the protocol, the built-ins (bm25, tfidf, hybrid) and the remote clients.

``Retriever`` and ``RetrieverError`` are imported eagerly; everything else is loaded on first
attribute access (PEP 562), so importing the protocol does not pull in scikit-learn, bm25s or
httpx.

* :class:`~service.retrievers.bm25.BM25Retriever` — Okapi BM25 (bm25s).
* :class:`~service.retrievers.tfidf.TfidfRetriever` — word + char n-gram TF-IDF cosine.
* :class:`~service.retrievers.hybrid.HybridRetriever` — reciprocal-rank fusion of members.
* :class:`~service.retrievers.http.HttpRetriever` — ``POST {"question","k"}`` client.
* :class:`~service.retrievers.entrypoint.EntrypointRetriever` — a ``module:callable``.
* :func:`~service.retrievers.registry.build_retriever`,
  :func:`~service.retrievers.registry.build_retrievers` — from ``RetrieverConfig``.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

from service.retrievers.base import Retriever, RetrieverError

_LAZY: dict[str, str] = {
    "BM25Retriever": "service.retrievers.bm25",
    "TfidfRetriever": "service.retrievers.tfidf",
    "HybridRetriever": "service.retrievers.hybrid",
    "fuse": "service.retrievers.hybrid",
    "HttpRetriever": "service.retrievers.http",
    "EntrypointRetriever": "service.retrievers.entrypoint",
    "build_retriever": "service.retrievers.registry",
    "build_retrievers": "service.retrievers.registry",
    "tokenize": "service.retrievers.text",
}

__all__ = ["Retriever", "RetrieverError", *_LAZY]


def __getattr__(name: str) -> Any:
    """Import the module defining ``name`` on first use."""
    if name in _LAZY:
        return getattr(import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
