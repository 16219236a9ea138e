"""Loaders for the real data sets in ``../shared/data`` (used by tests and benchmarks).

The data root is ``$GOLDWATCH_SHARED_DATA`` when set, else ``<checkout>/../shared/data`` — the
same rule as ``tests/conftest.py``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from service.records import Passage

REPO_ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(os.environ.get("GOLDWATCH_SHARED_DATA", REPO_ROOT.parent / "shared" / "data"))

XQUAD_LANGUAGES: tuple[str, ...] = (
    "ar", "de", "el", "en", "es", "hi", "ro", "ru", "th", "tr", "vi", "zh",
)  # fmt: skip

#: One retrieval question: ``(question_id, question_text, gold_passage_id)``.
Question = tuple[str, str, str]


def load_xquad(lang: str, root: Path | None = None) -> tuple[list[Passage], list[Question]]:
    """Load XQuAD in language ``lang`` as a retrieval corpus and gold questions.

    Every language file has the same 48 articles, 240 paragraphs and 1190 questions in the same
    order (see ``xquad/SOURCE.md``); titles stay English, so passage ids join across languages
    and ``lang`` questions can be asked against the English passages.

    Args:
        lang: one of :data:`XQUAD_LANGUAGES`.
        root: data root (default :data:`SHARED_DATA`).

    Returns:
        ``(passages, questions)``: 240 :class:`Passage` with id ``f"{title}#{paragraph_index}"``
        (``paragraph_index`` 0-based within the article, ``doc`` = title), and 1190
        ``(question_id, question, gold_passage_id)`` tuples in file order.

    Raises:
        ValueError: ``lang`` is not an XQuAD language.
        FileNotFoundError: the data file is missing.
    """
    if lang not in XQUAD_LANGUAGES:
        raise ValueError(f"unknown XQuAD language {lang!r}; known: {', '.join(XQUAD_LANGUAGES)}")
    path = (root if root is not None else SHARED_DATA) / "xquad" / f"xquad.{lang}.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    passages: list[Passage] = []
    questions: list[Question] = []
    for article in data["data"]:
        title = article["title"]
        for index, paragraph in enumerate(article["paragraphs"]):
            passage_id = f"{title}#{index}"
            passages.append(Passage(id=passage_id, text=paragraph["context"], doc=title))
            questions.extend((qa["id"], qa["question"], passage_id) for qa in paragraph["qas"])
    return passages, questions
