"""The documentation's cross-references resolve, so that moving a section
fails here instead of leaving a dead pointer:
 - every relative link in README.md, models/README.md and docs/: the file
   exists and, for `file#anchor` or `#anchor`, the target has a heading
   with that GitHub anchor;
 - every citation `docs/<page>.md, "Section"` in the sources, scripts and tests,
   and `[x](X.md), "Section"` in the Markdown: the file exists and has a
   heading that starts with the name, or a paragraph or bold label that
   does. A page cited without a section must exist.
Fenced code, links to other sites and citations split over two lines are
not checked."""
import os
import re
import sys

SRC = os.environ.get("NMT_SOURCE_DIR") or os.path.abspath(
    os.path.join(os.path.dirname(__file__), "..", ".."))
LINK = re.compile(r"\]\(([^)\s]+)\)")
MD_CITE = re.compile(r"\]\(([^)#\s]+\.md)\),? \"([^\"]+)\"")
SRC_CITE = re.compile(r"\b(docs/[\w./-]+\.md)(?:,? \"([^\"]+)\")?")
SOURCE_EXT = (".c", ".h", ".cu", ".cuh", ".sh", ".py", ".md", ".txt")


def repo_files():
    """The repository's sources, without build trees and hidden folders."""
    for root, dirs, files in os.walk(SRC):
        dirs[:] = sorted(d for d in dirs if not d.startswith((".", "build", "__pycache__")))
        for name in sorted(files):
            if name.endswith(SOURCE_EXT):
                yield os.path.join(root, name)


def prose_lines(path):
    """(line number, text) outside fenced code blocks."""
    fenced = False
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if line.lstrip().startswith("```"):
                fenced = not fenced
            elif not fenced:
                yield number, line


class Page:
    def __init__(self, path):
        self.anchors = set()
        self.headings = []
        self.starts = []
        seen = {}
        for _, line in prose_lines(path):
            text = line.strip().replace("`", "").lower()
            m = re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)
            if not m:
                self.starts.append(text.lstrip("-* ").lstrip("*"))
                continue
            title = m.group(1).replace("`", "").lower()
            self.headings.append(title)
            # GitHub: lower case, punctuation but - and _ dropped, spaces
            # as -, a repeated name suffixed -1, -2, ...
            slug = re.sub(r"[^\w\- ]", "", m.group(1).lower()).replace(" ", "-")
            count = seen.get(slug, 0)
            seen[slug] = count + 1
            self.anchors.add(slug if count == 0 else f"{slug}-{count}")

    def has_section(self, name):
        name = name.lower()
        return (any(h.startswith(name) for h in self.headings)
                or any(s.startswith(name) for s in self.starts))


class Checker:
    def __init__(self):
        self.pages = {}
        self.failures = 0
        self.checked = 0

    def page(self, path):
        if path not in self.pages:
            self.pages[path] = Page(path)
        return self.pages[path]

    def fail(self, where, why):
        print(f"FAIL: {where}: {why}", file=sys.stderr)
        self.failures += 1

    def target(self, where, dest, anchor=None, section=None):
        self.checked += 1
        if not os.path.exists(dest):
            self.fail(where, "no such file")
        elif anchor and anchor not in self.page(dest).anchors:
            self.fail(where, "no heading with that anchor")
        elif section and not self.page(dest).has_section(section):
            self.fail(where, "no heading or paragraph of that name")


def main():
    c = Checker()
    for path in repo_files():
        rel = os.path.relpath(path, SRC)
        here = os.path.dirname(path)
        is_doc = rel.endswith(".md") and (rel in ("README.md", "models/README.md")
                                          or rel.startswith("docs" + os.sep))
        lines = prose_lines(path) if rel.endswith(".md") else enumerate(
            open(path, encoding="utf-8", errors="replace"), 1)
        for number, line in lines:
            where = f"{rel}:{number}"
            for m in SRC_CITE.finditer(line):
                c.target(f"{where}: {m.group(0)}", os.path.join(SRC, m.group(1)),
                         section=m.group(2))
            if not is_doc:
                continue
            for target in LINK.findall(line):
                if re.match(r"[a-z]+:", target):
                    continue
                file_part, _, anchor = target.partition("#")
                dest = os.path.normpath(os.path.join(here, file_part)) if file_part else path
                c.target(f"{where}: {target}", dest, anchor=anchor)
            for m in MD_CITE.finditer(line):
                c.target(f"{where}: {m.group(0)}",
                         os.path.normpath(os.path.join(here, m.group(1))), section=m.group(2))
    if c.checked < 100:
        c.fail("test_doc_links", f"only {c.checked} references found")
    if c.failures:
        print(f"test_doc_links: {c.failures} broken of {c.checked}", file=sys.stderr)
        return 1
    print(f"test_doc_links: {c.checked} references resolve")
    return 0


if __name__ == "__main__":
    sys.exit(main())
