"""The status page: ``render_status_page`` and the ``GET /`` route (on a stub runtime)."""

from __future__ import annotations

import asyncio
import copy
import html
import random
import string
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import httpx
import pytest
from fastapi import FastAPI
from prometheus_client import CollectorRegistry

from service.api import harvest_routes, status_page
from service.harvest import HarvestStage, MemoryCandidates
from service.harvest.config import REASONS, HarvestConfig
from service.harvest.labelling import CandidateItem, Labelling, Page
from service.html import render_status_page
from service.html.drift_section import drift_section
from service.html.status import SectionCache, moved_section
from service.quality.by_language import flag_agreement_rows, flag_agreement_text
from service.runtime.process import EngineBusy
from service.shadow.not_compared import count
from service.telemetry import build_harvest_metrics
from tests.service.harvest.helpers import batch, event
from tests.service.html import samples
from tests.service.html.structure import external, parse

STATUS: dict[str, Any] = {
    "version": "1.2.3", "ready": False, "not_ready_reasons": ["source not connected"],
    "uptime_s": 61.4, "source_kind": "kafka",
    "source": {"topic": "queries", "lag": {"0": 5}, "assigned": [0, 1]},
    "input_finished": False,
    "totals": {"consumed": 12, "processed": 10, "dead_lettered": {"bad_json": 2}},
    "last_error": "<script>alert('broker')</script>",
}  # fmt: skip


def test_page_sections_refresh_and_escaping() -> None:
    page = render_status_page(STATUS, samples.replay_report()["analytics"], refresh_s=30)
    parsed = parse(page)
    assert parsed.unbalanced == [] and parsed.scripts == 0
    assert parsed.meta_refresh == "30"
    # what moved first, process internals last
    assert parsed.sections == ["moved", "languages", "topics", "drift", "refusals", "process"]
    assert parsed.svgs == 4
    assert external(parsed.urls) == []  # links are same-origin: /v1/status, /metrics...
    assert "/v1/drift" in parsed.urls
    assert "&lt;script&gt;alert(&#x27;broker&#x27;)&lt;/script&gt;" in page
    assert '<span class="badge fail">fail</span> source not connected' in page
    assert "<tr><td>dead_lettered: bad_json</td><td>2</td></tr>" in page
    assert '<tr><td>lag: 0</td><td class="text">5</td></tr>' in page  # source table
    assert '<tr><td>uptime</td><td class="text">61 s</td></tr>' in page


def test_busy_and_no_refresh() -> None:
    page = render_status_page(STATUS, None, refresh_s=0, busy=True)
    parsed = parse(page)
    assert parsed.meta_refresh is None
    assert parsed.sections == ["analytics", "process"]
    assert "The pipeline is busy" in page
    with pytest.raises(ValueError, match="refresh_s"):
        render_status_page(STATUS, None, refresh_s=-1)


class StubRuntime:
    def __init__(self, analytics: dict[str, Any] | None, busy: bool = False) -> None:
        self.analytics, self.busy = analytics, busy

    def status(self) -> dict[str, Any]:
        return STATUS

    def analytics_report(self) -> dict[str, Any] | None:
        if self.busy:
            raise EngineBusy("busy")
        return self.analytics


def _app(runtime: StubRuntime) -> FastAPI:
    app = FastAPI()
    app.include_router(status_page.router)
    app.state.runtime = runtime
    return app


def _get(
    runtime: StubRuntime, params: dict[str, int] | None = None, app: FastAPI | None = None
) -> httpx.Response:
    """GET / on an app holding only the status router, in process (ASGI transport)."""
    app = app or _app(runtime)

    async def get() -> httpx.Response:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
            return await client.get("/", params=params)

    return asyncio.run(get())


def test_route_serves_the_page() -> None:
    runtime = StubRuntime(samples.replay_report()["analytics"])
    response = _get(runtime, {"refresh": 5})
    assert response.status_code == 200
    assert response.headers["content-type"] == "text/html; charset=utf-8"
    assert response.headers["cache-control"] == "no-store"
    parsed = parse(response.text)
    assert parsed.meta_refresh == "5"
    assert parsed.sections == ["moved", "languages", "topics", "drift", "refusals", "process"]
    assert _get(runtime, {"refresh": 3601}).status_code == 422


def test_route_when_busy_or_analytics_off() -> None:
    busy = _get(StubRuntime(None, busy=True))
    assert busy.status_code == 200 and "The pipeline is busy" in busy.text
    off = _get(StubRuntime(None))
    assert "Analytics are disabled." in off.text
    assert parse(off.text).meta_refresh == "15"


@pytest.mark.slow
def test_section_cache_redraws_only_when_the_analytics_change() -> None:
    analytics = samples.replay_report()["analytics"]
    cache = SectionCache()
    first = render_status_page(STATUS, analytics, cache=cache)
    assert render_status_page(STATUS, analytics, cache=cache) == first
    assert cache.renderings == 1
    changed = {**analytics, "refusals": {**analytics["refusals"], "answers": 9, "refused": 3,
                                         "rate": 1 / 3}}  # fmt: skip
    assert "33.3%" in render_status_page(STATUS, changed, cache=cache)
    assert cache.renderings == 2
    assert render_status_page(STATUS, analytics) == first  # the same page without a cache


def test_route_keeps_one_cache_per_app() -> None:
    runtime = StubRuntime(samples.replay_report()["analytics"])
    app = _app(runtime)
    assert _get(runtime, app=app).text == _get(runtime, app=app).text
    assert app.state.status_page_cache.renderings == 1


class ShadowRuntime(StubRuntime):
    def shadow_report(self) -> dict[str, Any]:
        return samples.shadow()


class StubLabelling:
    """The slice of ``service.harvest.labelling.Labelling`` the page uses."""

    def __init__(self) -> None:
        self.calls: list[tuple[str | None, int]] = []

    def list(self, status: str | None = None, limit: int = 50) -> Any:
        self.calls.append((status, limit))
        item = {"id": "c-0123456789abcdef", "question": samples.HARVESTED, "count": 4,
                "reasons": ["refused", "gap"], "reason_counts": {"refused": 3, "gap": 1},
                "language": "en", "topic": "fees", "status": "suggested"}  # fmt: skip
        return Page(1, [cast(CandidateItem, item)])  # no near-duplicate left out

    def counts(self) -> dict[str, int]:
        return {"suggested": 1, "accepted": 0, "rejected": 0}


def test_route_shows_shadow_and_suggestions_when_the_service_has_them() -> None:
    runtime = ShadowRuntime(samples.replay_report()["analytics"])
    app = _app(runtime)
    app.state.harvest = labelling = StubLabelling()
    page = _get(runtime, app=app).text
    assert parse(page).sections == ["moved", "languages", "topics", "drift", "refusals",
                                    "shadow", "gold-candidates", "process"]  # fmt: skip
    assert labelling.calls == [("suggested", status_page.SUGGESTIONS)]
    assert "<td>4</td><td>refused=3, gap=1</td><td>en</td><td>fees</td>" in page
    assert "&lt;script&gt;console.error(&#x27;harvest&#x27;)" in page and "<script" not in page


def test_page_opens_with_what_moved() -> None:
    analytics = samples.replay_report()["analytics"]
    extras = {
        "shadow": samples.shadow(),
        "gold_candidates": {
            "n_suggestions": 7,
            "top": [{"id": "c-1", "question": "Hostel ka fee semester wise dena hai ya yearly?"}],
        },
    }
    page = render_status_page(STATUS, analytics, extras=extras)
    moved = page[page.index('<section id="moved">') : page.index('<section id="languages">')]
    # the sample's drift: language (reference) hi-Latn 25 % -> 40 %, en 75 % -> 60 %;
    # refusals (baseline) 10 % -> 40 %
    # (a gold-set comparison says what it is, trial 41 L1)
    assert ("language (reference): rising: hi-Latn 25%→40%; falling: en 75%→60% (a standing "
            "gap to the gold set, not a dated change)<br>"
            "refusal (baseline): 10.0% → 40.0%") in moved  # fmt: skip
    # the refusals row leads with its one line; how they were counted is collapsed below it
    # (trial 43 L3: the method, the rates by language and the flag's measurement in one
    # paragraph buried the rate)
    assert "25.0% of 8 answers refused; refusal drift: drift<details><summary>" in moved  # 2 in 8
    details = moved[moved.index("<details>") : moved.index("</details>")]
    assert "answer.refused decided 5 answers, phrase patterns 3" in details
    assert "set answer.refused for exact counts)" in details
    assert "no answers" not in moved
    assert "bm25-v2: RBO 0.750, same first passage 90.0% of 9 compared" in moved
    assert "7 suggested; first: Hostel ka fee semester wise dena hai ya yearly?" in moved
    assert page.index('id="moved"') < page.index('id="process"')


def test_what_moved_marks_uncalibrated_shares_as_the_drift_table_does() -> None:
    """A fourth trial's page said "topic (reference): rising: novel 5%→24%, places 18%→33%"
    as fact while the same page called the novel share UNCALIBRATED and its drift table
    "raises no alarm"; an uncalibrated dimension in drift is marked too."""
    analytics = samples.replay_report()["analytics"]
    drift = analytics["drift"]
    why = "uncalibrated: novelty ROC AUC 0.642 [0.542, 0.724] is below the quality floor 0.75"
    drift["topic"]["comparisons"]["reference"] = {
        "comparison": "reference", "state": "drift", "timestamp": samples.T0, "n_reference": 60,
        "n_current": 436, "js_divergence": 0.1, "p_value": 1e-5, "alpha": 1e-4,
        "new_categories": [],
        "rising": [{"category": "novel", "reference_share": 0.05, "current_share": 0.24},
                   {"category": "places", "reference_share": 0.18, "current_share": 0.33}],
        "falling": [{"category": "science", "reference_share": 0.28, "current_share": 0.16}],
    }  # fmt: skip
    drift["topic"]["suppressed_categories"] = {"novel": why}
    drift["out_of_scope"]["comparisons"]["baseline"] = {
        "comparison": "baseline", "state": "drift", "timestamp": samples.T0, "n_reference": 291,
        "n_current": 145, "rate_reference": 0.206, "rate_current": 0.372,
    }  # fmt: skip
    scope_why = "uncalibrated: out_of_scope ROC AUC 0.514 is below the quality floor 0.75"
    drift["suppressed_dimensions"] = {"out_of_scope": scope_why}
    page = render_status_page(STATUS, analytics)
    moved = page[page.index('<section id="moved">') : page.index('<section id="languages">')]
    assert (
        "topic (reference): rising: places 18%→33%; falling: science 28%→16%; rising, raises no "
        f"alarm: novel 5%→24% ({why}) (a standing gap to the gold set, not a dated change)<br>"
    ) in moved  # (a gold-set comparison: what it is, trial 41 L1)
    assert "rising: novel" not in moved
    assert f"out_of_scope (baseline): 20.6% → 37.2%; raises no alarm: {scope_why}" in moved
    table = page[page.index('<section id="drift">') :]
    assert f"rising, raises no alarm: novel 5%→24% ({why})" in table  # the same words


def test_suggestions_show_the_totals_by_status_and_the_shed_count(tmp_path: Path) -> None:
    """30 distinct refused questions in one batch with at most 23 new per batch: 23 kept,
    7 shed; 2 of the 23 rejected: 21 undecided, 23 in all, though only 20 are listed."""
    registry = CollectorRegistry()
    metrics = build_harvest_metrics(registry, REASONS)
    repo = MemoryCandidates()
    stage = HarvestStage(HarvestConfig(flush_interval_s=0, max_new_per_batch=23), sinks=[repo])
    rng = random.Random(7)  # 30 texts of random letters: no two are near-duplicates
    questions = [" ".join("".join(rng.choices(string.ascii_lowercase, k=6)) for _ in range(5))
                 for _ in range(30)]  # fmt: skip
    stage.process(batch([event(f"e{i}", q, minute=i) for i, q in enumerate(questions)],
                        [{"refused": True} for _ in questions]))  # fmt: skip
    stage.flush(force=True)
    metrics.observe(stage.pending_observations())
    labelling = Labelling(repo, tmp_path / "gold.jsonl", HarvestConfig())
    ids = [row["id"] for row in repo.all()]
    assert len(ids) == 23
    for cid in ids[:2]:
        labelling.reject(cid, "not a real question")
    assert labelling.counts() == {"suggested": 21, "accepted": 0, "rejected": 2}
    runtime = StubRuntime(samples.replay_report()["analytics"])
    runtime.registry = registry  # type: ignore[attr-defined]
    runtime.live = SimpleNamespace(harvest=stage)  # type: ignore[attr-defined]
    app = _app(runtime)
    app.state.harvest = labelling
    page = _get(runtime, app=app).text
    moved = page[page.index('<section id="moved">') : page.index('<section id="languages">')]
    assert (
        "21 suggested (23 in all: 0 accepted, 2 rejected); shed 7 since this process started "
        "(harvest.max_new_per_batch 23; the count depends on how fast events arrived)"
    ) in moved
    listed = page[page.index('<section id="gold-candidates">') :]
    assert "21 suggestions (by reason" not in listed  # the page's list has no by_reason
    assert "21 suggestions undecided; decided: 0 accepted, 2 rejected" in listed
    assert "Shed: 7 picked events whose new question was over harvest.max_new_per_batch" in listed
    # serve's count depends on its batches, so on how fast the events came (trial 41: 588 and
    # 701 on two runs of one file); the page says so, and what a replay does
    assert ("the count depends on how fast events arrived (a batch holds what came while the "
            "last one ran); a replay of the same file sheds none unless "
            "harvest.max_new_per_batch is set in its configuration.") in listed  # fmt: skip
    assert "1 more suggestions not shown." in listed  # 21 undecided, 20 listed


def test_the_suggestions_panel_and_json_say_the_comparisons_not_made(tmp_path: Path) -> None:
    """Trial 45, L3: serve at 400 events/s kept 315 suggestions with shadow_disagreement
    against a replay's 983, and the page said only "shed 0". Next to shed, the page and
    GET /v1/gold-candidates now say how many events had no completed shadow comparison."""
    registry = CollectorRegistry()
    build_harvest_metrics(registry, REASONS)
    repo = MemoryCandidates()
    stage = HarvestStage(HarvestConfig(flush_interval_s=0), sinks=[repo])
    counts = {"tfidf": count({"queued": 1527, "scrubbed": 256, "cpu_budget": 3304,
                               "queue_full": 169}, {}, 1527)}  # fmt: skip
    shadow = SimpleNamespace(not_compared=lambda: counts)
    runtime = StubRuntime(samples.replay_report()["analytics"])
    runtime.registry = registry  # type: ignore[attr-defined]
    runtime.live = SimpleNamespace(harvest=stage, shadow=shadow)  # type: ignore[attr-defined]
    app = _app(runtime)
    app.include_router(harvest_routes.router)
    app.state.harvest = Labelling(repo, tmp_path / "gold.jsonl", HarvestConfig())
    page = _get(runtime, app=app).text
    # 5,256 offered - 1,527 compared = 3,729 = 256 + 3,304 + 169; load: 3,304 + 169 = 3,473
    said = (
        "shadow_not_compared: tfidf 3729 of 5256 offered events (scrubbed 256, cpu_budget "
        "3304, queue_full 169) had no completed comparison by that candidate (over the "
        "state's whole history, restarts included), so they could get no "
        "shadow_disagreement reason from it; 3473 for load (cpu_budget, queue_full)"
    )
    moved = page[page.index('<section id="moved">') : page.index('<section id="languages">')]
    moved = html.unescape(moved)  # the page escapes the apostrophe of "state's"
    assert "shed 0 since this process started" in moved and said in moved
    listed = html.unescape(page[page.index('<section id="gold-candidates">') :])
    assert "Shed: 0" in listed and said[0].upper() + said[1:] in listed

    async def get() -> httpx.Response:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
            return await client.get("/v1/gold-candidates")

    body = asyncio.run(get()).json()
    assert body["shed"] == 0
    assert body["shadow_not_compared"] == {"tfidf": {
        "offered": 5256, "compared": 1527, "not_compared": 3729,
        "by_cause": {"scrubbed": 256, "cpu_budget": 3304, "queue_full": 169}}}  # fmt: skip


def test_the_shadow_line_says_which_events_it_compared() -> None:
    """A review of trial 15's backlog fix: ``compared_from``/``compared_to`` were only in
    /v1/shadow's JSON, so the page's "RBO 0.992" still read as the whole log's figure."""
    shadow = samples.shadow()
    for candidate in shadow["candidates"].values():
        candidate.update(compared_from="2026-11-30T09:00:12.5Z", compared_to="2026-12-04T17:59:01Z")
    page = render_status_page(STATUS, samples.replay_report()["analytics"],
                              extras={"shadow": shadow})  # fmt: skip
    moved = page[page.index('<section id="moved">') : page.index('<section id="languages">')]
    assert ("bm25-v2: RBO 0.750, same first passage 90.0% of 9 compared (events of "
            "2026-11-30 09:00 to 2026-12-04 17:59 UTC)") in moved  # fmt: skip


def test_a_rate_test_shows_the_interval_of_its_change() -> None:
    # trial 19: "refusal ok 12.0% → 21.1%" read as a missed alarm: 28 of 133 refused in the
    # window against 32 of 267 in the baseline. Newcombe's hybrid score interval of the
    # change (Wilson bounds from scipy's binomtest: [0.1499, 0.2874] and [0.0862, 0.1643]):
    # 0.0907 - sqrt((0.2105 - 0.1499)^2 + (0.1643 - 0.1199)^2) = +0.0155 and
    # 0.0907 + sqrt((0.2874 - 0.2105)^2 + (0.1199 - 0.0862)^2) = +0.1746: its low end under
    # the 2.5 points that clear an alarm, which the page now shows
    analytics = copy.deepcopy(samples.replay_report()["analytics"])
    test = analytics["drift"]["refusal"]["comparisons"]["baseline"]
    test.update(state="ok", rate_reference=32 / 267, rate_current=28 / 133, ci_low=0.015474,
                ci_high=0.174634)  # fmt: skip
    analytics["drift"]["refusal"]["state"] = "ok"
    page = render_status_page(STATUS, analytics)
    assert "12.0% → 21.1% (change 95 % [+1.5, +17.5] points)" in page


def test_the_patterns_against_the_flag_stand_next_to_the_refusal_rate() -> None:
    """Trial 23: where the producer's ``answer.refused`` measured the patterns, the status
    page's refusal row and its refusals section both say so (``against_flag_text``)."""
    analytics = samples.replay_report()["analytics"]
    sentence = ("the phrase patterns against answer.refused (the answers that set it and have a "
                "text; Wilson 95 %): de recall 0/99 0.000 [0.000, 0.037], precision none read "
                "as refusals (716 answers)")  # fmt: skip
    analytics["refusals"] = {**analytics["refusals"], "against_flag_text": sentence}
    page = render_status_page(STATUS, analytics, refresh_s=0)
    moved = page[page.index('<section id="moved">') : page.index('<section id="languages">')]
    details = moved[moved.index("<details>") : moved.index("</details>")]
    assert f"<br>{sentence}" in details  # the "What moved" row, collapsed under its first line
    assert sentence[0].upper() + sentence[1:] + "." in page  # the refusals section


def test_the_refusal_row_leads_with_the_rate_and_the_flag_verdict_in_one_line() -> None:
    """Trial 43 L3: the row's answer ("11.5 % refused, exact against the flag") was buried in
    ~250 words. The trial's counts per language (checked, flagged, read, both): en 565/117/
    117/117, zh 239/12, ar 223/12, ru 211/7, es 192/19, de 178/13 (each read = both =
    flagged), bg 2/0/0/0: 1,610 answers set the flag, 180 of them refusals, and the patterns
    read exactly those 180. The per-language intervals stay, collapsed."""
    analytics = copy.deepcopy(samples.replay_report()["analytics"])
    counts = {"en": (565, 117), "zh": (239, 12), "ar": (223, 12), "ru": (211, 7),
              "es": (192, 19), "de": (178, 13), "bg": (2, 0)}  # fmt: skip
    rows = flag_agreement_rows({k: (n, f, f, f) for k, (n, f) in counts.items()})
    analytics["refusals"].update(answers=4000, refused=459, rate=459 / 4000, against_flag=rows,
                                 against_flag_text=flag_agreement_text(rows))  # fmt: skip
    moved = str(moved_section(analytics))
    cell = moved[moved.index('href="#refusals"') :]
    start = cell.index('<td class="text">') + len('<td class="text">')
    head = cell[start : cell.index("<details>")]
    assert head == ("11.5% of 4000 answers refused; refusal drift: drift; read from the text: "
                    "exact against answer.refused (all 180 flagged refusals and no other, on "
                    "the 1610 answers that set it)")  # fmt: skip
    details = cell[cell.index("<details>") : cell.index("</details>")]
    assert "en precision 117/117 1.000 [0.968, 1.000]" in details  # the intervals, kept
    assert "[" not in head  # no interval in the first line


def test_a_language_alarm_of_known_miss_is_named_in_what_moved_and_the_drift_table() -> None:
    # trial 43 H1: German's known questions missed 3 of 39 (7.7 %) in the baseline and 29 of
    # 42 (69.0 %) now; pooled 3.3 % -> 11.7 %. English's own test stays ok: not named
    analytics = copy.deepcopy(samples.replay_report()["analytics"])
    drift = analytics["drift"]
    drift.setdefault("known_miss", {"state": "ok", "comparisons": {}})
    test = dict(drift["refusal"]["comparisons"]["baseline"])
    test.update(state="drift", rate_reference=0.033, rate_current=0.117, ci_low=None,
                ci_high=None, languages=[
                    {"language": "de", "n_reference": 39, "n_current": 42,
                     "rate_reference": 3 / 39, "rate_current": 29 / 42, "state": "drift"},
                    {"language": "en", "n_reference": 300, "n_current": 310,
                     "rate_reference": 0.03, "rate_current": 0.04, "state": "ok"}])  # fmt: skip
    drift["known_miss"]["comparisons"] = {"baseline": test}
    drift["known_miss"]["state"] = "drift"
    page = str(render_status_page(STATUS, analytics))
    moved = page[page.index('id="moved"') :]
    moved = moved[: moved.index("</section>")]
    named = "3.3% → 11.7%; rising in de: 7.7% of 39 → 69.0% of 42"
    assert f"known_miss (baseline): {named}" in moved
    assert "in en" not in page
    # the drift table's row too (the sample's known_miss is off for want of a gold set: on)
    table = str(drift_section(drift))
    assert "3.3% → 11.7%; rising in de: 7.7% of 39 → 69.0% of 42" in table
    assert "in en" not in table
