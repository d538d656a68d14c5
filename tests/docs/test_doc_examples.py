"""Every ```python and ```c block of docs/ runs as written (the README's C
example has its own test, tests/engine/test_readme_example.sh):

- a Python block runs with the tests' Python from the repository's root,
  python/ on PYTHONPATH and the built libnmt (it names the shipped model by
  its relative path, as the docs tell a reader to run it);
- a C block with a main() is compiled as it is; any other C block is the body
  of a main() that has `nmt_model *model` loaded from the test model and an
  `nmt_error err`. Each is compiled against the built nmt.h and
  libnmt.so and must exit 0.

Every such block runs unless it is preceded by
`<!-- doc-test: skip REASON -->` (it cannot run here: a GPU, internal API),
so a new example is covered or says why not. Exit 1 on any failure, 0
otherwise (a skip is named, not failed); 77 without the built library."""
import glob
import os
import re
import subprocess
import sys
import tempfile

SOURCE_DIR = os.environ.get("NMT_SOURCE_DIR") or os.path.join(os.path.dirname(__file__), "..", "..")
BINARY_DIR = os.environ.get("NMT_BINARY_DIR", os.path.join(SOURCE_DIR, "build"))
LIBRARY = os.path.join(BINARY_DIR, "libnmt.so")
TEST_MODEL = os.environ.get("NMT_TEST_MODEL", os.path.join(BINARY_DIR, "test-model.bin"))
FENCE = re.compile(r"^```(\w*)\s*$")
SKIP = re.compile(r"^<!-- doc-test: skip (.+) -->$")
C_MAIN = """#include <nmt.h>
#include <stdio.h>

int main(int argc, char **argv) {
    nmt_error err;
    nmt_model *model = NULL;
    if (argc < 2 || nmt_model_load(argv[1], &model, &err) != NMT_STATUS_OK) {
        fprintf(stderr, "load: %s\\n", argc < 2 ? "usage: example MODEL" : err.message);
        return 1;
    }
    {
BODY
    }
    nmt_model_free(model);
    return 0;
}
"""


def blocks(path):
    """(line, language, text, skip reason or None) of each fenced block."""
    lines = open(path, encoding="utf-8").read().split("\n")
    i, out = 0, []
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        start, lang = i, m.group(1)
        end = i + 1
        while end < len(lines) and lines[end].strip() != "```":
            end += 1
        before = next((lines[j].strip() for j in range(start - 1, -1, -1) if lines[j].strip()), "")
        skip = SKIP.match(before)
        out.append((start + 1, lang, "\n".join(lines[start + 1:end]), skip.group(1) if skip else None))
        i = end + 1
    return out


def run_python(text, tmp):
    env = dict(os.environ, NMT_LIBRARY=LIBRARY)
    env["PYTHONPATH"] = os.path.join(SOURCE_DIR, "python") + os.pathsep + env.get("PYTHONPATH", "")
    path = os.path.join(tmp, "example.py")
    with open(path, "w", encoding="utf-8") as f:
        f.write(text + "\n")
    return subprocess.run([sys.executable, path], cwd=SOURCE_DIR, env=env, capture_output=True,
                          text=True, timeout=600)


def run_c(text, tmp):
    source = text if re.search(r"\bint\s+main\s*\(", text) else C_MAIN.replace("BODY", text)
    path, exe = os.path.join(tmp, "example.c"), os.path.join(tmp, "example")
    with open(path, "w", encoding="utf-8") as f:
        f.write(source)
    cc = os.environ.get("CC", "cc")
    built = subprocess.run([cc, "-std=c11", "-Wall", "-Werror", path, "-o", exe,
                            "-I" + os.path.join(BINARY_DIR, "include"), "-L" + BINARY_DIR, "-lnmt",
                            "-Wl,-rpath," + BINARY_DIR], capture_output=True, text=True, timeout=300)
    if built.returncode != 0:
        return built
    return subprocess.run([exe, TEST_MODEL], capture_output=True, text=True, timeout=600)


def main():
    if not os.path.exists(LIBRARY):
        print("skipped: %s not built" % LIBRARY)
        return 77
    failures = ran = 0
    docs = sorted(glob.glob(os.path.join(SOURCE_DIR, "docs", "**", "*.md"), recursive=True))
    for doc in docs:
        name = os.path.relpath(doc, SOURCE_DIR)
        for line, lang, text, skip in blocks(doc):
            if lang not in ("python", "c"):
                continue
            where = "%s:%d (%s)" % (name, line, lang)
            if skip:
                print("skipped %s: %s" % (where, skip))
                continue
            with tempfile.TemporaryDirectory() as tmp:
                out = (run_python if lang == "python" else run_c)(text, tmp)
            ran += 1
            if out.returncode != 0:
                failures += 1
                print("FAIL %s: exit %d\n%s%s" % (where, out.returncode, out.stdout, out.stderr))
            else:
                print("ok %s" % where)
    print("test_doc_examples: %d blocks run, %d failed" % (ran, failures))
    return 1 if failures or not ran else 0


if __name__ == "__main__":
    sys.exit(main())
