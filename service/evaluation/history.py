"""Run history: one JSONL row per retriever per ``goldwatch eval`` run.

Each row records when, which retriever (name and a hash of its configuration and the
evaluation settings), which gold set and corpus versions, and the overall metrics, so every
change to chunking, embeddings or search leaves a comparable row.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from service.files.append_only import append_whole, open_append, prepare_tail


def config_hash(*parts: Any) -> str:
    """Return the first 12 hex digits of the SHA-256 of the parts' canonical JSON.

    >>> config_hash({"b": 1, "a": 2}) == config_hash({"a": 2, "b": 1})
    True
    """
    canonical = json.dumps(parts, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:12]


def history_row(
    retriever: str,
    retriever_config: Mapping[str, Any],
    eval_config: Mapping[str, Any],
    overall: Mapping[str, float | None],
    *,
    gold_set_version: str,
    corpus_version: str | None,
    n_questions: int,
    now: datetime | None = None,
) -> dict[str, Any]:
    """Build one history row (JSON-able); a measure ``None`` (a mean over no question) is
    ``null``."""
    return {
        "date": (now or datetime.now(UTC)).isoformat(timespec="seconds"),
        "retriever": retriever,
        "config_hash": config_hash(retriever_config, eval_config),
        "gold_set_version": gold_set_version,
        "corpus_version": corpus_version,
        "n_questions": n_questions,
        "metrics": dict(overall),
    }


def append_history(path: Path, rows: list[dict[str, Any]], mode: int = 0o644) -> None:
    """Append rows to the JSONL history file (created with its folder, with ``mode``), all of
    them or none (:func:`service.files.append_only.append_whole`), fsynced.

    Raises:
        OSError: the file cannot be written.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    data = "".join(json.dumps(row, ensure_ascii=False, sort_keys=True) + "\n" for row in rows)
    fd = open_append(path, mode)
    try:  # all rows or none; a torn tail of a crashed run is cut (that run was not reported)
        append_whole(fd, prepare_tail(fd, path, on_torn="cut") + data.encode("utf-8"))
    finally:
        os.close(fd)
