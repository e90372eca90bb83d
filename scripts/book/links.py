#!/usr/bin/env python3
"""Checks every internal link of the built book: each `href` and `src` that is not a URL
must name a file of the book, and each `#fragment` an `id` in that file.

usage: scripts/book/links.py BOOK_HTML_DIR
Exit status: 0 when every link resolves; 1, listing each broken link, otherwise."""
import html.parser, os, sys, urllib.parse

root = os.path.realpath(sys.argv[1])


class Page(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.ids, self.links = set(), []

    def handle_starttag(self, tag, attrs):
        for name, value in attrs:
            if name == "id" and value:
                self.ids.add(value)
            if value and ((name == "href" and tag == "a") or (name == "src" and tag == "img")):
                self.links.append(value)


pages = {}
for folder, _, files in os.walk(root):
    for f in files:
        if f.endswith(".html"):
            page = Page()
            page.feed(open(os.path.join(folder, f), encoding="utf-8").read())
            pages[os.path.realpath(os.path.join(folder, f))] = page

broken = []
for path, page in sorted(pages.items()):
    for link in page.links:
        url = urllib.parse.urlsplit(link)
        if url.scheme or link.startswith("//"):
            continue  # outside the book: not checked here
        target = path if not url.path else os.path.realpath(
            os.path.join(os.path.dirname(path), urllib.parse.unquote(url.path)))
        if os.path.isdir(target):
            target = os.path.join(target, "index.html")
        where = os.path.relpath(path, root)
        if not target.startswith(root + os.sep) or not os.path.exists(target):
            broken.append(f"{where}: {link}: no such file in the book")
        elif url.fragment and target in pages and urllib.parse.unquote(url.fragment) not in pages[target].ids:
            broken.append(f"{where}: {link}: no element with id `{url.fragment}`")
for line in broken:
    print(f"error: broken link: {line}", file=sys.stderr)
print(f"links: {sum(len(p.links) for p in pages.values())} in {len(pages)} pages, {len(broken)} broken")
sys.exit(1 if broken else 0)
