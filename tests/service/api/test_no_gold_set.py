"""Issue 18 item 1, the service: without a configured gold set nothing stands in for it.
What needs no gold set runs (languages, refusals), and ``/v1/status`` and the status page say
first that gold-set comparisons are off and which setting turns them on."""

from __future__ import annotations

import html
from pathlib import Path

import httpx

from service.settings import GOLD_SET_OFF, load_settings
from tests.service.api.test_app import TOKEN, Server, _event, _free_port

AUTH = {"authorization": f"Bearer {TOKEN}"}


def test_status_json_page_and_gold_runs_say_the_gold_set_is_off(tmp_path: Path) -> None:
    settings = load_settings(
        state={"path": tmp_path / "state.sqlite"}, api={"port": _free_port(), "token": TOKEN},
        # a gold-set run would need the gold set (a production retriever of the app's own:
        # bm25 would need a corpus too, refused at load)
        retrievers=[{"name": "prod", "kind": "http", "url": "http://127.0.0.1:9/search"}],
        shadow={"production": "prod"},
    )  # fmt: skip
    assert settings.gold_set is None and settings.corpus is None
    events = [{**_event(f"n{i}", q), "answer": {"text": a}} for i, (q, a) in enumerate([
        ("who wrote the declaration of independence", "Thomas Jefferson wrote it."),
        ("how do I block my lost debit card", "Sorry, I can't help with that."),
    ])]  # fmt: skip
    with Server(settings) as server:
        assert server.post(events).status_code == 200
        status = httpx.get(server.base + "/v1/status").json()
        page = httpx.get(server.base + "/").text
        evaluate = httpx.post(server.base + "/v1/shadow/evaluate", headers=AUTH)
        refusals = httpx.get(server.base + "/v1/refusals").json()
        quality = httpx.get(server.base + "/v1/quality")
        candidates = httpx.get(server.base + "/v1/gold-candidates")
    assert list(status)[0] == "notices" and status["notices"] == [GOLD_SET_OFF]
    assert "gold_set:" in GOLD_SET_OFF and "GOLDWATCH_GOLD_SET" in GOLD_SET_OFF
    # the page's first paragraph after the title is the notice
    body = page[page.index("<h1>") :]
    assert body[body.index("</h1>") + 5 :].startswith('<p class="notice">')
    assert html.escape(GOLD_SET_OFF, quote=False) in page
    assert evaluate.status_code == 404 and GOLD_SET_OFF in evaluate.text
    # what needs no gold set ran: one of the two answers was a refusal
    # neither event sets answer.refused: both decided by the patterns
    assert {k: refusals["refusals"][k] for k in ("answers", "refused", "rate", "by_flag",
            "by_patterns")} == {"answers": 2, "refused": 1, "rate": 0.5, "by_flag": 0,
                                "by_patterns": 2}, refusals  # fmt: skip
    # what needs one is off rather than measured against a stand-in
    assert candidates.status_code == 404
    assert quality.status_code == 404 and "no gold set" in quality.text
