"""Harvesting: real production questions proposed as new gold questions.

Modules: :mod:`.config` (settings, reasons), :mod:`.text` (normalising, ids),
:mod:`.neardup` (MinHash LSH near-duplicates), :mod:`.signals` (reasons of one event,
coverage gaps, score quantiles), :mod:`.suggestion` (one suggestion), :mod:`.ranking`
(priority, balanced selection), :mod:`.shedding` (which new questions a batch
considers), :mod:`.stage` (the pipeline stage), :mod:`.store` (sink port
and repositories), :mod:`.labelling` (accept / reject), :mod:`.export` (gold-set JSONL).
No Kafka, HTTP or Prometheus imports: the Kafka sink lives in ``consumers.harvest_sink``.
"""

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
