"""test_server_score.py: nmt-server's scoring endpoint and target prefixes
(CPU backend, the reference kernels, loopback, a free port).

- POST /translator/score answers each item {"src", "tgt"} with one element
  {"src", "tgt", "n_best": 1, "pred_score", "log_prob"} (and "align",
  "token_scores" when asked), one rank: the numbers translate --score-target prints
  for the pair, bit for bit once read as floats; an item without a string
  "tgt" is a 400 naming it; GET is a 405.
- POST /translator/translate with "target_prefix" gives hypotheses that
  start with it, as translate --target-prefix prints them, and with
  "return_alternatives": true n_best hypotheses (one a rank) with different
  words after the prefix; a non-string prefix, a "tgt" there (--strict), a
  400.
Skips (77) when nmt-server was not built."""
import json
import os
import struct
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request

SERVER = os.environ.get("NMT_SERVER", "")
TRANSLATE = os.environ["NMT_TRANSLATE"]
MODEL = os.environ["NMT_TEST_MODEL"]
OPTIONS = ["--device", "cpu", "--cpu-kernels", "reference", "-b", "3", "--max-len-b", "8"]
LINES = ["ein mann spielt im park .", "zwei hunde laufen über die straße !", "Haus", "rot"]
TARGETS = ["a man plays in the park .", "two dogs", "house", ""]
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what, file=sys.stderr)


def request(port, path, body=None, method="POST"):
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}",
                                 data=None if body is None else json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"}, method=method)
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"{}")


def run_translate(extra, target_lines):
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
        f.write("\n".join(target_lines) + "\n")
    try:
        out = subprocess.run([TRANSLATE, "-m", MODEL, *OPTIONS, *extra, f.name],
                             input="\n".join(LINES) + "\n", capture_output=True, text=True,
                             timeout=300)
    finally:
        os.unlink(f.name)
    assert out.returncode == 0, out.stderr
    return out.stdout.split("\n")[:-1]


def bits(x):
    return struct.pack("<f", x)


def main():
    if not SERVER or not os.path.exists(SERVER):
        print("skipped: nmt-server not built")
        return 77
    proc = subprocess.Popen([SERVER, "-m", MODEL, *OPTIONS, "--port", "0",
                             "--max-requests", "50"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = proc.stdout.readline()
    if "listening on" not in line:
        proc.kill()
        sys.exit(f"the server did not start: {line!r} {proc.stderr.read()}")
    port = int(line.rsplit(":", 1)[1])
    try:
        items = [{"src": s, "tgt": t, "align": True, "token_scores": True}
                 for s, t in zip(LINES, TARGETS)]
        code, doc = request(port, "/translator/score", items)
        check(code == 200 and len(doc) == 1 and len(doc[0]) == len(LINES),
              f"score: {code} {doc}")
        rows = run_translate(["--alignment", "--token-scores", "--score-target"], TARGETS)
        for i, (e, row) in enumerate(zip(doc[0] if code == 200 else [], rows)):
            numbers, align, scores = row.split(" |||")
            log_prob, score = (float(x) for x in numbers.split("\t"))
            check(e["n_best"] == 1 and e["src"] == LINES[i]
                  and bits(e["log_prob"]) == bits(log_prob)
                  and bits(e["pred_score"]) == bits(score),
                  f"item {i}: {e} against translate's {row!r}")
            check([bits(x) for x in e["token_scores"]] ==
                  [bits(float(x)) for x in scores.split()], f"item {i}: token scores")
            pairs = sorted(align.split(), key=lambda p: tuple(int(x) for x in p.split("-")))
            check(e["align"] == [" ".join(pairs)], f"item {i}: align {e['align']} {align!r}")
        code, doc = request(port, "/translator/score", [{"src": "rot"}])
        check(code == 400 and "tgt" in doc.get("error", ""), f"no tgt: {code} {doc}")
        code, doc = request(port, "/translator/score", [{"src": "rot", "tgt": 5}])
        check(code == 400 and "tgt" in doc.get("error", ""), f"tgt 5: {code} {doc}")
        code, _ = request(port, "/translator/score", method="GET")
        check(code == 405, f"GET /translator/score: {code}")

        prefix_items = [{"src": s, "target_prefix": "the"} for s in LINES]
        code, doc = request(port, "/translator/translate", prefix_items)
        want = run_translate(["--target-prefix"], ["the"] * len(LINES))
        check(code == 200 and [e["tgt"] for e in doc[0]] == want,
              f"prefix: {code} {doc} against translate's {want}")
        code, doc = request(port, "/translator/translate",
                            [{"src": LINES[0], "target_prefix": "the", "n_best": 2,
                              "return_alternatives": True}])
        ranks = [rank[0] for rank in doc] if code == 200 else []  # one item, a list a rank
        words = [e["tgt"].split()[1] if len(e["tgt"].split()) > 1 else "" for e in ranks]
        check(code == 200 and len(words) == 2 and words[0] != words[1] and
              all(e["tgt"].startswith("the") for e in ranks), f"alternatives: {code} {doc}")
        code, doc = request(port, "/translator/translate", [{"src": "rot", "target_prefix": 1}])
        check(code == 400 and "target_prefix" in doc.get("error", ""), f"prefix 1: {code}")
        code, doc = request(port, "/translator/translate", [{"src": "rot", "tgt": "red"}])
        check(code == 400 and "tgt" in doc.get("error", ""), f"tgt to translate: {code} {doc}")
    finally:
        proc.terminate()
        proc.wait(timeout=60)
    print("test_server_score:", "FAILED" if failures else "passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
