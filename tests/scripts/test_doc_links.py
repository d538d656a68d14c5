"""Every relative link in README.md, models/README.md and docs/ resolves: the
file exists and, for `file#anchor` or `#anchor`, the target has a heading
whose GitHub anchor is that name. Links in fenced code blocks and to other
sites are not checked. Sections are cited by link so that moving one breaks
this test instead of leaving a dead link."""
import os
import re
import sys

SRC = os.environ.get("NMT_SOURCE_DIR") or os.path.abspath(
    os.path.join(os.path.dirname(__file__), "..", ".."))
LINK = re.compile(r"\]\(([^)\s]+)\)")


def markdown_files():
    yield os.path.join(SRC, "README.md")
    yield os.path.join(SRC, "models", "README.md")
    for root, _, files in os.walk(os.path.join(SRC, "docs")):
        for name in sorted(files):
            if name.endswith(".md"):
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


def anchors(path):
    """GitHub's heading anchors: lower case, punctuation but '-' and '_'
    dropped, spaces as '-', a repeated name suffixed -1, -2, ..."""
    seen = {}
    names = set()
    for _, line in prose_lines(path):
        m = re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not m:
            continue
        slug = re.sub(r"[^\w\- ]", "", m.group(1).lower()).replace(" ", "-")
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        names.add(slug if count == 0 else f"{slug}-{count}")
    return names


def main():
    cache = {}
    failures = 0
    checked = 0
    for path in markdown_files():
        for number, line in prose_lines(path):
            for target in LINK.findall(line):
                if re.match(r"[a-z]+:", target):
                    continue
                file_part, _, anchor = target.partition("#")
                dest = (os.path.normpath(os.path.join(os.path.dirname(path), file_part))
                        if file_part else path)
                where = f"{os.path.relpath(path, SRC)}:{number}: {target}"
                checked += 1
                if not os.path.exists(dest):
                    print(f"FAIL: {where}: no such file", file=sys.stderr)
                    failures += 1
                elif anchor:
                    if dest not in cache:
                        cache[dest] = anchors(dest) if dest.endswith(".md") else set()
                    if anchor not in cache[dest]:
                        print(f"FAIL: {where}: no heading with that anchor", file=sys.stderr)
                        failures += 1
    if checked == 0:
        print("FAIL: no links found", file=sys.stderr)
        failures += 1
    if failures:
        print(f"test_doc_links: {failures} broken of {checked} links", file=sys.stderr)
        return 1
    print(f"test_doc_links: {checked} links resolve")
    return 0


if __name__ == "__main__":
    sys.exit(main())
