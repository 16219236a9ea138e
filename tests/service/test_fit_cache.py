"""``service.files.fit_cache``: fitted models kept on disk between starts.

The unit tests check the cache's contract on hand-made values: a second call with the same
kind, inputs, context and code reads the value back without fitting; any change of those
fits again (and the stale entry is deleted); entries are private and written atomically; an
entry that is torn, foreign-writable or of another key is fitted again, never trusted; a
cache that cannot be written still returns the fitted value.

The replay test is the acceptance check of issue 22 (start-up): the demo log replayed with
the demo configuration gives byte-identical JSON and text reports with the cache cold (every
model fitted and written) and warm (every model read back; the fits are made to raise, so a
warm run that fitted anything fails).
"""

from __future__ import annotations

import json
import logging
import os
import stat
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from service.files import fit_cache
from service.files.fit_cache import FitCache, code_fingerprint, digest, write_atomic


class Fits:
    """A fit that counts its calls and returns a fresh array each time."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self) -> dict[str, Any]:
        self.calls += 1
        return {"centroids": np.arange(6, dtype=np.float32).reshape(2, 3), "call": self.calls}


def entries(folder: Path) -> list[Path]:
    return sorted(folder.glob("*.pickle"))


def test_a_second_call_reads_the_value_back_without_fitting(tmp_path: Path) -> None:
    fit = Fits()
    first = FitCache(tmp_path, context=["gold"])("topic-model", ["q1", "q2"], fit)
    cache = FitCache(tmp_path, context=["gold"])  # a later start: a new object
    second = cache("topic-model", ["q1", "q2"], fit)
    assert fit.calls == 1 and (cache.hits, cache.misses) == (1, 0)
    assert second["call"] == 1
    np.testing.assert_array_equal(second["centroids"], first["centroids"])
    assert second["centroids"].dtype == np.float32


@pytest.mark.parametrize(
    "change",
    [
        {"inputs": ["q1", "q2 "]},  # one character of one text
        {"inputs": ["q1", "q2", "q3"]},
        {"context": ["gold", "corpus"]},
        {"kind": "topic-counts"},
    ],
)
def test_any_change_of_inputs_context_or_kind_fits_again(
    tmp_path: Path, change: dict[str, Any]
) -> None:
    fit = Fits()
    call = {"kind": "topic-model", "inputs": ["q1", "q2"], "context": ["gold"]} | change
    FitCache(tmp_path, context=["gold"])("topic-model", ["q1", "q2"], fit)
    value = FitCache(tmp_path, context=call["context"])(call["kind"], call["inputs"], fit)
    assert fit.calls == 2 and value["call"] == 2


def test_a_refit_replaces_the_stale_entry_of_its_kind_only(tmp_path: Path) -> None:
    cache = FitCache(tmp_path)
    cache("topic-model", [1], Fits())
    cache("topic-counts", [1], Fits())
    cache("topic-model", [2], Fits())
    names = [p.name for p in entries(tmp_path)]
    assert len(names) == 2
    assert [n.split("-")[:2] for n in names] == [["topic", "counts"], ["topic", "model"]]
    assert cache.path("topic-model", cache.key("topic-model", [2])).exists()


def test_a_code_change_is_a_different_fingerprint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    module = tmp_path / "gw_fit_probe.py"
    module.write_text("THRESHOLD = 0.5\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "gw_fit_probe", raising=False)
    before = code_fingerprint(["gw_fit_probe"])
    module.write_text("THRESHOLD = 0.6\n", encoding="utf-8")
    assert code_fingerprint(["gw_fit_probe"]) != before
    monkeypatch.setattr(fit_cache, "__version__", "99.0")  # goldwatch's version too
    module.write_text("THRESHOLD = 0.5\n", encoding="utf-8")
    assert code_fingerprint(["gw_fit_probe"]) != before


def test_entries_are_private_and_no_temporary_file_is_left(tmp_path: Path) -> None:
    folder = tmp_path / "model-cache"
    FitCache(folder)("embedding-scope", ["x"], Fits())
    (entry,) = entries(folder)
    assert stat.S_IMODE(entry.stat().st_mode) == 0o600
    assert stat.S_IMODE(folder.stat().st_mode) & 0o077 == 0
    assert [p.name for p in folder.iterdir()] == [entry.name]


def test_a_failed_write_leaves_the_old_entry_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "entry.pickle"
    write_atomic(path, b"old entry")

    def full_disk(fd: int, data: bytes, *, sync: bool = True) -> int:
        os.write(fd, data[:3])
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(fit_cache, "append_whole", full_disk)
    with pytest.raises(OSError):
        write_atomic(path, b"new entry, much longer")
    assert path.read_bytes() == b"old entry"
    assert [p.name for p in tmp_path.iterdir()] == ["entry.pickle"]


@pytest.mark.parametrize("damage", ["truncate", "garbage", "other-key"])
def test_an_unreadable_entry_is_fitted_again_and_rewritten(
    tmp_path: Path, damage: str, caplog: pytest.LogCaptureFixture
) -> None:
    fit = Fits()
    FitCache(tmp_path)("topic-model", ["q"], fit)
    (entry,) = entries(tmp_path)
    if damage == "truncate":
        entry.write_bytes(entry.read_bytes()[:40])
    elif damage == "garbage":
        entry.write_bytes(b"not a pickle at all")
    else:  # an entry of another key renamed over this one
        other = tmp_path / "other"
        FitCache(other)("topic-model", ["another"], Fits())
        entry.write_bytes(entries(other)[0].read_bytes())
    with caplog.at_level(logging.WARNING):
        value = FitCache(tmp_path)("topic-model", ["q"], fit)
    assert fit.calls == 2 and value["call"] == 2
    assert "fitting again" in caplog.text
    assert FitCache(tmp_path)("topic-model", ["q"], fit)["call"] == 2  # rewritten whole


def test_an_entry_others_could_have_written_is_refused(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    fit = Fits()
    FitCache(tmp_path)("topic-model", ["q"], fit)
    (entry,) = entries(tmp_path)
    entry.chmod(0o664)
    with caplog.at_level(logging.WARNING):
        FitCache(tmp_path)("topic-model", ["q"], fit)
    assert fit.calls == 2
    assert "refused" in caplog.text


def test_a_cache_that_cannot_be_written_still_returns_the_fit(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    blocker = tmp_path / "model-cache"
    blocker.write_text("a file where the folder should be", encoding="utf-8")
    fit = Fits()
    with caplog.at_level(logging.WARNING):
        value = FitCache(blocker)("topic-model", ["q"], fit)
    assert value["call"] == 1
    assert "not written" in caplog.text


def test_digest_tells_types_and_values_apart_and_refuses_what_it_cannot_key() -> None:
    assert len({digest(1), digest(1.0), digest("1"), digest(True), digest([1])}) == 5
    assert digest({"b": 1, "a": 2}) == digest({"a": 2, "b": 1})
    assert digest(np.zeros(3, np.float32)) != digest(np.zeros(3, np.float64))
    assert digest(np.zeros((2, 3))) != digest(np.zeros((3, 2)))
    from service.records import Passage

    assert digest(Passage("p-1", "fees")) != digest(Passage("p-1", "fees", doc_type="pdf"))
    assert digest([None]) != digest(["null"])
    with pytest.raises(TypeError, match="Path"):
        digest([Path("gold.jsonl")])
    with pytest.raises(ValueError, match="kind"):
        FitCache(Path("unused"))("Topic Model", [], Fits())


# -- the acceptance check: replays with the cache cold and warm ---------------------------------


def _replay(settings: Any, run: Path, state: Path) -> tuple[str, str]:
    from service.demo import demo_path
    from service.jobs.replay import render_text, run_replay

    doc = run_replay(settings, demo_path("querylog.jsonl"), state, run / "dlq.jsonl")
    as_json = json.dumps(doc, indent=2, sort_keys=True, ensure_ascii=False, default=str)
    return as_json.replace(str(run), "<run>"), render_text(doc).replace(str(run), "<run>")


def _no_fitting(*args: Any, **kwargs: Any) -> Any:
    raise AssertionError("a warm start fitted a model")


@pytest.mark.slow
def test_demo_replays_are_byte_identical_with_the_cache_cold_and_warm(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import service.harvest.stage
    import service.runtime.analytics
    from service.demo import demo_path
    from service.refusals.scope import EmbeddingScope
    from service.retrievers.bm25 import BM25Retriever
    from service.settings import load_settings
    from service.topics.model import TopicModel

    monkeypatch.delenv("GOLDWATCH_HARVEST__MAX_NEW_PER_BATCH", raising=False)
    settings = load_settings(demo_path("goldwatch.yaml"), gold_set=demo_path("gold.jsonl"),
                             corpus=demo_path("corpus.jsonl"))  # fmt: skip
    states = tmp_path / "state"  # one folder: both replays share its model-cache/
    cold = _replay(settings, tmp_path / "cold", states / "cold.sqlite")
    cache = states / "model-cache"
    kinds = sorted(p.name.rsplit("-", 1)[0] for p in entries(cache))
    # the bm25 index (the scope's and the shadow hybrid's member, both named "bm25" with no
    # params: one entry; the kind ends with the first 8 hex digits of SHA-256 of the name's
    # JSON, '"bm25"': 084e851b...)
    assert kinds == ["bm25-index-084e851b", "embedding-scope", "language-counts",
                     "lsh-parameters", "topic-counts", "topic-model",
                     "topic-strata"]  # fmt: skip

    monkeypatch.setattr(EmbeddingScope, "__init__", _no_fitting)
    monkeypatch.setattr(TopicModel, "fit", _no_fitting)
    monkeypatch.setattr(service.runtime.analytics, "_language_counts", _no_fitting)
    monkeypatch.setattr(service.runtime.analytics, "_topic_counts", _no_fitting)
    monkeypatch.setattr(service.runtime.analytics, "gold_topic_strata", _no_fitting)
    monkeypatch.setattr(service.harvest.stage, "lsh_parameters", _no_fitting)
    monkeypatch.setattr(BM25Retriever, "__init__", _no_fitting)
    warm = _replay(settings, tmp_path / "warm", states / "warm.sqlite")
    assert warm[0] == cold[0]
    assert warm[1] == cold[1]


@pytest.mark.parametrize("package", ["torch", "sentence-transformers", "wordllama"])
def test_an_embedding_backend_upgrade_is_a_different_fingerprint(
    package: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A new torch (or any backend package) can move the vectors a cached fit came from, so
    it must not be answered from the cache (a review found torch and transformers missing)."""
    import importlib.metadata

    real = importlib.metadata.version
    before = code_fingerprint([])

    def upgraded(name: str) -> str:
        return "999.0" if name == package else real(name)

    monkeypatch.setattr(importlib.metadata, "version", upgraded)
    assert code_fingerprint([]) != before
