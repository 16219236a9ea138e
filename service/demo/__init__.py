"""goldwatch's embedded demo data: a small invented college corpus, its gold set and answers.

The files (see ``README.md`` beside this module) were written for goldwatch and are licensed
Apache-2.0 with the project. Nothing here is read from the network or from ``../shared/data``.
"""

from __future__ import annotations

from pathlib import Path

#: Folder holding ``corpus.jsonl``, ``gold.jsonl`` and ``answers.jsonl``.
DEMO_DIR: Path = Path(__file__).parent


def demo_path(name: str) -> Path:
    """Return the path of one demo file, e.g. ``demo_path("gold.jsonl")``.

    Args:
        name: a file name inside the demo folder (``corpus.jsonl``, ``gold.jsonl`` or
            ``answers.jsonl``); no directories.

    Returns:
        The absolute path of the file.

    Raises:
        FileNotFoundError: if ``name`` is not a file of the demo folder; the message lists the
            files that are.

    >>> demo_path("gold.jsonl").name
    'gold.jsonl'
    >>> demo_path("corpus.jsonl").is_file()
    True
    """
    path = DEMO_DIR / name
    if Path(name).name != name or not path.is_file():
        available = ", ".join(sorted(p.name for p in DEMO_DIR.glob("*.jsonl")))
        raise FileNotFoundError(f"no demo file {name!r}; available: {available}")
    return path


def demo_data() -> dict[str, Path]:
    """The demo's gold set and corpus as settings overrides, ``{"gold_set": path, "corpus":
    path}``, for runs that ask for the demo (``goldwatch demo``, ``--demo``, benchmarks):
    nothing else ever falls back to them. The gold set is the packaged file: copy it first
    where accepted suggestions may be appended.

    >>> sorted(demo_data())
    ['corpus', 'gold_set']
    """
    return {"gold_set": demo_path("gold.jsonl"), "corpus": demo_path("corpus.jsonl")}
