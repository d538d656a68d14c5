"""test_server_onmt_compat.py: nmt-server answers OpenNMT-py's REST requests
in the shapes OpenNMT-py's server gives (CPU, 127.0.0.1, a free port).

Replays tests/data/onmt_server_exchanges.json: requests and the answers
OpenNMT-py's server code (onmt/bin/server.py, translation_server.py) gives
them, as templates of their JSON shapes and fields (not of the translation
text): the conf.json models with and without ids, /translator/models, the
n-best layout (one list a rank, one answer an item), an empty src, "align",
unloading and loading again, the errors. Each answer must match its
template exactly (the same keys, lengths and literal values); each rank's
pred_score is at most the rank before's. Bounded by --max-requests and the
script's own timeouts; skips (77) without nmt-server."""
import json
import os
import re
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request

SERVER = os.environ.get("NMT_SERVER", "")
MODEL = os.environ["NMT_TEST_MODEL"]
SOURCE = os.environ.get("NMT_SOURCE_DIR",
                        os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
EXCHANGES = os.path.join(SOURCE, "tests", "data", "onmt_server_exchanges.json")
ALIGN = re.compile(r"^(\d+-\d+( \d+-\d+)*)?$")


def request(port, method, path, body=None):
    """(HTTP code, the JSON answer, the headers) of one request (body: JSON)."""
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=data, method=method,
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status, json.loads(r.read() or b"null"), r.headers
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"null"), e.headers


def mismatch(template, value, where="answer"):
    """Where value departs from template, or None."""
    if isinstance(template, dict):
        if not isinstance(value, dict) or set(value) != set(template):
            return f"{where}: keys {sorted(value) if isinstance(value, dict) else value!r}, " \
                   f"want {sorted(template)}"
        for key in template:
            found = mismatch(template[key], value[key], f"{where}.{key}")
            if found:
                return found
        return None
    if isinstance(template, list):
        if not isinstance(value, list) or len(value) != len(template):
            return f"{where}: {value!r}, want a list of {len(template)}"
        for k, (t, v) in enumerate(zip(template, value)):
            found = mismatch(t, v, f"{where}[{k}]")
            if found:
                return found
        return None
    kinds = {
        "<str>": lambda v: isinstance(v, str),
        "<number>": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
        "<align>": lambda v: isinstance(v, str) and ALIGN.match(v) and
        (pairs := [tuple(map(int, p.split("-"))) for p in v.split()]) == sorted(pairs),
        "<model>": lambda v: isinstance(v, str) and
        (v == os.path.basename(MODEL) or v.endswith("/" + os.path.basename(MODEL))),
    }
    if isinstance(template, str) and template in kinds:
        return None if kinds[template](value) else f"{where}: {value!r} is not {template}"
    same = value == template and isinstance(value, bool) == isinstance(template, bool)
    return None if same else f"{where}: {value!r}, want {template!r}"


def ranks_ordered(answer):
    """In an n-best answer, every item's scores fall (or stay) from rank to rank."""
    if not (isinstance(answer, list) and answer and isinstance(answer[0], list)):
        return True
    for i in range(len(answer[0])):
        scores = [rank[i]["pred_score"] for rank in answer]
        if any(a < b for a, b in zip(scores, scores[1:])):
            return False
    return True


def main():
    if not SERVER or not os.path.exists(SERVER):
        print("nmt-server not built: skipped")
        return 77
    with open(EXCHANGES, encoding="utf-8") as f:
        spec = json.load(f)
    text = json.dumps(spec["config"]).replace("ROOT", os.path.dirname(os.path.abspath(MODEL)))
    config = json.loads(text.replace('"MODEL"', json.dumps(os.path.basename(MODEL))))
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        conf = os.path.join(tmp, "conf.json")
        with open(conf, "w", encoding="utf-8") as f:
            json.dump(config, f)
        proc = subprocess.Popen([SERVER, "--config-json", conf, "--port", "0", "--max-len-b", "8",
                                 "--max-requests", str(len(spec["exchanges"])), "--timeout", "5"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            line = proc.stdout.readline()
            if "listening on" not in line:
                proc.kill()
                sys.exit(f"the server did not start: {line!r} {proc.stderr.read()}")
            port = int(line.rsplit(":", 1)[1])
            for k, x in enumerate(spec["exchanges"]):
                r = x["request"]
                code, answer, _ = request(port, r["method"], r["path"], r.get("body"))
                found = mismatch(x["response"], answer)
                if code != x["status"] or found or not ranks_ordered(answer):
                    failures.append(f"exchange {k} ({x['what']}): {code} (want {x['status']}): "
                                    f"{found or 'n-best scores out of order'}; {answer}")
            code = proc.wait(timeout=60)  # --max-requests answered: a graceful stop
            if code != 0:
                failures.append(f"the server exited {code}: {proc.stderr.read()[-500:]}")
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    for failure in failures:
        print("FAIL:", failure, file=sys.stderr)
    if failures:
        return 1
    print(f"test_server_onmt_compat: {len(spec['exchanges'])} exchanges as OpenNMT-py's")
    return 0


if __name__ == "__main__":
    sys.exit(main())
