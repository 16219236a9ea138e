"""Harvesting: real production questions proposed as new gold questions.

Modules: :mod:`.config` (settings, reasons), :mod:`.text` (normalising, ids),
:mod:`.neardup` (MinHash LSH near-duplicates), :mod:`.signals` (reasons of one event,
coverage gaps, score quantiles), :mod:`.suggestion` (one suggestion), :mod:`.ranking`
(priority, balanced selection), :mod:`.shedding` (which new questions a batch
considers), :mod:`.stage` (the pipeline stage), :mod:`.store` (sink port
and repositories), :mod:`.labelling` (accept / reject), :mod:`.export` (gold-set JSONL).
No Kafka, HTTP or Prometheus imports: the Kafka sink lives in ``consumers.harvest_sink``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from service.harvest.config import DEFAULT_WEIGHTS, REASONS, HarvestConfig
    from service.harvest.export import export_rows, write_jsonl
    from service.harvest.labelling import (
        AlreadyDecided,
        CandidateNotFound,
        Labelling,
        LabellingError,
        Page,
    )
    from service.harvest.ranking import primary_reason, priority, select
    from service.harvest.stage import PRODUCTION, HarvestStage
    from service.harvest.store import (
        CandidateRepository,
        CandidateSink,
        MemoryCandidates,
        StateStoreCandidates,
        record,
    )
    from service.harvest.suggestion import Occurrence, Suggestion

#: Where each public name lives. The names are imported on first use (PEP 562), so that
#: importing :mod:`service.harvest.config` (the settings model does, and so does every
#: ``goldwatch`` command) does not load the MinHash LSH stack (datasketch, scipy).
_WHERE = {
    "DEFAULT_WEIGHTS": "config",
    "REASONS": "config",
    "HarvestConfig": "config",
    "export_rows": "export",
    "write_jsonl": "export",
    "AlreadyDecided": "labelling",
    "CandidateNotFound": "labelling",
    "Labelling": "labelling",
    "LabellingError": "labelling",
    "Page": "labelling",
    "primary_reason": "ranking",
    "priority": "ranking",
    "select": "ranking",
    "PRODUCTION": "stage",
    "HarvestStage": "stage",
    "CandidateRepository": "store",
    "CandidateSink": "store",
    "MemoryCandidates": "store",
    "StateStoreCandidates": "store",
    "record": "store",
    "Occurrence": "suggestion",
    "Suggestion": "suggestion",
}


def __getattr__(name: str) -> Any:
    """Import a public name from its submodule on first use (PEP 562).

    Raises:
        AttributeError: ``name`` is not one of :data:`__all__`.
    """
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


__all__ = [
    "DEFAULT_WEIGHTS",
    "PRODUCTION",
    "REASONS",
    "AlreadyDecided",
    "CandidateNotFound",
    "CandidateRepository",
    "CandidateSink",
    "HarvestConfig",
    "HarvestStage",
    "Labelling",
    "LabellingError",
    "MemoryCandidates",
    "Occurrence",
    "Page",
    "StateStoreCandidates",
    "Suggestion",
    "export_rows",
    "primary_reason",
    "priority",
    "record",
    "select",
    "write_jsonl",
]
