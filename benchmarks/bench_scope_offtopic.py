"""Trial 46 F5: an encyclopedia RAG whose gold set holds SQuAD 2.0's in-domain "impossible"
questions, and the off-topic rows ``config check`` asks for (``python -m
benchmarks.bench_scope_offtopic OUT``).

The user's setup, rebuilt from ``../shared/data``:

* corpus: the 411 distinct paragraphs of the SQuAD 2.0 dev sample;
* gold set: its first 30 answerable and first 15 impossible questions (``kind: unanswerable``,
  ``gold: []``: on topic, answer missing);
* the advice followed: CLINC150 ``oos_train`` questions appended as ``kind: unanswerable``,
  ``gold: []`` rows, as many as ``config check`` asks (``offtopic_rows``);
* the drift windows two days long (:data:`WINDOW_S`: the bench's choice, longer than the
  report's advice for this traffic, ~9 h);
* two 5,000-event logs over 8 days (625 a day): the other SQuAD questions (answerable and
  impossible) with CLINC150 ``oos_test`` questions off topic, 7 % of the events, then 25 %
  from day 5 (the rise), and 7 % throughout (the control).
"""

from __future__ import annotations

import json
import random
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from benchmarks.datasets import SHARED_DATA
from benchmarks.drift_streams import write_jsonl
from benchmarks.goldsets import write_squad2

#: Gold rows of the user's set: answerable, in-domain unanswerable (SQuAD "impossible").
N_ANSWERABLE, N_IMPOSSIBLE = 30, 15
#: The replay logs: events, days, the day the rise starts (1-based), the off-topic shares.
N_EVENTS, N_DAYS, RISE_DAY, BEFORE, AFTER = 5_000, 8, 5, 0.07, 0.25
START = datetime(2026, 11, 1, tzinfo=UTC)
#: The drift window and baseline warm-up of the config (s): 625 events a day hold ~26 scored
#: questions an hour, and an out-of-scope window needs ``analytics.drift.min_count`` (200),
#: and the report advises "raise analytics.drift.window_s to about 9 h". Measured (review of
#: s47-f5 and its fix, the rise from event 2,500): ~9 h windows and warm-up opened the
#: out-of-scope alarm at event 3,148 (~25 h into the rise) and closed it at 3,492, ~13 h later
#: (transient); 24 h at 4,721 (3.5 days in); these 48 h windows (~1,100 events each) at 3,728
#: (~47 h in), held to the end; the default windows raised nothing; the 7 % control nothing at
#: 9 h, 24 h or 48 h. The bench takes 48 h: the alarm that stays open, not the report's advice.
WINDOW_S = 172_800


def _clinc(split: str, root: Path) -> list[str]:
    data = json.loads((root / "clinc150" / "data_full.json").read_text(encoding="utf-8"))
    return list(dict.fromkeys(text for text, _ in data[split]))


def user_setup(out: Path, root: Path = SHARED_DATA) -> dict[str, Any]:
    """Write the user's corpus, gold set (``gold.jsonl``), config (``goldwatch.yaml``) and
    the two replay logs (``rise.jsonl``, ``control.jsonl``) under ``out``; returns their paths
    and the in-domain questions left for live traffic."""
    squad = out / "squad"
    all_gold, corpus = write_squad2(squad, root)
    rows = [json.loads(line) for line in all_gold.read_text(encoding="utf-8").splitlines()]
    answerable = [r for r in rows if r["gold"]]
    impossible = [r for r in rows if not r["gold"]]
    gold = answerable[:N_ANSWERABLE] + impossible[:N_IMPOSSIBLE]
    gold_path = write_jsonl(out / "gold.jsonl", gold)
    config = out / "goldwatch.yaml"
    config.write_text(f"gold_set: {gold_path}\ncorpus: {corpus}\nanalytics:\n  drift:\n"
                      f"    window_s: {WINDOW_S}\n    warmup_s: {WINDOW_S}\n",
                      encoding="utf-8")  # fmt: skip
    in_domain = [r["question"] for r in answerable[N_ANSWERABLE:] + impossible[N_IMPOSSIBLE:]]
    off_topic = _clinc("oos_test", root)
    logs = {}
    for name, after in (("rise", AFTER), ("control", BEFORE)):
        rng = random.Random(f"f5-{name}")
        events = []
        for i in range(N_EVENTS):
            day = i * N_DAYS // N_EVENTS  # 0-based
            share = after if day + 1 >= RISE_DAY else BEFORE
            pool = off_topic if rng.random() < share else in_domain
            at = START + timedelta(seconds=(i + rng.random()) * N_DAYS * 86_400 / N_EVENTS)
            events.append({
                "event_id": f"{name}-{i:05d}",
                "timestamp": at.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
                "question": rng.choice(pool),
                "answer": {"text": "According to the article, it is so.", "citations": []},
            })  # fmt: skip
        logs[name] = write_jsonl(out / f"{name}.jsonl", events)
    return {"gold": gold_path, "corpus": corpus, "config": config, "logs": logs,
            "rise_at": (RISE_DAY - 1) * N_EVENTS // N_DAYS}  # fmt: skip


def add_offtopic_rows(
    gold: Path, count: int, kind: str = "off-topic", root: Path = SHARED_DATA, skip: int = 0
) -> int:
    """Append ``count`` CLINC150 ``oos_train`` questions (after the first ``skip``) to
    ``gold`` as the advice says (``kind`` — ``off-topic`` now, ``unanswerable`` as main's
    advice said — and ``gold: []``, nothing else); returns how many were added."""
    questions = _clinc("oos_train", root)[skip : skip + count]
    with gold.open("a", encoding="utf-8") as handle:
        for i, text in enumerate(questions, start=skip):
            row = {"id": f"oos-{i:03d}", "question": text, "gold": [], "kind": kind}
            handle.write(json.dumps(row) + "\n")
    return len(questions)


def main() -> None:
    out = Path(sys.argv[1] if len(sys.argv) > 1 else "/tmp/f5")
    out.mkdir(parents=True, exist_ok=True)
    setup = user_setup(out)
    print(json.dumps({k: str(v) for k, v in setup.items()}, indent=1))


if __name__ == "__main__":
    main()
