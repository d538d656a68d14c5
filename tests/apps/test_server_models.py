"""test_server_models.py: nmt-server's models from --config-json (CPU,
127.0.0.1, free ports; every server bounded by --max-requests and killed at
the end, every wait bounded).

- load at start or at the first request; after "timeout" idle seconds
  "unload" frees the model and "to_cpu" its service only (it stays listed as
  loaded); /translator/unload_model/ID by GET or POST (not HEAD), 404 for an
  unknown id; /models is /translator/models;
- an entry's opt overrides the server's options for that model (OpenNMT-py's
  beam_size, n_best and gpu; translate's keys);
- the request rules: the first item's "id" names the model, another item's
  "id" must agree, one n_best a request; unknown fields are a 400 naming
  them under --strict 1 (the default) and ignored under --strict 0;
- thread safety: 6 clients translating on two models while another unloads
  them at random get 200 with the answers of a quiet server, bit for bit;
  under --max-loaded-models 1 the clients on two models get 200 with those
  answers (a request waits for the other model to fall idle), and /metrics
  never shows more than one loaded;
- a bad --config-json stops the start (exit 2) with a message naming the
  entry and key; --strict 0 lets unknown keys through with a note.
Skips (77) without nmt-server."""
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

sys.path.insert(0, os.path.dirname(__file__))
from test_server_onmt_compat import request as call  # noqa: E402

SERVER = os.environ.get("NMT_SERVER", "")
MODEL = os.path.abspath(os.environ["NMT_TEST_MODEL"])
# the reference kernels keep a line's bits in any batch on every CPU
COMMON = ["--device", "cpu", "--cpu-kernels", "reference", "--max-len-b", "8", "--port", "0",
          "--timeout", "5", "--max-requests", "100000"]
LINES = ["ein mann spielt im park .", "zwei hunde laufen", "Haus", "rot Ball !", "ein kind"]
failures = []
TMP = tempfile.mkdtemp()


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what, file=sys.stderr)


def run_threads(clients, beside):
    """Runs the client threads to their end with the beside thread, which
    stops when the event it is given is set."""
    done = threading.Event()
    threads = [threading.Thread(target=c) for c in clients]
    other = threading.Thread(target=beside, args=(done,))
    other.start()
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    done.set()
    other.join(timeout=60)


def translate(port, items):
    code, body, _ = call(port, "POST", "/translator/translate", items)
    return code, body


def models(port):
    return {m["model_id"]: m for m in call(port, "GET", "/translator/models")[1]}


def loaded_count(port):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=30) as r:
        for line in r.read().decode().splitlines():
            if line.startswith("nmt_models_loaded "):
                return int(line.split()[1])
    return -1


def write_config(entries, name="conf.json", **top):
    path = os.path.join(TMP, name)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(dict(top, models=entries), f)
    return path


def start(config, *extra):
    proc = subprocess.Popen([SERVER, "--config-json", config, *COMMON, *extra],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = proc.stdout.readline()
    if "listening on" not in line:
        proc.kill()
        sys.exit(f"the server did not start: {line!r} {proc.stderr.read()}")
    return proc, int(line.rsplit(":", 1)[1])


def stop(proc):
    proc.kill()
    proc.wait()


def wait_until(predicate, seconds):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.1)
    return predicate()


def lifecycle():
    config = write_config([
        {"id": 1, "model": MODEL, "timeout": 1, "on_timeout": "unload"},
        {"id": 2, "model": MODEL, "timeout": 1, "on_timeout": "to_cpu", "load": True},
        {"id": 3, "model": MODEL, "opt": {"beam_size": 4, "n_best": 4, "max_len_b": 3}}])
    proc, port = start(config, "-b", "2")
    try:
        m = models(port)
        check([m[i]["loaded"] for i in (1, 2, 3)] == [False, True, False] and
              loaded_count(port) == 1, f"at start only load: true is loaded: {m}")
        check(wait_until(lambda: loaded_count(port) == 0, 6) and models(port)[2]["loaded"],
              "to_cpu after 1 s idle: the service goes, the model stays listed as loaded")
        code, first = translate(port, [{"src": LINES[0], "id": 2}])
        check(code == 200 and loaded_count(port) == 1, f"model 2 again: {code} {first}")
        code, body = translate(port, [{"src": LINES[0], "id": 1}])
        check(code == 200 and models(port)[1]["loaded"] and loaded_count(port) == 2,
              f"model 1 loads at its first request: {code} {body}")
        check(wait_until(lambda: not models(port)[1]["loaded"], 6),
              "unload after 1 s idle: model 1 is not loaded")
        # opt overrides the server's -b 2: n_best 4 needs beam 4; max_len_b 3 caps the length
        code, body = translate(port, [{"src": LINES[0], "id": 3}])
        check(code == 200 and len(body) == 4 and all(len(r[0]["tgt"].split()) <= 3 for r in body),
              f"model 3's opt (beam_size 4, n_best 4, max_len_b 3): {code} {body}")
        code, body = translate(port, [{"src": LINES[0], "id": 1, "n_best": 3}])
        check(code == 400, f"model 1 keeps the server's -b 2 (n_best 3 refused): {code} {body}")
        # the unload route
        code, body, _ = call(port, "POST", "/translator/unload_model/3")
        check(code == 200 and body == {"model_id": 3, "status": "ok"} and
              not models(port)[3]["loaded"], f"POST unload_model/3: {code} {body}")
        code, body, _ = call(port, "GET", "/unload_model/2")
        check(code == 200 and not models(port)[2]["loaded"], f"GET /unload_model/2: {code} {body}")
        code, body, headers = call(port, "HEAD", "/translator/unload_model/1")
        check(code == 405 and headers.get("Allow") == "GET, POST", f"HEAD unload: {code}")
        for path in ("/translator/unload_model/9", "/translator/unload_model/x",
                     "/translator/unload_model/-1", "/translator/unload_model/"):
            code, body, _ = call(port, "GET", path)
            check(code == 404 and body.get("status") == "error", f"GET {path}: {code} {body}")
        check(call(port, "GET", "/models")[1] == call(port, "GET", "/translator/models")[1],
              "/models is /translator/models")
        code, again = translate(port, [{"src": LINES[0], "id": 2}])
        check(code == 200 and again == first, f"model 2 loaded again: {again} vs {first}")
    finally:
        stop(proc)


def request_rules():
    config = write_config([{"id": 5, "model": MODEL}, {"id": 6, "model": MODEL}])
    proc, port = start(config, "-b", "3")
    try:
        cases = [
            ([{"src": "a", "id": 5}, {"src": "b", "id": 6}], 400, "item 1: model 6, item 0's 5"),
            ([{"src": "a", "id": 5}, {"src": "b", "id": 5, "n_best": 2}], 400, "one n_best"),
            ([{"src": "a", "id": "5"}], 400, "\"id\" must be a model id"),
            ([{"src": "a", "id": 1.5}], 400, "\"id\" must be a model id"),
            ([{"src": "a"}], 404, "no model 0"),
            ([{"src": "a", "id": 5, "attention": True}], 400, "--attention"),
            ([{"src": "a", "id": 5, "ref": "x", "zz": 1}], 400, "unknown fields \"ref\", \"zz\""),
            ([{"src": "a", "id": 5}, {"src": "b", "tgt_prefix": "x"}], 400,
             "item 1: unknown field \"tgt_prefix\""),
        ]
        for items, want, text in cases:
            code, body = translate(port, items)
            check(code == want and text in body.get("error", ""),
                  f"{items}: {code} {body}, want {want} with {text!r}")
        code, body = translate(port, [{"src": "ein hund", "id": 6}, {"src": "Haus"}])
        check(code == 200 and len(body[0]) == 2, f"item 1 without an id: model 6's: {code} {body}")
    finally:
        stop(proc)
    proc, port = start(config, "-b", "3", "--strict", "0")
    try:
        code, body = translate(port, [{"src": LINES[0], "id": 5, "ref": "x", "zz": [1]}])
        code2, plain = translate(port, [{"src": LINES[0], "id": 5}])
        check(code == 200 and body == plain, f"--strict 0 ignores unknown fields: {code} {body}")
    finally:
        stop(proc)


def concurrency():
    config = write_config([{"id": 10, "model": MODEL, "opt": {"beam_size": 2}},
                           {"id": 11, "model": MODEL, "opt": {"beam_size": 3, "n_best": 2}}])
    proc, port = start(config, "--workers", "2", "--max-delay-us", "2000")
    try:
        ref = {(mid, line): translate(port, [{"src": line, "id": mid}])[1]
               for mid in (10, 11) for line in LINES}
        errors = []

        def client(seed, requests=15, seen=None):
            rng = random.Random(seed)
            for _ in range(requests):
                mid, line = rng.choice((10, 11)), rng.choice(LINES)
                code, body = translate(port, [{"src": line, "id": mid}])
                if code != 200 or body != ref[(mid, line)]:
                    errors.append((mid, line, code, body))
                if seen is not None:
                    seen.append(loaded_count(port))

        def unloader(done):
            rng = random.Random(99)
            while not done.is_set():
                call(port, "POST", f"/translator/unload_model/{rng.choice((10, 11))}")
                time.sleep(rng.uniform(0.0, 0.05))

        run_threads([lambda k=k: client(k) for k in range(6)], unloader)
        check(not errors, f"answers while unloading differ: {errors[:3]}")
    finally:
        stop(proc)
    proc, port = start(config, "--workers", "2", "--max-loaded-models", "1")
    try:
        seen = []
        errors.clear()  # client() reports here, and reaches this server by port

        def monitor(done):
            while not done.is_set():
                seen.append(loaded_count(port))
                time.sleep(0.005)

        run_threads([lambda k=k: client(k, 10, seen) for k in range(4)], monitor)
        check(not errors, f"--max-loaded-models 1: wrong answers {errors[:3]}")
        seen.append(loaded_count(port))
        check(max(seen) == 1 and seen[-1] == 1,
              f"--max-loaded-models 1: loaded counts {sorted(set(seen))}, last {seen[-1]}")
    finally:
        stop(proc)


def bad_configs():
    good = {"id": 1, "model": MODEL}
    root_file = os.path.basename(MODEL)
    cases = [
        ({"models": [dict(good, tokenizer={"type": "sentencepiece"})]},
         "models[0] (id 1): \"tokenizer\" is not needed: the model file carries its tokenizer"),
        ({"models": [dict(good, opt={"verbose": True})]}, "\"verbose\" is not an option"),
        ({"models": [dict(good, opt={"beam_size": 0})]}, "bad value for beam: '0'"),
        ({"models": [dict(good, opt={"input": "x.txt"})]}, "is translate's, not the server's"),
        ({"models": [dict(good, opt={"beam_size": 2, "n_best": 3})]},
         "models[0] (id 1): --n-best 3 is larger than --beam 2"),
        ({"models": [dict(good, opt={"gpu": "x"})]}, "opt \"gpu\" must be -1"),
        ({"models": [good, good]}, "models[1]: model id 1 is taken"),
        ({"models": [{"model": "missing.bin"}], "models_root": TMP}, "cannot open"),
        ({"models": [{"models": [MODEL, MODEL]}]}, "(an ensemble) are not supported yet"),
        ({"models": [dict(good, on_timeout="to_gpu")]}, "\"on_timeout\" \"to_cpu\" or \"unload\""),
        ({"models": []}, "a list of 1..256 entries"),
        ({"models": [good], "extra": 1}, "the top level: \"extra\" is not a key"),
    ]
    for k, (doc, text) in enumerate(cases):
        path = os.path.join(TMP, f"bad{k}.json")
        with open(path, "w", encoding="utf-8") as f:
            json.dump(doc, f)
        r = subprocess.run([SERVER, "--config-json", path, *COMMON], capture_output=True,
                           text=True, timeout=60)
        check(r.returncode == 2 and text in r.stderr, f"{doc}: exit {r.returncode} {r.stderr!r}")
    r = subprocess.run([SERVER, "--config-json", path, "-m", MODEL, *COMMON], capture_output=True,
                       text=True, timeout=60)
    check(r.returncode == 2 and "exclude each other" in r.stderr, f"-m with --config-json: {r}")
    # --strict 0: an unknown key is a note, and the entry without an id is model 0
    lenient = write_config([{"model": root_file, "tokenizer": {}, "opt": {"verbose": 1}}],
                           name="lenient.json", models_root=os.path.dirname(MODEL), x=1)
    proc = subprocess.Popen([SERVER, "--config-json", lenient, *COMMON, "--strict", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()
        check("listening on" in line, f"--strict 0 with unknown keys: {line!r}")
        if "listening on" in line:
            code, body = translate(int(line.rsplit(":", 1)[1]), [{"src": "ein hund"}])
            check(code == 200, f"--strict 0: model 0 translates: {code} {body}")
    finally:
        stop(proc)
    check("\"tokenizer\" ignored" in proc.stderr.read(), "--strict 0: no note for the key")


def main():
    if not SERVER or not os.path.exists(SERVER):
        print("nmt-server not built: skipped")
        return 77
    try:
        for part in (lifecycle, request_rules, concurrency, bad_configs):
            part()
    finally:
        shutil.rmtree(TMP, ignore_errors=True)
    if failures:
        print(f"test_server_models: {len(failures)} failures", file=sys.stderr)
        return 1
    print("test_server_models: passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
