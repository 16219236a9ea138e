"""Scrub personal data from free text before it is stored, logged, exported or labelled.

:func:`scrub` replaces each personal item with a typed placeholder (``<EMAIL>``, ``<PHONE>``
...) and counts them by type; :data:`PII_TYPES` is the fixed, bounded set of type names (a
metric label's values).

Modules: :mod:`.checksums` (Luhn, Verhoeff), :mod:`.fold` (the folded view the detectors
match on: digits and look-alike punctuation to ASCII, format characters),
:mod:`.detectors` (each type's pattern, accept check and gate, the fast path; its docstring
is the table of types, shapes and what is kept on purpose), :mod:`.scrub` (one text: spans,
placeholders, repeated passes; labels), :mod:`.pseudonym` (keyed pseudonyms of identifiers),
:mod:`.event` (a whole query-log event: text, labels, ``user.id``, ``event_id``) and
:mod:`.stage` (the pipeline stage). Pure domain code: no I/O, no Kafka, HTTP or Prometheus.

>>> found = scrub("Mail rahul@example.com or call +91 98765 43210, Aadhaar 2341 2341 2346")
>>> found.text
'Mail <EMAIL> or call <PHONE>, Aadhaar <AADHAAR>'
>>> found.counts
{'email': 1, 'aadhaar': 1, 'phone': 1}
>>> scrub("Fee 1,20,000 due 29.11.2026, version 1.2.3").counts
{}
"""

from __future__ import annotations

from service.pii.checksums import luhn_valid, verhoeff_valid
from service.pii.event import pseudonymise_event_ids, scrub_event
from service.pii.fold import FORMAT_CHARS
from service.pii.pseudonym import (
    PSEUDONYM_PREFIX,
    UNKEYED,
    Pseudonymiser,
    is_pseudonym,
    pseudonymise,
)
from service.pii.scrub import MAX_PASSES, Scrubbed, scrub, scrub_label, scrub_many
from service.pii.stage import ANNOTATION_KEY, PiiScrubStage

# PII_TYPES and PLACEHOLDERS live in service.records (the language detector skips the
# placeholders without depending on the scrubber); re-exported here.
from service.records import PII_TYPES, PLACEHOLDERS

__all__ = [
    "ANNOTATION_KEY",
    "FORMAT_CHARS",
    "MAX_PASSES",
    "PII_TYPES",
    "PLACEHOLDERS",
    "PSEUDONYM_PREFIX",
    "UNKEYED",
    "PiiScrubStage",
    "Pseudonymiser",
    "Scrubbed",
    "is_pseudonym",
    "luhn_valid",
    "pseudonymise",
    "pseudonymise_event_ids",
    "scrub",
    "scrub_event",
    "scrub_label",
    "scrub_many",
    "verhoeff_valid",
]
