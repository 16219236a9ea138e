"""Export undecided suggestions as gold-set JSONL rows for labelling outside goldwatch.

One row per suggestion, in selection order (:func:`service.harvest.ranking.select`)::

    {"id": "c-…", "question": "…", "gold": [], "source": "real", "status": "suggested",
     "reasons": ["refused", "coverage_gap"], "pool": [{"id": "p-1", "by": {"production": 1}}],
     "suggested": {"language": "hi-Latn", "topic": "fees", "role": "parent"}, "count": 7,
     "first_seen": "…Z", "last_seen": "…Z", "variants": ["…"], "priority": 12.5,
     "trace_id": "0af7…"}

``trace_id`` (provenance: the OpenTelemetry trace the question came from) is there only for
suggestions harvested from traces.

``gold`` stays ``[]`` and ``kind`` is left out until a labeller fills them; ``load_gold_set``
refuses a row still ``"status": "suggested"`` without a ``kind`` (naming its line), so an
unlabelled export appended to the gold set cannot pass as unanswerable questions; a labelled
row (``kind`` set, ``"unanswerable"`` too) loads, its extra fields ignored. goldwatch's
guesses (the classifier's language and topic, the first asker's role) are provenance under
``suggested``, never labels: a labeller who confirms one copies it to the row's own
``language`` / ``topic`` / ``role`` field, as the accept API does
(:mod:`service.harvest.labelling`). ``source`` is ``generated`` for generated questions,
else ``real``. Every text is scrubbed again (:func:`service.pii.scrub`) on the way out.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import IO, Any, NotRequired, TypedDict

from service.harvest.config import REASONS, HarvestConfig
from service.harvest.ranking import priority, select
from service.harvest.store import CandidateRepository
from service.harvest.suggestion import Suggestion
from service.pii.scrub import scrub

__all__ = ["ExportRow", "export_rows", "write_jsonl"]


class ExportRow(TypedDict):
    """One exported suggestion (module docstring), keys in file order: ``pool`` rows are
    ``{"id", "by": {retriever: best rank}}``; ``suggested`` holds goldwatch's guesses
    (language, topic, role), only those it has; ``trace_id`` only for suggestions from
    traces."""

    id: str
    question: str
    gold: list[str]
    source: str
    status: str
    reasons: list[str]
    pool: list[dict[str, Any]]
    suggested: NotRequired[dict[str, str]]
    count: int
    first_seen: str
    last_seen: str
    variants: list[str]
    priority: float
    trace_id: NotRequired[str]


class _Provenance(TypedDict, total=False):
    suggested: dict[str, str]
    trace_id: str


def _row(suggestion: Suggestion, config: HarvestConfig) -> ExportRow:
    reasons = sorted(suggestion.reasons, key=lambda r: (-config.weight(r), REASONS.index(r)))
    guesses = {name: value for name in ("language", "topic", "role")
               if (value := getattr(suggestion, name)) is not None}  # fmt: skip
    suggested: _Provenance = {"suggested": guesses} if guesses else {}
    trace: _Provenance = {} if suggestion.trace_id is None else {"trace_id": suggestion.trace_id}
    return {
        "id": suggestion.id,
        "question": scrub(suggestion.question).text,
        "gold": [],
        "source": "generated" if suggestion.source == "generated" else "real",
        "status": "suggested",
        "reasons": reasons,
        "pool": suggestion.pool_rows(),
        **suggested,
        "count": suggestion.count,
        "first_seen": suggestion.first_seen,
        "last_seen": suggestion.last_seen,
        "variants": [scrub(v).text for v in suggestion.variants],
        "priority": round(priority(suggestion, config), 6),
        **trace,
    }


def export_rows(
    repository: CandidateRepository, config: HarvestConfig, limit: int | None = None
) -> list[ExportRow]:
    """The undecided suggestions of ``repository`` as export rows, best ``limit`` first."""
    decided = set(repository.decisions())
    pending = [Suggestion.from_json(r) for r in repository.all() if r["id"] not in decided]
    return [_row(s, config) for s in select(pending, config, limit)]


def write_jsonl(rows: Iterable[Mapping[str, Any]], target: Path | str | IO[bytes]) -> int:
    """Write ``rows`` as UTF-8 JSONL to the file ``target`` (replacing it; its folder must
    exist) or to an open binary stream (e.g. stdout's buffer, flushed); return how many.

    Raises:
        OSError: the file cannot be created or written (missing folder, a folder, read-only,
            disk full, a closed pipe).
    """
    lines = [json.dumps(row, ensure_ascii=False) + "\n" for row in rows]
    data = "".join(lines).encode("utf-8")
    if isinstance(target, (str, Path)):
        Path(target).write_bytes(data)
    else:
        target.write(data)
        target.flush()
    return len(lines)
