"""HTTP ingest while the state disk is full: 503 and nothing acknowledged, no dead letter lost.

``goldwatch serve`` (HTTP ingest only) keeps its state file and its HTTP dead-letter file on
their own tmpfs, which the test fills. A request that cannot be made durable must get a 503
with a JSON body (not a 500 with a traceback), and every dead letter the totals count must be
in the dead-letter file once the disk has room again, also after a SIGKILL and restart (a
trial found a dead letter counted, checkpointed and never written). Needs mount rights
(root with CAP_SYS_ADMIN, as in CI); skipped elsewhere.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.acceptance.service_process import ServiceProcess, accounted
from tests.reliability.conftest import MountTmpfs, fill

MARKER = "zq-planted-7731"  # user text that must never come back in an error


def _event(event_id: str) -> dict[str, str]:
    return {"event_id": event_id, "timestamp": "2026-11-29T10:00:00Z",
            "question": f"when does the library open {MARKER}"}  # fmt: skip


def _batch(event_id: str) -> bytes:
    """One good event and one whose timestamp is no time (a dead letter), as one request."""
    bad = {**_event(f"{event_id}-bad"), "timestamp": f"half past {MARKER}"}
    return json.dumps([_event(event_id), bad]).encode()


@pytest.fixture()
def state_fs(tmpfs: MountTmpfs) -> Path:
    return tmpfs("16m", "goldwatch-ingest", "statefs")


def _dead_letter_lines(path: Path) -> list[dict[str, object]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_bytes().splitlines()]


def test_full_disk_gets_503_and_every_counted_dead_letter_is_written(
    tmp_path: Path, state_fs: Path
) -> None:
    config = {"source": {"kind": "none"}, "state": {"path": str(state_fs / "state.sqlite")}}
    service = ServiceProcess.start(tmp_path / "work", config)
    dlq = state_fs / "goldwatch.dlq.jsonl"
    try:
        assert service.post_events(_event("before")).status_code == 200
        filler = fill(state_fs)
        try:
            refused = [service.post_events(None, raw=_batch("during")) for _ in range(2)]
            refused.append(service.post_events(_event("during-good-only")))
            assert service.get("/metrics").status_code == 200  # still serving
        finally:
            filler.unlink()
        for response in refused:
            assert response.status_code == 503, response.text
            body = response.json()
            assert body["error"] == "unavailable"
            assert MARKER not in response.text
            assert response.headers["retry-after"]
        # disk back: the client retries; now acknowledged, durably
        again = service.post_events(None, raw=_batch("during"))
        assert again.status_code == 200, again.text
        assert service.post_events(_event("during-good-only")).status_code == 200
        totals = service.totals()
        # consumed: 1 + 1 refused + 2 + 1 retried. The two refused "during" requests were
        # not applied (their dead letter could not be written); "during-good-only" was
        # processed by its refused request (kept in memory, not acknowledged: the state
        # could not be checkpointed) and deduplicated after
        assert totals["consumed"] == 1 + 1 + 2 + 1
        assert totals["processed"] == 3  # before, during, during-good-only
        assert totals["duplicates"] == 1
        assert totals["dead_lettered"] == {"wrong_type": 1}  # written and counted once
        assert accounted(totals) + totals["duplicates"] == totals["consumed"]
        letters = _dead_letter_lines(dlq)
        assert [letter["reason"] for letter in letters] == ["wrong_type"]
        service.kill()
        service = service.restart()
        after = service.totals()
        assert after["dead_lettered"] == {"wrong_type": 1} and after["processed"] == 3
        assert len(_dead_letter_lines(dlq)) == 1
    finally:
        service.kill()
