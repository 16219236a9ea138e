"""Parse a page with the standard library and report what the tests check: section ids,
inline SVG count, scripts, links and resource URLs, and whether the HTML tags balance."""

from __future__ import annotations

from dataclasses import dataclass, field
from html.parser import HTMLParser

#: HTML elements whose start and end tags must pair up (SVG internals are not checked).
PAIRED = {"html", "head", "body", "section", "table", "thead", "tbody", "tr", "td", "th",
          "figure", "figcaption", "details", "summary", "p", "h1", "h2", "h3", "ul", "li",
          "svg", "span", "div", "a", "title", "style"}  # fmt: skip


@dataclass
class Page:
    sections: list[str] = field(default_factory=list)
    svgs: int = 0
    scripts: int = 0
    urls: list[str] = field(default_factory=list)  # every src / href / xlink:href value
    unbalanced: list[str] = field(default_factory=list)
    meta_refresh: str | None = None


class _Parser(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.page = Page()
        self.stack: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        if tag == "section":
            self.page.sections.append(values.get("id") or "")
        if tag == "svg":
            self.page.svgs += 1
        if tag == "script":
            self.page.scripts += 1
        if tag == "meta" and (values.get("http-equiv") or "").lower() == "refresh":
            self.page.meta_refresh = values.get("content")
        self.page.urls += [v for k, v in attrs if k in ("src", "href", "xlink:href") and v]
        if tag in PAIRED:
            self.stack.append(tag)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.page.urls += [v for k, v in attrs if k in ("src", "href", "xlink:href") and v]

    def handle_endtag(self, tag: str) -> None:
        if tag not in PAIRED:
            return
        if not self.stack or self.stack[-1] != tag:
            self.page.unbalanced.append(f"</{tag}> after {self.stack[-3:]}")
            return
        self.stack.pop()


def parse(html: str) -> Page:
    """Parse ``html``; unclosed tags at the end are reported in ``unbalanced``."""
    parser = _Parser()
    parser.feed(html)
    parser.close()
    parser.page.unbalanced += [f"<{tag}> never closed" for tag in parser.stack]
    return parser.page


def external(urls: list[str]) -> list[str]:
    """The URLs that would leave the page: anything but ``#fragment`` and ``/same-origin``."""
    return [u for u in urls if not (u.startswith("#") or (u.startswith("/") and not
                                                          u.startswith("//")))]  # fmt: skip
