"""test_server_attention.py: nmt-server's per-item "token_scores" and
"attention" fields (CPU backend, loopback, a free port).

- A server started with --attention answers "token_scores": true with the
  log-probability of each target token then the EOS's, and "attention": true
  with {"src", "tgt", "weights"}: the same tokens and numbers as translate
  --token-scores --attention prints for the line (the same float bits: the
  server's JSON and translate's %.9g both read back as the float),
  weights rows summing to 1 whose largest is the "align" pair's, and
  "align_score" (OpenNMT-py's "t-w") each row's largest weight; n-best
  items get them for every hypothesis; items that do not ask get neither.
- A server without --attention answers "token_scores" but refuses
  "attention": true with a 400 naming --attention, and gives "align" without
  "align_score"; "token_scores": 1 (not a
  boolean) is a 400; --token-scores (translate's output option) is refused.
Skips (77) when nmt-server was not built."""
import json
import os
import struct
import subprocess
import sys
import urllib.error
import urllib.request

SERVER = os.environ.get("NMT_SERVER", "")
TRANSLATE = os.environ["NMT_TRANSLATE"]
MODEL = os.environ["NMT_TEST_MODEL"]
OPTIONS = ["--device", "cpu", "-b", "3", "--max-len-b", "8"]
LINES = ["ein mann spielt im park .", "zwei hunde laufen über die straße !", "Haus", "rot"]
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what, file=sys.stderr)


def post(port, body):
    req = urllib.request.Request(f"http://127.0.0.1:{port}/translator/translate",
                                 data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"}, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"{}")


def start(extra):
    cmd = [SERVER, "-m", MODEL, *OPTIONS, *extra, "--port", "0", "--max-requests", "50"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = proc.stdout.readline()
    if "listening on" not in line:
        proc.kill()
        sys.exit(f"the server did not start: {line!r} {proc.stderr.read()}")
    return proc, int(line.rsplit(":", 1)[1])


def translate_fields():
    """translate's token scores and attention document for each line."""
    out = subprocess.run([TRANSLATE, "-m", MODEL, *OPTIONS, "--token-scores", "--attention"],
                         input="\n".join(LINES) + "\n", capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    rows = []
    for row in out.stdout.split("\n")[:-1]:
        text, scores, doc = row.split(" |||")
        rows.append((text, [float(x) for x in scores.split()], json.loads(doc)))
    assert len(rows) == len(LINES)
    return rows


def float_bits(x):
    return struct.pack("<f", x)


def same_floats(a, b):
    """The same floats, bit for bit, once each number is read as a float."""
    return len(a) == len(b) and all(float_bits(x) == float_bits(y) for x, y in zip(a, b))


def with_attention(ref):
    proc, port = start(["--attention"])
    try:
        items = [{"src": s, "align": True, "token_scores": True, "attention": True}
                 for s in LINES]
        code, body = post(port, items)
        check(code == 200 and len(body[0]) == len(LINES), f"--attention server: {code} {body}")
        for i, hyp in enumerate(body[0] if code == 200 else []):
            text, scores, doc = ref[i]
            att = hyp.get("attention", {})
            check(hyp["tgt"] == text, f"line {i}: {hyp['tgt']!r}, translate: {text!r}")
            check(same_floats(hyp.get("token_scores", []), scores),
                  f"line {i}: token scores {hyp.get('token_scores')} vs translate's {scores}")
            check(att.get("src") == doc["src"] and att.get("tgt") == doc["tgt"],
                  f"line {i}: tokens {att} vs translate's {doc}")
            weights = att.get("weights", [])
            check(len(weights) == len(doc["weights"]) and
                  all(same_floats(w, d) for w, d in zip(weights, doc["weights"])),
                  f"line {i}: weights {weights} vs translate's {doc['weights']}")
            pairs = [tuple(map(int, p.split("-"))) for p in hyp["align"][0].split()]
            for s, t in pairs:
                check(abs(sum(weights[t]) - 1.0) < 1e-5 and weights[t][s] == max(weights[t]),
                      f"line {i} token {t}: row {weights[t]}, align {s}")
            # OpenNMT-py 3.1.2's "align_score": "t-w", w the row's largest weight over its sum
            scores = [p.split("-") for p in hyp.get("align_score", [""])[0].split()]
            check([int(t) for t, _ in scores] == list(range(len(weights))) and
                  all(len(w) == 7 and abs(float(w) - max(weights[int(t)]) / sum(weights[int(t)]))
                      < 1e-5 for t, w in scores), f"line {i}: align_score {hyp.get('align_score')}")
        # n-best: every hypothesis; an item that asks nothing gets nothing.
        code, body = post(port, [{"src": LINES[0], "n_best": 3, "token_scores": True,
                                  "attention": True}])
        hyps = [rank[0] for rank in body] if code == 200 else []  # one list a rank
        check(code == 200 and len(hyps) == 3 and all(h["n_best"] == 3 for h in hyps),
              f"n-best: {code} {body}")
        for h in hyps:
            n = len(h.get("attention", {}).get("tgt", []))
            check(len(h.get("token_scores", [])) == n + 1 and
                  len(h["attention"]["weights"]) == n, f"n-best hypothesis {h}")
        code, body = post(port, [{"src": LINES[1]}])
        check(code == 200 and "attention" not in body[0][0] and "token_scores" not in body[0][0],
              f"an item that asked nothing: {code} {body}")
    finally:
        proc.kill()
        proc.wait()


def without_attention(ref):
    proc, port = start([])
    try:
        code, body = post(port, [{"src": LINES[0], "token_scores": True, "align": True}])
        check(code == 200 and same_floats(body[0][0].get("token_scores", []), ref[0][1]),
              f"token_scores without --attention: {code} {body}")
        check(code == 200 and "align" in body[0][0] and "align_score" not in body[0][0],
              f"align without the weights: no align_score: {code} {body}")
        code, body = post(port, [{"src": LINES[0], "attention": True}])
        check(code == 400 and "--attention" in body.get("error", ""),
              f"attention without --attention: {code} {body}")
        code, body = post(port, [{"src": LINES[0], "token_scores": 1}])
        check(code == 400 and "token_scores" in body.get("error", ""),
              f"token_scores as a number: {code} {body}")
    finally:
        proc.kill()
        proc.wait()


def main():
    if not SERVER or not os.path.exists(SERVER):
        print("nmt-server not built: skipped")
        return 77
    r = subprocess.run([SERVER, "-m", MODEL, "--token-scores"], capture_output=True, text=True,
                       timeout=60)
    check(r.returncode == 2 and "translate's, not the server's" in r.stderr,
          f"nmt-server --token-scores: exit {r.returncode}, {r.stderr.strip()}")
    ref = translate_fields()
    with_attention(ref)
    without_attention(ref)
    if failures:
        print(f"test_server_attention: {len(failures)} failure(s)")
        return 1
    print("test_server_attention: passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
