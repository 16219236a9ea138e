"""``POST /v1/traces`` while the dead-letter file's disk is full, met by a real ``goldwatch
serve`` whose ``source.dlq_path`` is on a 64 KiB tmpfs the test fills (trial probe 2, items 2
and 3). Needs mount rights (root with CAP_SYS_ADMIN, as in CI); skipped elsewhere.

Before: the dead letters of traces that gave no event were added to the pending batch again
at every tick (every 50 ms here), so the batch outgrew the disk and never drained, each
letter was written many times once it did, and every tick logged a WARNING; and a request
whose cut attribute could not be dead-lettered got 503 while its spans were kept and its
trace processed (the exporter's retry then made a duplicate).
"""

from __future__ import annotations

import base64
import json
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from service.traces.otlp import encode_json
from service.traces.spans import Span
from tests.acceptance.service_process import TOKEN, ServiceProcess
from tests.reliability.test_state_faults import _fill, _mount

T0 = 1_795_946_400_000_000_000  # 2026-11-29T10:00:00Z
MARKER = "zq-planted-4412"  # user text that must never come back in an answer


@pytest.fixture()
def tiny_fs(tmp_path: Path) -> Iterator[Path]:
    where = tmp_path / "tinyfs"
    where.mkdir()
    done = _mount("-t", "tmpfs", "-o", "size=64k", "goldwatch-traces-dlq", str(where))
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode().strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False, timeout=10)


def _config(tmp_path: Path, dlq: Path) -> dict[str, Any]:
    return {
        "source": {"kind": "none", "dlq_path": str(dlq)},
        "state": {"path": str(tmp_path / "state.sqlite")},
        "analytics": {"enabled": False},
        "traces": {"assembly": {"settle_s": 0.2, "timeout_s": 0.4,
                                "max_attribute_bytes": 1024}},
    }  # fmt: skip


def _trace_id(n: int) -> str:
    return f"{n + 1:032x}"  # all-zero ids are invalid


def _orphans(first: int, count: int) -> bytes:
    """``count`` traces of one child span each, no root and no question: each becomes a
    ``missing_field`` dead letter when it times out. 1 kB of attributes each."""
    spans = [Span(_trace_id(n), f"{n + 1:016x}", "ab" * 8, "retrieve", T0, T0 + 1,
                  {"openinference.span.kind": "RETRIEVER", "note": "x" * 1000})
             for n in range(first, first + count)]  # fmt: skip
    return encode_json(spans)


def _rooted(n: int, note: str = "") -> bytes:
    """One trace with a root span holding a question (an event once settled)."""
    attributes = {"openinference.span.kind": "CHAIN", "input.value": f"when does hall {n} open"}
    if note:
        attributes["note"] = note
    return encode_json([Span(_trace_id(n), f"{n + 1:016x}", None, "rag", T0, T0 + 5, attributes)])


def _post(service: ServiceProcess, body: bytes) -> httpx.Response:
    return service.client.post("/v1/traces", content=body, timeout=30, headers={
        "content-type": "application/json", "authorization": f"Bearer {TOKEN}"})  # fmt: skip


def _letters(path: Path) -> list[tuple[str, str]]:
    """(reason, trace id) of every dead letter in the file (each line must parse)."""
    if not path.exists():
        return []
    out = []
    for line in path.read_bytes().splitlines():
        row = json.loads(line)
        payload = json.loads(base64.b64decode(row["value_b64"]))
        spans = payload["resourceSpans"][0]["scopeSpans"][0]["spans"]
        out.append((row["reason"], spans[0]["traceId"]))
    return out


def _tick_warnings(service: ServiceProcess) -> int:
    text = (service.workdir / "serve.log").read_text(errors="replace")
    return sum("trace ingest:" in line and "WARNING" in line for line in text.splitlines())


@pytest.mark.slow
def test_trace_dead_letters_wait_once_and_are_written_once(tmp_path: Path, tiny_fs: Path) -> None:
    dlq = tiny_fs / "dead.jsonl"
    service = ServiceProcess.start(tmp_path / "work", _config(tmp_path, dlq))
    try:
        filler = _fill(tiny_fs)
        try:
            for first in (0, 5, 10):  # 3 requests of 5 traces without a root: all kept
                assert _post(service, _orphans(first, 5)).status_code == 200
            # the first timed-out traces' letters wait; no further trace is handed out
            service.wait_until(lambda _: service.readyz() == 503, 60, "readyz naming the file")
            # the waiting letters are the trace ingest's, not queued for every checkpoint:
            # a good /v1/events request is still acknowledged
            event = {"event_id": "e-1", "timestamp": "2026-11-29T10:00:00Z",
                     "question": "when does the pool open"}  # fmt: skip
            assert service.post_events(event).status_code == 200
            time.sleep(1.0)  # about 20 ticks while the disk stays full (before: 20 batches)
            assert service.readyz() == 503
        finally:
            filler.unlink()
        service.wait_until(lambda _: len(_letters(dlq)) >= 15, 60, "the letters written")
        service.wait_until(lambda _: service.readyz() == 200, 60, "ready again")
        letters = _letters(dlq)
        assert service.metric("goldwatch_traces_unmapped_total") == 15
        assert sorted(letters) == sorted(("missing_field", _trace_id(n)) for n in range(15))
        assert dlq.stat().st_size < 40_000  # 15 letters of ~1.5 kB, not a growing batch
        assert _tick_warnings(service) == 1  # when the hand-over started waiting
        assert "went through" in (service.workdir / "serve.log").read_text()
    finally:
        service.kill()


@pytest.mark.slow
def test_a_503_for_unwritable_dead_letters_keeps_nothing_of_the_request(
    tmp_path: Path, tiny_fs: Path
) -> None:
    dlq = tiny_fs / "dead.jsonl"
    service = ServiceProcess.start(tmp_path / "work", _config(tmp_path, dlq))
    big = _rooted(1, note=MARKER + "y" * 5000)  # over max_attribute_bytes: cut, dead-lettered
    try:
        filler = _fill(tiny_fs)
        try:
            refused = _post(service, big)
            assert refused.status_code == 503, refused.text
            assert refused.json()["message"] == "cannot write dead letters"
            assert refused.headers["retry-after"] and MARKER not in refused.text
            # a later trace settles and is processed; the refused one, older, must not be
            assert _post(service, _rooted(2)).status_code == 200
            service.wait_until(lambda s: s["totals"]["processed"] == 1, 60, "trace 2 processed")
        finally:
            filler.unlink()
        assert service.metric("goldwatch_trace_spans_rejected_total",
                              reason="attribute_too_large") == 0  # fmt: skip
        again = _post(service, big)  # the exporter's retry
        assert again.status_code == 200, again.text
        assert again.json()["partialSuccess"]["errorMessage"].endswith("attribute_too_large (1)")
        totals = service.wait_until(lambda s: s["totals"]["processed"] == 2, 60, "processed")
        assert totals["totals"]["duplicates"] == 0
        assert _letters(dlq) == [("attribute_too_large", _trace_id(1))]
        assert service.metric("goldwatch_trace_spans_rejected_total",
                              reason="attribute_too_large") == 1  # fmt: skip
    finally:
        service.kill()
