"""test_server_ensemble.py: nmt-server with ensembles (docs/server.md,
"Models"; CPU, the reference kernels, 127.0.0.1, free ports; every server
killed at the end): a --config-json entry whose "models" lists the test
model A and its twin B of another seed, with opt "weights" as a list,
answers what translate -m A -m B --weights gives (text and score), and so
does -m A -m B --weights; an entry listing A twice answers as A alone, bit
for bit; GET /translator/models lists an entry's files. Skips (77) without
nmt-server."""
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
from test_server_onmt_compat import request as call  # noqa: E402

SERVER = os.environ.get("NMT_SERVER", "")
TRANSLATE = os.environ["NMT_TRANSLATE"]
A = os.path.abspath(os.environ["NMT_TEST_MODEL"])
B = os.path.abspath(os.environ["NMT_TEST_MODEL_SEED2"])
COMMON = ["--device", "cpu", "--cpu-kernels", "reference", "--max-len-b", "8", "--port", "0",
          "--max-requests", "1000"]
LINES = ["der hund sieht die katze", "ich liest ein buch", "das haus ist sehr groß", "wir"]
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what, file=sys.stderr)


def start(*args):
    proc = subprocess.Popen([SERVER, *args, *COMMON], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    line = proc.stdout.readline()
    if "listening on" not in line:
        proc.kill()
        sys.exit(f"the server did not start: {line!r} {proc.stderr.read()}")
    return proc, int(line.rsplit(":", 1)[1])


def answers(port, model_id):
    code, body, _ = call(port, "POST", "/translator/translate",
                         [{"src": line, "id": model_id} for line in LINES])
    check(code == 200, f"model {model_id}: HTTP {code} {body}")
    return [(item["tgt"], item["pred_score"]) for item in body[0]] if code == 200 else []


def offline(*models, weights=None):
    """translate's lines and scores for the same models."""
    args = [TRANSLATE, "--device", "cpu", "--cpu-kernels", "reference", "--max-len-b", "8",
            "--scores", "--quiet"]
    for m in models:
        args += ["-m", m]
    if weights:
        args += ["--weights", weights]
    out = subprocess.run(args, input="\n".join(LINES) + "\n", capture_output=True, text=True,
                         timeout=120, check=True).stdout
    rows = [line.split("\t", 1) for line in out.splitlines()]
    return [(text, float(score)) for score, text in rows]


def same(got, want, what):
    ok = len(got) == len(want) and all(
        g[0] == w[0] and abs(g[1] - w[1]) <= 1e-6 * (1 + abs(w[1])) for g, w in zip(got, want))
    check(ok, f"{what}: {got} != {want}")


def main():
    if not SERVER:
        print("test_server_ensemble: skipped: no nmt-server")
        return 77
    tmp = tempfile.mkdtemp()
    config = os.path.join(tmp, "conf.json")
    with open(config, "w", encoding="utf-8") as f:
        json.dump({"models": [
            {"id": 1, "models": [A, B], "opt": {"weights": [0.3, 0.9]}},
            {"id": 2, "model": A},
            {"id": 3, "models": [A, A]}]}, f)
    want = offline(A, B, weights="0.3,0.9")
    check(want != offline(A) and want != offline(B), "the ensemble translates as a member")
    proc, port = start("--config-json", config)
    try:
        same(answers(port, 1), want, "entry [A, B], weights [0.3, 0.9]")
        check(answers(port, 3) == answers(port, 2), "entry [A, A] differs from A alone")
        code, listed, _ = call(port, "GET", "/translator/models")
        files = {m["model_id"]: m["models"] for m in listed} if code == 200 else {}
        check(files.get(1) == [A, B] and files.get(2) == [A], f"/translator/models: {listed}")
    finally:
        proc.kill()
        proc.wait()
    proc, port = start("-m", A, "-m", B, "--weights", "0.3,0.9")
    try:
        same(answers(port, 0), want, "-m A -m B --weights 0.3,0.9")
    finally:
        proc.kill()
        proc.wait()
    if failures:
        print(f"test_server_ensemble: {len(failures)} failures", file=sys.stderr)
        return 1
    print("test_server_ensemble: passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
