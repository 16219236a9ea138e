"""A document's language variants as one document: the labels that differ only by a
language code, grouped (the ``document`` coverage dimension: :mod:`service.harvest.signals`).

A corpus holding each article once per language (``Super_Bowl_50.en.html``,
``Super_Bowl_50.es.html``, ``Super_Bowl_50.de.html``) splits the questions about one article
over as many documents as it has languages: trial 23's 22 articles no gold row covers drew
55 % of the questions, spread over 66 documents none of which rose above the coverage-gap
floor. Grouped, a document is the article, whatever language copy production retrieved.

A label's **language code** (:func:`language_variant`) is an ISO 639-1 code
(:data:`LANGUAGE_CODES`, any case), optionally followed by a script (4 letters: ``zh-Hant``)
and/or a region (2 letters or 3 digits: ``pt-BR``, ``es-419``), joined by ``-`` or ``_``,
found in one of three places (the first that matches, in this order):

1. a dotted part of the file name (the last path segment) between its stem and its
   extension: ``Super_Bowl_50.de.html``, ``guide.pt-BR.md`` (never the extension itself:
   ``.ts``, ``.pl``, ``.cs`` files are not Tsonga, Polish or Czech);
2. a ``-`` or ``_`` suffix of the file name right before its extension: ``guide-de.html``,
   ``guide_zh-Hant.pdf`` (the longest code: ``guide-pt-BR.html`` is ``pt-BR``);
3. a whole path part that is not the file name (the leftmost such; a URL's host never):
   ``docs/de/guide.html``, ``https://x.org/pt-br/guide``.

The label's **base** is the label without it (``Super_Bowl_50.html``, ``guide.html``,
``docs/guide.html``); a label with no code is its own base, unmarked, so ``docs/guide.html``
joins ``docs/de/guide.html`` (a site's default language is often unmarked). A base the
corpus holds at least two labels of, with at least two distinct codes (the unmarked one
counts as one), is a **candidate** (``index.de.html`` alone, or a file named ``it.html``, is
not rewritten). Whether its codes are languages is judged on the whole corpus
(:func:`corpus_languages`), since many codes are also words of paths: ``sales/ne/q1.pdf`` and
``sales/se/q1.pdf`` are regions, ``photo-sm.jpg`` and ``photo-lg.jpg`` sizes,
``run-km.csv`` and ``run-mi.csv`` units, ``mnt/ro/`` and ``mnt/rw/`` read-only and
read-write. A real multilingual corpus holds the same few codes across many bases, among
them codes that are seldom anything but a language; so a code (its language part:
``pt`` of ``pt-BR``) is the corpus's language when

* it is not one of :data:`AMBIGUOUS_CODES` (codes that are also common words,
  abbreviations, sizes, units, compass points, country codes or roman numerals in paths)
  and it marks labels of at least :data:`MIN_BASES` candidates (``de`` of
  ``Warsaw.de.html`` and ``Oxygen.de.html``: it recurs);
* or it is one of :data:`AMBIGUOUS_CODES` and, in at least :data:`MIN_BASES` candidates,
  it stands beside a code that is the corpus's language by the first rule (``it`` beside
  ``en``: ``a.en.html`` + ``a.it.html``, ``b.en.html`` + ``b.it.html``). Sizes, regions,
  units or departments stand beside each other only (``sm`` with ``lg``, ``ne`` with
  ``se``, ``hr`` with ``it``), or beside an unmarked label, which vouches for nothing.

A candidate is grouped from its labels that are unmarked or carry a language of the
corpus, or a code outside :data:`AMBIGUOUS_CODES` beside one (the one article of an en/es
corpus also in German), when at least two of them remain with two distinct codes; a label
whose code is none of these stays alone. So a corpus of XQuAD articles in twelve languages
groups each article whatever else it holds, ``photo-sm.jpg`` and ``photo-lg.jpg`` beside
them stay two documents, and a corpus with a single translated document
(``guide.de.html`` + ``guide.en.html``, no other base) groups nothing: one base is no
evidence of a scheme (a pattern, below, groups it). What codes alone cannot tell apart
still groups: US state folders whose abbreviations are clear codes too (``de/``, ``ar/``
beside ``ny/``, ``wa/``), or, in a corpus where ``hi`` is Hindi, ``chart-hi.png`` beside an
unmarked ``chart.png``; ``off`` or a pattern is the way out.

A group's label names its base, how many documents it holds and their codes (sorted,
``unmarked`` last): ``Super_Bowl_50.html (3 variants: de, en, es)``.

A pattern (:func:`compile_group_pattern`, the ``harvest.document_groups`` setting) replaces
the built-in rule: a Python regular expression searched in each label, whose first group is
the key the label is grouped by (and the group's name), the second, when there is one, the
variant's name; a label it does not match, or whose first group did not take part, stays
alone. ``off``: no grouping.

Plain strings and :mod:`re` only (no I/O): the caller scrubs the labels first
(:func:`service.harvest.signals.document_labels`).

>>> language_variant("Super_Bowl_50.de.html"), language_variant("docs/pt-br/guide.html")
(Variant(base='Super_Bowl_50.html', code='de'), Variant(base='docs/guide.html', code='pt-BR'))
>>> group_labels(["a.en.html", "a.de.html", "b.en.html", "b.de.html", "c.de.html"])["b.de.html"]
'b.html (2 variants: de, en)'
>>> group_labels(["a-sm.jpg", "a-lg.jpg", "b-sm.jpg", "b-lg.jpg", "it.html"])  # sizes
{}
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple

__all__ = [
    "AMBIGUOUS_CODES",
    "BUILT_IN",
    "LANGUAGE_CODES",
    "MIN_BASES",
    "OFF",
    "UNMARKED",
    "Variant",
    "all_tied_note",
    "compile_group_pattern",
    "corpus_languages",
    "group_labels",
    "grouped_note",
    "language_variant",
    "uncovered_note",
]

#: The ``harvest.document_groups`` value of the built-in language-code rule (the default).
BUILT_IN = "languages"
#: The ``harvest.document_groups`` value that groups nothing.
OFF = "off"
#: How a group's label names a variant without a language code.
UNMARKED = "unmarked"

#: ISO 639-1's two-letter language codes (the 183 of ISO 639-1:2002 plus ``sh``, as the
#: Library of Congress lists them).
LANGUAGE_CODES = frozenset(
    "aa ab ae af ak am an ar as av ay az ba be bg bh bi bm bn bo br bs ca ce ch co cr cs cu "
    "cv cy da de dv dz ee el en eo es et eu fa ff fi fj fo fr fy ga gd gl gn gu gv ha he hi "
    "ho hr ht hu hy hz ia id ie ig ii ik io is it iu ja jv ka kg ki kj kk kl km kn ko kr ks "
    "ku kv kw ky la lb lg li ln lo lt lu lv mg mh mi mk ml mn mr ms mt my na nb nd ne ng nl "
    "nn no nr nv ny oc oj om or os pa pi pl ps pt qu rm rn ro ru rw sa sc sd se sg sh si sk "
    "sl sm sn so sq sr ss st su sv sw ta te tg th ti tk tl tn to tr ts tt tw ty ug uk ur uz "
    "ve vi vo wa wo xh yi yo za zh zu".split()
)
#: Codes that are also common words or abbreviations in file and folder names: a code of
#: these is a language of the corpus only beside a code that is not (the module docstring).
#: English words (``am an as be he hi id is it la lo my na no or pa so ta to``), sizes
#: (``sm lg``; ``md``, ``xs``, ``xl`` are no ISO 639-1 codes), compass points (``ne se
#: sw``), units (``km mi mg ml kg lb ms``), abbreviations (``ca co cr cs el hr io li mr os
#: pl ps ro rw sd sh sr ss st ts``: California, company, change request, C#/computer
#: science, element, human resources, I/O, list item, merge request/Mr, operating system,
#: Perl, PostScript, read-only, read-write, SD, shell, senior, screenshot, street/saint,
#: TypeScript), roman numerals (``ii vi``) and country codes that are not their country's
#: language (``ae br ch kr sg tw uk za``).
AMBIGUOUS_CODES = frozenset(
    "ae am an as be br ca ch co cr cs el he hi hr id ii io is it kg km kr la lb lg li lo ml "
    "mg mi mr ms my na ne no or os pa pl ps ro rw sd se sg sh sm so sr ss st sw ta to ts tw "
    "uk vi za".split()
)
#: Candidates (bases with two variants or more) a code must mark for the corpus to count it
#: as a language (the module docstring): one base is no evidence of a scheme.
MIN_BASES = 2

# a language tag as a whole string: code, optional script, optional region, "-" or "_"
_TAG_RE = re.compile(r"(?P<lang>[A-Za-z]{2})(?:[-_](?P<script>[A-Za-z]{4}))?"
                     r"(?:[-_](?P<region>[A-Za-z]{2}|\d{3}))?\Z")  # fmt: skip


class Variant(NamedTuple):
    """A label read as a language variant (:func:`language_variant`): its ``base`` (the
    label without the code and its separator) and its ``code`` (normalised: language lower
    case, script title case, region upper case, joined by ``-``; ``""``: unmarked)."""

    base: str
    code: str


def _tag(text: str) -> str | None:
    """``text`` as a normalised language tag (``pt_br`` → ``pt-BR``, ``zh-hant`` →
    ``zh-Hant``), or ``None`` when it is not one whose language is in
    :data:`LANGUAGE_CODES`."""
    match = _TAG_RE.match(text)
    if match is None or match["lang"].lower() not in LANGUAGE_CODES:
        return None
    parts = [match["lang"].lower()]
    if match["script"]:
        parts.append(match["script"].title())
    if match["region"]:
        parts.append(match["region"].upper())
    return "-".join(parts)


def language_variant(label: str) -> Variant:
    """``label`` read as a language variant (module docstring: a dotted part of the file
    name, a ``-``/``_`` suffix before its extension, or a path part; the first found, in
    that order); ``Variant(label, "")`` when it holds no language code. A query string
    (from ``?``) is kept as it is and never read.

    >>> language_variant("guide_pt_BR.pdf"), language_variant("guide-zh-hant.html")
    (Variant(base='guide.pdf', code='pt-BR'), Variant(base='guide.html', code='zh-Hant'))
    >>> language_variant("https://de.x.org/it.html?lang=de"), language_variant("a.ts")
    (Variant(base='https://de.x.org/it.html?lang=de', code=''), Variant(base='a.ts', code=''))
    >>> language_variant("user-guide-de.html"), language_variant("x.org/fr/")
    (Variant(base='user-guide.html', code='de'), Variant(base='x.org/', code='fr'))
    """
    path, query = label, ""
    if "?" in label:
        at = label.index("?")
        path, query = label[:at], label[at:]
    start = 0  # where the path parts start: after a URL's host
    scheme = path.find("://")
    if scheme >= 0:
        slash = path.find("/", scheme + 3)
        start = len(path) if slash < 0 else slash + 1
    cut = path.rfind("/")
    named_at = cut + 1 if cut >= start else start  # where the file name starts
    folder, name = path[:named_at], path[named_at:]
    # 1. a dotted part of the file name, between the stem and the extension (the rightmost)
    dotted = name.split(".")
    for i in range(len(dotted) - 2, 0, -1):
        code = _tag(dotted[i])
        if code is not None:
            base = ".".join(dotted[:i] + dotted[i + 1 :])
            return Variant(folder + base + query, code)
    # 2. a "-"/"_" suffix right before the extension (the longest code)
    dot = name.rfind(".")
    if dot > 0:
        head, ext = name[:dot], name[dot:]
        for i in range(1, len(head) - 2):
            if head[i] in "-_" and (code := _tag(head[i + 1 :])) is not None:
                return Variant(folder + head[:i] + ext + query, code)
    # 3. a whole path part other than the file name (the leftmost), never the host
    parts = path[start : cut + 1].split("/") if cut >= start else []
    for i, part in enumerate(parts):
        code = _tag(part) if part else None
        if code is not None:
            rest = "/".join(parts[:i] + parts[i + 1 :])
            return Variant(path[:start] + rest + name + query, code)
    return Variant(label, "")


def compile_group_pattern(value: str | None) -> re.Pattern[str] | str | None:
    """The ``harvest.document_groups`` setting read: :data:`BUILT_IN` (also ``None``) as
    it is, :data:`OFF` as ``None``, anything else compiled as a regular expression.

    Raises:
        ValueError: the pattern does not compile or has no group (the message says which;
            the settings name the field)."""
    if value is None or value == BUILT_IN:
        return BUILT_IN
    if value == OFF:
        return None
    try:
        pattern = re.compile(value)
    except re.error as exc:
        raise ValueError(f"not a regular expression ({exc})") from None
    if pattern.groups < 1:
        raise ValueError("the pattern needs a group: its first group is a document's group key")
    return pattern


def _language(code: str) -> str:
    """A variant name's language part (``pt`` of ``pt-BR``; ``""`` unmarked)."""
    return code.split("-", 1)[0]


def _corpus_languages(candidates: Iterable[Iterable[str]]) -> frozenset[str]:
    """The languages (language parts, :func:`_language`) of the corpus whose candidates
    (bases with two variants or more) have the variant names ``candidates`` (each
    candidate's distinct codes, ``""`` unmarked): the module docstring's two rules."""
    seen = [frozenset(_language(code) for code in codes if code) for codes in candidates]
    marks: dict[str, int] = {}  # language -> candidates it marks
    for languages in seen:
        for language in languages:
            marks[language] = marks.get(language, 0) + 1
    clear = {lang for lang, n in marks.items() if n >= MIN_BASES and lang not in AMBIGUOUS_CODES}
    beside: dict[str, int] = {}  # ambiguous language -> candidates where a clear one is too
    for languages in seen:
        if languages & clear:
            for language in languages & AMBIGUOUS_CODES:
                beside[language] = beside.get(language, 0) + 1
    return frozenset(clear | {lang for lang, n in beside.items() if n >= MIN_BASES})


def corpus_languages(labels: Iterable[str]) -> frozenset[str]:
    """The language codes (language parts: ``pt`` of ``pt-BR``) the corpus of document
    ``labels`` counts as languages (module docstring): a code that is not one of
    :data:`AMBIGUOUS_CODES` marking at least :data:`MIN_BASES` candidates, or one that is,
    beside such a code in at least :data:`MIN_BASES` candidates.

    >>> sorted(corpus_languages(["a.en.html", "a.it.html", "b.en.html", "b.it.html",
    ...                          "c-sm.jpg", "c-lg.jpg", "d-sm.jpg", "d-lg.jpg"]))
    ['en', 'it']
    >>> sorted(corpus_languages(["a.en.html", "a.de.html", "b.html"]))  # one base
    []
    """
    members: dict[str, set[str]] = {}
    counts: dict[str, int] = {}
    for label in dict.fromkeys(labels):
        base, code = language_variant(label)
        members.setdefault(base, set()).add(code)
        counts[base] = counts.get(base, 0) + 1
    return _corpus_languages(codes for base, codes in members.items()
                             if counts[base] >= 2 and len(codes) >= 2)  # fmt: skip


def group_labels(
    labels: Iterable[str], groups: re.Pattern[str] | str | None = BUILT_IN
) -> dict[str, str]:
    """``{label: group label}`` for the ``labels`` (distinct document labels of a corpus)
    that join a group, sorted by label; the others are left out (they stay themselves).

    ``groups``: :data:`BUILT_IN` (the language-code rule, module docstring: a label joins
    its base's group when it is unmarked, its code is a language of the corpus,
    :func:`corpus_languages`, or it is not ambiguous and beside one), ``None`` (no
    grouping: ``{}``) or a compiled pattern (:func:`compile_group_pattern`). A group needs
    at least two labels and two distinct variant names. Its label is ``"<key> (<n>
    variants: <names>)"`` (names sorted, :data:`UNMARKED` last), or ``"<key> (<n>
    variants)"`` for a pattern without a second group.

    >>> grouped = group_labels(["d/de/p.html", "d/p.html", "d/de/q.html", "d/q.html",
    ...                         "d/sm/p.html", "hr/p.html", "it/p.html", "x.fr.md"])
    >>> grouped["d/de/p.html"], sorted(grouped)
    ('d/p.html (2 variants: de, unmarked)', ['d/de/p.html', 'd/de/q.html', 'd/p.html', 'd/q.html'])
    >>> group_labels(["A-1.pdf", "A-2.pdf", "B-1.pdf"], compile_group_pattern(r"^(\\w+)-"))
    {'A-1.pdf': 'A (2 variants)', 'A-2.pdf': 'A (2 variants)'}
    """
    if groups is None:
        return {}
    members: dict[str, dict[str, str]] = {}  # key -> {label: variant name}
    named = True
    for label in dict.fromkeys(labels):
        if isinstance(groups, str):
            key, name = language_variant(label)
        else:
            match = groups.search(label)
            if match is None or match.group(1) is None:
                continue
            key = match.group(1)
            named = groups.groups >= 2
            name = (match.group(2) or "") if named else label
        members.setdefault(key, {})[label] = name
    candidates = {key: variants for key, variants in members.items()
                  if len(variants) >= 2 and len(set(variants.values())) >= 2}  # fmt: skip
    if isinstance(groups, str):  # the built-in rule: only the corpus's languages join
        languages = _corpus_languages(set(v.values()) for v in candidates.values())
        for key, variants in candidates.items():
            beside = any(_language(code) in languages for code in variants.values())
            candidates[key] = {label: code for label, code in variants.items()
                               if not code or _language(code) in languages
                               or (beside and _language(code) not in AMBIGUOUS_CODES)}  # fmt: skip
    out: dict[str, str] = {}
    for key, variants in candidates.items():
        names = set(variants.values())
        if len(variants) < 2 or len(names) < 2:
            continue
        if named:
            listed = sorted(n for n in names if n) + ([UNMARKED] if "" in names else [])
            group = f"{key} ({len(variants)} variants: {', '.join(listed)})"
        else:
            group = f"{key} ({len(variants)} variants)"
        for label in variants:
            out[label] = group
    return dict(sorted(out.items()))


def grouped_note(documents: Mapping[str, Any]) -> str:
    """``" (90 corpus documents grouped into 30 by language variant)"`` when a document
    gaps summary (:meth:`~service.harvest.stage.HarvestStage.document_gaps`) has
    ``grouped``, else ``""``.

    >>> grouped_note({"grouped": {"documents": 90, "groups": 30}}), grouped_note({})
    (' (90 corpus documents grouped into 30 by language variant)', '')
    """
    grouped = documents.get("grouped")
    if not isinstance(grouped, Mapping):
        return ""
    return (f" ({grouped.get('documents', 0)} corpus documents grouped into "
            f"{grouped.get('groups', 0)} by language variant)")  # fmt: skip


def uncovered_note(uncovered: Mapping[str, Any] | None) -> list[str]:
    """The share of questions on documents no gold row asks about (a document summary's
    ``uncovered``, :meth:`~service.harvest.signals.CoverageTracker.uncovered`): one line,
    ``"documents the gold set does not cover (questions judged out of scope left out): 55.0%
    of the recent questions (550 of 1,000) [51.9%, 58.1%] against 22.5% before (381 of
    1,693) [20.6%, 24.6%], 34.6% of all (931 of 2,693) [32.8%, 36.4%]: a coverage gap (the
    rise's 95 % lower bound 28.8 points ≥ 10, harvest.min_uncovered_rise)"`` (Wilson
    intervals; Newcombe's for the rise; its counts are of the questions given a document
    and not judged out of scope: :func:`~service.harvest.signals.production_documents`);
    ``[]`` without it."""
    if not uncovered:
        return []

    def share(part: Mapping[str, Any] | None, what: str) -> str:
        part = part or {}
        n = int(part.get("live_total") or 0)
        if not n:
            return f"none yet {what}"
        x = int(part.get("live") or 0)
        return (f"{x / n:.1%} {what} ({x:,} of {n:,}) "
                f"[{float(part.get('low', 0)):.1%}, {float(part.get('high', 1)):.1%}]")  # fmt: skip

    floor, rise = uncovered.get("min_rise"), uncovered.get("rise_low")
    if floor is None:
        verdict = "never a gap (harvest.min_uncovered_rise: null)"
    elif rise is None:
        verdict = "not tested yet (too few questions before the recent ones)"
    else:
        verdict = (f"{'a coverage gap' if uncovered.get('gap') else 'no gap'} (the rise's 95 % "
                   f"lower bound {100 * rise:.1f} points {'≥' if uncovered.get('gap') else '<'} "
                   f"{100 * floor:g}, harvest.min_uncovered_rise)")  # fmt: skip
    return [f"documents the gold set does not cover (questions judged out of scope left out): "
            f"{share(uncovered.get('recent'), 'of the recent questions')} against "
            f"{share(uncovered.get('earlier'), 'before')}, {share(uncovered, 'of all')}: "
            f"{verdict}"]  # fmt: skip


def all_tied_note(documents: Mapping[str, Any]) -> str:
    """``"; 188 retrievals ranked nothing (two or more results, all at one score and none
    ranked, or all at 0) and name no document"`` when a document gaps summary
    (:meth:`~service.harvest.stage.HarvestStage.document_gaps`) has a positive ``all_tied``
    (:func:`service.harvest.signals.all_tied`), else ``""``.

    >>> all_tied_note({"all_tied": 1}), all_tied_note({})
    ('; 1 retrieval ranked nothing (two or more results, all at one score and none ranked, or all at 0) and names no document', '')
    """  # noqa: E501
    n = int(documents.get("all_tied") or 0)
    if n <= 0:
        return ""
    return (f"; {n:,} {'retrieval' if n == 1 else 'retrievals'} ranked nothing (two or more "
            "results, all at one score and none ranked, or all at 0) and "
            f"{'names' if n == 1 else 'name'} no document")  # fmt: skip
