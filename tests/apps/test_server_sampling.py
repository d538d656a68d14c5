"""test_server_sampling.py: nmt-server's sampling and logit-rule item fields
(CPU backend, loopback, a free port; the server helpers are
test_server_attention.py's).

- "sampling_topk": 10 with "n_best": 3 (beam 1 implied): three samples an
  item (the answer: a list per rank, OpenNMT-py's layout); the same request twice gives the same answer; items keyed by
  "sample_key" keep their samples in another order and beside other items;
  two items of the same text sample apart (keyed by their index) unless they
  give one key; "seed" changes them; the samples are what translate prints
  for the line keyed by its number.
- "suppress" (a list of token lists and of strings), "ban_unk",
  "min_length" hold; "coverage_penalty" runs on an onmt server.
- A 400 naming the field for a bad value: "sampling_topk": 600,
  "coverage_penalty": "gnmt", "suppress": "x" (not a list), an unknown
  suppressed token, "sampling_topk" with "beam_size": 3 or
  "return_alternatives".
- "sampling_topk" with "target_prefix": every sample starts with its
  item's prefix; keyed items keep their samples in another order.
Skips (77) when nmt-server was not built."""
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_server_attention import LINES, MODEL, SERVER, TRANSLATE, post, start  # noqa: E402

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what, file=sys.stderr)


def answers(body):
    """(text, score) of each item's hypotheses, best first: the answer is a
    list per n-best rank, each with one hypothesis per item."""
    return [[(rank[i]["tgt"], rank[i]["pred_score"]) for rank in body]
            for i in range(len(body[0]) if body else 0)]


def hypotheses(body):
    return [h for rank in body for h in rank]


def sampling(port):
    base = [{"src": s, "sampling_topk": 10, "n_best": 3, "seed": 4} for s in LINES]
    code, body = post(port, base)
    check(code == 200 and len(answers(body)) == len(LINES) and
          all(len(item) == 3 for item in answers(body)), f"sampling: {code} {body}")
    first = answers(body) if code == 200 else []
    code, again = post(port, base)
    check(code == 200 and answers(again) == first, "the same request sampled otherwise")
    keyed = [dict(item, sample_key=i) for i, item in enumerate(base)]
    code, shuffled = post(port, keyed[::-1] + [{"src": "rot rot rot Ball", "n_best": 3}])
    check(code == 200 and answers(shuffled)[:len(LINES)] == first[::-1],
          f"keyed items in another order: {code}")
    twice = [dict(base[0]), dict(base[0])]
    code, body = post(port, twice)
    check(code == 200 and answers(body)[0] != answers(body)[1],
          "two items of one text keyed 0 and 1 sampled alike")
    code, body = post(port, [dict(item, sample_key=5) for item in twice])
    check(code == 200 and answers(body)[0] == answers(body)[1],
          "two items of one text and key sampled apart")
    code, body = post(port, [dict(item, seed=5) for item in base])
    check(code == 200 and answers(body) != first, "seed 5 drew seed 4's samples")
    out = subprocess.run([TRANSLATE, "-m", MODEL, "--device", "cpu", "--max-len-b", "8",
                          "--sampling-topk", "10", "--n-best", "3", "--seed", "4"],
                         input="\n".join(LINES) + "\n", capture_output=True, text=True,
                         timeout=300)
    rows = [row.split("\t") for row in out.stdout.splitlines()]
    check(out.returncode == 0 and [r[3] for r in rows] == [t for item in first for t, _ in item],
          f"translate's samples differ: {out.stderr}")


def rules(port):
    code, body = post(port, [{"src": s, "n_best": 3} for s in LINES])
    words = [w for h in hypotheses(body) for w in h["tgt"].split()] if code == 200 else []
    common = max(set(words), key=words.count) if words else "x"
    code, body = post(port, [{"src": s, "n_best": 3, "suppress": [[common], common],
                              "ban_unk": True, "min_length": 2} for s in LINES])
    hyps = [h["tgt"].split() for h in hypotheses(body)] if code == 200 else []
    check(code == 200 and hyps and all(common not in h and "<unk>" not in h for h in hyps),
          f"suppress {common!r} and ban_unk: {code} {body}")
    for field, value in (("sampling_topk", 600), ("coverage_penalty", "gnmt"),
                         ("suppress", "x"), ("suppress", [["no-such-token-anywhere"]])):
        code, body = post(port, [{"src": LINES[0], field: value}])
        check(code == 400 and field in body.get("error", ""),
              f"{field} {value!r}: {code} {body}")
    code, body = post(port, [{"src": LINES[0], "sampling_topk": 10, "beam_size": 3}])
    check(code == 400 and "beam" in body.get("error", ""), f"a sampling beam: {code} {body}")
    code, body = post(port, [{"src": LINES[0], "sampling_topk": 10, "n_best": 2,
                              "target_prefix": "the", "return_alternatives": True}])
    check(code == 400 and "return_alternatives" in body.get("error", ""),
          f"alternatives with sampling: {code} {body}")


def prefixed_samples(port):
    """Every sample continues its item's "target_prefix", keyed as any item."""
    base = [{"src": s, "sampling_topk": 10, "n_best": 3, "seed": 4, "sample_key": i,
             "target_prefix": "the" if i % 2 else "a dog"} for i, s in enumerate(LINES)]
    code, body = post(port, base)
    first = answers(body) if code == 200 else []
    check(code == 200 and len(first) == len(LINES) and
          all(len(item) == 3 and all(t.startswith(base[i]["target_prefix"]) for t, _ in item)
              for i, item in enumerate(first)), f"samples of prefixes: {code} {body}")
    code, body = post(port, base[::-1])
    check(code == 200 and answers(body) == first[::-1],
          f"samples of prefixes in another order: {code}")


def main():
    if not SERVER or not os.path.exists(SERVER):
        print("nmt-server not built: skipped")
        return 77
    proc, port = start([])
    try:
        sampling(port)
        rules(port)
        prefixed_samples(port)
    finally:
        proc.kill()
        proc.wait()
    proc, port = start(["--search-rules", "onmt", "--coverage-penalty", "wu",
                        "--coverage-beta", "0.2"])
    try:
        code, body = post(port, [{"src": s, "n_best": 2} for s in LINES])
        check(code == 200 and all(len(item) == 2 for item in answers(body)),
              f"coverage penalty: {code} {body}")
    finally:
        proc.kill()
        proc.wait()
    if failures:
        print(f"test_server_sampling: {len(failures)} failure(s)")
        return 1
    print("test_server_sampling: passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
