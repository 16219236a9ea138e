"""The personal-name cues' patterns compile on first use (:class:`service.pii.names._LazyPattern`),
once whichever thread asks first, to what ``re.compile`` gives (issue 22, item 4)."""

from __future__ import annotations

import re
import threading

from service.pii import names
from service.pii.names import _LazyPattern, find_names


def test_compiles_once_across_threads_to_what_re_compile_gives() -> None:
    source = r"(?i:my\s+name\s+is)\s+(?P<n>\w+)"
    lazy = _LazyPattern(source, re.IGNORECASE)
    assert lazy._compiled is None  # nothing compiled before the first use
    start = threading.Barrier(8)
    got: list[re.Pattern[str]] = []

    def use() -> None:
        start.wait()
        got.append(lazy.compiled())

    threads = [threading.Thread(target=use) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(got) == 8 and all(p is got[0] for p in got)
    eager = re.compile(source, re.IGNORECASE)
    assert got[0].pattern == eager.pattern and got[0].flags == eager.flags
    text = "Hi, MY NAME IS Alice; my name is Bob"
    assert [m.span("n") for m in lazy.finditer(text)] == [(15, 20), (33, 36)]
    assert lazy.match(text) is None and lazy.match(text, 4) is not None
    assert lazy.made(got[0]) and not lazy.made(re.compile(r"(?P<n>\w+)"))
    assert not _LazyPattern(source).made(got[0])  # not compiled yet: made nothing


def test_every_cue_compiles_and_finds_as_before() -> None:
    lazy = {k: v for k, v in vars(names).items() if isinstance(v, _LazyPattern)}
    assert len(lazy) == 15
    for pattern in lazy.values():  # each is a valid pattern (a typo would only fail in use)
        assert pattern.compiled().pattern == pattern.pattern
    text = "Hi, I'm Rahul Verma. Regards, Klaus Müller"
    assert [text[a:b] for a, b in find_names(text)] == ["Rahul Verma", "Klaus Müller"]
