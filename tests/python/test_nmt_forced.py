"""test_nmt_forced.py: the Python package's scoring, target prefixes and
alternatives (python/nmt: Translator.score_batch, translate_batch's
target_prefix, return_alternatives; Service.submit's target, target_prefix
and return_alternatives), on the CPU and the test model. The plumbing, so
numbers within rounding (tests/engine/test_forced.c holds the bits):

- score_batch of translate_batch's hypotheses (lines as tokens) gives their
  log_prob, score and token_scores; a target that cannot be used
  (a NUL byte, an empty source) is that pair's refusal, the others scored;
  a str for the lines or targets is a TypeError, unequal lengths a
  ValueError;
- prefixed translations start with their prefix (None: the plain one);
  return_alternatives (per call) gives n_best different next words;
- the service's answers are the translator's.
A script (ctest runs it with the tests' Python); exit 77 without the built
library."""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_DIR = os.environ.get("NMT_SOURCE_DIR", os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(SOURCE_DIR, "python"))
sys.path.insert(0, HERE)

import checks  # noqa: E402
import nmt  # noqa: E402
from checks import check  # noqa: E402

BINARY_DIR = os.environ.get("NMT_BINARY_DIR", os.path.join(SOURCE_DIR, "build"))
LIBRARY = os.path.join(BINARY_DIR, "libnmt.so")
MODEL = os.environ.get("NMT_TEST_MODEL", os.path.join(BINARY_DIR, "test-model.bin"))
OPTIONS = dict(device="cpu", beam_size=3, n_best=2, max_len_b=8, input_tokens=1,
               output_tokens=1, unk_replace=0)
LINES = ["ein mann spielt im park .", "zwei hund", "rot Ball !", "die frau läuft"]


def close(a, b):
    return abs(a - b) <= 1e-5 * (1 + abs(a))


def same(a, b):
    """The same texts and numbers within rounding (a Result each)."""
    return a.ok == b.ok and a.message == b.message and len(a.hypotheses) == len(b.hypotheses) \
        and all(x.text == y.text and close(x.log_prob, y.log_prob) and close(x.score, y.score)
                and len(x.token_scores) == len(y.token_scores)
                and all(close(p, q) for p, q in zip(x.token_scores, y.token_scores))
                for x, y in zip(a.hypotheses, b.hypotheses))


def main():
    if not os.path.exists(LIBRARY):
        print("skipped: libnmt not built")
        return 77
    model = nmt.Model(MODEL, library=LIBRARY)
    with nmt.Translator(model, **OPTIONS) as t:
        found = t.translate_batch(LINES)
        pairs = [(LINES[i], h) for i, r in enumerate(found) for h in r.hypotheses]
        scored = t.score_batch([s for s, _ in pairs], [h.text for _, h in pairs])
        for (src, h), r in zip(pairs, scored):
            got = r.hypotheses[0] if r.ok else None
            check(r.ok and len(r.hypotheses) == 1 and same(nmt.Result([got], r.status, ""),
                                                           nmt.Result([h], r.status, "")),
                  f"scoring {h} of {src!r}: {r}")
        refused = t.score_batch(["ein hund", "", "zwei hund"], ["a dog", "a dog", "two\0dogs"])
        check(refused[0].ok and not refused[1].ok and "empty" in refused[1].message and
              not refused[2].ok and "NUL" in refused[2].message, f"refusals: {refused}")
        for bad, exc in ((lambda: t.score_batch("ein hund", ["a dog"]), TypeError),
                         (lambda: t.score_batch(["ein hund"], "a dog"), TypeError),
                         (lambda: t.score_batch(["ein hund"], ["a", "b"]), ValueError),
                         (lambda: t.translate_batch(["ein hund"], target_prefix=["a", "b"]),
                          ValueError)):
            try:
                bad()
                check(False, f"accepted: {exc.__name__} expected")
            except exc:
                pass

        prefixes = ["the", None, "a dog", "the man"]
        prefixed = t.translate_batch(LINES, target_prefix=prefixes)
        for i, r in enumerate(prefixed):
            if prefixes[i] is None:
                check(same(r, found[i]), f"line {i} without a prefix: {r} vs {found[i]}")
            else:
                check(r.ok and all((h.text + " ").startswith(prefixes[i] + " ")
                                   for h in r.hypotheses), f"line {i}: {r}")
        alternatives = t.translate_batch(LINES, target_prefix=prefixes, return_alternatives=1)
        for i, r in enumerate(alternatives):
            n = len(prefixes[i].split()) if prefixes[i] else 0
            words = [h.text.split()[n] if len(h.text.split()) > n else "" for h in r.hypotheses]
            check(r.ok and len(words) == 2 and words[0] != words[1], f"alternatives {i}: {r}")

    with nmt.Service(model, workers=2, **OPTIONS) as s:
        futures = [s.submit(line, target=h.text) for line, h in pairs]
        futures += [s.submit(line, target_prefix=p) for line, p in zip(LINES, prefixes)]
        futures += [s.submit(line, target_prefix=p, return_alternatives=True)
                    for line, p in zip(LINES, prefixes)]
        want = list(scored) + list(prefixed) + list(alternatives)
        for k, (f, w) in enumerate(zip(futures, want)):
            check(same(f.result(timeout=120), w), f"service answer {k}: {f.result()} vs {w}")
    model.close()
    print("test_nmt_forced:", "FAILED" if checks.failures else "passed")
    return 1 if checks.failures else 0


if __name__ == "__main__":
    sys.exit(main())
