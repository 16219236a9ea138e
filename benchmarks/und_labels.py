"""Should a question the language detector cannot tell (``und``) take the stop words of its
topic's majority language in the topic labels? (Session 43; docs/topics.md.)

Each gold set is labelled as :func:`service.topics.model._top_terms` labels a fitted model's
topics (3 terms), with its true topics standing in for the clusters (an intent; an XQuAD
article in one language, as an English-centric embedding clusters them), twice: each text
with its detected language (:func:`service.topics.model.text_languages`, the rule in use: an
``und`` text has no stop-word list), and each ``und`` text with its topic's majority language
(of its texts that are not ``und``). Reported per set: the ``und`` share, the label terms
that are stop words of their topic's majority language (the leak the fallback would stop)
under each rule, and the labels that differ.

* hinglish-top: its 2,993 training queries in romanized Hindi (``cs_query``) by intent; the
  first 1,500 again with their English twins (``en_query``) in the same intent;
* XQuAD: the en, hi, ar, ru and de questions, one topic per article and language;
* CLINC150: 3,000 training questions (every 5th) by intent.

``python -m benchmarks.und_labels`` (``GOLDWATCH_SHARED_DATA`` set) prints one line per set
and the differing labels.
"""

from __future__ import annotations

import csv
import json
from collections import Counter
from collections.abc import Callable

import numpy as np

from benchmarks.datasets import SHARED_DATA
from service.text.stop_words import ENGLISH_STOP_WORDS, stop_words
from service.topics.model import _top_terms, text_languages

Rows = tuple[list[str], list[str]]


def hinglish(english_too: bool) -> Rows:
    """hinglish-top training queries and their intents (``english_too``: the first 1,500
    with their English twins, else all 2,993 alone)."""
    path = SHARED_DATA / "hinglish-top" / "train.tsv"
    with path.open(encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    texts: list[str] = []
    topics: list[str] = []
    for row in rows[: 1_500 if english_too else 3_000]:
        intent = row["cs_parse"].split()[0].lstrip("[")
        for text in (row["cs_query"], row["en_query"]) if english_too else (row["cs_query"],):
            texts.append(text)
            topics.append(intent)
    return texts, topics


def xquad() -> Rows:
    """XQuAD's en, hi, ar, ru, de questions, one topic per article and language."""
    texts: list[str] = []
    topics: list[str] = []
    for lang in ("en", "hi", "ar", "ru", "de"):
        with (SHARED_DATA / "xquad" / f"xquad.{lang}.json").open(encoding="utf-8") as f:
            data = json.load(f)["data"]
        for a, article in enumerate(data):
            for paragraph in article["paragraphs"]:
                for qa in paragraph["qas"]:
                    texts.append(qa["question"])
                    topics.append(f"{lang}:{a}")
    return texts, topics


def clinc() -> Rows:
    """3,000 CLINC150 training questions (every 5th of 15,000) and their intents."""
    with (SHARED_DATA / "clinc150" / "data_full.json").open(encoding="utf-8") as f:
        train = json.load(f)["train"][::5][:3_000]
    return [text for text, _ in train], [intent for _, intent in train]


def measure(texts: list[str], topics: list[str]) -> tuple[str, list[str]]:
    """One set's line and its differing labels (``before -> with the fallback``)."""
    ids = {t: i for i, t in enumerate(sorted(set(topics)))}
    assigned = np.array([ids[t] for t in topics])
    k = len(ids)
    langs = text_languages(texts)
    major: dict[int, str] = {}
    for c in range(k):
        known = Counter(g for g, a in zip(langs, assigned.tolist(), strict=True)
                        if a == c and g != "und")  # fmt: skip
        major[c] = known.most_common(1)[0][0] if known else "und"
    fallback = [
        major[a] if g == "und" else g for g, a in zip(langs, assigned.tolist(), strict=True)
    ]
    now = _top_terms(texts, assigned, k, 3, langs)
    then = _top_terms(texts, assigned, k, 3, fallback)

    def leaks(labels: list[tuple[tuple[str, ...], str | None]]) -> int:
        return sum(
            term in (ENGLISH_STOP_WORDS if major[c] == "en" else stop_words(major[c]))
            for c, (terms, _) in enumerate(labels)
            for term in terms
        )

    names = sorted(ids)
    diff = [f"  {names[c]}: {', '.join(now[c][0])} -> {', '.join(then[c][0])}"
            for c in range(k) if now[c][0] != then[c][0]]  # fmt: skip
    und = langs.count("und")
    line = (f"{len(texts)} texts, {k} topics, und {und} ({und / len(texts):.1%}); label terms "
            f"that are stop words of the topic's majority language: {leaks(now)} as now, "
            f"{leaks(then)} with the fallback; labels differing: {len(diff)}")  # fmt: skip
    return line, diff


def main() -> None:
    sets: list[tuple[str, Callable[[], Rows]]] = [
        ("hinglish-top (romanized Hindi)", lambda: hinglish(False)),
        ("hinglish-top (and English, one intent)", lambda: hinglish(True)),
        ("XQuAD en/hi/ar/ru/de by article and language", xquad),
        ("CLINC150", clinc),
    ]
    for name, load in sets:
        line, diff = measure(*load())
        print(f"{name}: {line}")
        for row in diff:
            print(row)


if __name__ == "__main__":
    main()
