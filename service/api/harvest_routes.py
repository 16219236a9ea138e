"""Gold-candidate routes: list harvested suggestions, accept one into the gold set, reject one.

The app must hold a :class:`service.harvest.labelling.Labelling` as ``app.state.harvest``
(``None``: every route answers 404). Error bodies name the problem, never the submitted text.
"""

from __future__ import annotations

import re
import time
from typing import Annotated, Any, Literal, cast

import anyio
from fastapi import APIRouter, Depends, HTTPException, Path, Query, Request, status
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StrictBool
from starlette.concurrency import run_in_threadpool

from service.api.deps import TokenDep, TokenFirstRoute
from service.api.schemas import CandidatePage
from service.api.status_page import shed_counts
from service.harvest.config import REASONS
from service.harvest.labelling import (
    LABEL_FIELDS,
    STATUSES,
    AlreadyDecided,
    CandidateItem,
    CandidateNotFound,
    DuplicatesGold,
    GoldSetUnavailable,
    Labelling,
    LabellingError,
)
from service.harvest.store import Decision
from service.language.detector import LABELS
from service.language.tags import (
    LANGUAGE_TAG_MAX_CHARS,
    LANGUAGE_TAG_PATTERN,
    canonical_tag,
    language_key,
)

router = APIRouter(prefix="/v1/gold-candidates", tags=["harvest"], route_class=TokenFirstRoute)

ID_PATTERN = r"^c-[0-9a-f]{16}$"
_ID = re.compile(ID_PATTERN)
CandidateId = Annotated[str, Path(pattern=ID_PATTERN)]
Label = Annotated[str | None, Query(min_length=1, max_length=64)]


def get_labelling(request: Request) -> Labelling:
    """The labelling service of the app, or 404 when harvesting is off."""
    labelling = getattr(request.app.state, "harvest", None)
    if labelling is None:
        raise HTTPException(
            status.HTTP_404_NOT_FOUND,
            "no suggestions to label: harvesting needs analytics on, harvest.enabled and a "
            "gold-set file of your own (gold_set) to append accepted questions to",
        )
    return labelling  # type: ignore[no-any-return]


LabellingDep = Annotated[Labelling, Depends(get_labelling)]


#: A label value: 1-64 characters, not blank.
_Label = Annotated[str, Field(min_length=1, max_length=64, pattern=r"\S")]


#: A BCP 47 language tag (``en``, ``hi-Latn``), written in its canonical case (``hi-latn`` is
#: stored as ``hi-Latn``, the live traffic's label: :func:`service.language.tags.canonical_tag`).
def _labelled_language(tag: str) -> str:
    """A gold row's language must be one the language stage can give live questions (its
    tag folded: ``en-US`` → ``en``): a row labelled ``xx-foo`` never agrees with any live
    label and makes the measured language quality and the per-language off-corpus rule
    report a language nobody asks in (a second trial's accept). The message does not repeat
    the value."""
    if language_key(tag) not in LABELS:
        raise ValueError(
            "not a language the language stage labels (a langdetect code such as en, de or "
            "es, zh, hi-Latn, optionally with a region: en-US)"
        )
    return tag


_Language = Annotated[
    str,
    Field(max_length=LANGUAGE_TAG_MAX_CHARS, pattern=LANGUAGE_TAG_PATTERN),
    AfterValidator(canonical_tag),
    AfterValidator(_labelled_language),
]
#: A substring a correct answer must contain.
_Needle = Annotated[str, Field(min_length=1, max_length=500, pattern=r"\S")]
#: A reference answer.
_Answer = Annotated[str, Field(min_length=1, max_length=5000, pattern=r"\S")]
#: A reworded question (at most the harvest's default ``max_question_chars``).
_Question = Annotated[str, Field(min_length=1, max_length=2000, pattern=r"\S")]


class AcceptBody(BaseModel):
    """The labeller's verdict: gold passage ids (``[]``: unanswerable) and a kind, plus the
    labels the labeller sets or confirms, and optionally the question reworded. Only labels
    sent here are written as labels of the gold row; the suggestion's own guesses (language,
    topic, first asker's role) are kept under ``suggested`` in the row, as provenance, never
    as labels."""

    model_config = ConfigDict(extra="forbid")

    gold: list[Annotated[str, Field(min_length=1, max_length=256)]] = Field(max_length=100)
    kind: Literal[
        "plain", "expert", "multi-passage", "unanswerable", "role-restricted", "off-topic"
    ]
    #: The question as it goes into the gold set, when the labeller rewords the suggestion's
    #: (to take out a name or other personal data the scrubber missed, or fix a typo);
    #: scrubbed again. ``None``: the suggestion's scrubbed text. One that differs from every
    #: wording users asked makes the row ``"source": "written"``, ``"reworded": true``.
    question: _Question | None = None
    topic: _Label | None = None
    language: _Language | None = None
    role: _Label | None = None
    answer_contains: list[_Needle] | None = Field(default=None, min_length=1, max_length=20)
    reference_answer: _Answer | None = None
    #: With a reworded ``question`` (one that differs from every wording users asked, so
    #: the row's ``source`` is ``written`` and it is marked ``reworded``): also write the
    #: wording shown, scrubbed, as the row's ``asked``. Off by default: a rewording may take
    #: out personal data the scrubber missed. Ignored without a rewording.
    keep_asked: StrictBool = False

    def labels(self) -> dict[str, Any]:
        """The labels sent (``None`` ones left out), keyed as gold-set row fields."""
        return {name: value for name in LABEL_FIELDS
                if (value := getattr(self, name)) is not None}  # fmt: skip


#: A character that survives :func:`service.harvest.labelling.clean_reason` (ECMA-262 and
#: Python ``re`` alike), so a reason must hold one.
NON_BLANK_REASON = r"[^\s\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]"


class RejectBody(BaseModel):
    """Why the suggestion is not a gold question: 1-500 characters as sent; scrubbed before
    it is kept, and clipped to 500 with "…" if scrubbing made it longer."""

    model_config = ConfigDict(extra="forbid")

    # The document states what the labelling enforces (a 422 otherwise): at least one
    # character survives clean_reason — not whitespace, a control (Cc) or a bidi control.
    reason: str = Field(min_length=1, max_length=500,
                        json_schema_extra={"pattern": NON_BLANK_REASON})  # fmt: skip


def _error(exc: LabellingError) -> HTTPException:
    if isinstance(exc, CandidateNotFound):
        return HTTPException(status.HTTP_404_NOT_FOUND, "unknown gold candidate")
    if isinstance(exc, GoldSetUnavailable):
        return HTTPException(status.HTTP_503_SERVICE_UNAVAILABLE, str(exc),
                             headers={"Retry-After": "60"})  # fmt: skip
    if isinstance(exc, AlreadyDecided):
        return HTTPException(status.HTTP_409_CONFLICT, f"gold candidate already {exc.status}")
    if isinstance(exc, DuplicatesGold):  # names the gold row's id, never text
        return HTTPException(status.HTTP_409_CONFLICT, str(exc))
    return HTTPException(status.HTTP_422_UNPROCESSABLE_CONTENT, str(exc))


@router.get("")
def list_candidates(
    request: Request,
    labelling: LabellingDep,
    reason: Annotated[Literal[REASONS] | None, Query()] = None,  # type: ignore[valid-type]
    language: Label = None,
    topic: Label = None,
    status_: Annotated[Literal[STATUSES] | None, Query(alias="status")] = None,  # type: ignore[valid-type]
    offset: Annotated[int, Query(ge=0)] = 0,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
) -> CandidatePage:
    """Harvested suggestions, undecided first (without a ``status`` filter), each group
    best first and balanced over topics and languages: each with
    its reasons, count, first/last seen, scrubbed variants, pool (passages with who returned
    them at which rank) and status (``suggested``, ``accepted``, ``rejected``); goldwatch's
    guesses (the detected language, the topic model's topic, the first asker's role) under
    ``suggested``, never as labels. ``language`` and ``topic`` filter by those guesses,
    ``language`` case-insensitively (BCP 47); the other filters match exactly. Beside the
    page: ``shed`` (picked events whose new question was shed since this process started)
    and ``shadow_not_compared`` (per shadow candidate, the events offered whose comparison
    did not complete, by cause, over the state's whole history, restarts included: they
    could get no ``shadow_disagreement`` reason from that candidate, except those still
    ``in_flight``)."""
    try:
        page = labelling.list(reason, language, topic, status_, offset, limit)
    except LabellingError as exc:
        raise _error(exc) from None
    result: CandidatePage = {"total": page.total, "offset": offset, "limit": limit,
                             "items": page.items}  # fmt: skip
    runtime = getattr(request.app.state, "runtime", None)
    if runtime is not None:  # what the list cannot hold: shed, and comparisons not made
        result.update(cast("CandidatePage", shed_counts(runtime)))  # the same optional keys
    return result


@router.get("/{candidate_id}", responses={404: {"description": "no suggestion has this id"}})
def get_candidate(labelling: LabellingDep, candidate_id: Annotated[str, Path()]) -> CandidateItem:
    """One suggestion, as the listing shows it (with its status and decision); 404 for an
    unknown (or malformed) id, whose body does not repeat it."""
    if not _ID.fullmatch(candidate_id):
        raise HTTPException(status.HTTP_404_NOT_FOUND, "unknown gold candidate")
    try:
        return labelling.get(candidate_id)
    except LabellingError as exc:
        raise _error(exc) from None


#: The answers both decisions (accept, reject) document besides 200.
_DECISION_RESPONSES: dict[int | str, dict[str, Any]] = {
    401: {"description": "no bearer token"},
    403: {"description": "wrong token, or mutating endpoints disabled"},
    404: {"description": "unknown gold candidate, or harvesting is off"},
    409: {"description": "already accepted or rejected"},
    415: {"description": "not application/json"},
}


@router.post(
    "/{candidate_id}/accept",
    responses={
        **_DECISION_RESPONSES,
        409: {
            "description": "already accepted or rejected, or the question duplicates a gold "
            "row (its id named; nothing written: reject it, or reword it)"
        },
        422: {
            "description": "a field is invalid (named, its value not repeated): the gold "
            "passages do not fit the kind or are not in the corpus, a "
            "label is malformed, or the gold row would be over the "
            "loader's 64 KiB a row (its big fields named)"
        },  # fmt: skip
        503: {"description": "the gold-set file cannot be written now (retry later)"},
    },
)
async def accept_candidate(
    _: TokenDep,
    candidate_id: CandidateId,
    body: AcceptBody,
    labelling: LabellingDep,
    request: Request,
) -> Decision:
    """Append the suggestion to the gold-set file with a fresh id, with the labels sent
    (``topic``, ``language``, ``role``, ``answer_contains``, ``reference_answer``) as its
    labels and the unconfirmed guesses under ``suggested``; 409 if already decided, or
    when the question written duplicates a gold row of the file (harvest's near-duplicate
    rule, with the same question words, on both questions without personal-data placeholders
    and contact clauses: :func:`~service.harvest.labelling.duplicated_gold_row`; the body
    names the row's id);
    503 when the file cannot be written, or stays locked by another process and by the
    accepts before this one for over ``harvest.gold_lock_timeout_s`` in all (one deadline
    from the request's arrival)."""
    timeout_s = labelling.config.gold_lock_timeout_s
    # One deadline for the whole wait: the queue here and the file's lock in the accept.
    deadline = time.monotonic() + timeout_s
    gate = _accept_gate(request)
    # Accepts queue here, on the event loop, not in the worker threads: one blocked on
    # another process's lock holds one thread, never the whole pool (/healthz needs one).
    acquired = False
    with anyio.move_on_after(timeout_s):
        await gate.acquire()
        acquired = True
    if not acquired:
        raise _error(GoldSetUnavailable(
            f"gold-set file {labelling.gold_path} is busy: earlier accepts held it for over "
            f"{timeout_s:g} s"
        ))  # fmt: skip
    try:  # never cancelled once started: a decision that was kept is answered with 200
        decision = await run_in_threadpool(
            labelling.accept, candidate_id, body.gold, body.kind, body.labels(), deadline,
            keep_asked=body.keep_asked,
        )  # fmt: skip
        if (cost := drift_restart_cost(getattr(request.app.state, "runtime", None))) is not None:
            decision = {**decision, "warnings": [*decision.get("warnings", []), cost]}
        return decision
    except LabellingError as exc:
        raise _error(exc) from None
    finally:
        gate.release()


def drift_restart_cost(runtime: Any) -> str | None:
    """What an accept may cost the drift alarms, said in its answer (``None``: the running
    service has no ``out_of_scope`` drift dimension with a detector): the gold-set reload
    after it recalibrates the out-of-scope detector, and when the detector changes, the
    ``out_of_scope`` windows start afresh and warm up again for ``analytics.drift.warmup_s``
    (docs/drift.md "When the labeller changes"; trial 48 H1)."""
    live = getattr(runtime, "live", None)
    drift = getattr(getattr(live, "analytics", None), "drift", None)
    if drift is None or "out_of_scope" not in drift.labellers:
        return None
    hours = runtime.settings.analytics.drift.warmup_s / 3600
    return (f"an accept that changes the out-of-scope detector (the gold-set reload "
            f"recalibrates it) restarts the out_of_scope drift warm-up: no out_of_scope drift "
            f"test for the next {hours:g} h of traffic (analytics.drift.warmup_s), and an "
            "open out_of_scope alarm ends (docs/drift.md)")  # fmt: skip


def _accept_gate(request: Request) -> anyio.Lock:
    """The app's one accept-at-a-time lock (made at first use, on the event loop)."""
    gate = getattr(request.app.state, "accept_gate", None)
    if gate is None:
        gate = request.app.state.accept_gate = anyio.Lock()
    return gate


@router.post("/{candidate_id}/reject", responses=_DECISION_RESPONSES)
async def reject_candidate(
    _: TokenDep, candidate_id: CandidateId, body: RejectBody, labelling: LabellingDep
) -> Decision:
    """Keep a rejection with its reason (control characters taken out, line breaks and tabs
    as spaces, then scrubbed; clipped to 500 characters with "…" if scrubbing made it
    longer); 409 if already decided."""
    try:
        return await run_in_threadpool(labelling.reject, candidate_id, body.reason)
    except LabellingError as exc:
        raise _error(exc) from None
