"""The refusal phrase patterns (:mod:`service.refusals.detector`) on real replies and texts,
with and without the generation-failure pattern (:data:`~service.refusals.detector.
GENERATION_FAILURE`, the thirty-eighth session): what it adds and what it costs.

* **NoMIRACL** (``nomiracl-baselines``: 11 LLMs' replies to 1,000 English and 1,000 Hindi
  queries, 11,000 replies): precision and recall of the patterns against NoMIRACL's own
  reading of each reply (``benchmarks.drift_streams.nomiracl_label``, as
  ``tests/service/test_refusals.py`` labels them; invalid and empty replies left out), per
  question language; and every non-empty reply the failure pattern matches (gpt-*-azure's
  "Unable to generate response.", the one failure shape NoMIRACL holds).
* **Texts that are no failure message**: NQ-open's answers, SQuAD 2.0's (sample 500)
  answers and context sentences, MultiHop-RAG's (sample 500) answers and evidence facts,
  XQuAD's English context sentences and answers, BANKING77's and CLINC150's questions: the
  texts the failure pattern matches (each one a false positive) and those the whole pattern
  set flags with it and not without it.
* **Failure messages of serving stacks**: :data:`FAILURES`, the error texts such stacks
  answer with (Envoy, nginx, HTTP reason phrases, OpenAI's and Azure's API errors, axios,
  generic templates) as a RAG service would pass them on as its answer: how many the
  patterns count as refusals (no answer reached the asker) with and without it.

* **Per language** (trial 23: German refusals counted as answers while the reports quoted
  NoMIRACL's English figures): every XQuAD language's context sentences, questions and
  answers (real text that is no refusal; distinct per language) — how many the patterns flag,
  each one a false positive; and :data:`WRITTEN_REFUSALS`, German, Spanish and French
  refusals of the forms help-desk assistants use (the trial's templates first) — how many
  they count. Those are written examples, not measured replies: the shared data holds no
  real German, Spanish or French assistant replies (NoMIRACL's copy has en and hi only), so
  no recall on real replies is claimed for those languages.

* **Scope refusals** (trial 24: "Sorry, I can only answer questions about the news." and
  "That is not covered by the news articles I have." counted as answers):
  :data:`~service.refusals.detector.SCOPE_REFUSALS` on and off — NoMIRACL's precision and
  recall, every text above and NQ-open's and SQuAD 2.0's questions flagged (real text that
  is no refusal: each newly flagged one a false positive), and :data:`SCOPE_EXAMPLES`
  (the trial's two replies first, then written examples) counted.

Run: ``python -m benchmarks.bench_refusal_patterns`` (``GOLDWATCH_SHARED_DATA`` for the data;
a few seconds).
"""

from __future__ import annotations

import argparse
import csv
import json
import re
from collections.abc import Iterable, Sequence
from pathlib import Path

from benchmarks.datasets import SHARED_DATA
from benchmarks.drift_streams import nomiracl_label
from service.refusals.detector import (
    DEFAULT_PATTERNS,
    GENERATION_FAILURE,
    SCOPE_REFUSALS,
    RefusalDetector,
)

#: Failure texts of serving stacks, as a RAG service that passes a failed request's error
#: on as its answer shows them (the reviewers' three first).
FAILURES: tuple[str, ...] = (
    "Error: upstream timeout",
    "Internal server error",
    "Request failed",
    "Internal Server Error",
    "HTTP 500 Internal Server Error",
    "500 Internal Server Error",
    "502 Bad Gateway",
    "503 Service Unavailable",
    "Error 503: Service Unavailable",
    "504 Gateway Time-out",
    "Service Unavailable",
    "Bad Gateway",
    "upstream request timeout",
    "no healthy upstream",
    "upstream connect error or disconnect/reset before headers. reset reason: connection "
    "termination",
    "Request failed with status code 500",
    "Request failed with status code 502",
    "Network Error",
    "Request timed out.",
    "Connection error.",
    "timeout",
    "Error",
    "An error occurred. Please try again later.",
    "An unexpected error occurred.",
    "Something went wrong. Please try again.",
    "Something went wrong",
    "The server had an error while processing your request. Sorry about that!",
    "The server is overloaded or not ready yet.",
    "The model is currently overloaded. Please try again later.",
    "Rate limit reached for gpt-4 in organization org-abc123 on tokens per min. Limit: "
    "10000 / min.",
    "Rate limit exceeded",
    "429 Too Many Requests",
    "Too many requests",
    "Failed to generate response",
    "Unable to generate response.",
    "No response received",
    "Error: Request failed due to upstream timeout",
    "error: connection refused",
)


#: Refusals as help-desk assistants write them, per language (trial 23's templates first,
#: then its review's forms): written examples to check the patterns cover the phrasing, no
#: measured sample of replies.
WRITTEN_REFUSALS: dict[str, tuple[str, ...]] = {
    "de": (
        "Leider konnte ich dazu nichts in unserer Dokumentation finden.",
        "Ich konnte dazu nichts finden.",
        "Dazu habe ich leider nichts gefunden.",
        "Dazu liegen mir keine Informationen vor.",
        "Das steht nicht in unserer Dokumentation.",
        "Entschuldigung, darauf habe ich keine Antwort.",
        "Ich habe keine Informationen dazu gefunden.",
        "Leider kann ich diese Frage nicht beantworten.",
        "Diese Frage kann ich anhand der vorliegenden Dokumente nicht beantworten.",
        "In den bereitgestellten Dokumenten finde ich dazu keine Angaben.",
        "Ich habe dazu leider keine Antwort gefunden.",
        "Es tut mir leid, aber dazu habe ich keine Informationen.",
        "Das weiß ich leider nicht.",
        "Der Kontext enthält keine Informationen darüber.",
        "Ich kann Ihnen dabei leider nicht helfen.",
        "Diese Information ist in unserer Dokumentation nicht enthalten.",
        "Dazu gibt es in unserer Dokumentation keine Angaben.",
        "Dazu kann ich leider nichts sagen.",
        "Die Antwort ist in den Dokumenten nicht enthalten.",
        "Keine Antwort gefunden.",
        "Die Dokumente enthalten dazu keine Angaben.",
    ),
    "es": (
        "Lo siento, no encontré esa información en nuestra documentación.",
        "No tengo información sobre eso.",
        "Lamentablemente, no puedo responder a esa pregunta.",
        "No sé la respuesta.",
        "La documentación no menciona nada al respecto.",
        "Esa información no aparece en nuestra documentación.",
        "No dispongo de datos sobre eso.",
        "Disculpa, no pude encontrar nada sobre eso.",
        "No se encontró información al respecto.",
        "Desafortunadamente, no tengo la respuesta.",
        "Los documentos proporcionados no contienen esa información.",
        "No he podido encontrar una respuesta.",
    ),
    "fr": (
        "Je suis désolé, je n'ai pas trouvé cette information dans notre documentation.",
        "Je ne sais pas.",
        "Malheureusement, je ne trouve rien à ce sujet.",
        "Je n'ai aucune information à ce sujet.",
        "Cette information ne figure pas dans notre documentation.",
        "Je ne peux pas répondre à cette question.",
        "Les documents fournis ne mentionnent pas cela.",
        "Je n'ai rien trouvé à ce sujet.",
        "Aucune réponse trouvée.",
    ),
}


#: English scope refusals: trial 24's two off-topic replies (its ``rag_app.py``), then
#: written examples of the same forms (not measured replies).
SCOPE_EXAMPLES: tuple[str, ...] = (
    "Sorry, I can only answer questions about the news.",
    "That is not covered by the news articles I have.",
    "I can only help with questions about our products and services.",
    "I'm only able to answer questions related to the course catalogue.",
    "I can only answer HR-related questions.",
    "Sorry, I can only assist with queries about your account.",
    "That isn't covered in the documents I have access to.",
    "This topic is not covered by the sources I have.",
)


def questions(root: Path) -> dict[str, list[str]]:
    """NQ-open's and SQuAD 2.0's (sample 500) questions, distinct: real questions, no
    refusal."""
    nq = root / "nq-open" / "NQ-open.dev.jsonl"
    squad = root / "squad2-dev-sample500" / "queries.json"
    found = {
        "NQ-open questions": [json.loads(line)["question"]
                              for line in nq.read_text(encoding="utf-8").splitlines()],
        "SQuAD 2.0 questions": [q["question"] for q in
                                json.loads(squad.read_text(encoding="utf-8"))["queries"]],
    }  # fmt: skip
    return {k: list(dict.fromkeys(t for t in v if t.strip())) for k, v in found.items()}


def scope_section(root: Path, after: RefusalDetector) -> None:
    """Print what :data:`SCOPE_REFUSALS` add (the module docstring's last item)."""
    before = RefusalDetector([p for p in DEFAULT_PATTERNS if p not in SCOPE_REFUSALS])
    print("Scope refusals (SCOPE_REFUSALS off -> on):")
    for lang in ("en", "hi"):
        labelled, _ = nomiracl(root, lang)
        texts, truth = [t for t, _ in labelled], [label for _, label in labelled]
        figures = [precision_recall(d.is_refusal_many(texts), truth) for d in (before, after)]
        print(f"  NoMIRACL {lang}: precision {figures[0][0]:.4f} -> {figures[1][0]:.4f}, "
              f"recall {figures[0][1]:.4f} -> {figures[1][1]:.4f}")  # fmt: skip
    sources = {**other_texts(root), **questions(root),
               **{f"XQuAD {k}": v for k, v in xquad_texts(root).items()}}  # fmt: skip
    total = [0, 0, 0]
    for source, texts in sources.items():
        old, new = _flagged(before, texts), _flagged(after, texts)
        added = sorted(set(new) - set(old))
        total = [total[0] + len(texts), total[1] + len(old), total[2] + len(new)]
        print(f"  {source}: {len(texts)} texts, flagged {len(old)} -> {len(new)}"
              + (f": {added[:5]}" if added else ""))  # fmt: skip
    print(f"  all {total[0]} texts: flagged {total[1]} -> {total[2]}")
    for name, examples in (("trial 24's replies", SCOPE_EXAMPLES[:2]),
                           ("written examples", SCOPE_EXAMPLES[2:])):  # fmt: skip
        counted = [sum(d.is_refusal(t) for t in examples) for d in (before, after)]
        missed = [t for t in examples if not after.is_refusal(t)]
        print(f"  {name} ({len(examples)}): counted {counted[0]} -> {counted[1]}"
              + (f"; not: {missed}" if missed else ""))  # fmt: skip


def xquad_texts(root: Path) -> dict[str, list[str]]:
    """Each XQuAD language's context sentences, questions and answers (distinct, non-blank)."""
    texts: dict[str, list[str]] = {}
    for path in sorted((root / "xquad").glob("xquad.*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))["data"]
        paragraphs = [p for article in data for p in article["paragraphs"]]
        found = [s for p in paragraphs for s in _sentences(p["context"])]
        found += [q["question"] for p in paragraphs for q in p["qas"]]
        found += [a["text"] for p in paragraphs for q in p["qas"] for a in q["answers"]]
        texts[path.stem.split(".")[1]] = list(dict.fromkeys(t for t in found if t.strip()))
    return texts


def _sentences(text: str) -> list[str]:
    return [s for s in re.split(r"(?<=[.!?])\s+", text) if s.strip()]


def nomiracl(root: Path, lang: str) -> tuple[list[tuple[str, bool]], list[str]]:
    """``(labelled replies, every non-empty reply)`` of NoMIRACL's ``lang`` queries."""
    labelled: list[tuple[str, bool]] = []
    replies: list[str] = []
    for subset in ("non_relevant", "relevant"):
        path = root / "nomiracl-baselines" / subset / f"{lang}.test.vanilla_prompt.jsonl"
        for line in path.read_text(encoding="utf-8").splitlines():
            for reply in json.loads(line)["results"].values():
                if not reply or not reply.strip():
                    continue
                replies.append(reply)
                label = nomiracl_label(reply)
                if label is not None:
                    labelled.append((reply, label))
    return labelled, replies


def other_texts(root: Path) -> dict[str, list[str]]:
    """Texts that are no failure message, by source (distinct within each)."""
    texts: dict[str, list[str]] = {}
    nq = root / "nq-open" / "NQ-open.dev.jsonl"
    texts["NQ-open answers"] = [a for line in nq.read_text(encoding="utf-8").splitlines()
                                for a in json.loads(line)["answer"]]  # fmt: skip
    squad = root / "squad2-dev-sample500"
    truth = json.loads((squad / "ground_truth.json").read_text(encoding="utf-8"))
    queries = json.loads((squad / "queries.json").read_text(encoding="utf-8"))["queries"]
    texts["SQuAD 2.0 answers and context sentences"] = [
        *(a for row in truth.values() for a in row["answers"]),
        *(s for q in queries for s in _sentences(q["context"])),
    ]
    hop = json.loads((root / "multihop-rag-sample500" / "ground_truth.json").read_text("utf-8"))
    texts["MultiHop-RAG answers and evidence"] = [
        *(row["answer"] for row in hop.values()),
        *(e["fact"] for row in hop.values() for e in row["evidence_list"]),
    ]
    xquad = json.loads((root / "xquad" / "xquad.en.json").read_text(encoding="utf-8"))
    texts["XQuAD en context sentences and answers"] = [
        *(s for a in xquad["data"] for p in a["paragraphs"] for s in _sentences(p["context"])),
        *(x["text"] for a in xquad["data"] for p in a["paragraphs"] for q in p["qas"]
          for x in q["answers"]),
    ]  # fmt: skip
    banking = []
    for name in ("train.csv", "test.csv"):
        with (root / "banking77" / name).open(encoding="utf-8") as handle:
            banking += [row["text"] for row in csv.DictReader(handle)]
    texts["BANKING77 questions"] = banking
    clinc = json.loads((root / "clinc150" / "data_full.json").read_text(encoding="utf-8"))
    texts["CLINC150 questions"] = [text for rows in clinc.values() for text, _ in rows]
    return {k: list(dict.fromkeys(t for t in v if t and t.strip())) for k, v in texts.items()}


def precision_recall(predicted: Sequence[bool], truth: Sequence[bool]) -> tuple[float, float]:
    """``(precision, recall)`` of ``predicted`` refusals against ``truth``."""
    hits = sum(p and t for p, t in zip(predicted, truth, strict=True))
    return hits / max(1, sum(predicted)), hits / max(1, sum(truth))


def _flagged(detector: RefusalDetector, texts: Iterable[str]) -> list[str]:
    texts = list(texts)
    return [t for t, r in zip(texts, detector.is_refusal_many(texts), strict=True) if r]


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=SHARED_DATA)
    args = parser.parse_args(argv)
    before = RefusalDetector([p for p in DEFAULT_PATTERNS if p != GENERATION_FAILURE])
    after = RefusalDetector()
    failure_only = RefusalDetector([GENERATION_FAILURE])
    print("NoMIRACL (labelled replies; precision / recall of the patterns):")
    for lang in ("en", "hi"):
        labelled, replies = nomiracl(args.data, lang)
        texts, truth = [t for t, _ in labelled], [label for _, label in labelled]
        refusals = sum(truth)
        for name, detector in (("without", before), ("with", after)):
            p, r = precision_recall(detector.is_refusal_many(texts), truth)
            print(f"  {lang} ({len(labelled)} replies, {refusals} refusals), {name} the failure "
                  f"pattern: precision {p:.4f}, recall {r:.4f}")  # fmt: skip
        matched = _flagged(failure_only, replies)
        shapes = sorted(set(matched))
        print(f"  {lang}: the failure pattern matches {len(matched)} of {len(replies)} non-empty "
              f"replies: {shapes}")  # fmt: skip
    print("Texts that are no failure message (matched by the failure pattern; newly flagged):")
    for source, texts in other_texts(args.data).items():
        matched = _flagged(failure_only, texts)
        new = set(_flagged(after, texts)) - set(_flagged(before, texts))
        print(f"  {source}: {len(texts)} texts, {len(matched)} matched, {len(new)} newly flagged"
              + (f": {sorted(new)[:10]}" if new else ""))  # fmt: skip
    print("Per language: XQuAD's context sentences, questions and answers (no refusal), flagged:")
    for lang, texts in xquad_texts(args.data).items():
        flagged = _flagged(after, texts)
        print(f"  {lang}: {len(flagged)} of {len(texts)}" + (f": {flagged[:5]}" if flagged else ""))
    print("Per language: written refusals (examples, not measured replies), counted:")
    for lang, refusals in WRITTEN_REFUSALS.items():
        missed = [t for t in refusals if not after.is_refusal(t)]
        print(f"  {lang}: {len(refusals) - len(missed)} of {len(refusals)}"
              + (f"; not: {missed}" if missed else ""))  # fmt: skip
    print(f"Failure messages of serving stacks ({len(FAILURES)}), counted as refusals:")
    for name, detector in (("without", before), ("with", after)):
        missed = [t for t in FAILURES if not detector.is_refusal(t)]
        print(f"  {name} the failure pattern: {len(FAILURES) - len(missed)} of {len(FAILURES)}"
              + (f"; not: {missed}" if name == "with" and missed else ""))  # fmt: skip
    scope_section(args.data, after)


if __name__ == "__main__":
    main()
