"""Check a built HTML site for broken internal links and missing images (``make docs`` runs it).

Every ``href`` and ``src`` that is not external (no scheme, not ``mailto:``) must name a file of the
site, and a ``#fragment`` must name an ``id`` of the page it points to. Prints one line per broken
reference and exits 1 if there is any.

Usage: ``python docs/check_links.py docs/_build/html``
"""

from __future__ import annotations

import sys
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit


class _Page(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.ids: set[str] = set()
        self.references: list[tuple[str, str]] = []

    def handle_starttag(self, tag, attrs):
        attributes = dict(attrs)
        for key in ("id", "name"):
            if attributes.get(key):
                self.ids.add(attributes[key])
        for key in ("href", "src"):
            value = attributes.get(key)
            if value is not None and not (tag == "link" and attributes.get("rel") in ("preconnect", "dns-prefetch")):
                self.references.append((tag, value))


def _parse(path: Path) -> _Page:
    page = _Page()
    page.feed(path.read_text(encoding="utf-8", errors="replace"))
    return page


def _pages(site: Path) -> list[Path]:
    """The site's HTML pages, without the theme's templates and copies under ``_static/``, ``_sources/``."""
    return [path for path in sorted(site.rglob("*.html")) if not path.relative_to(site).parts[0].startswith("_")]


def broken_references(site: Path) -> list[str]:
    """``page: reference (why)`` for every internal reference of ``site`` that does not resolve."""
    site = site.resolve()
    pages = {path: _parse(path) for path in _pages(site)}
    broken = []
    for path, page in pages.items():
        for tag, reference in page.references:
            parts = urlsplit(reference)
            if parts.scheme or parts.netloc or reference.startswith(("mailto:", "javascript:", "data:")):
                continue
            target = path if not parts.path else (path.parent / unquote(parts.path)).resolve()
            if target.is_dir():
                target = target / "index.html"
            where = f"{path.relative_to(site)}: {tag} {reference}"
            if not target.is_file():
                broken.append(f"{where} (no such file)")
            elif parts.fragment and target.suffix == ".html":
                ids = pages[target].ids if target in pages else _parse(target).ids
                if unquote(parts.fragment) not in ids:
                    broken.append(f"{where} (no anchor #{parts.fragment})")
    return broken


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1 or not Path(argv[0]).is_dir():
        print("usage: python docs/check_links.py BUILT_HTML_FOLDER", file=sys.stderr)
        return 2
    broken = broken_references(Path(argv[0]))
    for line in broken:
        print(line)
    print(f"{len(_pages(Path(argv[0])))} pages, {len(broken)} broken internal links or images")
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
