"""Issue 22 item 2: making the pipeline cheaper changes no output.

Two replays are compared, field for field, with what the code at main ``e500539`` (before
the throughput work) produced on the same inputs, checked in under ``golden/``:

* the demo: the embedded demo log (3,000 events) with the demo's configuration, gold set and
  corpus (``goldwatch replay --demo``: shadow candidate ``hybrid``, live quality, harvest);
* production-shaped: the first 3,000 lines of :mod:`benchmarks.bench_production`'s log (real
  NQ-open, CLINC150, BANKING77, XQuAD and Hinglish questions, 10 retrieved passages, answers
  with citations, feedback, duplicates and bad lines; seed 0) with the defaults a user runs
  (only ``gold_set`` and ``corpus`` set).

A third, the 20,000-line production-shaped replay (past harvest's eviction bound), compares
its report with ``golden/production_20k_report.json.gz`` and its suggestions with a digest
(since the twenty-first session; a digest of the report before, which cannot hold across CPUs
and BLAS thread counts: see :data:`REL_TOL`).

Each compares the whole JSON report of :func:`service.jobs.replay.run_replay` (the temporary
``file`` and ``dlq_path`` replaced by their names) and every harvested suggestion as
``goldwatch candidates export`` writes it (best first). The golden files were written by
this module's ``__main__`` run against e500539's code (``PYTHONPATH=<e500539 checkout>
python tests/service/test_replay_golden.py``); rewrite them only for a change of output
that is meant, and say so in its commit. Rewritten so far: the production-shaped golden in
the thirteenth session, when the refusal patterns came to count the benchmark's other two
refusal templates (229 refusals of 2,895 answers: the log's 229 refusal texts; was 81); the
demo's is e500539's. Both rewritten in the fourteenth session for added fields and
nothing else (checked: each rewritten file with them removed equals its former content):
``analytics.refusals.by_flag``, ``by_patterns`` and ``method`` (how many answers
``answer.refused`` decided and how many the phrase patterns did): demo 649 and 2,351 (of
the demo log's 3,000 answers, 649 set ``answer.refused``: counted in its JSONL), production
0 and 2,895 (the benchmark sets no flag); ``quality.coverage`` (what the known-question
figures cover: gold-set version, first event counted, gold rows measured, gold-set changes —
none in these runs), ``quality.acl.since`` (the first event the cumulative ACL counts cover)
and ``analytics.out_of_scope.gold_set_versions`` (the gold-set versions the cumulative
out-of-scope counts were judged under); ``analytics.quality_min_class``
(10) and each detector quality entry's ``measured_on`` (demo: "12 unanswerable / 47
answerable gold questions", "59 gold questions, each topic held out in turn"; production:
"100 unanswerable / 377 answerable", "477 gold questions, ...").
Both rewritten again in the fourteenth session for a meant change of the out-of-scope
detector: a question farther from the corpus and from every gold question than any
answerable gold question is now off-corpus, out of scope (``SupportCheck`` in
:mod:`service.refusals.scope`). Added: ``analytics.out_of_scope.off_corpus`` (demo 183,
production 408) and ``analytics.out_of_scope.support`` (the rule: demo cutoff 0.263,
held-out false-positive rate 1 of 47 gold answerables; production 0.219, 1 of 377). Moved,
and nothing else: demo ``out_of_scope`` 96 → 259 (share 0.032 → 0.086), ``over_refusals``
237 → 186 (refusals of off-corpus questions are no longer over-refusals), ``under_refusals``
5 → 117, and the out-of-scope drift comparison's baseline rates (0.019 / 0.053 → 0.093 /
0.100; Fisher's test → z-test, p 0.17 → 0.82; still no alarm); production ``out_of_scope``
1,269 → 1,318, ``over_refusals`` 87 → 84, ``under_refusals`` 1,127 → 1,173, so
``gold_candidates.by_reason.answered_out_of_scope`` 1,068 → 1,112 and the suggestions
(report top list and export) re-rank around the new answered-out-of-scope ones. By the demo
log's ground truth (:func:`service.demo.querylog.generate_with_meta`), events judged out of
scope: answerable 1.9 % → 6.0 %, not the college's business ("out") 36 % → 81 %,
unanswerable 15 % → 29 %.
The demo's rewritten again in the fourteenth session (helper s14-t3) for two added fields
of the shadow candidate's live-quality cell and nothing else (checked the same way):
``quality.known.hybrid.paired`` (production and hybrid on the known questions both were
scored on: 21, the 21 each was scored on, so its means equal the rows' own: recall 1.0 / 1.0,
MRR 0.619 / 0.886) and ``quality.known.hybrid.coverage_note`` (``None``: hybrid was scored on
as many known questions as production, 28 of 28). The production-shaped golden has no
candidate: unchanged.
Both rewritten again in the fourteenth session (s14-t2) for two meant changes and nothing else
(checked field for field against the former files): (1) the drift chi-square pools by Cochran's
rule (expected counts: none < 1, at most 20 % < 5) and never pools a category the reference
lacks into one it has (:mod:`service.drift.stats_tests`), so a table the former rule (every
expected count ≥ 5) pooled is tested whole when Cochran's rule holds: demo — the Hinglish alarm
(language vs baseline) comes after 1,800 events (was 1,600: the full 3-language table, 2 dof,
instead of en vs hi + hi-Latn, 1 dof), the second language and topic alarms after 2,300 (were
2,100), the first topic alarm (1,600) keeps its time with p 9.5e-7 (was 2.5e-7), the language
vs gold-set test is ``asymptotic`` p 0.00298 (was ``pooled`` 0.00247; still ``ok``), the
refusal alarm is unchanged; production — the topic vs gold-set alarm keeps its time with p
6.5e-17 (was 2.6e-17); (2) an ``insufficient_data`` comparison says why in ``insufficient``
(production: the four baseline comparisons, "the baseline is still warming up: ...", the log
being shorter than the 6 h warm-up).
The production-shaped golden rewritten again in the fourteenth session (s14-fix-support) for
the off-corpus rule's held-out rates, now truly held out (each fold's rows against the
training rows and the corpus only, a held-out row's near-duplicates left out:
``calibrate_support``), and nothing else (checked: the file with the two values put back
equals its former content): ``analytics.out_of_scope.support.held_out_fpr`` 1 → 2 of 377
answerables (0.00265 → 0.00531) and ``held_out_tpr`` 6 → 5 of 100 unanswerables (0.06 →
0.05); the cutoff (0.219) and so every verdict are unchanged. The demo's is unchanged (1 of
47 either way).
The demo's rewritten again in the fourteenth session (s14-fix-drift) for one meant change and
nothing else (checked: the files equal apart from ``analytics.drift.alarms``; the production
golden and the 20k digests unchanged): a category the frozen baseline lacks whose column is too
thin for Cochran's rule (language ``hi``, 3 of ~220 live vs 0 of 108; topic ``facilities``)
made the chi-square fall back to the Monte-Carlo test, whose floor 1 / 20,001 = 5e-5 is above
the baseline comparisons' alpha 2.1e-5, so it could never alarm; the test is now conditional on
the baseline's categories (:mod:`service.drift.stats_tests`, step 3). Moved, in
``analytics.drift.alarms``: the Hinglish alarm (language vs baseline) comes after 1,600 events
again (was 1,800: its test at 1794916857 gives p 1.8e-5, was Monte-Carlo 1e-4), recorded at
the batch's last test (p 1.06e-6, asymptotic), so it is listed before the topic alarm; the
topic alarm keeps its 1,600 events, its recorded p 9.5e-7 → 2.5e-7 (its test at 1794916857
already alarms: p 7.8e-6, was the Monte-Carlo floor 5e-5; the recorded one is the next test's,
full table); the second language and topic alarms come after 2,100 events (were 2,300: p
2.3e-8 and 1.1e-5, both were the floor 5e-5), with their JSD, p and rising/falling lists at
that time (language rising ``hi-Latn``, was ``hi-Latn, hi``; topic rising ``exams``, falling
``fees, admissions``, were ``exams, facilities`` / ``scholarships, admissions``).
Both rewritten again in the fourteenth session (s14-t6) for added fields and nothing else
(checked: each rewritten file with them removed, and the method sentence written without
them, equals its former content): ``analytics.refusals.refused_by_flag`` and
``refused_by_patterns`` (of the refused answers, those ``answer.refused`` decided and those
the phrase patterns did: demo 68 and 260 of 328, production 0 and 229 of 229) and the same
two counts in ``analytics.refusals.method`` ("answer.refused decided 649 answers (68
refused), phrase patterns 2351 (260 refused) ..."); the demo's shadow ``by_language`` and
``by_topic`` cells' ``counts`` (the results each per-label mean is over; Kendall's tau's is
the one that differs from ``n``). The German refusal patterns added with them moved nothing.
Both rewritten in the fifteenth session (s15-lang-support) for the off-corpus rule by script,
measured per language (``support_by_language`` in :mod:`service.refusals.scope`), and nothing
else (checked: each file with the added fields removed and the moved values put back equals
its former content; the production suggestions are the former 1,610 rows unchanged plus 2).
Added: ``analytics.out_of_scope.support.by_language``, ``by_script`` and ``min_rows`` (10),
``analytics.out_of_scope.off_corpus_by_language`` and ``not_judged_by_language``. Demo: Latin
cutoff 0.263 (set by its 39 English rows, the pooled one before), ``hi-Latn`` (6 rows) judged
by it, ``hi`` (2 rows, Devanagari) not judged: 76 live events, none of them off-corpus before;
no verdict moved. Production: Latin 0.219 (English 277 and Spanish 50 rows; the pooled one
before), Devanagari 0.614 (Hindi's 50 rows, held-out false-positive rate 1 of 50), so 2 live
Hindi questions below 0.614 are now off-corpus: moved ``off_corpus`` 408 → 410,
``out_of_scope`` 1,318 → 1,320 (share 0.45527 → 0.45596), ``under_refusals`` 1,173 → 1,175,
``gold_candidates.by_reason.answered_out_of_scope`` 1,112 → 1,114 and ``n_suggestions``
1,610 → 1,612 (two new suggestions, ``c-e8f159acad432d8a`` and ``c-b77d19d40b80f7f6``).
The production-shaped golden rewritten in the sixteenth session for one meant change and
nothing else (checked field for field against the former file; the demo's is unchanged): a
live question in a language the gold set lacks is no longer judged by its script's
off-corpus cutoff (:meth:`~service.refusals.scope.EmbeddingScope.cutoffs`; a new user's
German questions, most of them answerable translations, were off-corpus by the English
rows' Latin cutoff). The log's 302 Hinglish questions (no ``hi-Latn`` gold row) are now
``not_judged_by_language`` (were 180 of them off-corpus): moved ``off_corpus`` 410 → 230,
``out_of_scope`` 1,320 → 1,279 (the regression still puts 139 of the 180 out of scope),
``over_refusals`` 84 → 86, ``under_refusals`` 1,175 → 1,136,
``gold_candidates.by_reason.answered_out_of_scope`` 1,114 → 1,076, and the suggestions
re-rank (the same 1,612 ids).
Both rewritten again in the sixteenth session for the PII type ``name`` (names people give
of themselves: :mod:`service.pii.names`), and nothing else (checked field for field): added
``analytics.pii_scrubbed.name`` (demo 0; production 3: "my name's frank", "call me
ishmael", "just call me dennis", from CLINC150's ``change_user_name``); moved, production
only: two topic counts (topic-16 226 → 225, topic-19 112 → 113) and the topic drift
statistics over them (the alarm at the same time, p 6.5e-17 → 7.9e-17), harvest reasons
answered_out_of_scope 1,076 → 1,075, coverage_gap 683 → 682, novel 587 → 586, and the
suggestions: the three named ones become "call me <NAME>" and "my name's <NAME>" (two
suggestions where there were three: "call me <NAME>" is one question), 1,612 → 1,611.
The production-shaped golden rewritten once more in the sixteenth session for one label and
nothing else: a non-English language's function words are no topic label terms
(:func:`service.topics.model._top_terms`), so the Spanish topic's label ``topic-6: en, el,
qué`` is now ``topic-6: año, como, estados``.
Both rewritten again in the sixteenth session for one added field and nothing else (checked:
each file without it equals its former content): ``analytics.language_quality``, the language
stage's agreement with the gold set's ``language`` labels (:mod:`service.language.quality`):
demo 59 of 59 (en 48, hi-Latn 8, hi 3), production 477 of 477 (en 377, es 50, hi 50).
Both rewritten in the seventeenth session for three added fields and nothing else (checked:
each file without them equals its former content, value for value):
``analytics.drift.event_time.ahead`` and ``kept_out_share`` (events held ahead of the
watermark, and the share of events kept out of the drift windows: 0 and 0.0 in both logs,
whose clocks are sound) and ``analytics.pii_scrubbed.iban`` (0: no IBAN in either log).
Both rewritten in the eighteenth session for two added fields and nothing else (checked: each
file without them equals its former content): ``analytics.drift.event_time.recent_events``
and ``recent_kept_out_share`` (the latest events seen, at most about 5,000, and the share of
them kept out of the drift windows, which now decides ``starved``): demo 3,000 and 0.0,
production 2,895 and 0.0 (all the events each log's drift stage saw; none kept out).
The production-shaped golden rewritten once more in the eighteenth session for one meant change:
the first events wait for ``analytics.drift.ahead_confirm`` (5) of them within ``max_ahead_s``
before they start the drift watermark (a first event stamped days off no longer makes every
later one late), so the history the per-test alpha is spread over starts at the fifth event's
time instead of the first's: the six ``alpha`` values of the drift comparisons move in the
fourth digit (1.8225e-06 → 1.8201e-06, 3.6451e-06 → 3.6401e-06), nothing else; the demo's
golden is unchanged.
Both rewritten in the twentieth session for one meant change: harvest's ``coverage_gap``
follows the last ``harvest.gap_window`` (1,000) live events and is relative as well as
absolute (live share ≥ 2 × gold share, and its 95 % Wilson lower bound − gold share ≥
``min_gap``; the bound difference is the suggestion's ``gap``). Checked field for field: only
``gold_candidates`` and the suggestions moved. Demo: suggestions 514 → 372, ``coverage_gap``
446 → 163 — English (the majority language, 0.102 over its gold share in all) carries none,
Hinglish (the log's planted rise from 8 % to 35 % against a 13.6 % gold share) carries it at
about 0.185; 144 of the 204 suggestions gone were English questions whose only reason it was;
``acl_violation`` 13 → 12, ``negative_feedback`` 79 → 78, ``refused`` 135 → 136 as one
cluster is now led by a later wording. Production-shaped: the reasons and the set of
suggestions unchanged; their priorities and order moved (gaps are now lower bounds: the
``novel`` topic 0.189 → 0.159; English topics' small positive gaps, 0.009 and 0.005, fail
the ratio test and are 0).
The demo's rewritten in the twenty-first session for one meant change: ``harvest.min_gap``
defaults to 0.02 (was 0.05), the drift view's floor, on the live share's lower bound (a
trial's German at 6.2 % of the last 1,000 events with no gold row, bound 4.9 %, was no gap).
Checked field for field: only ``gold_candidates`` and the suggestions moved —
``by_reason.coverage_gap`` 163 → 181, ``n_suggestions`` 372 → 378 (14 new ids, 8 gone, the
gone ones near-duplicate wordings of new ones — 5 among their variants — now led by another
wording; mostly scholarship and merit-waiver questions), 6 held suggestions gained
``coverage_gap`` (their priorities with it); the other reasons and the top list unchanged.
The production-shaped golden is unchanged (no question's gap there lies in [0.02, 0.05)).
Written from a machine whose out-of-scope ``threshold`` differs from these files' in the last
digits (demo 0.15875277113841546, production 0.41690199126004923, with the code before the
change too): the demo's three ``threshold`` fields were put back to the file's value,
nothing else edited.
All three rewritten in the twenty-second session for one added field and nothing else
(checked: each file with ``gap_dimension`` removed equals its former content, value for
value): each suggestion of the report's ``gold_candidates.top`` (20 per file) says which
dimension its coverage ``gap`` is of — demo 16 ``language`` (the Hinglish questions), 1
``topic``, 3 ``None`` (gap 0); production 17 ``topic`` (the ``novel`` topic and others), 1
``language``, 2 ``None``; 20k report 16 ``topic``, 2 ``language``, 2 ``None``. The exported
suggestions carry no ``gap``: unchanged, and so is the 20k suggestions' digest. Written on a
machine whose out-of-scope ``threshold`` reads 0.15875277113841546 (demo) and
0.41690199126004923 (production) where the files hold ...554 and 0.4169019557504985: those
six fields were put back to the files' values.
All three rewritten again in the twenty-second session (trial 9, F2) for a meant change of the
drift view's coverage-gap rule and nothing else (checked field for field, floats to 1e-6
relative, against the former files): it is now harvest's, the gold share taken as exact
(:mod:`service.coverage`), so a gap's ``ci_low`` is the live share's Wilson lower bound minus
the gold share and ``ci_high`` its upper bound minus it. Moved: production language gap
``ci_low`` 0.0910 → 0.0937, topic gap ``ci_low`` 0.1359 → 0.1490 and ``ci_high`` 0.1858 →
0.1788; 20k report language ``ci_low`` 0.0873 → 0.0922, topic 0.1320 → 0.1505 and 0.1734 →
0.1619 (a language the gold set lacks keeps its ``ci_high``: 0 of G's Wilson lower end is 0);
demo: ``analytics.drift.topic.coverage_gaps_left_out`` added — ``novel`` (410 of 3,000 live,
3 of 59 gold: bound .125 − .051) is now a gap, left out as uncalibrated. The suggestions
(harvest's rule, unchanged) and the 20k digest are unchanged.
The demo's rewritten again in the twenty-second session (trial 9, F3) for text only: its five
``uncalibrated`` / ``suppressed`` strings of the out-of-scope detector name the classes of its
rates ("(answerable kept in scope 46 of 47 (TPR 0.979); unanswerable judged in scope 11 of 12
(FPR 0.917); ROC AUC 0.813)", was "(TPR 0.979, FPR 0.917; ROC AUC 0.813)"); nothing else.
All three rewritten in the twenty-fourth session for the PII type ``address`` (street
addresses with their number) and nothing else (checked field for field): added
``analytics.pii_scrubbed.address`` 0 (no street address in either log).
All three rewritten in the twenty-fourth session for one added field and nothing else
(checked field for field against the former files: the only difference is the new key):
``analytics.language_labels`` (the ``language`` metric label set, fixed at start, and the live
languages it exports as ``other`` worth naming: :mod:`service.language.unlabelled`) — in all
three ar, de, en, es, fr, hi, hi-Latn, pt, zh (the gold set's languages and the built-in
list), ``other`` and ``und``, limit 16; no language named (``unlabelled`` empty, ``notice``
``None``: the 20k log's one ``id`` question is under 10).
All three rewritten in the twenty-fourth session for two added fields and nothing else
(checked: the uncompressed files differ from the former ones by these lines only):
``analytics.out_of_scope.misjudged_unanswerable`` (the unanswerable gold rows the detector
judges in scope on held-out data, ``fpr · n_neg``, with the 95 % Wilson upper bound: demo 11
of 12, 0.98513; production and 20k report 4 of 100, 0.09837) and ``over_refusals_explained``
(⌊upper · scored refusals⌋: demo ⌊0.98513 · 328⌋ = 323, production ⌊0.09837 · 229⌋ = 22, 20k
report ⌊0.09837 · 1,552⌋ = 152; every refusal of these logs is scored).
The demo's rewritten in the twenty-fourth session (s24-rbo) for one meant change: a shadow
candidate's RBO is measured on production's ranking as logged and the candidate's ``k``
passages whole (RBO_ext for uneven lists, eq. 32), no longer with both cut to
``min(k, production depth)`` (:func:`service.shadow.agreement.compare`). The demo's ``hybrid``
asks for 10 passages where production logged at most 5 (2,809 of its 2,914 compared results
5), so RBO moved on 1,972 results and on none downwards (it cannot: a longer candidate only
adds agreement, ``test_agreement``): mean ``agreement.rbo`` 0.6903 → 0.7378 (its
by_language / by_topic means likewise), and the 20 ``disagreements`` (lowest RBO) are other
events (7 read 0.0, now 1). Results with RBO < ``harvest.max_rbo`` (0.5) 431 → 264, none new;
the other agreement measures are unchanged. Checked: the same replay with harvest fed the
former (cut) RBO gives the former ``gold_candidates`` and suggestions exactly, so what moved
there follows from the verdicts: ``by_reason.shadow_disagreement`` 130 → 84,
``n_suggestions`` 378 → 362 — 38 gone (21 whose only reason it was; the others
clusters whose first wording was a no-longer-disagreeing event, their events now led by
another wording), 22 new ids for those regrouped events, 18 kept ones without the reason —
and with the regrouping ``coverage_gap`` 181 → 183, ``negative_feedback`` 78 → 77,
``refused`` 136 → 137; the pools lose the candidate's passages of those events (a verdict
that disagrees brings them in a replay). The production-shaped goldens (no candidate) are
byte-identical.

All three rewritten in the twenty-fifth session (s25-drift, trial 11) for one meant change:
a frozen drift baseline is exactly the events in ``[start, start + warmup_s)`` from the
earliest event's bucket, and a warm-up holding fewer than ``min_count`` is followed by a new
one (it used to slide). The demo's first 8 h hold 78 events (< 100), so its baseline is now
the next 8 h (428 events; it was a sliding 8 h of 108): every drift ``baseline`` comparison
and the alarms that follow from it moved (first alarms after 1,500 events, were 1,600);
nothing outside ``analytics.drift`` did. The production ones change only in the
still-warming-up wording of the four ``baseline`` ``insufficient`` reasons.

All three rewritten in the twenty-sixth session (s26-scope, trial 11 finding F3) for one meant
change: the off-corpus cutoff is the least answerable support once the lowest ``j`` of ``n``
are left out — the most ``j ≤ ⌊0.05 n⌋`` keeping the held-out in-scope recall at
``scope_min_tpr`` (0.95) — not the least, and the detector's quality figures count a
held-out row below its fold's cutoff out of scope. Added: ``support.trim``, ``trim_limit``,
``least``, ``set_by``, ``below``, ``change`` (``None``), ``out_of_scope.counted_under`` (one
detector) and ``counted_under_notice`` (``None``). Demo: trim 1 of 47 (pooled cutoff
0.263 → 0.317; a second row cost recall below 0.95) leaves no Latin row out (⌊39/47⌋ = 0),
so its live counts are unchanged; quality AUC 0.813 → 0.799, TPR 0.979 → 0.957 (the rule's
held-out flags), ``misjudged_answerable`` 2 → 3. Production-shaped: 15 of 377 left out, Latin
cutoff 0.219 → 0.331 (Devanagari 0.614 → 0.617), rule held-out FPR 2 → 13 of 377; AUC 0.989
→ 0.962, TPR 0.973 → 0.952, FPR 0.04 → 0.03; live ``off_corpus`` 230 → 1,080,
``out_of_scope`` 1,279 → 1,498, ``over_refusals`` 86 → 70, ``under_refusals`` 1,136 →
1,339, so ``answered_out_of_scope`` suggestions 1,075 → 1,262 (1,611 → 1,737; the 20k
report's 3,821 → 4,032, ``low_confidence`` 1,046 → 1,140, ``negative_feedback`` 345 → 365,
``novel`` 2,896 → 2,895, ``off_corpus`` 1,616 → 7,356) and the suggestions re-rank. By the
log's sources (bench_production pools, the same 3,000 events): out of scope NQ 61.6 % → 80.1 %,
CLINC150 70.0 % → 78.0 %, CLINC150-oos 77.5 % → 83.4 % (not in the corpus), BANKING77 2.3 %
→ 3.6 %, XQuAD-en 8.3 % → 12.6 % (answerable), XQuAD-hi/es and Hinglish unchanged.
All three rewritten again in the twenty-sixth session (trial 12 finding F1) for one meant
change: a live question in a language no gold row is written in gets no out-of-scope verdict
(the regression was fitted on none). Added: ``out_of_scope.no_gold_rows_by_language`` (demo
``{}``, unchanged otherwise; production ``{"hi-Latn": 302}``, the 20k report's ``{"hi-Latn":
1858, "id": 1}``, which left ``not_judged_by_language``). Production: ``scored`` 2,895 →
2,593, ``out_of_scope`` 1,498 → 1,325, ``over_refusals`` 70 → 67, ``under_refusals`` 1,339
→ 1,171, ``answered_out_of_scope`` suggestions 1,262 → 1,104 (the 20k report's 4,032 →
3,416, ``coverage_gap`` 3,174 → 2,964), the out-of-scope drift window 2,401 → 2,155 events;
the suggestions re-rank around the Hinglish ones that lost that reason.
All three rewritten in the twenty-sixth session (s26-merge, trial 11 finding F6) for one
meant change: harvest merges two near-duplicate wordings only when they ask the same question
(the same numbers, negation, content words and question word: :mod:`service.text.wording`),
and the export's distinct check drops a near-duplicate only by the same rule. Checked field
for field against the former code's output: only ``gold_candidates`` moved (and the out-of-scope
threshold's last digits, 0.41690200 → 0.41690196, this machine's BLAS, within
:data:`REL_TOL`); no event is lost or counted twice (the counts of the exported suggestions
sum to 1,058 and 1,705 before and after). Demo: ``n_suggestions`` 362 → 418 (the generated
log's added context, "for 1st year", "for CSE", "is saal", and its two-slip typos now stand
apart; by the log's ground truth every merge left is of one intent, ``python -m
benchmarks.bench_merge_rule``), ``by_reason`` acl_violation 12 → 13, coverage_gap 183 → 205,
low_confidence 176 → 193, refused 137 → 147, shadow_disagreement 84 → 95. Production-shaped:
1,611 → 1,627 (split: "switch to the male voice" / "female voice", "dragon ball super episode
113" / "130", "timer ... 20 minutes" / "10 minutes", "alarm kal" / "2 am"),
answered_out_of_scope 1,075 → 1,089, coverage_gap 682 → 689, novel 586 → 589. The 20k
replay: 5,000 → 5,190 held at the end (evicted only past 1.1 × ``max_suggestions``, down to
5,000: 190 started since the last eviction; before, none), answered_out_of_scope 3,821 → 3,934,
coverage_gap 3,174 → 3,306, novel 2,896 → 2,976, low_confidence 1,046 → 1,052,
negative_feedback 345 → 351, refused 569 → 571; the export holds all 5,190 (the former
distinct check would have dropped 6 that ask other questions than a similar one). (These figures
are against the code before the s26-scope and F1 changes above; the three files were rewritten
once more for the three changes together, and only ``gold_candidates`` moved against the F1
pins: demo 418 suggestions, production-shaped 1,737 → 1,753, and the 20k replay holds 5,000
at its end (an eviction fell on its last batch).) And for one added field and nothing else
(trial 12 F9): ``quality.acl.roles``, the roles the corpus ACLs name (demo ``["parent",
"staff", "student"]``, production ``[]``).
The demo's rewritten again in the twenty-sixth session (s26-neutral, trial 12 F6/F7) for one meant
change: topics, out-of-scope, live quality's known questions and harvest's near-duplicates
read a question's subject (:func:`service.text.subject.subject`: without PII placeholders and
the contact clauses around them), so a scrubbed self-introduction no longer steers them. Only
its 8 planted PII events can move: topics ``novel`` 410 → 408, ``exams`` 525 → 526,
``transport`` 182 → 183; ``out_of_scope`` 259 → 258, ``off_corpus`` 183 → 182,
``under_refusals`` 117 → 116 (and the per-topic shadow and drift figures); one suggestion
fewer (361): ``exam kab se shuru hai? pls reply on whatsapp <PHONE> or <EMAIL>`` joins ``exam
kb se shuru hai ji``. The production-shaped goldens are unchanged (their 30 ``<NAME>`` events
are CLINC150's "call me X" requests, nothing but contact clauses: their own subject).
(Figures against the code before s26-merge; on the merged code the demo moved the same way,
its suggestions 418 → 417.)
All three rewritten in the thirtieth session (s30-pscope2, carrying over s29-pscope, trial
12 finding F1, English part) for one meant change: the out-of-scope detector is fitted and
cross-validated with the gold rows asking about one document hidden from each other
(:func:`~service.refusals.scope.coverage_groups`: an answerable row's documents from its
qrels, an unanswerable row its nearest passage's; the folds hold a document's answerable
rows out together), so it learns and reports what a question on a document no gold row asks
about looks like. Checked field for field against the former files: only
``analytics.out_of_scope``, ``detector_quality.out_of_scope``, the demo's (suppressed)
out-of-scope drift comparison and ``gold_candidates`` / the suggestions moved. Demo (10
documents; the retriever's score alone still chosen, still uncalibrated): AUC 0.799 → 0.808,
FPR 0.917 → 0.750, balanced accuracy 0.520 → 0.604, threshold 0.1588 → 0.1366,
``out_of_scope`` 258 → 185, ``over_refusals`` 186 → 258, ``under_refusals`` 116 → 115,
``misjudged_unanswerable`` 11 → 9, the rule's ``held_out_tpr`` 0 → 1/6; no alarm moved, no
suggestion (its verdicts are uncalibrated). By the demo log's ground truth (its languages
given to the stage) out of scope: answerable en 3.3 % → 3.3 %, hi-Latn 9.0 % → 7.8 %; "out"
en 79.6 % → 77.8 %, hi-Latn 85.7 % → 47.6 % (18 of its 21 have no BM25 hit: their
probability, 0.1416, sits between the two thresholds; answerable hi 56.2 % → 0 % the same
way);
unanswerable en 19.2 % → 19.2 %. Production-shaped (48 articles + 77 FAQ pages): AUC 0.962 →
0.967, FPR 0.03 → 0.07, balanced accuracy 0.961 → 0.941, the retriever's score now among the
features, threshold 0.4169 → 0.3625, Latin cutoff 0.331 → 0.301 (held-out FPR en 11 → 8 of
277), ``off_corpus`` 1,080 → 887, ``out_of_scope`` 1,325 → 1,253, ``over_refusals`` 67 → 74,
``under_refusals`` 1,171 → 1,106, so ``answered_out_of_scope`` 1,114 → 1,050 and 1,753 →
1,696 suggestions (62 gone, each answered-out-of-scope only; 5 new; 19 of the top 20 kept).
By the log's sources (the same 3,000 events) out of scope: BANKING77 3.6 % → 2.3 %, XQuAD-en
12.6 % → 8.9 % (answerable); NQ 80.1 % → 77.4 %, CLINC150 78.0 % → 74.1 %, CLINC150-oos 83.4
% → 79.5 % (not in the corpus); XQuAD-hi 1.5 %, -es 0 % unchanged. The 20k report:
``off_corpus`` 7,356 → 5,996, ``out_of_scope`` 9,062 → 8,496, ``over_refusals`` 368 → 410,
``under_refusals`` 7,919 → 7,395; it holds 5,388 suggestions at its end (was 5,000: an
eviction no longer falls on the last batch; held up to 1.1 × ``max_suggestions``), so its
``by_reason`` counts rose with them (answered_out_of_scope 3,371 → 3,637, coverage_gap 3,050
→ 3,078, refused 560 → 594). The same session's two other changes, regenerated on top and
compared field for field with the s29-pscope files: the lopsided-set fallback
(:data:`~service.refusals.scope.MAX_GROUP_SHARE`) moves none (no document holds more than
half of the answerable rows of the demo's or the production-shaped gold set); the trust
check at the FPR's Wilson upper bound moves only the demo's uncalibrated reason text (five
fields: ``detector_quality`` / ``out_of_scope`` ``uncalibrated``, ``quality.uncalibrated``
and the drift suppressions), which now adds "0.523 with its false-positive rate at its
Wilson 95 % upper bound over 12 questions"; the production-shaped detector stays trusted (7
of 100: 0.941, 0.907 at the bound).
All three rewritten in the thirtieth session (s30-misj, trial 13 item 5) for two added fields
and nothing else (checked with a field-by-field diff): ``analytics.out_of_scope.
misjudged_answerable.by_score`` and ``by_off_corpus``, the parts of its ``count`` (demo 2 + 1
of 3, production-shaped 18 + 13 of 31), so the text can say which rule misjudged the rows.
(Figures on the code before s30-pscope2; merged with it, the three files differ from
s30-pscope2's by those two fields alone: demo 2 + 1, production-shaped 18 + 12 of 30.)
All three rewritten in the thirty-first session (s31-known, trial 13 finding 1) for one meant
change: known-question matching accepts a gold row above its n-gram threshold only if it asks
the same question (:func:`service.text.wording.known_disagreement`: harvest's wording rule, or
the gold question with at most a third of its content words left out and nothing but courtesy
or an article added), and the live-quality report gains ``quality.near_matches_rejected`` (the
near-matches it turned down). Checked field for field against main be1c999: nothing else moved
but the known-question figures and, on the demo, the harvest suggestions they feed. Demo
(``shadow.known_threshold`` 0.75): 11 of the 28 known events are turned down (numbers 1, the bus
question "in 2026"; words 10, "tech fest" / "annual fest" 2, "starting basic pay of an assistant
professor" / "... at SIT" 4 and its Hinglish wording 1, "library kitne baje tak khuli hai" /
"library saturday ko ... rehti hai" 3: 2 of 5 content words left out); the 17 others leave out a
detail of their gold row ("campus"; "odd" and "2026") and stay known. So ``n_known`` 28 → 17,
``n_scored`` 21 → 17, production MRR 0.619 → 0.647, hybrid 0.886 → 1.000, ``refusals`` known
answerable 21 → 17, known unanswerable 7 → 0 (answered 5 → 0: the turned-down fest and pay
questions were the unanswerable ones), ``coverage.rows`` 5 → 2 (since 03:09 → 12:12); harvest, no
longer told they are known, suggests them ("When is tech fest this year", "assistant professor
ki basic pay kitna hai", "wht is starting basic pay of an assistant professor?", and "library
kitne baje tak khuli hai", 4 events, which takes in its "... pls" variant; ``n_suggestions`` 417
→ 420, by_reason refused 147 → 149, acl_violation 13 → 14, coverage gap 205 → 206).
Production-shaped 3,000: only the added field (0 rejected). The 20k report: 3 events turned down
("Who founded the Office of Western Medicine?" for "When was ... founded?", question word; "Why
is my withdrawl to cash still pending?" twice for "My withdrawl is still pending. Why?", words:
"cash" added), so production's ``n_known`` 514 → 511, ``n_scored`` and
``refusals.known_answerable`` 424 → 421, recall@10 and hit rate 0.85377 → 0.85273, MRR 0.55396 →
0.55427, ``coverage.rows`` 285 → 284.
All three rewritten in the thirty-second session (s32-topiclang, trial 14 HIGH 1) for one added
field and nothing else (checked: each rewritten file without it equals its former content):
``analytics.topic_quality``, the topic assignment's held-out agreement with the gold labels per
language. Demo (supervised): 31 of 59 labelled gold questions, en 22 of 45, hi-Latn 6 of 8, hi
0 of 3, und 3 of 3; no language bias named (hi-Latn and hi have fewer than 10 rows), so no
alarm moved. Production-shaped (unsupervised): ``{"supervised": false, "agreement": null}``.
All three rewritten in the thirty-third session (trial 15 MEDIUM 5) for the novelty quality's
operating point and topic count, nothing else (14 fields each, listed by a field-by-field diff):
``n_groups`` in every detector quality (out-of-scope 0), and novelty's ``threshold``, ``tpr``,
``fpr``, ``balanced_accuracy`` (were null) and ``measured_on`` ("each of 13 topics" in the demo:
TPR 0.237, FPR 0.051; "each of 22 topics" production-shaped: TPR 0.203, FPR 0.050) — in
``detector_quality`` and ``novelty.quality``; trust verdicts, alarms and suggestions unchanged.
All three rewritten in the thirty-third session (s33-qtime, trial 15 MEDIUM 2) for added fields
and nothing else (checked: each rewritten file without them equals its former content): per
series bucket ``known`` (production's scored known questions and the sums of recall, hit, RR
and their squares) and ``agreement`` (per candidate, RBO and overlap sums), and
``analytics.series.over_time`` (:func:`service.quality.over_time.over_time`). Their totals
equal the reports' own: demo 17 scored (``quality.known.production.n_scored`` 17), hybrid 2,914
RBO results (``shadow`` counts 2,914); production-shaped 64 and 20k 421 scored. Over time: demo
production not compared (17 scored, no two points of 10), hybrid's worst hour RBO 0.651 (n 13)
against 0.738, within noise (p 0.10, 54 points); production-shaped one point (not compared);
20k 3 points, worst hit rate 0.843 (n 102) against 0.856, within noise (p 0.75).
The demo's rewritten in the thirty-third session (s33-shadow, trial 15 M4, M3, L6; the two
production-shaped replays run no shadow candidate and did not move), each difference checked
against a run of each change alone. (1) Questions holding a PII placeholder are no longer
shadow-run (skipped ``scrubbed``: 8 events): hybrid ``queued``/``completed``/``counts.rbo``
2,914 → 2,906, agreement moved in the fourth decimal (RBO 0.73775 → 0.73778), the language
and topic cells lose those events; live-quality ACL violations found in hybrid's rankings of
those texts 378 → 376 and 626 → 625 events; ``gold_candidates.by_reason.shadow_disagreement``
95 → 94: "exam kb se shuru hai ji" loses the event "exam kab se shuru hai? pls reply on
whatsapp <PHONE> or <EMAIL>" that only a disagreement had added (count 5 → 4, priority 19.69 →
14.23, so the report's top list from place 16 shifts up by one). (2) A hybrid result that came
before its event was picked is pooled with it: 313 suggestions gain hybrid's passages (326 of
420 had production's alone, now 32), nothing else changes (checked: without the candidates'
pool entries the suggestions are equal). (3) Two added fields, hybrid's ``compared_from``
2026-11-15T18:32:32 and ``compared_to`` 2026-11-18T18:29:23 (the span compared).
All three rewritten in the thirty-third session (s33-terms, trial 14 HIGH 2) for the new drift
dimension ``terms`` and nothing else (checked: each rewritten file without its ``terms`` keys
and ``terms`` alarms equals its former content): ``analytics.drift.terms`` in all three; the
demo's alarms gain three ``terms`` entries — drift at 2026-11-17 13:00 UTC after 1,600 events
(rising exam 3.3 % → 21.1 %, the planted exam-schedule change), ended (too few events) after
2,000 with the other dimensions, drift again after 2,100 (semester, exam); the
production-shaped replays raise no ``terms`` alarm.
All three rewritten again in the thirty-third session for the rising-terms test's exact
conditional p and its family (a review: the normal approximation's p was up to ~65× too small
at these sizes; the family was chosen by the current count): only ``drift.terms`` fields and
the terms alarms' ``p_value``, ``alpha`` and ``terms_tested`` moved (demo: 12 → 57 and 5 → 43
terms in the family); the same alarms at the same events, with the same rising terms.
All three rewritten in the thirty-third session (s33-qfix, review 3 HIGH 1: the worst point is
tested with the question as the unit), checked by a field-by-field diff: added fields only
(per series bucket ``known_questions`` and ``agreement_questions``; ``quality_partial``; per
track ``tested`` and ``all.questions``; per point ``questions`` and ``question_hit_rate`` /
``question_rbo``), and the worst points' tests: demo hybrid the same hour (RBO 0.651, 13
questions against 0.732 of 1,670) by Welch's t-test on per-question means, p 0.10 → 0.15,
within noise (54 points tested); demo production 17 scored of 2 questions, still not
compared; production-shaped 64 scored of 59 questions in one point, still not compared; 20k
the worst point moves to the one lowest per question (hit rate 0.847 of 157 scored, 119
questions, against 0.854 of 179; was 0.843 of 102 by events), p 0.75 → 0.87, within noise.
All three rewritten in the thirty-fifth session for one meant change (trial 16, MEDIUM 1): a
question in a language no gold row is written in gets no topic (``TopicStage``), is in no
topic share, and is counted in the added ``analytics.topic_no_gold_rows_by_language``. The
demo's: that field (``{}``) and nothing else (checked: the new file without it equals the
former). The production-shaped ones: the log's Hinglish questions (hi-Latn; its gold set has
none, and the out-of-scope rule already left the same 302 unjudged) get no topic:
``topic_no_gold_rows_by_language`` {hi-Latn: 302} (20k: {hi-Latn: 1,858, id: 1}); ``novel``
619 → 420 (share 0.214 → 0.162; 20k 3,984 → 2,747, 0.206 → 0.158), the other topics' counts
and the topic comparisons' shares with them (the same topic alarm vs the gold set at the
same event, rising novel, topic-7, topic-8; falling topic-4, topic-12, topic-9, was also
topic-6 and topic-5), the series' topic counts, and harvest: suggestions of those questions
lose the ``novel`` reason and the topic gap (by_reason novel 589 → 396, the other reasons
and the 1,696 held unchanged; 20k: 5,388 → 5,381 held after eviction, novel 2,975 → 1,907,
coverage_gap 3,077 → 2,144, answered_out_of_scope 3,638 → 4,552). Checked by a field-by-field
diff against the goldens before.
The demo's and the production-shaped one rewritten again in the thirty-fifth session (trial
17, finding 2: an open alarm never named a category that rose later) for one added alarm
entry each and nothing else (checked: the new files without the ``widened`` entries equal
the former): demo ``topic vs baseline`` after 2,400 events, ``widened: ["events"]`` (the
alarm opened at 1,500 on exams and novel); production ``topic vs reference`` after 2,413
events, ``widened: ["topic-16"]`` (opened at 680 on novel, topic-7, topic-8). The 20k one:
no widening, unchanged.
Rewritten back in the same session's review (s35-rev-drift) without those two entries, the
rest unchanged (checked as above): both were rises no alarm would have called strong (demo
``events`` 1.6 % → 4.8 %, CI [0.5, 6.7] pp, a topic the demo log keeps at 0.5 % in every
phase; production ``topic-16`` 5.7 % → 8.5 %, CI [0.2, 5.0] pp), and a widening now needs
the CI bound an alarm needs (``min_share_change``).
The production-shaped ones rewritten again in the thirty-fifth session (review s35-rev-topic,
finding 3): harvest's coverage window leaves a question given no topic out of the topic
shares too (it counted the 302 Hinglish questions as topic ``und``, diluting every topic's
share there), so its topic gaps are those the drift view shows: only ``gold_candidates``
moved (checked: the rest of each report equal): production coverage_gap 689 → 849, the
suggestions held 1,696 → 1,801, the ``novel`` gap 0.069 → 0.081 and a second topic gap
(0.030, 195 suggestions); 20k coverage_gap 2,144 → 2,281, 5,381 → 5,000 held after
eviction. The demo's unchanged.
The demo's rewritten again in the thirty-fifth session (trial 17, HIGH 1) for two added fields
and nothing else: its gold set's 3 Devanagari Hindi rows (0 of 3 agreeing held out; Wilson
lower bound 0 under en's 22 of 45 less 10 points) keep topic quiet while Hindi's share moves
(``drift.topic.confounded`` with ``categories: ["hi"]`` and ``suppressed_dimensions["topic
(while language drifts in hi)"]``); hi never moves in the demo's language comparisons, so no
alarm changed; hi-Latn (6 of 8, lower bound 0.409 >= 0.389) is shown about as good.
The demo's rewritten in the thirty-sixth session (trial 19, a topic read at half its share)
for one added field and nothing else (checked: the rewritten file without it equals its
former content): ``analytics.topic_quality.agreement.by_topic``, each gold topic's held-out
rows kept, where the others went and the rows read as it (the confusion matrix's row and
column sums); the production-shaped logs' gold sets have no topic labels (unsupervised
topics: no such figure), so theirs are unchanged.
All three rewritten in the thirty-sixth session for one meant change (trial 36, MEDIUM 1: the
alarm times depended on ``pipeline.max_batch_size``; a replay alarmed 1.5–2 h of event time
after ``serve`` on the same events): a drift alarm is recorded at the test that raised it
(dated by that test, ``after_events`` the events up to the one that set it off), no longer at
the end of the 100-event chunk holding it (dated by the chunk's last test); the share kept out
is counted in blocks of 100 events of the whole stream; harvest judges each event's coverage
gap over its window right after that event, no longer after the whole batch. Checked by a
field-by-field diff: in ``analytics`` only the alarms and ``event_time.recent_events`` moved,
the rest of each report only in ``gold_candidates`` (and the exported suggestions). Demo:
language (hi-Latn) and topic (exams) vs baseline after 1,500 → 1,450 events (2026-11-17
11:32 → 10:30 UTC), terms (exam) 1,600 → 1,532 (13:00 → 12:00), their ``insufficient_data``
ends 2,000 → 1,963 (11-18 02:04 → 11-17 21:01), drift again 2,100 → 2,078 (the same test,
04:01), refusal 2,400 → 2,346 (09:00 → 08:00), each with its own test's figures (p-value,
JSD, rates, terms): the same categories and terms rise, but the first topic alarm names
exams alone (an hour later it named exams and novel, falling hostel, scholarships, library)
and the refusal alarm's rate is 13.8 % (was 20.2 %) against 4.2 %; harvest
``coverage_gap`` 206 → 199 (the gap's events 206 → 204), 420 suggestions re-ranked. The
session's start (7e79640) fed the demo log one event at a time (``max_batch_size`` 1) gives
these ten alarms exactly and ``coverage_gap`` 199: what small batches gave already.
Production-shaped: language and topic vs reference after 680 → 601 events (the same test, at
06:05); ``coverage_gap`` 849 → 769, suggestions held 1,801 → 1,761 (the language gap's 293
→ 279, the second topic gap's 195 → 169). 20k: the same alarms 685 → 601,
``recent_events`` 5,011 → 5,000 (blocks of the stream's events); ``coverage_gap`` 2,281 →
2,300, ``answered_out_of_scope`` 4,295 → 4,282, ``refused`` 602 → 611, ``low_confidence``
981 → 985 (other suggestions among the 5,000 held after eviction).
All three rewritten in the thirty-sixth session (s36-detect; a new user's trial, MEDIUM: a
60-row gold set and ~52 questions an hour read "ok" and could see none of 4 planted changes)
for one added field and nothing else (checked: each new file with every ``detectable`` key
removed equals the former, field for field): each comparison of language, topic, refusal and
out-of-scope gains ``detectable``, the smallest rise it can alarm on at its sizes
(:mod:`service.drift.sizing`). Demo: language vs gold set hi-Latn 13.6 % → 42.9 % (59 gold
rows, ~758 questions a 12 h window), vs baseline 6.5 % → 17.7 % (~300 a 4 h window, 428 in
the baseline); topic exams 15.3 % → 48.7 % / fees 19.9 % → 42.3 %; refusal rate 4.2 % →
13.3 %, out-of-scope 3.3 % → 12.3 % (its line adding "but the dimension raises no alarm
while suppressed": the demo's out-of-scope detector is uncalibrated). Production: vs gold
set es 10.5 % → 20.5 %, topic-4 10.5 % → 28.4 % (477 gold rows); vs the baseline still
warming up (its expected 14,406 events), hi-Latn 10.4 % → 17.0 %, novel 16.2 % → 23.4 %,
refusal 7.9 % → 14.4 %, out-of-scope 48.3 % → 55.6 %. 20k: es 10.5 % → 19.1 %, topic-4
10.5 % → 26.4 %, hi-Latn 9.7 % → 15.6 %, novel 15.5 % → 21.5 %, refusal 8.2 % → 14.0 %,
out-of-scope 48.7 % → 55.0 %.
Rewritten again in the same session's review (s36-rev-detect) for that field's values only
(checked the same way: every file without ``detectable`` equals the former): each line now
says the rise in points, that it is the largest any category up to 50 % needs, and that a
window at exactly the stated share alarms at about half its tests; one figure moved, the
demo's topic vs gold set, from exams 15.3 % → 48.7 % (+33.4 points) to hostel 11.9 % →
46.7 % (+34.8): the largest share up to 50 % was not the hardest rise to see there.
All three rewritten in the thirty-seventh session (s37-trialfix, trial 21) for two meant
changes and nothing else (checked field for field: each file with both put back equals the
former; the suggestions are unchanged). (1) The refusal method sentence's NoMIRACL figures,
"precision 0.98, recall 1.00" → "precision 0.99, recall 1.00": the per-context listings
that find the answer in one context are answers now (English precision 0.984 → 0.994); no
refusal verdict of these logs moved. (2) ``gold_candidates.top`` is the labellers' queue's
first 20 (:meth:`~service.harvest.stage.HarvestStage.best_records`:
:func:`service.harvest.ranking.select`'s order, as the API and the export give them; was by
priority alone): the same records, another order and membership (demo 9 of the former 20
kept, production 3, 20k 1); in the demo and production files the new ``top`` ids are the
first 20 of the export's rows (``suggestions``), checked.
All three rewritten in the thirty-seventh session (s37-topicgate; trial 37 HIGH 1: a topic
model near chance, 12 of 44 held out, stated its shares, gaps and alarms as facts) for four
added fields and nothing else (checked: each new file, regenerated, differs from the former
by these four keys only, field for field; the files written are the former ones with the four
keys put in): ``analytics.topic_quality.kappa`` and ``chance`` (the supervised model's
held-out Cohen's kappa and the chance agreement it corrects for: demo 0.45497 and 0.12927,
above the default floor, so nothing of the demo's moves; production-shaped and 20k
``None``, unsupervised topics), ``min_kappa`` (0.4, ``analytics.topics.min_kappa``) and
``uncalibrated`` (``None`` in all three).
All three rewritten in the thirty-seventh session (s37-langfig; trial 37, MEDIUM 2 and 3) for
added fields and nothing else (checked by a field-by-field diff against the former files:
eight added keys in each, no value changed, no key removed, the suggestions and the 20k
digest unchanged; the live-quality stage now runs before the drift stage, which reads its
``known_refused`` annotation, and moved no other figure): ``analytics.refusals.by_language``
(the refusal rate per language with its n and Wilson 95 % interval: demo en 159 of 2,242,
hi-Latn 122 of 682, hi 47 of 76; production en 215 of 2,316, hi-Latn 8 of 302, es 3 of 144,
hi 3 of 133; 20k en 1,448 of 15,531 ...), ``analytics.refusals.by_language_answers`` (the
answers they cover: every one, 3,000 / 2,895 / 19,300), ``analytics.refusals.
known_over_refusal`` (the refusal rate of known answerable gold questions and its text: demo
0 of 17, production 0 of 64, 20k 9 of 421), ``analytics.drift.known_refusal`` (its drift
comparison, baseline only, on 24 h windows from 30 known answerable questions: demo "cannot
alarm: its 24 h windows hold fewer than known_min_count (30) known answerable questions (the
busiest had 11)"; production and 20k: the baseline still warming up, the logs being shorter
than its 24 h), ``quality.known_refusal``, ``quality.by_language`` (production's figures and
the known refusals per language: demo en 17 scored, hit rate 1.0; production en 50 scored,
hit rate 0.88, hi 9, few; 20k en 344, 0.849 ...), ``quality.by_language_partial`` (false)
and ``quality.by_language_min_n`` (10).
All three rewritten in the thirty-seventh session (s37-pii-acct; trial 22 HIGH 1: bank
account numbers after an account cue were stored as written) for the new personal-data type
``account`` and what scrubbing one question moved, nothing else (checked by a field-by-field
diff against the former files): ``analytics.pii_scrubbed.account`` added (demo 0, production
1, 20k 4: the benchmark log's CLINC150 question ``add my wife as an authorized user to
checking account 20905432``, once in the first 3,000 lines and four times in 20,000, now
``... checking account <ACCOUNT>``; no other text of either log, question or answer, holds an
account span). That question's topic moved topic-7 → topic-11 (production 242 → 241 and
195 → 196, 20k 1,467 → 1,463 and 1,396 → 1,400, the series buckets alike), so the topic
comparison's js_divergence/psi and topic-7's rising/coverage-gap figures moved in the 4th
digit (production js 0.061147 → 0.061092, 20k 0.059861 → 0.059840). Its suggestion has a
new id (the id hashes the scrubbed text; same reasons, ``refused``), so the export's order
shifts around it. Production: harvest's topic-7 gap, at its rule's edge, is no longer one
(``n_gaps`` 3 → 2, ``in_gaps`` loses topic-7): four suggestions whose only reason it was
are gone (``n_suggestions`` 1,761 → 1,757, by_reason coverage_gap 769 → 764), ``what should
i take for nausea`` keeps ``refused`` alone, two priorities move 1.031313 → 1.030402; every
other suggestion is equal. 20k: by_reason answered_out_of_scope 4,282 → 4,284, coverage_gap
2,300 → 2,294, low_confidence 985 → 984, negative_feedback 364 → 363; the suggestions'
digest re-pinned (:data:`PRODUCTION_20K_SUGGESTIONS_DIGEST`, 5,000 held; compared field by
field with the former code's export: the question lost ``coverage_gap`` with its topic, 27
priorities moved in the 3rd-4th digit with topic-7's gap, and at the 5,000 cap three
suggestions (``ways to transfer my 401k`` ...) gave way to three answered-out-of-scope ones
(``how is the weather in austin`` ...); every other field equal).
All three rewritten in the thirty-eighth session (s38-small; trial 22 LOW 6: a blank line of
the log was neither consumed nor dead-lettered, and nothing said so) for one added field and
nothing else: the report's ``blank_lines`` (the log's blank lines, beside ``consumed``; 0 in
all three logs, which have none). The files written are the former ones with that key put in,
and the three replays reproduce them. Then (s38-small, reviewers: the refusal method sentence
did not say that generation failures count as refusals) for the sentence and nothing else
(field-for-field diff: one difference per file, ``analytics.refusals.method``, which now says
"a reply with no answer in it (empty, "Unable to generate response.", an error message such
as "Internal server error") counts as a refusal" before "set answer.refused for exact
counts"). The failure-message pattern added with it matches no answer of the three logs: the
refusal counts, every other figure, the suggestions and the 20k digest are unchanged.
All three rewritten again in the thirty-eighth session (s38-refde; trial 23 HIGH 1: the
method sentence quoted NoMIRACL's precision 0.99 / recall 1.00 to a German help desk) for
the sentence and nothing else (field-for-field diff: one difference per file,
``analytics.refusals.method``, which now says the figures are of "LLM replies to English and
Hindi questions (the replies mostly English); not measured on replies in any other
language"). The German, Spanish and French patterns added with it match no answer of the
three logs: the refusal counts, every other figure, the suggestions and the 20k digest are
unchanged. Then (s38-refde, trial 23 HIGH 1 item 3) for two added fields and nothing else
(field-for-field diff: two differences per file, both added keys):
``analytics.refusals.against_flag`` (the patterns against the producer's ``answer.refused``
per language, on the answers that set it and have a text) and ``against_flag_text`` (its
sentence). Demo (649 answers set the flag; 649 of them have a text): en 519 read, 34 flagged
refused, the text reads the same 34 (precision and recall 34/34, Wilson [0.898, 1]), hi-Latn
116 read, 25/25 ([0.867, 1]), hi 14 read, 9/9 (few: fewer than 10 flagged refusals);
production-shaped and 20k: ``[]`` and ``None`` (the benchmark's log sets no flag).
All three rewritten in the thirty-eighth session (s38-alerts; trial 38 HIGH 2: a 12-hour
collapse of production's hit rate@10 on known questions raised nothing live) for one added
field and nothing else (checked by a field-by-field diff against the former files: one added
key in each, no value changed, no key removed, the suggestions and the 20k digest
unchanged): ``analytics.drift.known_miss``, the drift dimension of production's miss rate on
known questions (1 - live hit rate@10; the live-quality stage's new ``known_missed``
annotation), baseline only, on the known-question windows (24 h, 30 scored known questions)
with its own Bonferroni share, so no other dimension's level moved: demo "cannot alarm: its
24 h windows hold fewer than known_min_count (30) scored known questions (the busiest had
11)"; production (59) and 20k (419): the baseline still warming up, the logs being shorter
than its 24 h — the same states, sizes and levels as ``known_refusal``'s.
All three rewritten in the thirty-eighth session (s38-oos, trial 37b H2/M3) for the
off-corpus cutoff's range and the drift dimension that leaves out the verdicts it moves, and
nothing else (checked field for field against the former files: no verdict, count, alarm or
suggestion moved). Added: ``analytics.out_of_scope.support.band`` and ``band_by_script``
(the cutoff's 95 % bootstrap range: demo Latn [0.263, 0.346], production and 20k Latn
[0.264, 0.331], Deva [0.614, 0.650]), each ``support.by_language`` row's ``band`` and
``analytics.out_of_scope.unstable`` (demo 0 out / 606 in of 3,000 scored, production 301 /
70 of 2,593, 20k 2,017 / 584 of 17,441). Moved: the ``out_of_scope`` drift comparison vs
baseline, now of the other verdicts (``out_of_scope_stable``) — demo n_current 300 → 237,
n_reference 428 → 355, rates 0.053 / 0.033 → 0.068 / 0.039, p 0.168 → 0.127 (still ``ok``),
its ``detectable`` figures and alpha in the 4th digit; production and 20k: still warming up,
``detectable`` n 2,155 → 1,845 and 6,394 → 5,433, and the ``insufficient`` reason names the
new unit ("scored questions (verdicts the off-corpus cutoff's range does not move)").
Production and 20k rewritten again by its review (s38-rev-oos): harvesting gives no
``answered_out_of_scope`` reason to a verdict that range moves (``scope_unstable``), and
only the suggestions moved (checked field for field; demo unchanged: none of its unstable
verdicts is out of scope). Production: ``by_reason.answered_out_of_scope`` 1,050 → 791,
``n_suggestions`` 1,757 → 1,561 (the 196 that had no other reason), the top 20's order and
members with them, the export's suggestions likewise; 20k: 4,284 → 4,006, and at the 5,000
cap the held suggestions' other reasons and gaps moved with the ones kept
(``coverage_gap`` 2,294 → 2,337, ``refused`` 611 → 639, ``in_gaps[1].n`` 128 → 221 ...).
No analytics, verdict, count or alarm moved.
All three rewritten in the thirty-eighth session (s38-docgap; trial 37b MEDIUM 4: a surge on a
FAQ the gold set had no row on got no gap reason) for one meant change: harvest's coverage
gaps have a third dimension, ``document`` (a question's: the corpus document of the passage
production ranked first; the gold set's: its rows' relevant passages'). Checked by a
field-by-field diff against the former files: only ``gold_candidates`` and the suggestions
moved. Added: ``gold_candidates.documents`` (the under-covered documents over all traffic:
demo ``invigilation-note-odd-2026.docx``, 288 of 2,914 questions' first passage against 1 of
47 gold references, gap 0.0672 — the staff-only note production answers exam questions from
in phases B and C; production and 20k none, the gold set asks about all 49 documents). Demo:
``in_gaps`` gains that document (76 suggestions, gap 0.1154 over the last 1,000 events),
by_reason coverage_gap 199 → 240, shadow_disagreement 94 → 93, ``n_suggestions`` 420 → 430
(exam questions picked for the gap start suggestions of their own: 18 new ids, 8 former ones
now merged under another wording), 18 of the former top 20 kept. Production: the same 1,757
suggestions with the same reasons; 112 priorities moved by sub-floor document gaps (the
priority's ``1 + gap``, as topic and language gaps below ``min_gap`` always did), so the
export's order and the report's ``top`` move. 20k: 5,000 held, by_reason
answered_out_of_scope 4,284 → 4,286, refused 611 → 610 (the eviction at the 5,000 cap follows
the moved priorities); the suggestions' digest re-pinned.
All three rewritten in the thirty-ninth session (s39-oos: the out-of-scope surfaces say what
they count) for added fields and one sentence, and nothing else (checked field for field
against the former files: no verdict, count, rate, alarm or suggestion moved). Added: each
rate dimension's ``analytics.drift.<dim>.counts`` (what its windows count: ``refusal``
"answers", ``known_refusal``, ``known_miss``, and ``out_of_scope`` "scored questions
(verdicts the off-corpus cutoff's range does not move)"), ``analytics.out_of_scope
.share_counts`` ("every verdict ..."), and under ``analytics.out_of_scope.unstable`` the
counts since the range now in use began (``band``, ``since`` the first event's time,
``since_scored`` 0 in these one-run replays, so ``scored`` / ``out_of_scope`` equal the
all-time ones: demo 3,000 / 185, production 2,593 / 1,253, 20k 17,441 / 8,496) and
``stable_share``, the out-of-scope share of the verdicts the drift windows count (worked
from the counts: demo 185 / (3,000 - 606) = 7.7 %, production (1,253 - 301) / (2,593 - 371)
= 42.8 %, 20k (8,496 - 2,017) / (17,441 - 2,601) = 43.7 %). Moved: ``unstable.text`` ends
with what the range does not cover (the regression a gold-set change refits) and the stable
verdicts' out-of-scope count and share.
Also rewritten in the thirty-ninth session (s39-small2; trial 24 LOW 7: ``/v1/quality``
``coverage.rows`` read 50 with 53 gold rows loaded — it counts the rows *measured*) for one
added key and nothing else (checked key by key against the former files):
``quality.coverage.gold_rows``, the size of the gold set in use (demo 59, production and 20k
477); ``coverage.rows`` keeps its name and value for API clients.
Also rewritten in the thirty-ninth session (s39-livequal; trial 39 MEDIUM 3 and 4) for
added fields and nothing else (checked key by key against the former files: 0 changed, 0
removed; demo 106, production 59, 20k 59 keys added): ``quality.by_group`` (production's
known-question figures per gold ``kind`` and ``topic``: demo kind plain 17 scored of 2
questions, topics exams 9 / transport 8; production plain 64 scored of 59 questions, hit rate
0.875, unanswerable 12 known none scored, topic ``none``; 20k plain 421 of 227, 0.853),
``quality.by_group_recent`` (the same over the latest ``known_window_s``, in hour buckets:
demo 2026-11-18 05:00–19:00, 2 scored; production 06:00–07:00, 64; 20k 06:00–09:00, 421),
``quality.by_group_min_n`` (10) and, in the demo, ``quality.known.hybrid.paired.by_question``
(2 gold questions, 17 events: hit@10 and recall@10 +0, MRR@10 +0.333, p 1 each).
The demo's rewritten in the thirty-ninth session (s39-flap; trial 24 MEDIUM 2: one ongoing
change gave several alarms) for one meant change: an open drift alarm is held through tests
too short of events (``insufficient_data``: not tested is not cleared) and ends only when a
test shows the effect below half the threshold. Checked field for field against the former
file: only ``analytics.drift.alarms`` moved, 10 entries → 4, the 4 kept equal to the former
ones (language, topic at 10:30, terms at 12:00 on 17 November, refusal at 08:00 on 18
November); gone: the three "ended, too few events to test" entries of the night's thin
windows (21:01) and the same three alarms raised again at 04:01. The current states, tests,
suggestions and every other field are unchanged; production and 20k files are unchanged
(rewritten byte for byte equal).
All three rewritten once more in the thirty-ninth session for one sentence: ``analytics
.out_of_scope.unstable.text``'s clause on the regression states the measured range (0.002 to
0.058 on 12 draws, flipping 1.0 % of all verdicts outside the range) apart from trial 37b's
single 0.439 → 0.288 move (review of s39-oos); no other key moved.
The demo's rewritten in the fortieth session (trial 40 LOW 2: a term of the open ``terms``
alarm holds it while in at least half the 10-question floor): the final report's tenth
rising term is ``discret`` (7 questions now, 1 in the baseline; p 0.018), a term of the
alarm still open, which sorts ahead of ``mark`` (10 questions, p 0.025) — the only 8 keys
that moved, ``analytics.drift.terms.comparisons.baseline.rising[9]``; the alarm entries and
every other field are unchanged; production and 20k files unchanged.
Production and 20k rewritten in the fortieth session (s40-uncov; trial 24: 99 CLINC150
chit-chat questions judged out of scope took ``coverage_gap`` from the uncovered-documents
share) for one meant change: a question the scope stage judged out of scope (a stable
verdict of a calibrated detector) joins no ``document`` share and takes no ``document`` gap
(``service.harvest.signals.production_documents``). Checked field for field against the
former files, which the code before reproduced (its one-loop window step alone left all
three and the 20k digest equal): production: the same 1,561 suggestions with the same
reasons; 91 priorities moved (77 down, 14 up, by at most 0.044: the sub-floor document gaps
of questions judged out of scope are gone, the others' shares are of fewer questions), so
the export's order and the report's ``top`` move: "where do peaches come from in the us"
(4.515) leaves the top 20 for "where do kidneys for kidney transplant come from" (4.5),
"when were cigarette ads banned from tv uk" 9.014 → 9.0 (its gap, document 0.0016, gone).
20k: 5,000 held, ``by_reason.refused`` 636 → 637, 454 priorities moved (433 down); at the
cap "make me a list of the top ten reviewed hiking boots on jetcom" (refused, 4.026) gave
way to "can you tell me how fast the average airplane enroute to california goes" (refused,
4.0), and "flip that coin please" keeps an earlier occurrence (2 events, first seen 07:00
not 08:22, ``refused`` added to ``answered_out_of_scope``, priority 2.5 → 9.0); the top 20
the same members, "vacuum out the car" 17.973 → 18.043, "my name's <NAME>" 16.575 → 16.5
(its document gap gone: now after "please set a timer for", 16.574). No analytics,
verdict, count or alarm moved; the demo's file is unchanged (equal).
All three rewritten in the fortieth session (s40-topicgate; trial t40 HIGH 1: a novelty
detector catching 5 of 30 held-out topics read "calibrated", so its topic shares, a false
topic coverage gap and 135 suggestions' ``coverage_gap`` were stated as facts) for a meant
change: novelty is trusted only when its balanced accuracy at its threshold, the FPR at its
Wilson bound, reaches ``analytics.scope_min_balanced_accuracy`` (0.68), and while it is not
the topics are each question's nearest gold topic: no topic coverage gap in the drift view,
on /metrics or in harvesting; the topic alarms stand. Checked field by field against the
former files. Demo (novelty already uncalibrated, ROC AUC 0.674 under the floor 0.75): added
``analytics.drift.topic.categories_are``; harvest's recent-window gap of topic
``scholarships`` gives no ``coverage_gap`` now: ``n_suggestions`` 430 → 414, ``by_reason
.coverage_gap`` 240 → 213; 23 suggestions gone (22 with topic ``scholarships``, 17 whose
only reason it was), 7 came in (later wordings of the same questions, picked for another
reason), 7 kept ones lost the reason, 11 priorities moved, the ``top`` list reorders around
them (20 of its events and 3 entries). Of the 22, 20 ask about scholarships or fee waivers:
the gap was mostly real, but with a novelty detector at chance the topic shares cannot say
so; the language and document gaps are unchanged. The demo's three planted detections
(language, topic "rising exams" at 10:30, refusal) are unchanged; the topic alarm's text
line now says "(by nearest gold topic)". Production-shaped: novelty, ROC AUC 0.764 and 97
of 477 held out at 24 of 477 kept (balanced accuracy 0.577, 0.565 at the bound), is now
uncalibrated (``novelty.uncalibrated``, ``detector_quality.novelty.trusted`` false,
``uncalibrated``); ``drift.topic`` gains ``suppressed_categories`` {novel},
``categories_are``, and ``coverage_gaps`` [novel 16.2 % live / 5.0 % gold, topic-7 9.3 % /
4.6 %] become ``coverage_gaps_left_out``; ``suppressed_dimensions`` adds "topic (novel
share)"; the topic vs reference alarm is unchanged (topic-7 and topic-8 rise too). Harvest:
reason ``novel`` 396 → none (an uncalibrated detector's verdict is no reason, as before),
``coverage_gap`` 764 → 277, ``n_gaps`` 2 → 1 (``in_gaps`` keeps language hi-Latn 279),
``n_suggestions`` 1,561 → 1,444 (117 gone: 78 with ``coverage_gap`` alone, 36 with it and
``novel``, 3 with ``novel`` alone; 403 kept ones lost a reason, 416 priorities moved). 20k:
the same report moves (``coverage_gaps`` [novel 15.8 % / 5.0 %] left out, the topic alarm
unchanged), ``by_reason`` novel 1,907 → none, coverage_gap 2,339 → 475, low_confidence 911
→ 1,024, refused 636 → 865, negative_feedback 334 → 465 (fewer reasons per suggestion: the
eviction keeps others), ``n_suggestions`` 5,000 → 5,487 (held between evictions, within the
test's bound), ``in_gaps`` hi-Latn 223 → 475; digest re-pinned.
Merged after s40-uncov (all three regenerated on the merge and checked against both sides):
the demo's keys are each one side's; production's report keys are each one side's but the
suggestions' ``top``/``in_gaps`` lists, and its suggestions are topicgate's 1,444 with the
same reasons, 149 priorities differing from that side's: 91 moved by uncov alone, 58 where
topicgate's side kept a sub-floor document gap from out-of-scope questions (5.056 → 5.0:
uncov's rule applied to topicgate's set), the order following them; the 20k report and
digest as its comment says.
The demo's rewritten in the fortieth session (s40-refusal; trial 40 MEDIUM 2: the method
sentence said "phrase patterns not measured on this traffic" beside a measured recall of
0.681) for one changed sentence and one added key, nothing else (field-for-field diff
against the former file): ``analytics.refusals.method`` now states the patterns' measurement
against ``answer.refused`` on the demo's own traffic ("en recall 34/34 1.000 [0.898, 1.000],
precision 1.000; hi-Latn recall 25/25 1.000 [0.867, 1.000], precision 1.000; too few flagged
refusals to measure recall in hi; not measured in any other language", then NoMIRACL's
figures), and ``analytics.refusals.text_recall`` is added (``lower_bound`` false: no
language's recall has its upper bound below 0.95; no estimate, no missed wordings, no
text). The refusal counts
and every other field are unchanged. The production-shaped and 20k logs set no
``answer.refused``: nothing measured, their files unchanged.
The demo's rewritten in the forty-first session (s41-words) for one added key, nothing else
(field-for-field diff against the former file): ``analytics.refusals.text_recall.lines``
(``[]``: no lower bound; with one, the four short lines the reports and the status page
give). The production-shaped and 20k files unchanged (no ``text_recall``).
All three rewritten in the forty-first session (s41-overtime; trial 41 MEDIUM 3) for added
keys only (field-for-field diff against the former files; every other field unchanged):
``analytics.series.over_time.known.sustained`` and ``...agreement.<candidate>.sustained``
(the run of consecutive points against the points before it): demo ``known`` null (no 1 h
point holds 10 scored known questions), ``hybrid`` found 11-16 15:00 → 11-17 07:00 UTC
(10 points, 121 questions paired, mean RBO 0.765 against 0.773), p 0.0018 >= 0.05/1473:
within noise (the demo plants no retrieval change); production ``known`` null (no point
tested); 20k ``known`` ``found`` false over 3 runs tested (none below its prefix). The demo's
refusal alarm (baseline, 2026-11-18 08:00 UTC, 4.2 % → 13.8 % over its 4 h window) gains
``recent_s`` 7200, ``window_s`` 14400, ``n_recent`` 127, ``rate_recent`` 0.213: the newest
2 h of the window. By the demo log's truth (``generate_with_meta``): refusal phase C starts
06:32:50, the 2 h before the alarm hold 27 refusals of 127 answers (0.213), phase C as a
whole 185 of 750 (0.247).
All three rewritten in the forty-first session (s41-sizing, merged with main in the
forty-second; trial 41 LOW 1 and 2) for added keys only (leaf-by-leaf diff against main's
files and against s41-sizing's own regeneration: the same two added leaves each, every other
leaf, the drift alarms' times and the sizing advice's figures included, unchanged): the
demo's ``analytics.detector_quality.out_of_scope.to_calibrate`` and
``analytics.out_of_scope.quality.to_calibrate`` ("add at least 11 off-topic questions ...":
its detector is uncalibrated by its balanced accuracy, 9 of its 12 unanswerable rows judged
in scope); the production-shaped and 20k reports' ``analytics.drift.alarms[0]`` and ``[1]``
``reads`` (their two gold-set alarms: a standing gap to the gold set, not a dated change).
All three rewritten in the forty-sixth session (s46-small; trial 46 F10) for one changed
sentence, nothing else (leaf-by-leaf diff against main's files: one differing leaf each):
``analytics.refusals.method`` adds, after "(the replies mostly English)", what the NoMIRACL
figures were measured against (", against NoMIRACL's own reading of each reply: ... (1,809
of 11,000), left out"); with that clause taken out each sentence equals main's.
The demo's rewritten in the forty-seventh session (s47-f5; trial 46 F5) for its advice only
(leaf-by-leaf diff against main's file: two differing leaves, nothing else):
``analytics.detector_quality.out_of_scope.to_calibrate`` and
``analytics.out_of_scope.quality.to_calibrate`` now ask for ``kind: off-topic`` rows, "add at
least 10" (was 11 ``kind: unanswerable`` rows): the out-of-scope detector is measured on
off-topic rows once there are ``analytics.quality_min_class`` (10) of them, and the demo's 12
``gold: []`` rows are ``kind: unanswerable`` (a PhD fee, the principal's name: on its
subjects), so the count is that of off-topic rows from none: the class size
10, whose balanced accuracy at 0 of 10 let through, (45/47 + 1 − 0.2775) / 2 = 0.840, clears
0.68. The production-shaped goldens are unchanged (no ``kind: off-topic`` row, calibrated).
The production-shaped and 20k goldens rewritten in the forty-eighth session (s48-f2; trial 46
F2) for the topics only: unsupervised topics are fitted on the written rows in a canonical
order from Ward's clustering and named by content (``topic-<min-hash mod 10,000>``), so the
23 topics' names, sizes, labels and examples, their gold and live counts, the per-bucket topic
series, the topic comparisons' figures, the gold candidates' suggested topics and the
suggestions' order (topic-based priorities) moved. Unchanged (checked against main's files):
the 1,444 production-shaped suggestions (the same questions and ids), every reason count
(production 791 / 277 / 248 / 93 / 204; 20k 4,006 / 475 / 1,026 / 467 / 862), the 23 topics,
both gold-set alarms at 601 events (language p 2.4e-17; topic p 9.1e-10 → 2.1e-10). The
novelty quality, leave-one-topic-out on the clusters, moved with them: ROC AUC 0.764 → 0.866.
The demo's (supervised topics) is unchanged.
All three rewritten in the forty-ninth session (s49-scope-cv: the out-of-scope fit reads the
gold rows in canonical order and averages each row's held-out probability over 10 fold
draws). Checked key for key against the former files and against a regeneration of main on
the same machine (which itself moves 53 demo keys, the last bits of the shadow ``hybrid``
agreement means, within the float tolerance): only keys under ``analytics.out_of_scope``,
``detector_quality.out_of_scope``, ``drift.out_of_scope`` / ``suppressed_dimensions
.out_of_scope`` and ``gold_candidates`` / the suggestions moved. Demo (still uncalibrated):
AUC 0.808 → 0.780, threshold 0.1366 → 0.1926, TPR 0.957 → 0.915, FPR 0.750 → 0.917, balanced
accuracy 0.604 → 0.499, off-corpus trim 1/47 → 0 (Latin cutoff 0.3165 → 0.2626),
``out_of_scope`` 185 → 324, ``over_refusals`` 258 → 174, ``under_refusals`` 115 → 170,
``misjudged_answerable`` 3 → 5, ``misjudged_unanswerable`` 9 → 11; its suppressed drift test
reads ``drift`` (no alarm: suppressed); no suggestion moved. Production-shaped: AUC 0.967 →
0.970, threshold 0.3625 → 0.3848, TPR 0.952 → 0.955, trim 11/377 → 9/377, Latin cutoff
0.3010 → 0.2960, ``off_corpus`` 887 → 842, ``out_of_scope`` 1,253 → 1,257,
``under_refusals`` 1,106 → 1,110, ``misjudged_answerable`` 30 → 27, so
``answered_out_of_scope`` 791 → 813 and 1,444 → 1,467 suggestions (the list re-indexed).
The 20k report: ``out_of_scope`` 8,496 → 8,549, ``off_corpus`` 5,996 → 5,743; its
suggestions move through ``answered_out_of_scope`` (4,006 → 4,070) and, through it, the
store's priority eviction at 5,000 (``coverage_gap`` 475 → 401, refused 862 → 677,
low_confidence 1,026 → 973, negative_feedback 467 → 405; 5,488 → 5,178 suggestions): with
``harvest.max_suggestions`` at 1,000,000 (nothing evicted) only ``answered_out_of_scope``
moves, ``coverage_gap`` is 1,578 before and after (review of s49-scope-cv).
All three rewritten in the forty-ninth session (s49-novel; trial 49 L4) because both gold sets'
novelty detectors are uncalibrated (demo ROC AUC 0.674 < 0.75; production-shaped balanced
accuracy 0.655 at its Wilson bound < 0.68), and an uncalibrated novelty detector now labels
nothing: each question it called ``novel`` is counted under its nearest topic (demo 408,
production 420, 20k 2,747; the totals unchanged), and so is each gold row (demo 3, production
24). What moved, leaf by leaf against main's files: ``analytics.topics``, the per-bucket topic
series, the topic ``live_counts`` / ``gold_counts`` and the topic comparisons' figures (no
``novel`` key anywhere); ``analytics.novelty`` ``novel`` 0 and ``share`` null; the "topic
(novel share)" entries of ``suppressed_dimensions`` / ``suppressed_categories`` and the
``novel`` of ``coverage_gaps_left_out`` gone; the shadow comparison's ``by_topic`` (no
``novel`` row, its results under the nearest topics); the gold candidates' suggested topics
and, through the topic round-robin, the report's ``top`` lists and their pools. Alarms: the
demo's topic-vs-baseline alarm (same time, rising exams) now also names falling hostel and
scholarships; the production-shaped and 20k topic-vs-gold-set alarm (rising novel and
topic-3039/1009) no longer opens — its JSD 0.053 → 0.029 (20k 0.052 → 0.033), under
``min_jsd`` 0.05, p 9.4e-15 → 1.8e-6: the effect was the uncalibrated ``novel`` share (16 %
live vs 5 % gold). The language alarms, refusal and terms alarms are unchanged. Suggestions:
production 1,444 (same ids, every reason count unchanged); demo 414 → 413 (one hi-Latn
coverage_gap + low_confidence suggestion, "bimari ki wajah se attendance kam hai kya karu ji
urgent", previously suggested topic ``novel``, is no longer exported; coverage_gap 213 →
212, low_confidence 193 → 192). It is still held and stored (the state store holds 414
records, as before): the export's ``distinct`` check drops it as a near-duplicate of "bimari
ki wajah se attendence kam h kya karu" (c-e908c9b95bd67eef; trigram Jaccard 0.644 ≥ 0.6, the
same question by ``may_merge``; the stage's LSH misses this pair, so the two were never
merged, on main too). On main the two sat in the ``(novel, hi-Latn)`` stratum and the
dropped one came after the first 200 chosen, where ``distinct`` no longer checks; under
``(transport, hi-Latn)`` it is among them. ``serve`` lists 213 of its 214 held for the same
reason (``test_harvest_service.py::test_a_finished_input_lists_every_suggestion_as_it_ends``).

All three rewritten in the fifty-first session (s50-counted, rebased as s51-counted; trial 50
H2) for added fields only, no value moved (checked leaf by leaf against main's files: 9 added
fields, 34 added leaves each, none changed or removed): each ``out_of_scope.counted_under`` row
keeps ``from`` (the totals when its version began, all 0 here) and what judges it
(``calibrated``, ``uncalibrated``, ``misjudged_answerable``, ``misjudged_unanswerable``, equal
to the report's own), and ``out_of_scope`` adds ``counted_by`` (one version with the run's
counts), ``counts_uncalibrated`` (demo: "out of scope 324 of 324, … counted by an uncalibrated
detector (…)"; its ``uncalibrated`` stays the detector's own reason; production: ``None``) and
``over_refusals_explained_by`` / ``under_refusals_explained_by`` (``None``: one version). No
golden refits its detector mid-run, so the explained figures are the one version's, as before.

Rewritten in the fiftieth session (trial 50 M1) when the topic model came to read the gold
rows in canonical order (``service.topics.model.canonical_order``: by text, then label), so
its cross-validation folds, the novelty AUC's bootstrap and its version are those of the
set of rows, not the file's order. Production-shaped and 20k: only the novelty AUC's
bootstrap interval (``analytics.novelty.quality`` and ``detector_quality.novelty``:
``auc_low`` 0.84158 → 0.84170, ``auc_high`` 0.88883 → 0.88695; the AUC itself, the
threshold and the rates unchanged). Demo (supervised topics, one fold draw): the novelty
interval [0.587, 0.773] → [0.572, 0.773] (and its ``uncalibrated`` text); the held-out topic
agreement 31 → 33 of 59 (kappa 0.455 → 0.493, chance 0.1293 → 0.1304; per topic and per
language: en 22 → 26 of 45, hi-Latn 6 → 4 of 8); the gold-side topic counts exams 9 → 10,
fees 9 → 10, hostel 7 → 6, transport 6 → 5, hence the topic-vs-gold-set test (JSD 0.0620 →
0.0567, p 1.6e-4 → 2.8e-4, its detectable-shift text); with hi-Latn now also under en's
agreement interval, topic drift is confounded by language in ``hi`` and ``hi-Latn`` (was
``hi``), its end state ``drift`` → ``uncalibrated`` (tested ``drift``, held by hysteresis)
and a second ``topic`` vs baseline alarm opens at event 2,078 (the one at 1,450 as before).

Rewritten twice in the fifty-first session (review RM1 of trial 50 M1: the demo's outcome
rested on 2 of 8 Hinglish rows in one fold draw). Production-shaped and 20k: unchanged since
the canonical-order rewrite above (against main: its 4 novelty-interval keys; their topics are
clusters, no cross-validation). Demo, (1) each row's held-out topic is the argmax
of its centroid similarities averaged over 20 fold draws (``service.topics.model.CV_REPEATS``),
70 keys: ``topic_quality`` (agreement 33 → 32 of 59, en 26 → 25 of 45, hi-Latn 4 of 8 as
before; kappa 0.4932 → 0.4758, chance 0.1304 → 0.1270; ``method`` now says "repeated 20
times"; per-topic agreement, ``read_as`` and ``read_as_it``), the gold-side topic counts
(exams 10 → 9, fees 10 → 9, hostel 6 → 7, transport 5 → 6) hence the topic-vs-gold-set test
(JSD 0.0567 → 0.0620, p 2.8e-4 → 1.6e-4, its detectable-shift text) and the confounding
reason's en figure; alarms unchanged (topic still confounded in hi and hi-Latn). (2) The demo
gold set gains two Hinglish exam rows (``q-060``, ``q-061``; service/demo/README.md), 14,438
keys: the rows' own figures (language gold counts hi-Latn 8 → 10, language-id agreement 10 of
10; topic agreement 36 of 61, hi-Latn 6 of 10, kappa 0.5240, chance 0.1389; gold topic counts
exams 9 → 13, hostel 7 → 6, transport 6 → 5); hi-Latn, now with 10 rows, is measured and
within en's interval, so topic is confounded only while ``hi`` drifts: the topic end state
``uncalibrated`` → ``drift``, the vs-baseline topic alarm at 1,450 (held, ``uncalibrated``)
and the one at 2,078 give way to one alarm at 1,471 (exams rising, hostel falling); the
moved centroids move live topic counts (exams 630 → 647, fees 602 → 609, hostel 432 → 425,
transport 200 → 191, ...) and with them ``shadow.candidates.hybrid.by_topic``, the series'
per-bucket topics and the disagreements' topics; the 61-row fits move both detectors
(novelty AUC 0.674 → 0.708 [0.596, 0.806], still under 0.75; out-of-scope AUC 0.780 →
0.764, balanced accuracy 0.499 → 0.511, 49 answerable rows, still uncalibrated) and so the
out-of-scope counts, families, verdicts by language, drift and support; live quality gets
known questions ``q-060``/``q-061`` (``quality.known``, ``by_language``, ``by_group``,
``series``, known-miss and known-refusal windows, ``gold_set_version``); harvesting: 414 →
404 suggestions, ``coverage_gap`` reasons 213 → 193 (the hi-Latn language gap narrows, its
gold share 13.6 % → 16.4 %: 204 → 194 suggestions in it), hence every ``suggestions[]`` key
after the first moved one (ids, counts, pools, variants, priorities) and ``gold_candidates``
(top, in_gaps, documents: gold total 47 → 49 answerable rows).
"""

from __future__ import annotations

import gzip
import json
import math
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest

GOLDEN = Path(__file__).parent / "golden"
PRODUCTION_LINES = 3_000
#: Relative tolerance of a float against its golden. A replay is exact on one machine with
#: one number of BLAS threads, but what BLAS-backed fitting computes differs in its last bits
#: between CPUs and thread counts: the embedding out-of-scope detector's threshold (a
#: logistic regression's cross-validated probability) read 0.41690199126004923 on an AMD
#: EPYC where the goldens, written on another machine, hold 0.4169019557504985 (8.5e-8 apart,
#: relative), and its per-script cutoff (float32) 0.6144986748695374 with two OpenBLAS threads,
#: 0.6144985556602478 with one (the full suite runs the replay after a test left the pools at
#: one thread). Since the twenty-second session the detector is fitted under one BLAS thread
#: whatever the machine's count (``tests/service/test_scope_fit_threads.py``), so only the
#: CPU model moves them. Everything else — counts, ids, texts, decisions — must be equal.
REL_TOL = 1e-6


def _canonical(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True, indent=1, allow_nan=True)


def _replay(settings: Any, log: Path, workdir: Path) -> dict[str, Any]:
    """The replay report and the exported suggestions of ``log`` (paths made portable)."""
    from service.harvest.export import export_rows
    from service.harvest.store import StateStoreCandidates
    from service.jobs.replay import run_replay
    from service.state import StateStore

    state = workdir / "state.sqlite"
    report = run_replay(settings, log, state, workdir / "dlq.jsonl")
    report["file"] = Path(report["file"]).name
    report["dlq_path"] = Path(report["dlq_path"]).name
    with StateStore.open(state) as store:
        suggestions = export_rows(StateStoreCandidates(store), settings.harvest, None)
    return {"report": report, "suggestions": json.loads(json.dumps(suggestions))}


def demo_outputs(workdir: Path) -> dict[str, Any]:
    """``goldwatch replay --demo``'s report and suggestions."""
    from service.demo import demo_data, demo_path
    from service.settings import load_settings

    settings = load_settings(demo_path("goldwatch.yaml")).model_copy(update=demo_data())
    return _replay(settings, demo_path("querylog.jsonl"), workdir)


def production_outputs(workdir: Path) -> dict[str, Any]:
    """The production-shaped log's report and suggestions with the default configuration."""
    from benchmarks.bench_production import write_configs, write_gold_and_corpus, write_log
    from service.settings import load_settings

    gold, corpus = write_gold_and_corpus(workdir, seed=0)
    log = write_log(workdir / "events.jsonl", PRODUCTION_LINES, seed=0)
    defaults, _ = write_configs(workdir, gold, corpus)
    return _replay(load_settings(defaults), log.path, workdir)


def _golden(name: str) -> dict[str, Any]:
    with gzip.open(GOLDEN / f"{name}.json.gz", "rt", encoding="utf-8") as handle:
        return json.load(handle)  # type: ignore[no-any-return]


def _first_difference(got: Any, want: Any, path: str = "") -> str | None:
    """Where ``got`` first differs from ``want`` (a JSON path), for a readable failure."""
    if isinstance(want, dict) and isinstance(got, dict):
        for key in sorted(set(want) | set(got)):
            if key not in got or key not in want:
                return f"{path}/{key}: only in {'golden' if key in want else 'this run'}"
            found = _first_difference(got[key], want[key], f"{path}/{key}")
            if found:
                return found
        return None
    if isinstance(want, list) and isinstance(got, list):
        for i, (a, b) in enumerate(zip(got, want, strict=False)):
            found = _first_difference(a, b, f"{path}[{i}]")
            if found:
                return found
        return None if len(got) == len(want) else f"{path}: {len(got)} items, golden {len(want)}"
    if _same_float(got, want):
        return None
    return None if got == want else f"{path}: {got!r} != golden {want!r}"


def _same_float(got: Any, want: Any) -> bool:
    """Both floats (not bools), equal within :data:`REL_TOL` (or both NaN)."""
    if not (isinstance(got, float) and isinstance(want, float | int)) or isinstance(want, bool):
        return False
    if math.isnan(got) or math.isnan(want):
        return math.isnan(got) and math.isnan(want)
    return math.isclose(got, want, rel_tol=REL_TOL, abs_tol=1e-12)


def _check(got: dict[str, Any], name: str) -> None:
    """``got`` equals the golden ``name``: floats within :data:`REL_TOL`, the rest exactly."""
    difference = _first_difference(json.loads(_canonical(got)), _golden(name))
    assert difference is None, difference


@pytest.mark.slow
def test_demo_replay_report_and_suggestions_match_e500539(tmp_path: Path) -> None:
    got = demo_outputs(tmp_path)
    assert got["report"]["processed"] > 2_900 and len(got["suggestions"]) > 100  # not empty
    _check(got, "demo")


@pytest.mark.slow
def test_production_shaped_replay_report_and_suggestions_match_e500539(tmp_path: Path) -> None:
    got = production_outputs(tmp_path)
    assert got["report"]["processed"] > 2_800 and got["suggestions"]  # not empty
    _check(got, "production")


#: SHA-256 of the canonical report and suggestions of :func:`production_outputs` on the first
#: 20,000 lines: past ``harvest.max_suggestions`` (5,000 held and exported), so unlike the
#: 3,000-line golden it runs harvest's eviction, the near-duplicate index's removals and a
#: checkpoint in the middle (every 10,000 events). Pinned by the twelfth session (d07bf0d's
#: output when no wall-clock flush or checkpoint fell inside its replay: the run-to-run
#: difference ``replay_clock`` removed); re-pinned twice by the thirteenth, on purpose: (1)
#: each checkpoint sweeps the records of evicted suggestions (6,641 exported for 5,495 held
#: before; the 5,495 then exported were d07bf0d's rows with those ids, field for field); (2)
#: the refusal patterns count the benchmark's other two refusal templates ("I couldn't find
#: anything about this in the documents I can search.", "Sorry, that is outside what I can
#: help with here."): 1,552 refusals of 19,300 answers — the valid events of the log hold
#: exactly 1,552 refusal texts (counted with ``validate_event_json``) — where d9a01a0 counted
#: 516 (one template of three); that moves the refusal counts, over/under-refusals, the
#: harvest's refused reasons and so its suggestions. Re-pinned by the fourteenth for the
#: report's added fields (see the module docstring: by_flag 0, by_patterns 19,300; coverage;
#: quality_min_class, measured_on): the report without them still hashes to the former
#: d16548f5…235d; the suggestions are unchanged. Re-pinned again by the fourteenth for the
#: out-of-scope detector's support check (module docstring): added ``off_corpus`` 2,718 and
#: ``support``; ``out_of_scope`` 8,523 → 8,843 of 19,300, over-refusals 521 → 509,
#: under-refusals 7,492 → 7,800, so the harvest's reasons (answered_out_of_scope 3,787 →
#: 3,970, coverage_gap 3,157 → 3,212, low_confidence 1,047 → 1,051, refused 567 → 566: the
#: 5,000 held suggestions evict differently) and its suggestions.
#: Re-pinned again for s14-t2's pooling and ``insufficient`` reasons (module docstring): the
#: topic vs gold-set alarm's p and the four baseline comparisons' reason; suggestions as above.
#: Re-pinned by s14-fix-support for the off-corpus rule's truly held-out rates (module
#: docstring), the report only: ``support.held_out_fpr`` 1 → 2 of 377 and ``held_out_tpr``
#: 0.06 → 0.05 moved, nothing else (field-for-field diff against 80ad894's output, whose
#: report hashed to the former 1a7c0bf2…c08f); the suggestions' digest is unchanged.
#: Re-pinned again for s14-t6's added refused split (module docstring): refused_by_flag 0,
#: refused_by_patterns 1,552 and the method sentence's "(1552 refused)"; the report without
#: them hashes to the pin before (5ad08c67…6e); the suggestions are unchanged.
#: Re-pinned by s15-lang-support for the off-corpus rule by script (module docstring; the
#: former pin reproduced by main's code of this session, field-for-field diff against it): added
#: ``support.by_language``, ``by_script``, ``min_rows`` and the live ``off_corpus_by_language``
#: / ``not_judged_by_language``; moved ``off_corpus`` 2,718 → 2,743 (25 of the 988 live Hindi
#: questions below the Devanagari cutoff 0.614, whose held-out false-positive rate is 1 of 50;
#: they were judged by the pooled 0.219 before), ``out_of_scope`` 8,843 → 8,868,
#: over-refusals 509 → 508, under-refusals 7,800 → 7,824, harvest reasons
#: answered_out_of_scope 3,970 → 3,971, low_confidence 1,051 → 1,052, negative_feedback
#: 345 → 346, and 4 of the 5,000 held suggestions (eviction order).
#: Re-pinned by the sixteenth session for two meant changes together (module docstring; the
#: former pin reproduced by c3e1424, field-for-field diff against it): a language the gold
#: set lacks is not judged by the off-corpus rule — 1,858 Hinglish questions and 1
#: Indonesian now ``not_judged_by_language`` (1,131 of them were off-corpus by the Latin
#: cutoff), ``off_corpus`` 2,743 → 1,616, ``out_of_scope`` 8,868 → 8,608, over-refusals
#: 508 → 514, under-refusals 7,824 → 7,570 —; and the PII type ``name``: 30 names scrubbed,
#: which moves topic counts by a few (novel 3,981 → 3,984) and the topic drift figures
#: (alarm at the same time, p 1.2e-17 → 1.4e-17); harvest reasons answered_out_of_scope
#: 3,971 → 3,821, coverage_gap 3,212 → 3,150, low_confidence 1,052 → 1,046, novel 2,904 →
#: 2,898, refused 566 → 567, and 75 of the 5,000 held suggestions (eviction order; among the
#: gone, "my name is brad" and "the name i go by is sandy"). Then for the Spanish topic's
#: label without function words (``topic-6: en, el, qué`` → ``año, como, estados``), the
#: report only; then for the added ``language_quality`` (477 of 477), the report only (without
#: it, equal to the pin before). Re-pinned by the seventeenth session for three added report
#: fields and nothing else (field-for-field diff against the former pin's output):
#: ``drift.event_time.ahead`` 0, ``drift.event_time.kept_out_share`` 0.0 and
#: ``pii_scrubbed.iban`` 0; the suggestions unchanged. Re-pinned by the eighteenth session
#: for two added report fields and nothing else (the former pin's output without them equals
#: the new one's): ``drift.event_time.recent_events`` 5,011 (the latest updates covering
#: 5,000 events) and ``recent_kept_out_share`` 0.0; the suggestions unchanged. Then for the
#: first events waiting for ``ahead_confirm`` before they start the watermark (module
#: docstring): the two reference comparisons' ``alpha`` 1.39759e-05 → 1.39729e-05, nothing else.
#: Re-pinned by the twentieth session for harvest's ``coverage_gap`` over a recent window,
#: relative and absolute (module docstring; field-for-field diff against the former pin's
#: output): only ``gold_candidates`` and the suggestions moved — coverage_gap 3,150 → 3,148,
#: novel 2,898 → 2,896, answered_out_of_scope 3,821 → 3,824, refused 567 → 566,
#: negative_feedback 346 → 345 (low_confidence 1,046), and 384 of the 5,000 held suggestions
#: (the priorities, so the eviction order, moved).
#: Re-pinned by the twenty-first session for ``harvest.min_gap`` 0.02 (module docstring;
#: field-for-field diff against the former code's output): only ``gold_candidates`` and the
#: suggestions moved — coverage_gap 3,148 → 3,174, answered_out_of_scope 3,824 → 3,821,
#: refused 566 → 569; 23 held suggestions gained ``coverage_gap`` (and priority), and 3
#: answered-out-of-scope ones were evicted for 3 refused ones with a gap. Computed on a
#: machine whose out-of-scope threshold reads 0.41690199126004923, not 0.4169019557504985:
#: with that one value put back (three fields), the former code's report hashes to the former
#: pin 733d7feb…32ff exactly. Its report is now a golden file of its own
#: (``production_20k_report.json.gz``, 13 kB), compared as the others are (floats within
#: :data:`REL_TOL`): a digest cannot hold across CPUs and BLAS thread counts (the full suite
#: on this machine hashed it 2e38e16e…, the test alone 912ac711…, the thresholds and cutoffs
#: 1e-7 apart). The suggestions hash the same everywhere: their digest stays.
#: Re-pinned by the twenty-sixth session (s26-scope) for the trimmed off-corpus cutoff (module
#: docstring): Latin cutoff 0.219 → 0.331, ``off_corpus`` 1,616 → 7,356, ``out_of_scope``
#: 8,608 → 10,111 of 19,300, over-refusals 514 → 389, under-refusals 7,570 → 8,948; harvest
#: reasons answered_out_of_scope 3,821 → 4,032, low_confidence 1,046 → 1,140,
#: negative_feedback 345 → 365, novel 2,896 → 2,895, and the held suggestions (eviction order).
#: Again (trial 12 F1, module docstring): Hinglish questions, whose language no gold row has,
#: get no out-of-scope verdict: answered_out_of_scope 4,032 → 3,416, coverage_gap 3,174 →
#: 2,964, and the held suggestions. And for harvest's merge rule (module docstring).
#: Re-pinned by the thirtieth session (s29-pscope via s30-pscope2, module docstring): the
#: out-of-scope detector's grouped fit; 5,388 held suggestions at the end (5,000 before).
#: Re-pinned by the thirty-second session (s32-wording2) for the merge rule's negation: the
#: Hinglish "pas" (have, near) negates nothing now (:mod:`service.text.wording`), so "mere
#: pas timer par kitna samay bacha hai" (3 events, read as negated before) joins "timer par
#: kitna samay bach hai" (5 → 8 events, priority 21.18 → 25.50: it enters the report's top
#: list at 11, the last one, "when does kc undercover season 3 episode 10 air", leaves it),
#: and the slot it frees holds one more suggestion ("How many companies were listed on the WSE
#: on August 2009?", answered out of scope); by_reason answered_out_of_scope 3,637 → 3,638,
#: coverage_gap 3,078 → 3,077, novel 2,976 → 2,975; the gaps' ``n``: topic ``novel`` 2,962 →
#: 2,961, language ``hi-Latn`` 1,145 → 1,144.
#: Nothing else (field-for-field diff of report and suggestions against the code before,
#: which reproduced the former pin and file exactly); the demo and production goldens unchanged.
#: Re-pinned by the thirty-fifth session: a question in a language without gold rows gets no
#: topic (module docstring): 5,381 held suggestions; then for harvest's coverage window leaving
#: them out of the topic shares too: 5,000.
#: Re-pinned by the thirty-sixth session: each event's coverage gap judged over the window
#: right after it, not after its whole batch (module docstring): 5,000 held, coverage_gap
#: 2,281 → 2,300.
#: Re-pinned by the thirty-seventh session (s37-pii-acct): account numbers scrubbed; the
#: log's ``checking account 20905432`` question (4 times) gets a new id and topic (module
#: docstring): 5,000 held.
#: Re-pinned by the thirty-eighth session's review (s38-rev-oos): no ``answered_out_of_scope``
#: reason on a verdict the off-corpus cutoff's range moves. Compared field by field with the
#: former code's 5,000: 790 left (each had that reason, 557 of them no other), 790 came in
#: at the cap, 149 kept ones lost the reason (priority with
#: it), and 84 kept ones' counts and pools moved with the evictions; 5,000 held.
#: Then with the thirty-eighth session's s38-docgap: document coverage gaps (module
#: docstring): 5,000 held, priorities moved by sub-floor document gaps; merged with the
#: review's rule above, the report's counts move by a few (coverage_gap 2,337 → 2,339,
#: low_confidence 909 → 911, refused 639 → 636: eviction follows the moved priorities).
#: Re-pinned by the fortieth session (s40-uncov): a question judged out of scope (stable,
#: calibrated) joins no document share and takes no document gap (module docstring):
#: 5,000 held, by_reason refused 636 → 637 (every other count equal), 454 priorities moved;
#: compared field by field with the former code's export: one refused suggestion evicted at
#: the cap for another ("... hiking boots on jetcom" 4.026 → "... airplane enroute to
#: california goes" 4.0), "flip that coin please" 1 → 2 events (+ refused).
#: Re-pinned by the fortieth session (s40-topicgate): novelty uncalibrated below the
#: balanced-accuracy floor, so no ``novel`` reason and no topic ``coverage_gap`` (module
#: docstring): 5,487 held; by_reason novel 1,907 → none, coverage_gap 2,339 → 475.
#: Both merged (s40-uncov then s40-topicgate): 5,488 held; by_reason coverage_gap 475,
#: low_confidence 1,026, refused 862, negative_feedback 467, answered_out_of_scope 4,006
#: (topicgate's side alone: 5,487; 475, 1,024, 865, 465: the evictions follow priorities
#: that uncov's document rule moved).
#: Re-pinned by the forty-eighth session (s48-f2: unsupervised topics fitted on the written
#: rows in a canonical order, Ward's start, ids from content): the same 5,488 suggestions and
#: reason counts, their suggested topics named by content and their order moved with the
#: topic-based priorities.
#: Re-pinned by the forty-ninth session (s49-scope-cv: the out-of-scope fit in canonical order,
#: its held-out probabilities averaged over 10 fold draws): 5,488 → 5,178 suggestions held,
#: the reasons moved as the module docstring says (``answered_out_of_scope`` and
#: ``coverage_gap`` read the detector's verdicts; the others move through the eviction).
#: Re-pinned by the forty-ninth session (s49-novel: an uncalibrated novelty detector labels
#: nothing): the same 5,488 suggestions (same ids) and reason counts (4,006 / 862 / 467 /
#: 1,026 / 475); the 1,648 whose suggested topic was ``novel`` now suggest their nearest
#: topic, and the order moved with the topic round-robin. Both together (fiftieth session's
#: merge): re-pinned from a regeneration with both changes.
#: Re-pinned by the fifty-first session (s51-where, review RG B3: harvest's trigram gate reads
#: the text without its opening and edge courtesy, ``service.text.wording.core_form``): 5,178
#: → 5,176 held, ``answered_out_of_scope`` 4,070 → 4,057, ``refused`` 677 → 685,
#: ``negative_feedback`` 405 → 408, ``coverage_gap`` 401 → 402 (merged suggestions carry
#: their variants' reasons; the eviction keeps others).
PRODUCTION_20K_SUGGESTIONS_DIGEST = (
    "226e3175c1001ffaa5fdec8f3ee947215201d7a15647538760a7c80aecd5e340"
)


@pytest.mark.slow
def test_production_shaped_20k_replay_past_eviction_matches_d07bf0d(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import hashlib

    monkeypatch.setattr(sys.modules[__name__], "PRODUCTION_LINES", 20_000)
    got = production_outputs(tmp_path)
    # held: max_suggestions, plus those started since the last eviction (evicted back to it
    # past 1.1 x): 5,388 since the thirtieth session (5,000 before, an eviction at the end)
    held = got["report"]["gold_candidates"]["n_suggestions"]
    assert len(got["suggestions"]) == held and 5_000 <= held <= 5_500
    assert got["report"]["analytics"]["refusals"]["refused"] == 1_552  # the log's, by hand
    _check(got["report"], "production_20k_report")
    digest = hashlib.sha256(_canonical(got["suggestions"]).encode("utf-8")).hexdigest()
    assert digest == PRODUCTION_20K_SUGGESTIONS_DIGEST


def _production_20k_report(workdir: Path) -> dict[str, Any]:
    """The 20,000-line production-shaped replay's report (the 20k test's golden)."""
    global PRODUCTION_LINES
    lines, PRODUCTION_LINES = PRODUCTION_LINES, 20_000
    try:
        return dict(production_outputs(workdir)["report"])
    finally:
        PRODUCTION_LINES = lines


def _write(directory: Path) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    for name, outputs in (("demo", demo_outputs), ("production", production_outputs),
                          ("production_20k_report", _production_20k_report)):  # fmt: skip
        with tempfile.TemporaryDirectory(prefix=f"gw-golden-{name}-") as tmp:
            text = _canonical(outputs(Path(tmp)))
        with gzip.GzipFile(directory / f"{name}.json.gz", "wb", mtime=0) as handle:
            handle.write(text.encode("utf-8"))
        print(f"{name}: {len(text):,} characters -> {directory / f'{name}.json.gz'}")


if __name__ == "__main__":  # rewrite the golden files (see the module docstring)
    _write(Path(sys.argv[1]) if len(sys.argv) > 1 else GOLDEN)
