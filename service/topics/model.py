"""Question topics on the embedding layer: fitted on the gold set, applied to live traffic.

Every text goes through one :class:`~service.embeddings.model.Embedder` (WordLlama by default,
L2-normalised rows; Hinglish questions without their romanised Hindi function words, see
:func:`embedding_texts`), so cosine similarity is a dot product::

    question ─ embed ─ cosine to each topic centroid ─ nearest topic, or ``"novel"``

* **Unsupervised** (default): spherical k-means on the embeddings of the gold questions the
  user wrote (rows an accept appended, ``harvest_id``, are left out of the fit), taken in the
  order of their case-folded text so the fit is a function of the set of rows: started from
  Ward's agglomerative clustering (scikit-learn, deterministic; above
  :data:`WARD_MAX_ROWS` rows a seeded k-means++ start), then Lloyd steps in cosine space until
  no assignment changes, so a fitted model is a fixed point. ``n_topics`` defaults to
  ``min(max_topics, round(sqrt(n)))``, n the written rows.
* **Supervised** (``labels`` given, e.g. the gold rows' ``topic`` field): one centroid per label
  (nearest-centroid classifier); the labels are the topic names and identities.
* **Content ids** (unsupervised): a topic is ``topic-<id>``, the id the min-hash of its
  questions (:func:`content_ids`: the smallest sha256-based hash of their texts, modulo
  :data:`CONTENT_IDS`), so any process fitting the same rows names the topics alike — a
  replica restarted without its state too. Accepted rows join the nearest written topic (its
  centroid stays that of the written rows) or, a close group far from every topic, make their
  own (:func:`_accepted_groups`). An identity stored before content ids (no ``"scheme"``)
  keeps its ids where a new centroid matches an old one (Hungarian assignment,
  ``scipy.optimize.linear_sum_assignment``, cosine ≥ ``id_min_similarity``, default 0.8):
  the upgrade keeps the names it had. :meth:`TopicModel.assignment_key` says when two models
  assign alike (the drift stage restarts its topic windows when it changes).
* **Labels**: each unsupervised topic has a human-readable :attr:`TopicInfo.label` built from
  its clean top terms (class-based TF-IDF over whole word tokens, Grootendorst 2022 "BERTopic",
  eq. 1; no char n-grams or fragments) and its most representative gold questions
  (:attr:`TopicInfo.examples`, nearest the centroid). Dropped as label terms: scikit-learn's
  English stop words, a few question-asking words ("did", "tell"), any word present in more
  than half of the topics, and, in any language without a word list, the *stop words of the
  data*: a word in more than :data:`STOP_SHARE` (5 %) of the fitted texts of its language
  (:func:`text_languages`; languages with at least :data:`MIN_LANGUAGE_TEXTS` texts) is not
  counted in the topic's texts of that language unless it is concentrated there (its share
  among them at least :data:`CONCENTRATION` times its share among the language's other
  texts; :func:`data_stop_words`). With an English-centric embedding, questions of other
  languages often cluster by language; without this rule such a topic's c-TF-IDF terms were
  its language's function words ("die, wie, wann", "का, क्या, था"): distinctive of the
  cluster, silent on its subject. English labels are unchanged (the demo, CLINC150). The
  stop words of each text's language (:func:`service.text.stop_words.stop_words`: for a
  Latin-script language the detector's own function words, for Hindi, Arabic-script and
  Cyrillic languages the stopwords-iso lists less their content words, for romanized Hindi
  its function words) are dropped from that language's texts whatever their number:
  a new user's German gold set (14 German rows, fewer than :data:`MIN_LANGUAGE_TEXTS`) had
  topics labelled "für, ein", and trial 41's 26 Hindi rows "के, है, में". A topic whose words
  all fail these rules is labelled with a note saying why, never with its id alone.
* **Novelty**: a question whose *novelty similarity* is below ``threshold`` is ``"novel"``.
  The novelty similarity is the mean cosine similarity to the ``novelty_neighbours`` (k,
  default 1: the nearest) gold questions; with ``novelty_centring`` every vector is first
  centred on the gold set's mean vector (minus the gold mean, re-normalised), which removes
  the direction all questions of an embedding share (WordLlama's vectors are anisotropic:
  two unrelated CLINC150 questions have cosine ~0.4; Mu & Viswanath 2018, "All-but-the-Top";
  k-NN distance for out-of-distribution detection: Sun et al. 2022). Centred with k = 3 the
  ROC AUC on CLINC150 gains ~0.01 (``benchmarks.topic_acceptance``), but at the same
  percentile threshold a gold set with isolated rows (20 random unanswerable questions)
  flags far fewer out-of-domain questions, so it is not the default (docs/topics.md).
  With ``novelty_hubness`` (h > 0) each gold question g's similarity is first lowered by
  half its own mean similarity to its h most similar other gold questions, r_h(g) — the
  gold-side term of cross-domain similarity local scaling (CSLS; Conneau et al. 2018, "Word
  Translation Without Parallel Data"): cos(q, g) − r_h(g)/2, so a gold question in a dense
  cluster (a "hub", near many questions) vouches for less than an isolated one. Opt-in;
  measured on CLINC150 (docs/topics.md): ROC AUC +0.009 / +0.012 on the scenario
  triple (60 / 300 gold questions), +0.005 / +0.003 on the mean of 24 other triples, but
  the self-measured quality fell on the production-shaped and demo gold sets. The
  threshold and quality below use the corrected similarity (leave-one-out: a gold question's
  neighbours keep the penalties measured with it among the gold set).
  ``threshold`` is the ``novelty_percentile``-th percentile of the gold questions'
  leave-one-out novelty similarities (each against the other gold questions). Its quality
  (:attr:`TopicModel.novelty_quality`) is measured on the gold set itself, leave-one-topic-out:
  each gold question scored against the gold set without its topic (centred, if on, on that
  reduced gold set's mean) is a "novel" positive, the same question scored leave-one-out
  against the whole gold set a negative; ROC AUC with a bootstrap interval
  (:func:`service.evaluation.detector_quality.measure_auc`).
* **Like-for-like gold counts** (:meth:`TopicModel.gold_counts`): the gold set's topic
  distribution goes through the same assignment as live traffic — supervised: 5-fold
  cross-validated nearest-centroid predictions (the rows in :func:`canonical_order`, then
  seeded; each row's centroid similarities averaged over :data:`CV_REPEATS` fold draws;
  labels with < 10 gold rows: the
  model's own prediction); unsupervised: the nearest centroid;
  novelty: leave-one-out — so traffic drawn from the gold set's topics matches it.

Artefacts (:meth:`TopicModel.save`) are one file: a JSON header line (format, kind, version,
scikit-learn version, embedder) then a joblib pickle of arrays and plain values only
(centroids, the gold vectors, ids, labels: ~1.1 MB for 1,000 gold questions at 256-d), so an
incompatible artefact is refused before anything is unpickled.

>>> texts = ["hostel fee amount", "tuition fee due date", "pay the fee online",
...          "exam timetable", "exam hall ticket", "exam results date"]
>>> model = TopicModel.fit(texts, TopicConfig(n_topics=2))
>>> a, b = model.assign_many(["when is the exam", "fee for the hostel"])
>>> a.nearest != b.nearest
True
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import io
import json
import math
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import scipy.sparse as sp
from threadpoolctl import ThreadpoolController

from service.embeddings.model import default_embedder
from service.embeddings.nearest import NearestMemo
from service.embeddings.protocol import Embedder
from service.errors import GoldwatchError
from service.evaluation.detector_quality import DetectorQuality, measure_auc
from service.files.regular import open_regular
from service.language.hinglish import STRONG_WORDS, WEAK_WORDS, is_hinglish
from service.language.tags import language_key
from service.records import PLACEHOLDERS
from service.text.stop_words import (
    ENGLISH_STOP_WORDS,
    han_function_bigram,
    han_stop_bigrams,
    stop_words,
)
from service.topics.config import N_TOPICS_MAX, N_TOPICS_MIN, TopicConfig
from service.topics.quality import topic_agreement

#: Topic name given to a question far from every topic.
NOVEL = "novel"
#: Word tokens: letters/digits plus combining marks of Indic, Thai and Arabic scripts.
TOKEN_PATTERN = r"(?u)(?:[^\W_]|[\u0300-\u036f\u064b-\u065f\u0900-\u0dff\u0e00-\u0eff])+"
_FORMAT = "goldwatch-artefact/1"
#: Artefact kind of topic models (the TF-IDF/LSA models of before were kind ``"topics"``).
KIND = "topics-embedding"
_WORD = re.compile(TOKEN_PATTERN)
#: Label words: :data:`TOKEN_PATTERN` without the Devanagari danda and double danda (U+0964,
#: U+0965: sentence ends, which made "थे।" a label term beside "थे").
#: The placeholders of scrubbed personal data, never label words (:func:`_words`).
_PLACEHOLDER = re.compile("|".join(re.escape(p) for p in PLACEHOLDERS.values()))
_LABEL_WORD = re.compile(TOKEN_PATTERN.replace(r"\u0900-\u0dff", r"\u0900-\u0963\u0966-\u0dff"))
#: Words of how questions are asked, not what about (with scikit-learn's English stop words).
QUESTION_WORDS = frozenset(
    "did does doing done tell want like know let just ok okay hey hi hello im ive id dont don "
    "doesnt didnt cant whats thats theres youre isnt arent wont shouldnt need able".split()
)
#: A word in more than this share of the fitted texts of its language is a stop word of the
#: data unless concentrated in a topic (the trial's XQuAD questions: de "die" 40 %, "wie"
#: 35 %; es "el" 47 %; hi "में" 52 %, "का" 22 %). English questions of CLINC150 and the demo
#: keep their labels; 3 of the trial corpus's 31 English passage topics changed their third
#: term ("east, west, discourse" -> "discourse, way, essentializing").
STOP_SHARE = 0.05
#: A frequent word stays a label term in a topic's texts of its language when its share
#: among them is at least this many times its share among the language's other texts
#: (trial gold set: subject words "bowl", "broncos" > 100x; function words of German and
#: Hindi clusters split by question form, "der" 5.9x, "क्या" 5.7x).
CONCENTRATION = 8.0
#: Languages with fewer fitted texts get no stop words of the data (too few to tell: at 45
#: English demo questions, "annual" in 5 of them would have counted as one).
MIN_LANGUAGE_TEXTS = 50
_NUMBERED = re.compile(r"^(.*?)(\d+)$")
_ALNUM = re.compile(r"[\W_]+")
_HINDI = STRONG_WORDS | WEAK_WORDS


class TopicFitError(GoldwatchError, ValueError):
    """Topics cannot be fitted on these texts or labels (too few texts, too few distinct
    labels, the reserved label ``'novel'``, ``n_topics`` out of range). Every message is
    written from counts and constants, never from a text or a label, so it may be shown
    (:attr:`~service.errors.GoldwatchError.safe_text`)."""

    safe_text = True


class ArtefactError(GoldwatchError, ValueError):
    """A saved model can't be loaded: wrong kind, bad header, incompatible scikit-learn."""


def save_artefact(path: Path | str, kind: str, version: str, payload: Any) -> None:
    """Write ``{"format", "kind", "version", "sklearn"}`` as a JSON line, then ``payload``."""
    import joblib  # here, not at import: scikit-learn and joblib cost start-up time
    import sklearn

    header = {"format": _FORMAT, "kind": kind, "version": version, "sklearn": sklearn.__version__}
    with Path(path).open("wb") as handle:
        handle.write(json.dumps(header).encode() + b"\n")
        joblib.dump(payload, handle)


def load_artefact(path: Path | str, kind: str) -> tuple[dict[str, Any], Any]:
    """Return ``(header, payload)`` of a file written by :func:`save_artefact`.

    Raises:
        ArtefactError: not a goldwatch artefact, another ``kind``, or saved with another
            scikit-learn major version (checked before unpickling).
        OSError: the file can't be read.
    """
    import joblib
    import sklearn

    with open_regular(path) as handle:  # a FIFO or device: a plain error, not a hang
        try:
            header = json.loads(handle.readline())
        except ValueError:
            raise ArtefactError(f"{path}: not a goldwatch model artefact") from None
        if not isinstance(header, dict) or header.get("format") != _FORMAT:
            raise ArtefactError(f"{path}: not a goldwatch model artefact")
        if header.get("kind") != kind:
            raise ArtefactError(f"{path}: holds a {header.get('kind')!r} model, not {kind!r}")
        saved = str(header.get("sklearn", "?"))
        if saved.split(".")[0] != sklearn.__version__.split(".")[0]:
            raise ArtefactError(
                f"{path}: saved with scikit-learn {saved}, running {sklearn.__version__} "
                "(different major version); refit the model"
            )
        payload = joblib.load(io.BytesIO(handle.read()))
    return header, payload


def data_version(texts: Sequence[str], labels: Sequence[Any] | None, params: Any) -> str:
    """First 12 hex chars of sha256 over the training data, params and scikit-learn version
    (:func:`sklearn_version`)."""
    blob = json.dumps([list(texts), labels and list(labels), params, sklearn_version()])
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:12]


@functools.cache
def sklearn_version() -> str:
    """The installed scikit-learn's version, from its distribution's metadata: the same
    string as ``sklearn.__version__`` for a released package, read without importing
    scikit-learn (~1 s of a cold start; a supervised topic fit needs nothing else of it)."""
    from importlib.metadata import version

    return version("scikit-learn")


class TopicAssignment(NamedTuple):
    """A question's topic.

    Attributes:
        topic: the topic name, or :data:`NOVEL` when far from every training text.
        nearest: the nearest topic's name (also when novel).
        similarity: cosine similarity to that topic's centroid, in [-1, 1].
        neighbour: the novelty similarity (see the module docstring): mean cosine similarity
            to the ``novelty_neighbours`` nearest gold questions (default: the nearest one;
            centred with ``novelty_centring``), each lowered by the gold question's hubness
            penalty r_h/2 (``novelty_hubness``; off by default), in [-1.5, 1.5];
            below :attr:`TopicModel.threshold` the question is :data:`NOVEL`.
    """

    topic: str
    nearest: str
    similarity: float
    neighbour: float

    @property
    def novel(self) -> bool:
        """True when the question is far from every training text."""
        return self.topic == NOVEL


class TopicInfo(NamedTuple):
    """One topic.

    Attributes:
        name: the topic name (``topic-<id>``, a configured name, or the gold label).
        top_terms: its clean top terms, most distinctive first (whole words, no stop words).
        size: gold questions (training texts) assigned to it.
        examples: its most representative gold questions (nearest its centroid), ≤ ``n_examples``.
        id: the stable identity of an unsupervised topic (``None`` when supervised: the label
            is the identity).
        label_note: why the terms are of one question each, or why there are none
            (``None``: the terms are as the rules give them; :func:`_top_terms`). Saved in the
            model state's top-level ``label_notes`` (``{topic id: note}``), not in the topic's
            dict, so that a goldwatch of before loads the model.
    """

    name: str
    top_terms: tuple[str, ...]
    size: int
    examples: tuple[str, ...] = ()
    id: int | None = None
    label_note: str | None = None

    @property
    def label(self) -> str:
        """Human-readable label: ``"topic-3: balance, checking, account"`` for an unsupervised
        topic with terms, with :attr:`label_note` in brackets when there is one (``"topic-7
        (no term qualifies: …)"``: never a bare id); the name alone for a supervised topic (its
        label is already readable).

        >>> TopicInfo("topic-7", (), 2, id=7, label_note="no term qualifies").label
        'topic-7 (no term qualifies)'
        """
        if self.id is None:
            return self.name
        note = "" if self.label_note is None else f" ({self.label_note})"
        if not self.top_terms:
            return f"{self.name}{note}"
        return f"{self.name}: {', '.join(self.top_terms[:3])}{note}"


def topic_sort_key(name: str) -> tuple[str, int, str]:
    """Natural order of topic names: ``topic-2`` before ``topic-10``; others alphabetical.

    >>> sorted(["topic-10", "novel", "topic-2", "banking"], key=topic_sort_key)
    ['banking', 'novel', 'topic-2', 'topic-10']
    """
    found = _NUMBERED.match(name)
    if found is None:
        return (name, -1, "")
    return (found.group(1), int(found.group(2)), name)


#: A refit's default minimum centroid cosine similarity to keep an old topic id.
ID_MIN_SIMILARITY = 0.8


class TopicModel:
    """A fitted topic model; build it with :meth:`fit` or :meth:`load`.

    Attributes:
        topics: one :class:`TopicInfo` per topic, index = position of its centroid, in natural
            name order (``topic-2`` before ``topic-10``).
        threshold: novelty cut-off on the novelty similarity (``-inf``: off).
        novelty_neighbours: k of the novelty similarity (1 in artefacts written before it
            existed, which were not centred either: they keep scoring as they were fitted).
        version: hash of training texts, labels, config, embedder and scikit-learn version.
        supervised: True when topics came from user labels.
        embedder_name: :attr:`~service.embeddings.model.Embedder.name` of the embedder it was fitted
            with (a model is only applied with the same one).
        novelty_quality: ROC AUC of the novelty score, leave-one-topic-out on the gold set
            (see the module docstring); ``None`` with fewer than 2 topics or novelty off.
        topic_agreement: supervised: the held-out agreement of the assignment with the gold
            labels, overall and per language of the question
            (:func:`service.topics.quality.topic_agreement`: ``{"n", "agree", "share", "low",
            "high", "by_language", "method"}``); ``None`` when unsupervised (no labels) or
            loaded from an artefact saved before it was measured.
        next_id: one more than the largest id (kept for identities of before content ids,
            whose ids were numbered from 0).
    """

    def __init__(self, state: Mapping[str, Any], version: str, embedder: Embedder | None = None
                 ) -> None:  # fmt: skip
        self._embedder = embedder or default_embedder()
        if self._embedder.name != state["embedder"]:
            raise ArtefactError(
                f"topic model fitted with embedder {state['embedder']!r}, "
                f"running {self._embedder.name!r}; refit the model"
            )
        self._centroids = np.ascontiguousarray(state["centroids"], dtype=np.float32)  # (k, d)
        self._reference = np.ascontiguousarray(state["reference"], dtype=np.float32)  # (m, d)
        centre = state.get("novelty_centre")  # (d,), None: not centred (older artefacts)
        self._centre = None if centre is None else np.asarray(centre, dtype=np.float32)
        self.novelty_neighbours = int(state.get("novelty_neighbours", 1))
        self.novelty_hubness = int(state.get("novelty_hubness", 0))  # 0 in older artefacts
        penalty = state.get("novelty_penalty")  # (m,) r_h(g)/2 of each reference row, or None
        self._penalty = None if penalty is None else np.asarray(penalty, dtype=np.float32)
        notes = state.get("label_notes") or {}  # {topic id: note}; absent before s42
        self.topics = tuple(TopicInfo(**{**t, "top_terms": tuple(t["top_terms"]),
                                         "examples": tuple(t["examples"]),
                                         "label_note": notes.get(t.get("id"))})
                            for t in state["topics"])  # fmt: skip
        self.threshold = float(state["threshold"])
        self.supervised = bool(state["supervised"])
        self.embedder_name = str(state["embedder"])
        self.next_id = int(state["next_id"])
        self._seed = int(state["seed"])
        self._folds = int(state["cv_folds"])
        self._min_class = int(state.get("cv_min_class", 10))
        quality = state.get("novelty_quality")
        self.novelty_quality = DetectorQuality(**quality) if quality else None
        centres = state.get("language_centres")  # None: off (or saved before it existed)
        self._language_centres: dict[str, np.ndarray] | None = (
            None if centres is None
            else {g: np.asarray(c, dtype=np.float32) for g, c in centres.items()}
        )  # fmt: skip
        agreement = state.get("topic_agreement")  # None: unsupervised, or saved before it
        self.topic_agreement: dict[str, Any] | None = dict(agreement) if agreement else None
        #: ``{language: {topic name: fitted texts}}`` (``None``: saved before it was kept)
        self.language_topics: dict[str, dict[str, int]] | None = state.get("language_topics")
        self._state = dict(state)
        self.version = version

    @classmethod
    def fit(
        cls,
        texts: Sequence[str],
        config: TopicConfig | None = None,
        labels: Sequence[str] | None = None,
        *,
        embedder: Embedder | None = None,
        previous: TopicModel | Mapping[str, Any] | None = None,
        accepted: Sequence[bool] | None = None,
    ) -> TopicModel:
        """Fit on ``texts`` (gold questions, optionally plus passages); ``labels`` → supervised.

        Args:
            texts: n training texts.
            config: settings (default :class:`TopicConfig`).
            labels: one topic label per text (supervised), or ``None`` (clusters).
            embedder: the embedding layer (default
            :func:`~service.embeddings.model.default_embedder`).
            previous: the model this one replaces, or its :meth:`identity` (from the state
                store): an identity of before content ids (no ``"scheme"``) keeps its ids
                where a new centroid matches an old one; content ids need no previous model
                (see the module docstring, "Content ids").
            accepted: one flag per text, True for a row an accept appended (``harvest_id``):
                unsupervised topics are fitted on the other rows only, the accepted rows join
                their nearest topic or, a close group far from every topic, make their own;
                with ``language_centring`` the language centres are the written rows'
                (``None``: every row was written).

        The fit reads the rows in :func:`canonical_order` (by text, then label, then the
        accepted flag): the model, its version, quality and agreement are the same for any
        order of the same rows.

        Raises:
            TopicFitError: (a ``ValueError``) fewer than 3 texts, ``labels`` not as long as
                ``texts``, fewer than 2 distinct labels, more clusters than texts, or a name
                equal to ``"novel"``.
        """
        config = config or TopicConfig()
        embedder = embedder or default_embedder()
        texts = list(texts)
        if len(texts) < 3:
            raise TopicFitError(f"need at least 3 texts to fit topics, got {len(texts)}")
        if labels is not None:
            _check_labels(texts, labels)
        flags = [False] * len(texts) if accepted is None else [bool(a) for a in accepted]
        if len(flags) != len(texts):
            raise TopicFitError(f"{len(flags)} accepted flags for {len(texts)} texts")
        # the rows in canonical order: the fit (reference sample, cross-validation folds,
        # novelty quality's sample and bootstrap, float sums, tie-breaks) and the version are
        # then those of the set of rows, not of their order (trial 50, M1)
        order = canonical_order(texts, labels, flags)
        texts, flags = [texts[i] for i in order], [flags[i] for i in order]
        if labels is not None:
            labels = [labels[i] for i in order]
        vectors = embedder.embed(embedding_texts(texts))  # (n, d), unit rows
        with _blas().limit(limits=1):  # one thread: 7x faster on a shared, loaded machine
            return cls._fit(texts, vectors, config, labels, embedder, previous, flags)

    @classmethod
    def _fit(cls, texts: list[str], vectors: np.ndarray, config: TopicConfig,
             labels: Sequence[str] | None, embedder: Embedder,
             previous: TopicModel | Mapping[str, Any] | None,
             accepted: Sequence[bool] | None = None) -> TopicModel:  # fmt: skip
        prior = _prior(previous, embedder)
        detected = text_languages(texts)
        keys = [language_key(g) for g in detected]
        flags = np.array(accepted if accepted is not None else [False] * len(texts), bool)
        # the centres of the written rows (accepted rows, harvest_id, left out as the fit
        # leaves them out): an accept that adds no topic moves no centre, no centroid and no
        # assignment_key, so the topic windows keep counting (docs/topics.md "Topic ids")
        centres = _written_centres(vectors, keys, flags) if config.language_centring else None
        # the vectors topics are assigned on (novelty keeps the embedder's own)
        topical = vectors if centres is None else _centred_by_language(vectors, keys, centres)
        if labels is None:
            ids, assigned, centroids, next_id, legacy = _cluster(topical, config, prior, texts,
                                                                 flags)  # fmt: skip
            names = [config.names.get(i, f"topic-{i}") for i in ids]
            if NOVEL in names:
                raise TopicFitError(f"{NOVEL!r} is reserved for questions far from every topic")
            topic_ids: list[int | None] = list(ids)
        else:
            names, assigned, centroids = _by_label(topical, labels)
            topic_ids, next_id, legacy = [None] * len(names), 0, False
        order = sorted(
            range(len(names)),
            key=lambda i: (
                topic_sort_key(names[i]) if topic_ids[i] is None else ("", topic_ids[i], "")
            ),
        )
        remap = np.empty(len(order), dtype=np.int64)
        remap[order] = np.arange(len(order))
        names = [names[i] for i in order]
        topic_ids = [topic_ids[i] for i in order]
        centroids = centroids[order]
        assigned = remap[assigned]
        sizes = np.bincount(assigned, minlength=len(names))
        terms, notes = zip(*_top_terms(texts, assigned, len(names), config.n_terms, detected),
                           strict=True)  # fmt: skip
        examples = _examples(texts, topical, assigned, centroids, config.n_examples)
        topics = [
            {"name": n, "top_terms": list(t), "size": int(s), "examples": list(e), "id": i}
            for n, t, s, e, i in zip(names, terms, sizes, examples, topic_ids, strict=True)
        ]
        # a top-level key, not a topic's: a model saved now loads in a goldwatch of before
        # (its loader builds TopicInfo(**topic) and ignores keys it does not read)
        label_notes = {int(i): note for i, note in zip(topic_ids, notes, strict=True)
                       if i is not None and note is not None}  # fmt: skip
        centre = None
        if config.novelty_centring:
            centre = vectors.mean(axis=0, dtype=np.float64).astype(np.float32)
        k = config.novelty_neighbours
        scored = vectors if centre is None else _centred(vectors, centre)
        reference = _sample(scored, config.max_reference, config.seed)
        hubness = config.novelty_hubness
        penalty = _hubness_penalty(reference, hubness) if hubness else None
        threshold = _novelty_threshold(reference, config.novelty_percentile, k, penalty)
        quality = None
        if config.novelty_percentile > 0:
            # the operating point only where the threshold was set on every gold row
            # (max_reference 1,000 of 2,000 rows: FPR 0.005 read for the detector's ~0.05)
            whole = len(reference) == len(vectors)
            quality = _novelty_quality(vectors, assigned, config.seed, k, centre is not None,
                                       hubness=hubness,
                                       threshold=threshold if whole else None)  # fmt: skip
        agreement = None
        if labels is not None:  # held out, every label (even a small one), per language
            held = _cross_validated(vectors, assigned, len(names), config.cv_folds, config.seed,
                                    keys if centres is not None else None)  # fmt: skip
            repeated = (f" (repeated {CV_REPEATS} times, held-out centroid similarities "
                        "averaged)" if config.cv_folds < len(texts) else "")  # fmt: skip
            agreement = topic_agreement(
                [names[i] for i in assigned.tolist()], [names[i] for i in held.tolist()], keys,
                method=f"{min(config.cv_folds, len(texts))}-fold cross-validated{repeated} "
                       f"nearest centroid on {len(texts)} labelled gold questions",
            )  # fmt: skip
        language_topics = _language_topics(keys, [names[i] for i in assigned.tolist()])
        state = {
            "centroids": np.asarray(centroids, dtype=np.float32),
            "reference": reference,
            "novelty_centre": centre,
            "novelty_neighbours": k,
            "novelty_hubness": hubness,
            "novelty_penalty": penalty,
            "topics": topics,
            "label_notes": label_notes,
            "threshold": threshold,
            "supervised": labels is not None,
            "embedder": embedder.name,
            "next_id": int(next_id),
            # "content": every id is a content id (a later fit needs no previous model);
            # "matched": ids of an identity of before content ids were kept (the upgrade)
            "id_scheme": "matched" if legacy else "content",
            "seed": config.seed,
            "cv_folds": config.cv_folds,
            "cv_min_class": config.cv_min_class,
            "novelty_quality": None if quality is None else quality.__dict__,
            "topic_agreement": agreement,
            "language_centres": centres,
            # texts per language and topic: how much the topics follow language
            # (service.topics.quality.topic_language_association; trial 43 M4)
            # (labelled topics: None, the counts would describe the user's labels, not the
            # embedding; their per-language held-out agreement, language_bias, says it)
            "language_topics": None if labels is not None else language_topics,
        }
        # off, the setting is left out: the versions of models fitted before it existed hold
        # min_kappa gates the fitted model (analytics), it changes nothing of the fit
        dumped = config.model_dump(mode="json", exclude={"min_kappa"} if centres
                                   else {"min_kappa", "language_centring"})  # fmt: skip
        # (content ids: the fit is a function of the rows and their flags, not of a previous
        # model; an identity of before still names the topics it matches)
        params = [dumped, embedder.name, prior and prior["ids"]]
        if accepted is not None and any(accepted):
            params.append([i for i, a in enumerate(accepted) if a])
        return cls(state, data_version(texts, labels, params), embedder)

    def assignment_key(self) -> str:
        """What the topics of a question depend on, as 16 hex chars of sha256: the topic
        names, the centroids (rounded to 5 decimals) and the language centres. Two models
        with the same key give every question the same topic (novelty aside: its threshold
        moves with every gold row); the drift stage restarts its topic windows when it
        changes (:meth:`~service.drift.stage.DriftStage.set_labeller`)."""
        centres = self._language_centres or {}
        blob = json.dumps([list(self.names),
                           np.round(self._centroids.astype(np.float64), 5).tolist(),
                           {g: np.round(c.astype(np.float64), 5).tolist()
                            for g, c in sorted(centres.items())}])  # fmt: skip
        return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:16]

    @property
    def names(self) -> tuple[str, ...]:
        """Topic names, index = topic position (without :data:`NOVEL`), natural order."""
        return tuple(topic.name for topic in self.topics)

    def labels(self) -> dict[str, str]:
        """``{topic name: human-readable label}`` (see :attr:`TopicInfo.label`)."""
        return {topic.name: topic.label for topic in self.topics}

    @property
    def embedder(self) -> Embedder:
        """The embedder this model reads text through (its name is :attr:`embedder_name`)."""
        return self._embedder

    def identity(self) -> dict[str, Any] | None:
        """What a later fit needs to keep this model's topic ids (JSON-able, for the state
        store): ``{"embedder", "scheme", "next_id", "ids", "centroids"}`` (centroids rounded
        to 5 decimals; ``scheme`` ``"content"`` when every id is a content id, which a later
        fit derives again without it, ``"matched"`` when ids of before were kept, which a
        later fit keeps by matching); ``None`` for a supervised model (its labels are its
        identities)."""
        if self.supervised:
            return None
        return {
            "embedder": self.embedder_name,
            "scheme": self._state.get("id_scheme", "matched"),
            "next_id": self.next_id,
            "ids": [topic.id for topic in self.topics],
            "centroids": np.round(self._centroids.astype(np.float64), 5).tolist(),
        }

    @property
    def language_centring(self) -> bool:
        """True when topics are assigned on vectors centred per language (then
        :meth:`assign_many` reads each text's language; see ``language_centring`` of
        :class:`~service.topics.config.TopicConfig`)."""
        return self._language_centres is not None

    def _topical(self, vectors: np.ndarray, texts: Sequence[str],
                 languages: Sequence[str | None] | None) -> np.ndarray:  # fmt: skip
        """``vectors`` (n, d) as topics are assigned on them: centred per language when
        :attr:`language_centring` (a text without a given language is detected)."""
        if self._language_centres is None:
            return vectors
        given: list[str | None] = list(languages) if languages is not None else [None] * len(texts)
        todo = [i for i, g in enumerate(given) if not g]
        if todo:
            for i, g in zip(todo, text_languages([texts[i] for i in todo]), strict=True):
                given[i] = g
        keys = [language_key(str(g)) for g in given]
        return _centred_by_language(vectors, keys, self._language_centres)

    def _vectors_to_topics(self, vectors: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Nearest centroid index and its cosine similarity of each row, ``(n,)`` and ``(n,)``."""
        sims = vectors @ self._centroids.T  # (n, topics)
        best = sims.argmax(axis=1)
        return best, sims[np.arange(len(best)), best]

    def _novelty_similarity(self, vectors: np.ndarray, texts: Sequence[str] | None = None
                            ) -> np.ndarray:  # fmt: skip
        """Novelty similarity of each row of ``vectors`` (n, d) to the gold set, ``(n,)``.

        ``texts``: the embedded text of each row. Given, with the nearest gold question as
        the novelty similarity (uncentred, unpenalised, ``k = 1``), a text's value is taken
        from the embedder's :class:`~service.embeddings.nearest.NearestMemo` when the
        out-of-scope detector (which runs first) has just computed it against equal gold
        vectors: the largest of its nearest answerable and unanswerable gold similarities.
        """
        memo = getattr(self._embedder, "nearest", None)
        if self._centre is not None:
            vectors = _centred(vectors, self._centre)
        elif (texts is not None and isinstance(memo, NearestMemo) and self._penalty is None
                and self.novelty_neighbours == 1):  # fmt: skip
            found = memo.recall(self._reference, texts)
            todo = [i for i, value in enumerate(found) if value is None]
            if len(todo) < len(found):
                out = np.array([-np.inf if v is None else v for v in found], dtype=np.float32)
                if todo:
                    out[todo] = _top_k_similarity(vectors[todo], self._reference, 1)
                return out
        return _top_k_similarity(vectors, self._reference, self.novelty_neighbours,
                                 penalty=self._penalty)  # fmt: skip

    @property
    def novelty_on(self) -> bool:
        """True when a text can be :data:`NOVEL` (off: ``novelty_percentile`` 0, as when the
        model is fitted on corpus passages without a gold set)."""
        return math.isfinite(self.threshold)

    def assign_many(self, texts: Sequence[str], languages: Sequence[str | None] | None = None
                    ) -> list[TopicAssignment]:  # fmt: skip
        """Assign each text its nearest topic, or :data:`NOVEL`; one ``embed`` call.

        Shapes: ``texts`` n strings → n assignments, in order. An empty list gives ``[]``.
        ``languages``: each text's language as the language stage labelled it (read only
        with :attr:`language_centring`; a missing one is detected).
        """
        if not texts:
            return []
        embedded = embedding_texts(texts)
        vectors = self._embedder.embed(embedded)  # (n, d)
        topical = self._topical(vectors, texts, languages)
        # Small products: OpenBLAS threads only contend with the process's other work.
        with _blas().limit(limits=1, user_api="blas"):
            best, top = self._vectors_to_topics(topical)
            neighbour = self._novelty_similarity(vectors, embedded)
        names = self.names
        rows = zip(best.tolist(), top.tolist(), neighbour.tolist(), strict=True)
        return [
            TopicAssignment(NOVEL if nn < self.threshold else names[k], names[k], sim, nn)
            for k, sim, nn in rows
        ]

    def assign(self, text: str) -> TopicAssignment:
        """Assign one text (prefer :meth:`assign_many`: far cheaper per question)."""
        return self.assign_many([text])[0]

    def gold_counts(self, texts: Sequence[str], labels: Sequence[str | None] | None = None,
                    novelty: bool = True) -> dict[str, int]:  # fmt: skip
        """``{topic name or "novel": rows}``: the counts of :meth:`gold_assignments`."""
        return dict(Counter(self.gold_assignments(texts, labels, novelty)))

    def gold_assignments(self, texts: Sequence[str],
                         labels: Sequence[str | None] | None = None,
                         novelty: bool = True) -> list[str]:  # fmt: skip
        """The gold set's topics, one per row, through the same assignment as live traffic.

        * Supervised: each row labelled by one of this model's topics gets the
          nearest-centroid prediction of models fitted without it (``cv_folds``-fold
          cross-validation repeated over :data:`CV_REPEATS` fold draws of the model's seed,
          the row's centroid similarities averaged: :func:`_cross_validated`) — except
          rows of a label with fewer than ``cv_min_class`` gold rows, which get this model's
          own prediction: holding a row out of a centroid of 1–9 questions moves it so far
          that the held-out prediction no longer resembles what live paraphrases of that
          question get (the demo's 4 scholarship rows all went to "fees" held out, while 11 %
          of its live traffic is rightly "scholarships").
        * Otherwise (an unsupervised model, or a row without a label — the model was not
          fitted on it, so this is live traffic's assignment): the nearest centroid of this
          model (for the unsupervised fit, the training assignment).
        * The rows are read in :func:`canonical_order` (by text, then label), so each row's
          topic (its cross-validation fold) does not depend on the rows' order.
        * A row is :data:`NOVEL` when its leave-one-out novelty similarity (against the other
          gold rows) is below :attr:`threshold` — the calibration that gives live traffic of
          the gold set's own topics about ``novelty_percentile`` % novel questions — only
          with ``novelty`` (False: the novelty verdict labels nothing, as live traffic is
          labelled while the detector is uncalibrated, :class:`~service.topics.stage.TopicStage`;
          every row is its topic).

        Returns each row's topic name or ``"novel"`` (``len(texts)`` of them), in order.
        """
        texts = list(texts)
        if not texts:
            return []
        if labels is not None and len(labels) != len(texts):
            labels = None  # (as before: rows without a label of theirs get the nearest topic)
        # computed in canonical order (folds, products), returned in the caller's order
        order = canonical_order(texts, labels)
        sorted_labels = None if labels is None else [labels[i] for i in order]
        found = self._gold_assignments([texts[i] for i in order], sorted_labels, novelty)
        out = [""] * len(texts)
        for position, topic in zip(order, found, strict=True):
            out[position] = topic
        return out

    def _gold_assignments(self, texts: list[str], labels: Sequence[str | None] | None,
                          novelty: bool) -> list[str]:  # fmt: skip
        """:meth:`gold_assignments` of rows already in :func:`canonical_order`."""
        vectors = self._embedder.embed(embedding_texts(texts))  # (n, d)
        # one BLAS thread, as the fit: on a loaded machine the threaded small products of the
        # repeated cross-validation took 5.4 s wall for 1,000 rows against 0.09 s single-threaded
        with _blas().limit(limits=1):
            return self._assign_gold(texts, vectors, labels, novelty)

    def _assign_gold(self, texts: list[str], vectors: np.ndarray,
                     labels: Sequence[str | None] | None, novelty: bool) -> list[str]:  # fmt: skip
        """:meth:`_gold_assignments` after embedding: ``vectors`` (n, d), one per text."""
        index = {name: i for i, name in enumerate(self.names)}
        keys = None
        if self._language_centres is not None:
            keys = [language_key(g) for g in text_languages(texts)]
        predicted, _ = self._vectors_to_topics(self._topical(vectors, texts, keys))
        if self.supervised and labels is not None and len(labels) == len(texts):
            rows = np.array([label in index for label in labels], dtype=bool)
            if rows.any():
                known = np.array([index[label] for label in labels if label in index])
                held_out = _cross_validated(vectors[rows], known, len(index), self._folds,
                                            self._seed, None if keys is None else
                                            [g for g, r in zip(keys, rows, strict=True) if r]
                                            )  # fmt: skip
                small = np.bincount(known, minlength=len(index))[known] < self._min_class
                held_out[small] = predicted[rows][small]
                predicted[rows] = held_out
        names = self.names
        if not novelty:
            return [names[k] for k in predicted.tolist()]
        if self._centre is not None:
            vectors = _centred(vectors, self._centre)
        penalty = _hubness_penalty(vectors, self.novelty_hubness) if self.novelty_hubness else None
        loo = _leave_one_out_similarity(vectors, self.novelty_neighbours, penalty=penalty)
        return [
            NOVEL if s < self.threshold else names[k]
            for k, s in zip(predicted.tolist(), loo.tolist(), strict=True)
        ]

    def fitted_state(self) -> dict[str, Any]:
        """What the fit computed (centroids, reference sample, topics, threshold, quality):
        plain data that ``TopicModel(state, self.version, embedder)`` rebuilds this model
        from, as :meth:`save` and :meth:`load` do."""
        return dict(self._state)

    def save(self, path: Path | str) -> None:
        """Write the model as a versioned artefact (see module docstring)."""
        save_artefact(path, KIND, self.version, {**self._state, "format": 2})

    @classmethod
    def load(cls, path: Path | str, embedder: Embedder | None = None) -> TopicModel:
        """Read a model written by :meth:`save`, to apply with ``embedder`` (default
        :func:`~service.embeddings.model.default_embedder`).

        Raises:
            ArtefactError: not a topic-model artefact (including a TF-IDF/LSA one of before),
                incompatible scikit-learn version, or fitted with another embedder.
        """
        header, state = load_artefact(path, KIND)
        if not isinstance(state, dict) or state.get("format") != 2:
            raise ArtefactError(f"{path}: unknown topic-model payload; refit the model")
        return cls(state, str(header["version"]), embedder)


def embedding_texts(texts: Sequence[str]) -> list[str]:
    """The texts as the topic model embeds them: a Hinglish question
    (:func:`service.language.hinglish.is_hinglish`) loses its romanised Hindi function words (the
    lexicon's strong and weak words: ``hai kya ka ke kab mujhe`` ...), which WordLlama — an
    English-first model — maps to vectors that swamp the question's content words
    (``exam``, ``timetable``, ``fee`` are English in most Hinglish questions). Other texts, and
    a Hinglish text with nothing else left, are unchanged. Measured on the demo's query log:
    topic accuracy of in-scope hi-Latn questions 0.48 → 0.76 (English unchanged, 0.77).

    >>> embedding_texts(["SEE ka timetable kab aayega?", "When is the SEE timetable out?"])
    ['SEE timetable aayega?', 'When is the SEE timetable out?']
    """
    out = []
    for text in texts:
        if is_hinglish(text):
            kept = [word for word in text.split() if _ALNUM.sub("", word.lower()) not in _HINDI]
            text = " ".join(kept) or text
        out.append(text)
    return out


@functools.cache
def _blas() -> ThreadpoolController:
    return ThreadpoolController()


def _prior(previous: TopicModel | Mapping[str, Any] | None, embedder: Embedder
           ) -> dict[str, Any] | None:  # fmt: skip
    """The previous identity as ``{"ids", "centroids" (k, d), "next_id"}``, or ``None`` when
    there is none or its ids are content ids (``scheme`` ``"content"``: a fit derives them
    again). One made with another embedder keeps only ``next_id``."""
    if previous is None:
        return None
    identity = previous.identity() if isinstance(previous, TopicModel) else dict(previous)
    if identity is None or identity.get("scheme") == "content":
        return None  # content ids: derived from the rows again, no history needed
    try:
        ids = [int(i) for i in identity["ids"]]
        centroids = np.asarray(identity["centroids"], dtype=np.float32).reshape(len(ids), -1)
        next_id = int(identity["next_id"])
        same = identity["embedder"] == embedder.name and centroids.shape[1] == embedder.dim
    except (KeyError, TypeError, ValueError):
        return None  # an unreadable identity: start afresh
    if not same or not ids:
        return {"ids": [], "centroids": np.zeros((0, embedder.dim), np.float32),
                "next_id": next_id}  # fmt: skip
    return {"ids": ids, "centroids": _unit_rows(centroids), "next_id": max(next_id, max(ids) + 1)}


def _sample(vectors: np.ndarray, limit: int, seed: int) -> np.ndarray:
    if len(vectors) > limit:
        keep = np.random.default_rng(seed).choice(len(vectors), limit, replace=False)
        vectors = vectors[np.sort(keep)]
    return np.ascontiguousarray(vectors, dtype=np.float32)


def _unit_rows(matrix: np.ndarray) -> np.ndarray:
    matrix = np.asarray(matrix, dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix / np.where(norms == 0, 1.0, norms)


def _centred(vectors: np.ndarray, centre: np.ndarray) -> np.ndarray:
    """Rows of ``vectors`` (n, d) minus ``centre`` (d,), re-normalised to unit length (a row
    equal to the centre becomes zero), float32."""
    return _unit_rows(np.asarray(vectors, dtype=np.float32) - centre)


#: Gold questions a language needs for a centre of its own (``language_centring``); the
#: others are centred on the whole gold set's mean.
MIN_CENTRE_ROWS = 5


def _language_centres(vectors: np.ndarray, languages: Sequence[str]) -> dict[str, np.ndarray]:
    """The mean of ``vectors`` (n, d) per language with at least :data:`MIN_CENTRE_ROWS` rows
    (``und`` and ``other`` never), and under ``""`` the mean of all rows: ``{language: (d,)}``
    float32.

    >>> rows = np.array([[1.0, 0.0]] * 5 + [[0.0, 1.0]] * 3)
    >>> c = _language_centres(rows, ["en"] * 5 + ["es"] * 3)
    >>> sorted(c), c["en"].tolist(), c[""].tolist()
    (['', 'en'], [1.0, 0.0], [0.625, 0.375])
    """
    out = {"": vectors.mean(axis=0, dtype=np.float64).astype(np.float32)}
    keys = np.array(list(languages), dtype=object)
    for g, count in Counter(languages).items():
        if count >= MIN_CENTRE_ROWS and g not in ("und", "other"):
            out[g] = vectors[keys == g].mean(axis=0, dtype=np.float64).astype(np.float32)
    return out


def _written_centres(vectors: np.ndarray, languages: Sequence[str],
                     accepted: np.ndarray) -> dict[str, np.ndarray]:  # fmt: skip
    """:func:`_language_centres` of the rows of ``vectors`` (n, d) not flagged in ``accepted``
    (n,) (the rows the user wrote); of every row when fewer than 3 were written (as
    :func:`_cluster` then fits on every row).

    >>> rows = np.array([[1.0, 0.0]] * 5 + [[0.0, 1.0]] * 3)
    >>> c = _written_centres(rows, ["en"] * 8, np.array([False] * 5 + [True] * 3))
    >>> c["en"].tolist(), c[""].tolist()
    ([1.0, 0.0], [1.0, 0.0])
    """
    written = np.flatnonzero(~np.asarray(accepted, dtype=bool))
    if len(written) < 3:
        return _language_centres(vectors, languages)
    return _language_centres(vectors[written], [languages[i] for i in written.tolist()])


def _centred_by_language(vectors: np.ndarray, languages: Sequence[str],
                         centres: Mapping[str, np.ndarray]) -> np.ndarray:  # fmt: skip
    """Each row of ``vectors`` (n, d) minus its language's centre (``centres[""]`` for a
    language without one), re-normalised to unit length, float32."""
    shift = np.stack([centres.get(g, centres[""]) for g in languages]) if len(languages) else 0.0
    return _unit_rows(np.asarray(vectors, dtype=np.float32) - shift)


def _mean_top_k(sims: np.ndarray, k: int) -> np.ndarray:
    """Mean of the ``k`` largest finite entries of each row of ``sims`` (n, m), ``(n,)``;
    fewer than ``k`` finite entries: their mean; none: ``-inf``."""
    k = min(k, sims.shape[1])
    if k == 0:
        return np.full(len(sims), -np.inf, dtype=np.float32)
    top = -np.partition(-sims, k - 1, axis=1)[:, :k]  # the k largest, any order
    finite = np.isfinite(top)
    count = finite.sum(axis=1)
    total = np.where(finite, top, 0.0).sum(axis=1)
    out = np.full(len(sims), -np.inf, dtype=np.float32)
    np.divide(total, count, out=out, where=count > 0, casting="unsafe")
    return out


def _top_k_similarity(vectors: np.ndarray, reference: np.ndarray, k: int, chunk: int = 4096,
                      penalty: np.ndarray | None = None) -> np.ndarray:  # fmt: skip
    """Mean cosine similarity of each row of ``vectors`` (n, d) to its ``k`` most similar rows
    of ``reference`` (m, d) (all m when m < k), ``(n,)``; k = 1 is the nearest neighbour.
    ``penalty`` (m,): subtracted from each reference row's similarity first (the hubness
    correction, :func:`_hubness_penalty`)."""

    def block(start: int) -> np.ndarray:
        sims: np.ndarray = vectors @ reference[start : start + chunk].T
        return sims if penalty is None else sims - penalty[start : start + chunk]

    if k == 1:  # the default: a running maximum, no partition (as fast as before k existed)
        out = np.full(len(vectors), -np.inf, dtype=np.float32)
        for start in range(0, len(reference), chunk):
            np.maximum(out, block(start).max(axis=1), out=out)
        return out
    best = np.full((len(vectors), 0), -np.inf, dtype=np.float32)
    for start in range(0, len(reference), chunk):
        sims = np.concatenate([best, block(start)], axis=1)
        keep = min(k, sims.shape[1])
        best = -np.partition(-sims, keep - 1, axis=1)[:, :keep]
    return _mean_top_k(best, k)


def _leave_one_out_similarity(vectors: np.ndarray, k: int = 1, chunk: int = 2048,
                              penalty: np.ndarray | None = None) -> np.ndarray:  # fmt: skip
    """Each row's mean cosine similarity to its ``k`` most similar *other* rows, ``(n,)``
    (``-inf`` if n = 1); ``penalty`` (n,): subtracted from each row's similarity as a
    neighbour (its own ``penalty`` is computed with the held-out row among its neighbours)."""
    best = np.empty(len(vectors), dtype=np.float32)
    for start in range(0, len(vectors), chunk):
        sims = vectors[start : start + chunk] @ vectors.T  # (chunk, n)
        if penalty is not None:
            sims -= penalty
        rows = np.arange(len(sims))
        sims[rows, rows + start] = -np.inf  # leave the text itself out
        best[start : start + chunk] = _mean_top_k(sims, k)
    return best


def _hubness_penalty(reference: np.ndarray, h: int) -> np.ndarray:
    """Half of each row's mean cosine similarity to its ``h`` most similar other rows of
    ``reference`` (m, d), r_h(g)/2, ``(m,)`` float32 — the gold-side term of CSLS (Conneau et
    al. 2018, eq. 6: CSLS(q, g) = 2 cos(q, g) − r(q) − r(g); halved, and without r(q), which
    is the same for every g and would reward questions in dense regions). Zeros with fewer
    than 2 rows (no neighbour to measure); all other rows when m − 1 < h.

    >>> _hubness_penalty(np.array([[1.0, 0.0], [0.6, 0.8], [0.0, 1.0]]), 1).tolist()
    [0.30000001192092896, 0.4000000059604645, 0.4000000059604645]
    """
    if len(reference) < 2:
        return np.zeros(len(reference), dtype=np.float32)
    return (0.5 * _leave_one_out_similarity(reference, h)).astype(np.float32)


def _novelty_threshold(reference: np.ndarray, percentile: float, k: int = 1,
                       penalty: np.ndarray | None = None) -> float:  # fmt: skip
    """Percentile of the leave-one-out novelty similarities (``k`` neighbours, each lowered
    by its ``penalty`` (m,) when given) of ``reference``."""
    if percentile <= 0:
        return -math.inf
    loo = _leave_one_out_similarity(reference, k, penalty=penalty)
    return float(np.percentile(loo, percentile))


def _novelty_quality(vectors: np.ndarray, assigned: np.ndarray, seed: int, k: int = 1,
                     centring: bool = False, limit: int = 3000, hubness: int = 0,
                     threshold: float | None = None) -> DetectorQuality | None:  # fmt: skip
    """Leave-one-topic-out ROC AUC of the novelty score (1 − novelty similarity, ``k``
    neighbours), ``vectors`` (n, d) the gold vectors as embedded (unit rows).

    Positives: each question scored against the gold questions of the *other* topics (its
    topic held out: what a question of an unseen topic looks like). Negatives: the same
    questions scored leave-one-out against all others (an unseen question of a known topic).
    With ``centring``, negatives are centred on the whole gold set's mean and the positives
    of topic t on the mean of the gold set *without* t (as a gold set lacking the topic would
    centre them; centred on the whole set, the held-out topic pulls the centre its way and the
    estimate came out ~0.06 more optimistic on CLINC150). At most ``limit`` questions (a
    seeded sample; centres are over all n). With ``hubness`` (h > 0) each neighbour's
    similarity is lowered by its :func:`_hubness_penalty`, measured among the questions it is
    scored against (for positives: the sample without the held-out topic). ``None`` with fewer
    than 2 topics. With ``threshold`` (the model's, set on every row), the operating point:
    the shares of positives and negatives below it, none when the questions were sampled.
    """
    if len(np.unique(assigned)) < 2:
        return None
    keep = np.arange(len(vectors))
    if len(keep) > limit:
        keep = np.sort(np.random.default_rng(seed).choice(len(keep), limit, replace=False))
    total = vectors.sum(axis=0, dtype=np.float64)
    x, topic = vectors[keep], assigned[keep]
    scored = _centred(x, (total / len(vectors)).astype(np.float32)) if centring else x
    sims = scored @ scored.T
    np.fill_diagonal(sims, -np.inf)
    penalty = 0.5 * _mean_top_k(sims, hubness) if hubness else 0.0  # per neighbour (column)
    negative = _mean_top_k(sims - penalty, k)
    if hubness and not centring:
        positive = np.empty(len(x), dtype=np.float32)
        # r_h of each row among the questions outside topic t: the first h of its neighbours
        # (sorted once, enough of them that h outside any one topic remain) not in t
        deep = min(len(x) - 1, hubness + int(np.bincount(topic).max()))
        nearest = np.argpartition(-sims, deep - 1, axis=1)[:, :deep]  # (n, deep), any order
        values = np.take_along_axis(sims, nearest, axis=1)
        order = np.argsort(-values, axis=1)
        values = np.take_along_axis(values, order, axis=1)
        their = topic[np.take_along_axis(nearest, order, axis=1)]  # (n, deep) their topics
        for t in np.unique(topic):
            held, rest = topic == t, topic != t
            outside = their != t
            first = outside & (np.cumsum(outside, axis=1) <= hubness)
            count = np.maximum(first.sum(axis=1), 1)
            penalty_t = (0.5 * (np.where(first, values, 0).sum(axis=1) / count)).astype(np.float32)
            positive[held] = _mean_top_k(sims[held][:, rest] - penalty_t[rest], k)
    elif hubness:  # centred on each reduced gold set: its similarities change with t
        positive = np.empty(len(x), dtype=np.float32)
        for t in np.unique(topic):
            held, rest = topic == t, topic != t
            inside = assigned == t
            centre = total - vectors[inside].sum(axis=0, dtype=np.float64)
            centre /= len(vectors) - inside.sum()
            y = _centred(x, centre.astype(np.float32))
            among = y[rest] @ y[rest].T
            np.fill_diagonal(among, -np.inf)
            positive[held] = _mean_top_k(y[held] @ y[rest].T - 0.5 * _mean_top_k(among, hubness),
                                         k)  # fmt: skip
    elif not centring:  # one product for both sides: the same entries, summed in the same order
        sims[topic[:, None] == topic[None, :]] = -np.inf
        positive = _mean_top_k(sims, k)
    else:
        positive = np.empty(len(x), dtype=np.float32)
        for t in np.unique(topic):
            held = topic == t
            inside = assigned == t
            rest = total - vectors[inside].sum(axis=0, dtype=np.float64)
            rest /= len(vectors) - inside.sum()
            y = _centred(x, rest.astype(np.float32))
            positive[held] = _mean_top_k(y[held] @ y[~held].T, k)
    quality = measure_auc(
        1.0 - positive, 1.0 - negative, n_boot=200, seed=seed,
        method=f"leave-one-topic-out on {len(x)} gold questions, "
               f"{len(np.unique(topic))} topics",
    )  # fmt: skip
    quality = dataclasses.replace(quality, n_groups=len(np.unique(topic)))
    if threshold is None or not math.isfinite(threshold) or len(x) < len(vectors):
        # a sample's neighbours are fewer and farther than the reference's the threshold was
        # set on: its rates would not be the threshold's (6,000 rows, 3,000 sampled: FPR
        # 0.185 read for the 0.050 of every row)
        return quality
    # the operating point: novel is a novelty similarity below the threshold
    return quality.at_threshold(threshold, float(np.mean(positive < threshold)),
                                float(np.mean(negative < threshold)))  # fmt: skip


def _check_labels(texts: Sequence[str], labels: Sequence[str]) -> None:
    if len(labels) != len(texts):
        raise TopicFitError(f"{len(labels)} labels for {len(texts)} texts")
    if len(set(labels)) < 2:
        raise TopicFitError("supervised topics need at least 2 distinct labels")
    if NOVEL in labels:
        raise TopicFitError(f"{NOVEL!r} is reserved for questions far from every topic")


def _spherical_lloyd(vectors: np.ndarray, centroids: np.ndarray, max_iter: int = 100
                     ) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    """Spherical k-means (Dhillon & Modha 2001): assign by cosine, centroid = unit mean, until
    no assignment changes. Returns ``(labels (n,), centroids (k, d))``; a centroid that
    loses all its points stays where it was."""
    labels = np.full(len(vectors), -1)
    for _ in range(max_iter):
        new = (vectors @ centroids.T).argmax(axis=1)
        if np.array_equal(new, labels):
            break
        labels = new
        sums = _class_sums(vectors, labels, len(centroids))
        norms = np.linalg.norm(sums, axis=1, keepdims=True)
        centroids = np.where(norms > 0, sums / np.where(norms > 0, norms, 1), centroids)
        centroids = centroids.astype(np.float32)
    return labels, centroids


#: Content ids are in [0, CONTENT_IDS): ``topic-<id>`` stays short (4 digits at most).
CONTENT_IDS = 10_000


def canonical_text(text: str) -> str:
    """A gold question as topic identities read it: case-folded, whitespace collapsed
    (the fit's row order and the content ids depend on this text only).

    >>> canonical_text("  How do I  Pay the FEE? ")
    'how do i pay the fee?'
    """
    return " ".join(text.casefold().split())


def canonical_order(
    texts: Sequence[str],
    labels: Sequence[str | None] | None = None,
    accepted: Sequence[bool] | None = None,
) -> list[int]:
    """The positions of ``texts`` in canonical order: by text, then label (``None`` as
    ``""``), then accepted flag, ties (equal rows: same vector, label and flag) by position.
    The gold set's canonical order (:func:`~service.refusals.scope.gold_order_key`: question
    text first) restricted to what the topic model reads of a row, so rows the analytics
    pass in that order keep it (but for rows of equal text), and any other order of the same
    rows gives the same sequence of rows.

    >>> canonical_order(["b", "a", "a"], ["x", "y", None])
    [2, 1, 0]
    """
    n = len(texts)
    tags = [""] * n if labels is None else [label or "" for label in labels]
    flags = [False] * n if accepted is None else list(accepted)
    return sorted(range(n), key=lambda i: (texts[i], tags[i], flags[i], i))


def _text_hash(text: str) -> int:
    """64-bit hash of :func:`canonical_text` (sha256, the same in every process)."""
    return int.from_bytes(hashlib.sha256(canonical_text(text).encode("utf-8")).digest()[:8], "big")


def content_ids(groups: Sequence[Sequence[str]], taken: Sequence[int] = ()) -> list[int]:
    """The content id of each group of texts (a topic's members): the smallest
    :func:`_text_hash` of its members (a min-hash: two groups get the same one with
    probability their Jaccard similarity; a group that gains or loses a member keeps it
    unless that member holds its minimum) modulo :data:`CONTENT_IDS`. Groups are numbered in
    the order of their min-hashes; an id already given (or in ``taken``) moves to the next
    free one, so the ids depend on the groups' texts only, not on their order or any history.

    >>> a = content_ids([["b", "a"], ["c"]])
    >>> a == content_ids([["c"], ["a", "b"]])[::-1], len(set(a))
    (True, 2)
    """
    keys = [min((_text_hash(t) for t in g), default=0) for g in groups]
    used = set(taken)
    out = [0] * len(groups)
    for i in sorted(range(len(groups)), key=lambda j: (keys[j], j)):
        found = keys[i] % CONTENT_IDS
        while found in used:
            found = (found + 1) % CONTENT_IDS
        used.add(found)
        out[i] = found
    return out


#: Most written rows clustered by Ward's method first (its memory grows with n²: 3,000 rows
#: ~36 MB of distances); above it, the best of 10 seeded k-means++ starts.
WARD_MAX_ROWS = 3000


def _kmeans(vectors: np.ndarray, k: int, seed: int) -> np.ndarray:
    """Spherical k-means of ``vectors`` (n, d), given in a canonical order, into ``k``
    clusters, ``(n,)`` labels. Started from Ward's agglomerative clustering (deterministic,
    no seed: a function of the set of rows, and one row more or less changes the merges near
    it only) for up to :data:`WARD_MAX_ROWS` rows, else from the best of 10 seeded k-means++
    starts (scikit-learn ``KMeans``), then Lloyd steps in cosine space
    (:func:`_spherical_lloyd`). Measured on CLINC150 gold sets of 32 written rows
    (``benchmarks.topic_ids``, 6 seeds): removing one row kept 85–100 % of traffic's topics
    with Ward's start, 54–88 % with k-means++'s (docs/topics.md, "Topic ids")."""
    x = vectors.astype(np.float64)  # float64: scikit-learn's float32 paths upcast slowly
    if len(vectors) <= WARD_MAX_ROWS:
        from sklearn.cluster import AgglomerativeClustering  # here: start-up time

        labels = AgglomerativeClustering(k, linkage="ward").fit_predict(x)
        start = _centroids_of(vectors, labels, k)
    else:
        from sklearn.cluster import KMeans

        start = _unit_rows(KMeans(k, n_init=10, random_state=seed).fit(x).cluster_centers_)
    assigned, _ = _spherical_lloyd(vectors, start)
    return np.asarray(assigned, dtype=np.int64)


def _accepted_groups(vectors: np.ndarray, centroids: np.ndarray, written: np.ndarray,
                     assigned: np.ndarray) -> list[np.ndarray]:  # fmt: skip
    """Groups of accepted rows (``vectors`` (m, d), canonical order) distinct enough from the
    written topics (``centroids`` (k, d), fitted on ``written`` (n_w, d) with ``assigned``
    (n_w,)) to be topics of their own, each an index array into ``vectors``.

    The bar is the written fit's own: the *radius* r is the 10th percentile of the written
    rows' cosine similarity to their centroid (90 % of written rows lie within it), the
    *cohesion* c the mean cosine similarity of two written rows of one topic, the *size* s
    ``max(3, ceil(median written topic size / 2))``. Accepted rows outside every radius are
    grouped (average linkage, cut where rows are on average less similar than c); a group of
    at least s rows whose unit mean is outside every radius too is a topic (its centroid that
    mean). Rows of a subject inside a radius are not needed for it (review s47-f2: 2 of a new
    subject's 6 questions fell within a written topic's radius); they join their nearest
    topic, which may be the new one."""
    if len(vectors) < 3 or len(centroids) < 2:
        return []
    own = np.einsum("ij,ij->i", written, centroids[assigned])
    radius = float(np.percentile(own, 10))
    pairs: list[float] = []
    for t in range(len(centroids)):
        rows = written[assigned == t]
        if len(rows) > 1:
            sims = rows @ rows.T
            pairs += sims[np.triu_indices(len(rows), 1)].tolist()
    cohesion = float(np.mean(pairs)) if pairs else radius
    size = max(3, math.ceil(float(np.median(np.bincount(assigned))) / 2))
    outside = np.flatnonzero((vectors @ centroids.T).max(axis=1) < radius)
    if len(outside) < size:
        return []
    from scipy.cluster.hierarchy import fcluster, linkage

    rows = vectors[outside].astype(np.float64)
    tree = linkage(rows, method="average", metric="cosine")
    cut = fcluster(tree, t=1.0 - cohesion, criterion="distance")
    groups = []
    for label in sorted(set(cut.tolist()), key=lambda g: int(np.flatnonzero(cut == g)[0])):
        members = outside[cut == label]
        if len(members) < size:
            continue
        centre = _unit_rows(vectors[members].sum(axis=0, keepdims=True))[0]
        if float((centroids @ centre).max()) < radius:
            groups.append(members)
    return groups


def _cluster(vectors: np.ndarray, config: TopicConfig, prior: dict[str, Any] | None,
             texts: Sequence[str] | None = None, accepted: np.ndarray | None = None
             ) -> tuple[list[int], np.ndarray, np.ndarray, int, bool]:  # fmt: skip
    """Spherical k-means with content ids: ``(ids, assigned (n,), centroids (k, d), next_id,
    legacy)``, ``legacy`` True when an id of ``prior`` was kept.

    The topics and their number are fitted on the *written* rows (``accepted`` False) in the
    order of their :func:`canonical_text`, ties by the exact text (so the fit is a function of
    the set of written rows: sorting, reversing or moving rows changes nothing), seeded; the
    accepted rows join
    their nearest topic, or make their own (:func:`_accepted_groups`); centroids are of the
    written rows (a new topic's: of its group), so an accept moves no written topic. Ids are
    :func:`content_ids` of each topic's rows (written rows; a new topic's group), the same in
    a fresh process; an identity of before content ids (``prior``) keeps its ids where a
    centroid matches an old one (Hungarian assignment, cosine ≥ ``id_min_similarity``)."""
    n = len(vectors)
    texts = list(texts) if texts is not None else [str(i) for i in range(n)]
    flags = np.zeros(n, dtype=bool) if accepted is None else np.asarray(accepted, dtype=bool)
    if (~flags).sum() < max(N_TOPICS_MIN, 3):  # too few written rows: every row is written
        flags = np.zeros(n, dtype=bool)
    keys = [canonical_text(t) for t in texts]
    # (ties: texts differing in case or spacing only, in the order of their exact text; an
    # exact duplicate's place changes nothing, its vector is the same)
    written = sorted(np.flatnonzero(~flags).tolist(), key=lambda i: (keys[i], texts[i], i))
    others = sorted(np.flatnonzero(flags).tolist(), key=lambda i: (keys[i], texts[i], i))
    n_w = len(written)
    if config.n_topics is None:
        k = max(N_TOPICS_MIN, min(config.max_topics, round(math.sqrt(n_w))))
    else:  # a config built with model_copy(update=...) skipped validation: check again
        k = config.n_topics
        if not N_TOPICS_MIN <= k <= N_TOPICS_MAX:
            raise TopicFitError(f"n_topics must be in [{N_TOPICS_MIN}, {N_TOPICS_MAX}], got {k}")
    if k > n_w:
        if config.n_topics is not None:
            raise TopicFitError(f"n_topics={k} is more than the {n} training texts")
        k = n_w
    w = vectors[written]
    labels = _kmeans(w, k, config.seed)
    used = np.flatnonzero(np.bincount(labels, minlength=k))  # drop emptied clusters
    remap = np.full(k, -1)
    remap[used] = np.arange(len(used))
    labels = remap[labels]
    centroids = _centroids_of(w, labels, len(used))
    groups_of = [[texts[written[i]] for i in np.flatnonzero(labels == t).tolist()]
                 for t in range(len(used))]  # fmt: skip
    assigned = np.empty(n, dtype=np.int64)
    assigned[written] = labels
    if others:
        a = vectors[others]
        groups = _accepted_groups(a, centroids, w, labels)
        if groups:
            centroids = np.vstack([centroids] + [_unit_rows(a[g].sum(axis=0, keepdims=True))
                                                 for g in groups])  # fmt: skip
            groups_of += [[texts[others[i]] for i in g.tolist()] for g in groups]
        assigned[others] = (a @ centroids.T).argmax(axis=1)
    centroids = centroids.astype(np.float32)
    kept: list[int | None] = [None] * len(centroids)
    if prior is not None and len(prior["centroids"]):
        from scipy.optimize import linear_sum_assignment

        sims = centroids @ prior["centroids"].T  # (new, old)
        rows, cols = linear_sum_assignment(-sims)
        for r, c in zip(rows.tolist(), cols.tolist(), strict=True):
            if sims[r, c] >= config.id_min_similarity:
                kept[r] = prior["ids"][c]
    taken = [i for i in kept if i is not None]
    fresh = content_ids([g for g, i in zip(groups_of, kept, strict=True) if i is None], taken)
    it = iter(fresh)
    ids = [i if i is not None else next(it) for i in kept]
    next_id = max([*(i + 1 for i in ids), prior["next_id"] if prior else 0])
    return ids, assigned, centroids, next_id, bool(taken)


def _by_label(vectors: np.ndarray, labels: Sequence[str]
              ) -> tuple[list[str], np.ndarray, np.ndarray]:  # fmt: skip
    names = sorted(set(labels), key=topic_sort_key)
    index = {name: i for i, name in enumerate(names)}
    assigned = np.array([index[label] for label in labels])
    return names, assigned, _centroids_of(vectors, assigned, len(names))


def _centroids_of(vectors: np.ndarray, assigned: np.ndarray, k: int) -> np.ndarray:
    """Unit mean vector of each of ``k`` classes, ``(k, d)`` (a class without rows: zeros)."""
    return _unit_rows(_class_sums(vectors, assigned, k))


def _class_sums(vectors: np.ndarray, assigned: np.ndarray, k: int) -> np.ndarray:
    """Sum of the rows of each class, ``(k, d)`` float64 (a sparse one-hot product)."""
    onehot = sp.csr_matrix((np.ones(len(assigned)), (assigned, np.arange(len(assigned)))),
                           shape=(k, len(assigned)))  # fmt: skip
    return np.asarray(onehot @ vectors.astype(np.float64))


#: Fold draws over which the topic model's held-out class scores are averaged
#: (:func:`_cross_validated`): one draw of 5 folds moved the demo's held-out hi-Latn agreement
#: between 3 and 6 of 8 rows with the seed (CHANGELOG, fifty-first session). The out-of-scope
#: detector repeats its cross-validation the same way over 10 draws
#: (``service.refusals.scope.CV_REPEATS``); here 20, for the demo's 8-10 Hinglish rows.
CV_REPEATS = 20


def _fold_seeds(seed: int, repeats: int) -> list[int]:
    """The seeds of the ``repeats`` fold draws of base seed ``seed`` (``seed`` ≥ 0): the first
    ``repeats`` 32-bit words of ``numpy.random.SeedSequence(seed)`` (NEP 19: fixed across numpy
    versions), as the out-of-scope detector's ``service.refusals.scope.fold_seeds`` (a pure
    core this module may not import).

    >>> _fold_seeds(0, 2) == _fold_seeds(0, 3)[:2], len(set(_fold_seeds(0, 5) + _fold_seeds(1, 5)))
    (True, 10)
    """
    return [int(w) for w in np.random.SeedSequence(seed).generate_state(repeats, np.uint32)]


def _cross_validated(vectors: np.ndarray, known: np.ndarray, k: int, folds: int, seed: int,
                     languages: Sequence[str] | None = None,
                     repeats: int = CV_REPEATS) -> np.ndarray:  # fmt: skip
    """Nearest-centroid predictions of each row by models fitted without it, ``(n,)``: the
    argmax of its held-out class scores averaged over ``repeats`` fold draws.

    In each draw (seeds :func:`_fold_seeds` of ``seed``) the rows are shuffled and cut into
    ``min(folds, n)`` folds (by position: the callers pass the rows in
    :func:`canonical_order`); each held-out row's score of a class is its cosine similarity to
    the class centroid of the other folds' rows. A row's score of a class is the mean over the
    draws whose training rows hold that class (a class absent from every draw's training rows
    cannot be predicted); ties go to the first class. Repeated k-fold cross-validation (Kuhn &
    Johnson 2013, *Applied Predictive Modeling* §4.4; Kim 2009, Comput. Stat. Data Anal. 53):
    one draw's prediction of a row near two centroids is a coin of its fold. ``languages``
    (one per row): the rows are centred per language (:func:`_language_centres`) on each
    fold's training rows, as the fit would centre them. With ``folds`` ≥ n (leave-one-out)
    every draw is the same partition: one is drawn.

    Raises:
        ValueError: ``repeats`` below 1 or ``seed`` negative (from ``SeedSequence``).
    """
    if repeats < 1:
        raise ValueError(f"repeats must be >= 1, got {repeats}")
    n = len(vectors)
    if folds >= n:  # leave-one-out: every draw is the same partition
        repeats = 1
    total = np.zeros((n, k), dtype=np.float64)  # summed scores of the draws with the class
    draws = np.zeros((n, k), dtype=np.int64)  # how many draws scored the class
    for draw in _fold_seeds(seed, repeats):
        order = np.random.default_rng(draw).permutation(n)
        for held in np.array_split(order, min(folds, n)):
            train = np.ones(n, dtype=bool)
            train[held] = False
            rows = vectors
            if languages is not None:
                kept = [g for g, t in zip(languages, train.tolist(), strict=True) if t]
                rows = _centred_by_language(vectors, languages,
                                            _language_centres(vectors[train], kept))  # fmt: skip
            centroids = _centroids_of(rows[train], known[train], k)
            present = np.bincount(known[train], minlength=k) > 0
            sims = np.asarray(rows[held] @ centroids.T, dtype=np.float64)
            sims[:, ~present] = 0.0
            total[held] += sims
            draws[held] += present
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(draws > 0, total / np.maximum(draws, 1), -np.inf)
    return np.asarray(mean.argmax(axis=1), dtype=np.int64)


def _language_topics(languages: Sequence[str], topics: Sequence[str]
                     ) -> dict[str, dict[str, int]]:  # fmt: skip
    """``{language: {topic: texts}}`` of the fitted texts (one language and topic per text).

    >>> _language_topics(["en", "de", "en"], ["a", "b", "a"])
    {'de': {'b': 1}, 'en': {'a': 2}}
    """
    out: dict[str, Counter[str]] = {}
    for g, t in zip(languages, topics, strict=True):
        out.setdefault(g, Counter())[t] += 1
    return {g: dict(sorted(out[g].items())) for g in sorted(out)}


#: A run of Han characters (CJK Unified Ideographs, Extension A, Compatibility, with the
#: iteration mark 々 and the ideographic zero 〇, never terms alone), of katakana, or of
#: hiragana, inside a label token (:func:`_cjk_terms`).
_CJK_RUN = re.compile(
    r"([\u3005\u3007\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+)|([\u30a0-\u30ff]+)"
    r"|([\u3040-\u309f]+)"
)


def _cjk_terms(token: str) -> list[str]:
    """The label terms of a token holding Han or kana (Chinese and Japanese have no spaces:
    the token is a whole clause): each Han run's overlapping character bigrams, as CJK search
    engines index such text (Lucene's ``CJKBigramFilter``, used by Elasticsearch's ``cjk``
    analyzer), without the Chinese function bigrams (:func:`han_stop_bigrams`) and the
    bigrams holding a function character (:func:`han_function_bigram`: 的, 了, 是, 吗, 呢);
    a lone Han character is no term (一 character is most often a function one: 于, 中, 的);
    a katakana run of two or more is one term (loanwords and names); hiragana is left out
    (particles and inflections). The rest of the token (a Latin word or number glued to the
    Han text: "abc圆圈", "iPhone15的价格") is no term: before the bigrams the whole token was
    one term, so counting "abc" now would move the weights, hence the labels, of the other
    languages' topics holding "abc" (a Latin word spaced off the Han text is a token of its
    own, counted as ever).

    >>> _cjk_terms("欧洲议会的权力")
    ['欧洲', '洲议', '议会', '权力']
    >>> _cjk_terms("因此根据")  # each bigram a function word or across two
    ['此根']
    >>> _cjk_terms("1981年"), _cjk_terms("コンピュータの歴史"), _cjk_terms("abc圆圈")
    ([], ['コンピュータ', '歴史'], ['圆圈'])
    >>> _cjk_terms("的价格是多少"), _cjk_terms("人々"), _cjk_terms("々")  # 多少: stopwords-iso
    (['价格'], ['人々'], [])
    """
    stop = han_stop_bigrams()
    out: list[str] = []
    for match in _CJK_RUN.finditer(token):
        han, katakana = match.group(1), match.group(2)
        if han:
            out += [b for b in (han[i : i + 2] for i in range(len(han) - 1))
                    if b not in stop and not han_function_bigram(b)]  # fmt: skip
        elif katakana and len(katakana) > 1:
            out.append(katakana)
    return out


def _plain_count(text: str) -> int:
    """How many label words :func:`_words` gave ``text`` before Han/kana tokens were split
    into bigrams (each such token one word)."""
    return len([w for w in _LABEL_WORD.findall(_PLACEHOLDER.sub(" ", text).lower())
                if w not in ENGLISH_STOP_WORDS and w not in QUESTION_WORDS and not w.isdigit()
                and (len(w) > 1 or not w.isascii())])  # fmt: skip


def _words(text: str) -> list[str]:
    """Clean label words of a text: lower-cased whole word tokens (:data:`TOKEN_PATTERN`),
    without scikit-learn's English stop words, :data:`QUESTION_WORDS`, numbers, one-letter
    Latin tokens and the personal-data placeholders a scrubbed text holds (``<EMAIL>``,
    ``<PHONE>``, ``<NAME>``…: :data:`service.records.PLACEHOLDERS`; a topic was labelled
    "asked, city, email" after a gold question "(asked by <EMAIL>)" was accepted). The plain
    word ("change my email") stays a word. A token holding Han or kana gives its
    :func:`_cjk_terms` (character bigrams: trial 43's Chinese labels were "因此, 根据, 中").

    >>> _words("Which city? (asked by <EMAIL>, <PHONE>) My email changed")
    ['city', 'asked', 'email', 'changed']
    """
    words = _LABEL_WORD.findall(_PLACEHOLDER.sub(" ", text).lower())
    if _CJK_RUN.search(text):  # Chinese, Japanese: bigrams (other texts: exactly as before)
        words = [t for w in words for t in (_cjk_terms(w) if _CJK_RUN.search(w) else [w])]
    return [w for w in words
            if w not in ENGLISH_STOP_WORDS and w not in QUESTION_WORDS and not w.isdigit()
            and (len(w) > 1 or not w.isascii())]  # fmt: skip


def text_languages(texts: Sequence[str]) -> list[str]:
    """The language of each text (:class:`~service.language.detector.LanguageDetector`, default
    configuration, no cache): a langdetect code, ``hi-Latn`` or ``und``; one per text."""
    from service.language.detector import LanguageConfig, LanguageDetector

    return LanguageDetector(LanguageConfig(cache_size=0)).detect_many(list(texts))


def data_stop_words(words: Sequence[set[str]], languages: Sequence[str], assigned: np.ndarray
                    ) -> dict[tuple[int, str], set[str]]:  # fmt: skip
    """The stop words of the data, per topic and language: for topic ``c`` and a language
    ``g`` with at least :data:`MIN_LANGUAGE_TEXTS` texts, the words ``t`` with ``df_g(t) >
    STOP_SHARE · n_g`` (in more than 5 % of the language's texts) that are not concentrated
    in ``c``: ``df_cg(t) / n_cg < CONCENTRATION · (df_g(t) - df_cg(t)) / (n_g - n_cg)`` (a
    language all in ``c`` has nothing to compare with: every frequent word is a stop word).
    ``n_g`` / ``n_cg`` count the texts of ``g`` (in ``c``), ``df`` the texts holding ``t``.

    Args:
        words: the set of label words of each text (:func:`_words`).
        languages: the language of each text (:func:`text_languages`), same length.
        assigned: the topic of each text, shape ``(n,)``.

    Returns:
        ``{(topic, language): words}``: words not to count as label terms in the topic's texts
        of that language (pairs without stop words are left out).

    >>> words = [{"die", "stadt"}] * 30 + [{"die", "fluss"}] * 30 + [{"die", "stadt"}] * 3
    >>> stop = data_stop_words(words, ["de"] * 63, np.array([0] * 30 + [1] * 33))
    >>> sorted(stop[0, "de"]), sorted(stop[1, "de"])
    (['die'], ['die', 'stadt'])
    """
    n_g: Counter[str] = Counter(languages)
    df_g: dict[str, Counter[str]] = {g: Counter() for g in n_g}
    n_cg: Counter[tuple[int, str]] = Counter()
    df_cg: dict[tuple[int, str], Counter[str]] = {}
    for text_words, g, c in zip(words, languages, assigned.tolist(), strict=True):
        df_g[g].update(text_words)
        n_cg[c, g] += 1
        df_cg.setdefault((c, g), Counter()).update(text_words)
    out: dict[tuple[int, str], set[str]] = {}
    for (c, g), counts in df_cg.items():
        if n_g[g] < MIN_LANGUAGE_TEXTS:
            continue
        n_rest = n_g[g] - n_cg[c, g]
        for word, df in counts.items():
            if df_g[g][word] <= STOP_SHARE * n_g[g]:
                continue
            rest = (df_g[g][word] - df) / n_rest if n_rest else math.inf
            if df / n_cg[c, g] < CONCENTRATION * rest:
                out.setdefault((c, g), set()).add(word)
    return out


def _top_terms(texts: Sequence[str], assigned: np.ndarray, k: int, n_terms: int,
               languages: Sequence[str] | None = None
               ) -> list[tuple[tuple[str, ...], str | None]]:  # fmt: skip
    """Class-based TF-IDF top terms per topic (BERTopic, Grootendorst 2022, eq. 1):
    ``w(t, c) = tf(t, c) / |c| · log(1 + A / f(t))``, ``A`` = mean words per topic, ``f(t)``
    = occurrences over all topics. A word in more than half of the topics (with ≥ 4 topics)
    is a stop word of this gold set, whatever its language; with ``languages`` (one per text)
    the stop words of the data (:func:`data_stop_words`) are not counted in the texts of
    their topic and language; in a topic of ≥ 4 questions a term must occur in at least 2 of
    them (no typos or one-off fragments), unless no word of the topic is (then its words of one
    question qualify, and the note says so). A word of a text is never a term when it is a stop
    word of the text's language (:func:`service.text.stop_words.stop_words`: Hindi "के, है,
    में" too, trial 41). Returns ``(terms, note)`` per topic: ``note`` says why the terms are of
    one question each, or why there are none (``None``: terms as the rules give them)."""
    text_words = [_words(text) for text in texts]
    per_topic: list[Counter[str]] = [Counter() for _ in range(k)]
    docs: list[Counter[str]] = [Counter() for _ in range(k)]
    for words, topic in zip(text_words, assigned.tolist(), strict=True):
        per_topic[topic].update(words)
        docs[topic].update(set(words))
    kept = per_topic  # occurrences that may make a label term (tf); the rest is as before
    if languages is not None:
        stop = data_stop_words([set(w) for w in text_words], languages, assigned)
        kept = [Counter() for _ in range(k)]
        for words, g, c in zip(text_words, languages, assigned.tolist(), strict=True):
            # a function word of the text's language ("für", "ein", "qué") is no label term,
            # however few texts of the language there are (English: the stop words above)
            listed = stop_words(g) if g != "en" else frozenset()
            kept[c].update(w for w in words
                           if w not in stop.get((c, g), ()) and w not in listed)  # fmt: skip
    total: Counter[str] = Counter()
    spread: Counter[str] = Counter()
    for counts in per_topic:
        total.update(counts)
        spread.update(counts.keys())
    # A counts a Han/kana token as one word, as before its bigrams (_cjk_terms): the weights,
    # hence the labels, of the other scripts' topics stay exactly as they were
    counted = sum(total.values()) - sum(
        len(w) - _plain_count(t)
        for t, w in zip(texts, text_words, strict=True)
        if _CJK_RUN.search(t)
    )
    mean_words = counted / max(k, 1)
    sizes = np.bincount(assigned, minlength=k)

    def best(topic: int, once: bool) -> tuple[str, ...]:
        """Topic ``topic``'s top terms; ``once``: a word of one question of a large topic
        qualifies too."""
        length = sum(per_topic[topic].values()) or 1
        scored = [
            (-(c / length) * math.log(1 + mean_words / total[w]), w)
            for w, c in kept[topic].items()
            if not (k >= 4 and spread[w] > k / 2)
            and (once or not (sizes[topic] >= 4 and docs[topic][w] < 2))
        ]
        return tuple(w for _, w in sorted(scored)[:n_terms])

    out: list[tuple[tuple[str, ...], str | None]] = []
    for topic in range(k):
        terms, note = best(topic, False), None
        if not terms and sizes[topic] >= 4:  # no word shared by 2 of its questions
            terms = best(topic, True)
            note = f"each term in one of its {sizes[topic]} questions"
        if not terms:
            plural = "s" if sizes[topic] != 1 else ""
            note = (f"no term qualifies: every word of its {sizes[topic]} question{plural} is "
                    "a stop word, a number or in more than half of the topics")  # fmt: skip
        out.append((terms, note))
    return out


def _examples(texts: Sequence[str], vectors: np.ndarray, assigned: np.ndarray,
              centroids: np.ndarray, n: int) -> list[tuple[str, ...]]:  # fmt: skip
    """The ``n`` distinct texts of each topic nearest its centroid (most similar first)."""
    sims = np.einsum("ij,ij->i", vectors, centroids[assigned])
    out: list[list[str]] = [[] for _ in range(len(centroids))]
    for i in np.argsort(-sims, kind="stable").tolist():
        chosen = out[assigned[i]]
        if len(chosen) < n and texts[i] not in chosen:
            chosen.append(texts[i])
    return [tuple(x) for x in out]
