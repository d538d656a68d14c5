"""test_nmt_attention.py: the Python package's attention weights and token
scores (nmt.Hypothesis.token_scores / .attention / .tokens,
nmt.Result.src_tokens, Translator(attention_weights=True)) on the CPU with
the test model.

- token scores: n_tokens + 1 floats summing to log_prob, with or without
  the weights, and equal to translate --token-scores's (to its printed
  digits);
- with the weights: a row per target token over Result.src_tokens, summing
  to 1, largest at the alignment; the same numbers and tokens as translate
  --attention prints; without: () everywhere;
- the service gives the same results as the translator, weights included.
Skips (77) when libnmt or the test model is not built."""

import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_DIR = os.environ.get("NMT_SOURCE_DIR", os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(SOURCE_DIR, "python"))

import nmt  # noqa: E402

BINARY_DIR = os.environ.get("NMT_BINARY_DIR", os.path.join(SOURCE_DIR, "build"))
LIBRARY = os.path.join(BINARY_DIR, "libnmt.so")
MODEL = os.environ.get("NMT_TEST_MODEL", os.path.join(BINARY_DIR, "test-model.bin"))
TRANSLATE = os.environ.get("NMT_TRANSLATE", os.path.join(BINARY_DIR, "translate"))
LINES = ["ein mann spielt im park .", "zwei hunde laufen über die straße !", "Haus", "",
         "rot rot rot Ball"]
OPTIONS = dict(device="cpu", beam_size=3, n_best=2, max_len_b=8, library=LIBRARY)
CLI = ["--device", "cpu", "-b", "3", "-n", "2", "--max-len-b", "8"]


def close(a, b, tol):
    return len(a) == len(b) and all(abs(x - y) <= tol for x, y in zip(a, b))


def check_result(r, weights):
    assert r.ok, r.message
    for h in r:
        assert len(h.token_scores) == h.n_tokens + 1, h
        assert abs(sum(h.token_scores) - h.log_prob) <= 1e-5 * (h.n_tokens + 1), h
        if not weights or h.n_tokens == 0:
            assert h.attention == () and h.tokens == (), h
            continue
        assert len(h.attention) == h.n_tokens and len(h.tokens) == h.n_tokens, h
        for t, row in enumerate(h.attention):
            assert len(row) == len(r.src_tokens), (row, r.src_tokens)
            assert abs(sum(row) - 1.0) < 1e-5, row
            assert row[h.alignment[t]] == max(row), (row, h.alignment)


def cli_rows():
    """translate's n-best rows: (text, token scores, attention document)."""
    out = subprocess.run([TRANSLATE, "-m", MODEL, *CLI, "--token-scores", "--attention"],
                         input="\n".join(LINES) + "\n", capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    rows = {}
    for row in out.stdout.split("\n")[:-1]:
        head, scores, doc = row.split(" |||")
        line, rank, _, text = head.split("\t")
        rows[(int(line) - 1, int(rank) - 1)] = (text, [float(x) for x in scores.split()],
                                                json.loads(doc))
    return rows


def main():
    if not os.path.exists(LIBRARY) or not os.path.exists(MODEL):
        print("libnmt or the test model not built: skipped")
        return 77
    with_weights = nmt.Translator(MODEL, attention_weights=True, **OPTIONS)
    without = nmt.Translator(MODEL, **OPTIONS)
    a, b = with_weights.translate_batch(LINES), without.translate_batch(LINES)
    rows = cli_rows()
    for i, (ra, rb) in enumerate(zip(a, b)):
        check_result(ra, True)
        check_result(rb, False)
        assert rb.src_tokens == (), rb.src_tokens
        assert [(h.text, h.token_scores) for h in ra] == [(h.text, h.token_scores) for h in rb]
        for k, h in enumerate(ra):
            text, scores, doc = rows[(i, k)]
            assert h.text == text, (h.text, text)
            assert close(h.token_scores, scores, 2e-6), (h.token_scores, scores)
            if h.n_tokens:
                assert list(ra.src_tokens) == doc["src"] and list(h.tokens) == doc["tgt"], doc
                for got, want in zip(h.attention, doc["weights"]):
                    assert close(got, want, 1e-5), (got, want)
    service = nmt.Service(MODEL, attention_weights=True, **OPTIONS)
    try:
        got = [f.result(timeout=120) for f in [service.submit(line) for line in LINES]]
    finally:
        service.close()
    assert got == a, "the service's results differ from the translator's"
    assert [r.src_tokens for r in got] == [r.src_tokens for r in a]
    assert [[h.attention for h in r] for r in got] == [[h.attention for h in r] for r in a]
    print("test_nmt_attention: passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
