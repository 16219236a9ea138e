"""``POST /v1/traces`` under more traces than assembly holds: trial probe 2's scenario (item 5),
scaled down.

A real ``goldwatch serve`` (HTTP only, analytics on, ``traces.assembly.max_open_traces``
``--max-open``, the default ``settle_s`` of 2 s) receives ``--traces`` OpenInference traces of
3 spans (root with a question, retriever, LLM), 20 per OTLP protobuf request, from 4 sender
threads as fast as they can post. A 429 or 503 is sent again after its ``Retry-After``, as an
OTLP exporter does. Printed once every trace is processed or evicted (JSON): the send time
and accepted rate, the answers by status, traces processed, evicted (dead-lettered as
``evicted``) and requests throttled.

Before backpressure every request got 200 and, once ``max_open`` traces were open, each new
trace evicted the oldest, complete or not. Run the same command on both trees to compare.

Run: ``python -m benchmarks.bench_trace_backpressure [--traces 20000] [--max-open 2000]``.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import KeyValue

from tests.acceptance.service_process import TOKEN, ServiceProcess

PER_REQUEST = 20
SENDERS = 4
T0 = 1_795_946_400_000_000_000


def _kv(key: str, value: str) -> KeyValue:
    pair = KeyValue(key=key)
    pair.value.string_value = value
    return pair


def request(first: int) -> bytes:
    """Traces ``first`` .. ``first + PER_REQUEST - 1`` as one protobuf request."""
    message = ExportTraceServiceRequest()
    spans = message.resource_spans.add().scope_spans.add().spans
    for n in range(first, first + PER_REQUEST):
        trace_id, start = (n + 1).to_bytes(16, "big"), T0 + n * 1000
        root = (n * 10 + 1).to_bytes(8, "big")
        chain = spans.add(
            trace_id=trace_id,
            span_id=root,
            name="rag",
            start_time_unix_nano=start,
            end_time_unix_nano=start + 10**8,
        )
        chain.attributes.extend(
            [
                _kv("openinference.span.kind", "CHAIN"),
                _kv("input.value", f"when does the library open on day {n % 97}"),
                _kv("output.value", "At nine."),
                _kv("user.id", "u-1"),
            ]
        )
        retriever = spans.add(
            trace_id=trace_id,
            span_id=(n * 10 + 2).to_bytes(8, "big"),
            parent_span_id=root,
            name="retrieve",
            start_time_unix_nano=start + 1,
            end_time_unix_nano=start + 1000,
        )
        retriever.attributes.extend(
            [
                _kv("openinference.span.kind", "RETRIEVER"),
                _kv("retrieval.documents.0.document.id", "p-0001"),
                _kv("retrieval.documents.0.document.score", "1.5"),
            ]
        )
        llm = spans.add(
            trace_id=trace_id,
            span_id=(n * 10 + 3).to_bytes(8, "big"),
            parent_span_id=root,
            name="llm",
            start_time_unix_nano=start + 2000,
            end_time_unix_nano=start + 3000,
        )
        llm.attributes.extend([_kv("openinference.span.kind", "LLM"),
                               _kv("output.value", "At nine.")])  # fmt: skip
    return bytes(message.SerializeToString())


def send_all(base: str, traces: int) -> dict[str, Any]:
    """Post every request from :data:`SENDERS` threads, retrying 429/503 after Retry-After."""
    answers: dict[int, int] = {}
    firsts = list(range(0, traces, PER_REQUEST))
    lock = threading.Lock()

    def post(body: bytes) -> tuple[int, float]:
        sent = urllib.request.Request(
            base + "/v1/traces",
            data=body,
            method="POST",
            headers={"Content-Type": "application/x-protobuf", "Authorization": f"Bearer {TOKEN}"},
        )
        try:
            with urllib.request.urlopen(sent, timeout=120) as answer:
                return answer.status, 0.0
        except urllib.error.HTTPError as exc:
            return exc.code, float(exc.headers.get("Retry-After") or 1)

    def sender() -> None:
        while True:
            with lock:
                if not firsts:
                    return
                body = request(firsts.pop())
            while True:
                code, retry_after = post(body)
                with lock:
                    answers[code] = answers.get(code, 0) + 1
                if code not in (429, 503):
                    break
                time.sleep(retry_after)

    started = time.monotonic()
    threads = [threading.Thread(target=sender) for _ in range(SENDERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    seconds = time.monotonic() - started
    return {"send_s": round(seconds, 1), "accepted_traces_per_s": round(traces / seconds),
            "answers": {str(k): v for k, v in sorted(answers.items())}}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--traces", type=int, default=20_000)
    parser.add_argument("--max-open", type=int, default=2_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        config = {"source": {"kind": "none"}, "state": {"path": str(Path(tmp) / "state.sqlite")},
                  "traces": {"assembly": {"max_open_traces": args.max_open}}}  # fmt: skip
        service = ServiceProcess.start(Path(tmp) / "work", config)
        try:
            result = send_all(service.base_url, args.traces)

            def settled(status: dict[str, Any]) -> bool:
                evicted = service.metric("goldwatch_trace_spans_rejected_total", reason="evicted")
                return bool(status["totals"]["processed"] + evicted / 3 >= args.traces)

            totals = service.wait_until(settled, 900, "every trace processed or evicted")["totals"]
            evicted = service.metric("goldwatch_trace_spans_rejected_total", reason="evicted") / 3
            throttled = service.metric("goldwatch_trace_requests_throttled_total")
        finally:
            service.kill()
    print(json.dumps({"traces": args.traces, "max_open_traces": args.max_open, **result,
                      "processed": totals["processed"], "evicted_traces": evicted,
                      "throttled_requests": throttled}))  # fmt: skip


if __name__ == "__main__":
    main()
