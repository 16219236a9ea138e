"""Write the real data sets of ``../shared/data`` as goldwatch gold-set and corpus JSONL.

Used by the acceptance tests and by ``python -m benchmarks.xquad_eval`` so both run the very
same ``goldwatch eval`` path a user runs on their own files.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from benchmarks.datasets import SHARED_DATA, load_xquad


def _write_jsonl(path: Path, rows: list[dict[str, object]]) -> Path:
    with path.open("w", encoding="utf-8") as handle:
        for row in rows:
            handle.write(json.dumps(row, ensure_ascii=False) + "\n")
    return path


def write_xquad(out: Path, question_lang: str, corpus_lang: str = "en") -> tuple[Path, Path]:
    """Write ``(gold.jsonl, corpus.jsonl)``: ``question_lang`` questions over the
    ``corpus_lang`` paragraphs (ids ``title#index``, shared by every language)."""
    passages, _ = load_xquad(corpus_lang)
    _, questions = load_xquad(question_lang)
    out.mkdir(parents=True, exist_ok=True)
    corpus = _write_jsonl(
        out / "corpus.jsonl",
        [{"id": p.id, "text": p.text, "doc": p.doc, "doc_type": "wikipedia"} for p in passages],
    )
    gold = _write_jsonl(
        out / f"gold.{question_lang}.jsonl",
        [
            {"id": qid, "question": text, "gold": [gold_id], "kind": "plain",
             "source": "written", "language": question_lang}
            for qid, text, gold_id in questions
        ],
    )  # fmt: skip
    return gold, corpus


def write_squad2(out: Path, root: Path | None = None) -> tuple[Path, Path]:
    """Write ``(gold.jsonl, corpus.jsonl)`` from the SQuAD 2.0 dev sample: one passage per
    distinct context (id ``ctx-`` + 12 hex digits of its SHA-256); unanswerable questions
    (``is_impossible``) get ``gold: []``."""
    base = (root if root is not None else SHARED_DATA) / "squad2-dev-sample500"
    queries = json.loads((base / "queries.json").read_text(encoding="utf-8"))["queries"]
    truth = json.loads((base / "ground_truth.json").read_text(encoding="utf-8"))
    contexts: dict[str, str] = {}
    rows: list[dict[str, object]] = []
    for query in queries:
        ctx_id = "ctx-" + hashlib.sha256(query["context"].encode("utf-8")).hexdigest()[:12]
        contexts[ctx_id] = query["context"]
        impossible = bool(truth[query["id"]]["is_impossible"])
        rows.append(
            {"id": query["id"], "question": query["question"],
             "gold": [] if impossible else [ctx_id],
             "kind": "unanswerable" if impossible else "plain", "source": "written"}
        )  # fmt: skip
    out.mkdir(parents=True, exist_ok=True)
    corpus = _write_jsonl(
        out / "corpus.jsonl", [{"id": cid, "text": text} for cid, text in contexts.items()]
    )
    return _write_jsonl(out / "gold.jsonl", rows), corpus


def write_multihop(out: Path, root: Path | None = None) -> tuple[Path, Path]:
    """Write ``(gold.jsonl, corpus.jsonl)`` from the MultiHop-RAG sample.

    The sample ships no article text (``multihop-rag-sample500/SOURCE.md``), so the corpus is
    one passage per distinct evidence URL (326): its title, then each distinct evidence
    ``fact`` of that article, in first-seen order; id ``mh-`` + 12 hex digits of the URL's
    SHA-256, ``doc`` = the source (e.g. ``The Verge``). A question's gold passages are its
    evidence URLs (2–4); the 71 ``null_query`` rows get ``gold: []``, kind ``unanswerable``;
    multi-evidence rows are kind ``multi-passage``.
    """
    base = (root if root is not None else SHARED_DATA) / "multihop-rag-sample500"
    queries = json.loads((base / "queries.json").read_text(encoding="utf-8"))["queries"]
    truth = json.loads((base / "ground_truth.json").read_text(encoding="utf-8"))
    articles: dict[str, dict[str, object]] = {}
    rows: list[dict[str, object]] = []
    for query in queries:
        gold: list[str] = []
        for evidence in truth[query["id"]]["evidence_list"]:
            doc_id = "mh-" + hashlib.sha256(evidence["url"].encode("utf-8")).hexdigest()[:12]
            article = articles.setdefault(
                doc_id, {"title": evidence["title"], "doc": evidence["source"], "facts": []}
            )
            facts = article["facts"]
            if isinstance(facts, list) and evidence["fact"] not in facts:
                facts.append(evidence["fact"])
            if doc_id not in gold:
                gold.append(doc_id)
        kind = "unanswerable" if not gold else "multi-passage" if len(gold) > 1 else "plain"
        rows.append(
            {"id": f"mh-{query['id']}", "question": query["question"], "gold": gold,
             "kind": kind, "source": "written"}
        )  # fmt: skip
    out.mkdir(parents=True, exist_ok=True)
    corpus = _write_jsonl(
        out / "corpus.jsonl",
        [
            {"id": doc_id, "doc": a["doc"], "doc_type": "news",
             "text": " ".join([str(a["title"]), *(str(f) for f in a["facts"])])}  # type: ignore[union-attr]
            for doc_id, a in articles.items()
        ],
    )  # fmt: skip
    return _write_jsonl(out / "gold.jsonl", rows), corpus


def write_squad2_off_topic(
    out: Path, answerable: int = 42, off_topic: int = 12, seed: int = 0,
    root: Path | None = None,
) -> tuple[Path, Path]:  # fmt: skip
    """Write ``(gold.jsonl, corpus.jsonl)``: a small gold set shaped like a user's first one
    — ``answerable`` answerable SQuAD 2.0 dev-sample questions and ``off_topic`` CLINC150
    out-of-scope test queries (``kind: off-topic``, ``gold: []``), drawn with
    ``random.Random(f"squad2-off-topic-{seed}")`` — over every context of the SQuAD 2.0
    sample (ids as :func:`write_squad2`). The out-of-scope detector's fit stability is
    measured on it (CHANGELOG, forty-ninth session).

    Raises:
        ValueError: more rows asked for than the samples hold.
    """
    import random

    base = root if root is not None else SHARED_DATA
    squad = base / "squad2-dev-sample500"
    queries = json.loads((squad / "queries.json").read_text(encoding="utf-8"))["queries"]
    truth = json.loads((squad / "ground_truth.json").read_text(encoding="utf-8"))
    clinc = json.loads((base / "clinc150" / "data_full.json").read_text(encoding="utf-8"))
    contexts: dict[str, str] = {}
    usable: list[tuple[str, str, str]] = []
    for query in queries:
        ctx_id = "ctx-" + hashlib.sha256(query["context"].encode("utf-8")).hexdigest()[:12]
        contexts[ctx_id] = query["context"]
        if not truth[query["id"]]["is_impossible"]:
            usable.append((query["id"], query["question"], ctx_id))
    oos = [text for text, _ in clinc["oos_test"]]
    if answerable > len(usable) or off_topic > len(oos):
        raise ValueError(f"{answerable} answerable and {off_topic} off-topic rows asked for; "
                         f"the samples hold {len(usable)} and {len(oos)}")  # fmt: skip
    rng = random.Random(f"squad2-off-topic-{seed}")
    picked = sorted(rng.sample(range(len(usable)), answerable))
    rows: list[dict[str, object]] = [
        {"id": qid, "question": text, "gold": [ctx], "kind": "plain", "source": "written"}
        for qid, text, ctx in (usable[i] for i in picked)
    ]
    for i in sorted(rng.sample(range(len(oos)), off_topic)):
        rows.append({"id": f"clinc-oos-{i}", "question": oos[i], "gold": [], "kind": "off-topic",
                     "source": "written"})  # fmt: skip
    out.mkdir(parents=True, exist_ok=True)
    corpus = _write_jsonl(
        out / "corpus.jsonl", [{"id": cid, "text": text} for cid, text in contexts.items()]
    )
    return _write_jsonl(out / "gold.jsonl", rows), corpus
