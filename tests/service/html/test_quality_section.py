"""The live-quality block of the replay report (text) and its page section (HTML), from a
hand-built live-quality report; and the status page shows it when the service has it."""

from __future__ import annotations

from typing import Any

from service.html import render_replay_html
from service.html.quality_section import REVIEW_ROWS, quality_section
from service.jobs.replay import quality_lines, render_text
from tests.service.html import samples
from tests.service.html.structure import parse
from tests.service.html.test_status_page import StubRuntime, _app, _get

QUESTION = "<script>alert(1)</script> hra kitna milta hai"


def quality(review: int = 1, acl: bool = True) -> dict[str, Any]:
    """Two retrievers over 4 known events, 3 scored: production's reciprocal ranks 1, 1/2
    and 0 (MRR 0.5), hits 1, 1, 0 (2/3), recalls 1, 1/2, 0 (0.5); the candidate's all 1."""
    row = {"event_id": "e-7", "timestamp": "2026-11-18T17:54:13+00:00", "role": "student",
           "retriever": "production", "passage_ids": ["p-2", "p-9"], "leaked": ["p-9"],
           "question": QUESTION}  # fmt: skip
    return {
        "k": 10,
        "threshold": 0.75,
        "gold_set_version": "abc",
        "known": {
            "hybrid": {"n_known": 4, "n_scored": 3, "recall": 1.0, "hit_rate": 1.0, "mrr": 1.0},
            "production": {
                "n_known": 4,
                "n_scored": 3,
                "recall": 0.5,
                "hit_rate": 2 / 3,
                "mrr": 0.5,
            },
        },  # fmt: skip
        "refusals": {
            "known_answerable": 3,
            "refused_answerable": 1,
            "known_unanswerable": 1,
            "answered_unanswerable": 1,
        },  # fmt: skip
        "acl": {
            "violations": [
                {"retriever": "production", "role": "student", "events": 2, "passages": 3}
            ]
            if acl
            else [],
            "leaks": [{"retriever": "production", "role": "student", "events": 1, "passages": 1}]
            if acl
            else [],
            "restricted_passages": 2 if acl else 0,
            "passages_with_acl": 2 if acl else 0,
        },  # fmt: skip
        "review": [{**row, "event_id": f"e-{i}"} for i in range(review)] if acl else [],
    }


def test_text_block() -> None:
    assert quality_lines(quality()) == [
        "live quality on known questions (a gold question matched at similarity >= 0.75; "
        "first 10 passages):",
        "  hybrid: 3 scored of 4 known; recall@10 1.000, hit rate 1.000, MRR 1.000",
        "  production: 3 scored of 4 known; recall@10 0.500, hit rate 0.667, MRR 0.500",
        "  refusals of known questions: 1 of 3 answerable refused, 1 of 1 unanswerable for "
        "their asker answered (no gold passage, or none the asker's role may read)",
        "  access control (2 passages with an ACL, 2 of them closed to a role some ACL names; "
        "role 'other': roles no ACL names, which may read none of them; 'unknown': no role on "
        "the event):",
        "    LEAKS (cited in answers to a role that may not read them): production student 1 "
        "events (1 passages)",
        "    retrieved for a role that may not read them: production student 2 events (3 passages)",
    ]
    # no ACL in the corpus: no access-control line; nothing matched: said so
    none = quality(acl=False)
    none["known"] = {"production": {"n_known": 0, "n_scored": 0, "recall": None,
                                    "hit_rate": None, "mrr": None}}  # fmt: skip
    none["refusals"] = dict.fromkeys(none["refusals"], 0)
    assert quality_lines(none) == [
        "live quality on known questions (a gold question matched at similarity >= 0.75; "
        "first 10 passages):",
        "  no live question matched a gold question",
        "  production: 0 scored of 0 known",
    ]
    assert quality_lines({**quality(), "threshold": None}) == [
        "live quality: off (no gold set to match live questions with)"
    ]
    assert quality_lines(None) == []


def test_violations_of_role_other_name_the_roles_the_acls_have() -> None:
    """Trial 12 F9: live role ``Customer`` against ACLs naming ``customer`` made every
    restricted result a violation under ``other`` with no hint why."""
    report = quality()
    report["acl"] = {
        **report["acl"],
        "roles": ["customer", "staff"],
        "violations": [{"retriever": "production", "role": "other", "events": 20, "passages": 30}],
    }
    assert quality_lines(report)[-1] == (
        "    role 'other' has violations; the ACLs name customer, staff: a live role spelled "
        "otherwise (another case, a synonym) is 'other', and every restricted passage "
        "retrieved for it a violation; map it in the events or the corpus"
    )
    report["acl"]["violations"][0]["role"] = "student"  # a named role: no such line
    assert "role 'other' has violations" not in quality_lines(report)[-1]


def test_the_replay_text_shows_the_block_before_the_harvest_lines() -> None:
    summary = {"n_suggestions": 2, "by_reason": {"refused": 2}, "top": [], "shed": 0,
               "max_new_per_batch": None}  # fmt: skip
    report = {**samples.replay_report(), "quality": quality(), "gold_candidates": summary}
    text = render_text(report).splitlines()  # type: ignore[arg-type]
    start = text.index(quality_lines(quality())[0])
    assert text[start : start + 7] == quality_lines(quality())
    assert text[start + 7] == "harvested gold-question suggestions: 2 (refused 2)"


def test_page_section() -> None:
    page = render_replay_html({**samples.replay_report(), "quality": quality()})
    parsed = parse(page)
    assert parsed.unbalanced == []
    assert parsed.sections == ["ingest", "languages", "topics", "drift", "refusals", "quality",
                               "shadow", "gold-candidates"]  # fmt: skip
    assert ("<tr><td>production</td><td>4</td><td>3</td><td>0.500</td><td>0.667</td>"
            "<td>0.500</td></tr>") in page  # fmt: skip
    assert "<tr><td>answerable</td><td>3</td><td>refused</td><td>1</td></tr>" in page
    assert ("<tr><td>unanswerable for the asker</td><td>1</td><td>answered</td><td>1</td>"
            "</tr>") in page  # fmt: skip
    assert (
        "Access control: 2 passages carry an ACL (readable only by the roles it lists), 2 of"
        in page
    )
    assert ("<tr><td>leaks</td><td>production</td><td>student</td><td>1</td><td>1</td>"
            "</tr>") in page  # fmt: skip
    assert '<td class="nowrap">11-18 17:54</td>' in page
    assert "<script>" not in page and "&lt;script&gt;alert(1)&lt;/script&gt; hra" in page


def test_page_section_bounds_the_review_list_and_says_without_acl() -> None:
    long = str(quality_section(quality(review=REVIEW_ROWS + 3)))
    assert long.count("hra kitna milta hai") == REVIEW_ROWS
    assert "3 more in the JSON report." in long
    plain = str(quality_section(quality(acl=False)))
    assert "Access control" not in plain and "<td>production</td>" in plain
    assert "No gold set" in str(quality_section({**quality(), "threshold": None}))


class QualityRuntime(StubRuntime):
    def quality_report(self) -> dict[str, Any] | None:
        return quality()


class NoQualityRuntime(StubRuntime):
    def quality_report(self) -> dict[str, Any] | None:
        return None  # the stage is off


def test_status_page_shows_live_quality_when_the_service_has_it() -> None:
    analytics = samples.replay_report()["analytics"]
    runtime = QualityRuntime(analytics)
    page = _get(runtime, app=_app(runtime)).text
    assert parse(page).sections == ["moved", "languages", "topics", "drift", "refusals",
                                    "quality", "process"]  # fmt: skip
    assert "&lt;script&gt;alert(1)" in page and "<script>" not in page
    off = NoQualityRuntime(analytics)
    assert "quality" not in parse(_get(off, app=_app(off)).text).sections


def changed_quality() -> dict[str, Any]:
    """:func:`quality` after a gold-set change (version ``old`` -> ``abc``) that kept 3 rows'
    measurements (4 known events) and dropped 1 row's (2 events), with ACL counts since the
    first event."""
    report = quality()
    report["coverage"] = {
        "gold_set_version": "abc", "since": "2026-11-18T09:05:40+00:00", "rows": 3,
        "changes": [{"from": "old", "to": "abc", "reason": "gold set changed",
                     "at": "2026-11-18T12:00:59+00:00", "after_events": 120, "kept_rows": 3,
                     "kept_events": 4, "dropped_rows": 1, "dropped_events": 2}],
    }  # fmt: skip
    report["acl"]["since"] = "2026-11-18T08:00:00+00:00"
    return report


def test_text_block_says_what_the_figures_cover_across_a_gold_set_change() -> None:
    lines = quality_lines(changed_quality())
    assert lines[1:3] == [
        "  covers known questions asked since 2026-11-18 09:05 UTC (3 gold rows measured), "
        "gold-set version abc",
        "  gold set changed (old -> abc) at 2026-11-18 12:00 UTC (after 120 events): carried "
        "over 3 rows' measurements (4 known events, rows unchanged), dropped 1 rows' (2 known "
        "events, rows changed or removed)",
    ]
    assert lines[6].startswith(
        "  access control (every event since 2026-11-18 08:00 UTC, whatever the gold-set "
        "version; 2 passages with an ACL"
    )


def test_out_of_scope_counts_over_several_gold_set_versions_say_so() -> None:
    report: Any = {**samples.replay_report(), "gold_candidates": None}
    scope = report["analytics"]["out_of_scope"]

    def with_versions(versions: list[str]) -> Any:
        scoped = {**scope, "gold_set_versions": versions}
        return {**report, "analytics": {**report["analytics"], "out_of_scope": scoped}}

    note = ("  out-of-scope counts are cumulative over gold-set versions old -> abc (the "
            "detector was refitted on each; its quality above is the current one's)")  # fmt: skip
    assert note not in render_text(with_versions(["abc"])).splitlines()
    text = render_text(with_versions(["old", "abc"])).splitlines()
    assert text[text.index(note) - 1].startswith("out of scope: ")
    page = render_replay_html(with_versions(["old", "abc"]))
    assert "counts cumulative over gold-set versions (the detector refitted on each" in page
    assert "<td>old → abc</td>" in page
    assert "counts cumulative" not in render_replay_html(with_versions(["abc"]))


def test_status_page_shows_the_coverage_and_the_gold_set_changes() -> None:
    class ChangedRuntime(StubRuntime):
        def quality_report(self) -> dict[str, Any] | None:
            return changed_quality()

    runtime = ChangedRuntime(samples.replay_report()["analytics"])
    page = _get(runtime, app=_app(runtime)).text
    assert ("These figures cover known questions asked since 2026-11-18 09:05 UTC on gold-set "
            "version abc (3 gold rows measured).") in page  # fmt: skip
    assert ("<tr><td>gold set changed</td><td>old</td><td>abc</td><td>11-18 12:00</td>"
            "<td>120</td><td>3</td><td>4</td><td>1</td><td>2</td></tr>") in page  # fmt: skip
    assert (
        "Counted over every event since 2026-11-18 08:00 UTC, whatever the gold-set version."
        in page
    )


def skipped_candidate_quality() -> dict[str, Any]:
    """Trial user 5's serve figures: hybrid scored on 54 known events (51 scored, recall
    42/51 = 0.824), production on 157 (147 scored); on the 51 both were scored on,
    production's recall is 39/51 = 0.765, hit rate 0.765, MRR 30/51 = 0.588; hybrid's MRR
    38/51 = 0.745."""
    report = quality()
    report["known"] = {
        "hybrid": {
            "n_known": 54, "n_scored": 51, "recall": 42 / 51, "hit_rate": 42 / 51,
            "mrr": 38 / 51,
            "paired": {"n_scored": 51,
                       "production": {"recall": 39 / 51, "hit_rate": 39 / 51, "mrr": 30 / 51},
                       "candidate": {"recall": 42 / 51, "hit_rate": 42 / 51, "mrr": 38 / 51}},
            "coverage_note": "scored on 51 known questions, results for 54 of production's "
                             "157 (cpu_budget skipped 550 events)",
        },
        "production": {"n_known": 157, "n_scored": 147, "recall": 120 / 147,
                       "hit_rate": 120 / 147, "mrr": 0.6},
    }  # fmt: skip
    return report


def test_a_candidate_scored_on_fewer_questions_says_so_with_the_paired_figures() -> None:
    """Trial user 5: hybrid at 54 known / 0.824 next to production at 157 / 0.817 with no
    note. The text report, the HTML section and the status page say which questions each
    row is over, and give both on the same 51."""
    lines = quality_lines(skipped_candidate_quality())
    at = lines.index("  hybrid: 51 scored of 54 known; recall@10 0.824, hit rate 0.824, MRR 0.745")
    assert lines[at + 1 : at + 3] == [
        "    scored on 51 known questions, results for 54 of production's 157 (cpu_budget "
        "skipped 550 events): not the questions production's figures are over",
        "    like for like, on the 51 known questions both were scored on: production "
        "recall@10 0.765, hit rate 0.765, MRR 0.588; hybrid recall@10 0.824, hit rate 0.824, "
        "MRR 0.745",
    ]
    section_html = str(quality_section(skipped_candidate_quality()))
    assert (
        "hybrid: scored on 51 known questions, results for 54 of production&#x27;s 157 "
        "(cpu_budget skipped 550 events), so its row is not over the questions "
        "production&#x27;s is."
    ) in section_html
    assert "<tr><td>production</td><td>0.765</td><td>0.765</td><td>0.588</td></tr>" in section_html
    assert "<tr><td>hybrid</td><td>0.824</td><td>0.824</td><td>0.745</td></tr>" in section_html
    assert "on the 51 known questions both were scored on" in section_html

    class Skipped(StubRuntime):
        def quality_report(self) -> dict[str, Any] | None:
            return skipped_candidate_quality()

    runtime = Skipped(samples.replay_report()["analytics"])
    page = _get(runtime, app=_app(runtime)).text
    assert (
        "scored on 51 known questions, results for 54 of production&#x27;s 157 (cpu_budget "
        "skipped 550 events)"
    ) in page
    assert "<tr><td>production</td><td>0.765</td><td>0.765</td><td>0.588</td></tr>" in page


def test_equal_coverage_adds_no_note_and_no_paired_line() -> None:
    report = quality()
    report["known"]["hybrid"]["paired"] = {
        "n_scored": 3, "production": {"recall": 0.5, "hit_rate": 2 / 3, "mrr": 0.5},
        "candidate": {"recall": 1.0, "hit_rate": 1.0, "mrr": 1.0}}  # fmt: skip
    report["known"]["hybrid"]["coverage_note"] = None
    assert quality_lines(report) == quality_lines(quality())
    assert str(quality_section(report)) == str(quality_section(quality()))


def test_near_matches_turned_down_are_said_in_text_and_html() -> None:
    """Session 31 (trial 13 finding 1): the events whose near-duplicate gold row the wording
    rule turned down are counted where the known-question figures are, by reason; nothing
    is said when there were none."""
    report = quality()
    report["near_matches_rejected"] = {
        "events": 3, "matched_another": 1,
        "by_reason": {"numbers": 0, "negation": 2, "words": 0, "question": 1},
    }  # fmt: skip
    [line] = [x for x in quality_lines(report) if "near-matches" in x]
    assert "(3 events: negation 2, question word 1)" in line
    assert "1 of them matched a next-best gold row instead" in line
    html = str(quality_section(report))
    assert "Near-matches turned down (3 events: negation 2, question word 1)" in html
    report["near_matches_rejected"] = {"events": 0, "matched_another": 0, "by_reason": {}}
    assert not any("near-matches" in x for x in quality_lines(report))
    assert "turned down" not in str(quality_section(report))
