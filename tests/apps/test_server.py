"""test_server.py: nmt-server on the CPU backend, over loopback.

Starts the server on a free port of 127.0.0.1 (bounded: --max-requests and
--timeout, and this script's own timeouts), then checks:
- answers equal translate's for the same options, byte for byte, for
  requests sent by 8 concurrent clients (one sentence each, in different
  orders) and for one many-item request; n_best and ids as OpenNMT-py's API;
- /health, /translator/health, /metrics (Prometheus text with the counters
  moving), the page at /;
- bad requests get a 4xx with a JSON error and never disturb the others:
  malformed JSON, wrong types, not an array, no items, too many items, a body
  over the limit, invalid UTF-8, an option out of range, a line over
  max_line_bytes, unknown path, wrong method (405 with its Allow header), and
  a slow client that stalls mid-body (closed after --timeout while others are
  served);
- SIGTERM: the server answers what is in flight and exits 0.
Skips (77) when nmt-server was not built (no libmicrohttpd/jansson)."""
import json
import os
import random
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

SERVER = os.environ.get("NMT_SERVER", "")
TRANSLATE = os.environ["NMT_TRANSLATE"]
MODEL = os.environ["NMT_TEST_MODEL"]
OPTIONS = ["--device", "cpu", "-b", "3", "--max-len-b", "8", "--max-line-bytes", "300"]
WORDS = ["ein", "mann", "frau", "hund", "spielt", "im", "park", "Haus", "rot", "Ball", ".", "!",
         "Zwei", "kind", "läuft", "über", "die", "Straße"]
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what, file=sys.stderr)


def post(port, body, timeout=60):
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    req = urllib.request.Request(f"http://127.0.0.1:{port}/translator/translate", data=data,
                                 headers={"Content-Type": "application/json"}, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"{}")


def get(port, path):
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=30) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def start_server(max_requests=2000):
    cmd = [SERVER, "-m", MODEL, *OPTIONS, "--port", "0", "--workers", "2", "--max-delay-us",
           "2000", "--max-body-bytes", "4096", "--max-sentences", "8", "--timeout", "2",
           "--max-requests", str(max_requests)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = proc.stdout.readline()  # "nmt-server: listening on http://127.0.0.1:PORT"
    if "listening on" not in line:
        proc.kill()
        sys.exit(f"the server did not start: {line!r} {proc.stderr.read()}")
    return proc, int(line.rsplit(":", 1)[1])


def good_requests(port, lines, ref):
    """One sentence a request from 8 clients at once; each answer must be translate's."""
    errors = []

    def client(seed):
        order = list(range(len(lines)))
        random.Random(seed).shuffle(order)
        for i in order:
            code, body = post(port, [{"src": lines[i], "id": 0}])  # -m's model is id 0
            if code != 200 or body[0][0]["tgt"] != ref[i] or "id" in body[0][0]:
                errors.append((i, code, body))

    threads = [threading.Thread(target=client, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    check(not errors, f"concurrent answers differ from translate's: {errors[:3]}")
    code, body = post(port, [{"src": s} for s in lines[:8]])
    check(code == 200 and [h["tgt"] for h in body[0]] == ref[:8], "an 8-item request")
    code, body = post(port, [{"src": lines[3], "align": True}])
    align = body[0][0].get("align") if code == 200 else None
    pairs = [tuple(map(int, p.split("-"))) for p in align[0].split()] if align and align[0] else []
    # OpenNMT-py's order: by source token, then target token; one pair a target token
    check(code == 200 and body[0][0]["tgt"] == ref[3] and isinstance(align, list) and pairs and
          pairs == sorted(pairs) and sorted(t for _, t in pairs) == list(range(len(pairs))) and
          all(0 <= s < 64 for s, _ in pairs), f"align: {code} {body}")
    # n-best: one list a rank (OpenNMT-py's layout), each with one hypothesis an item
    code, body = post(port, [{"src": lines[0], "n_best": 2}, {"src": lines[1], "n_best": 2}])
    check(code == 200 and len(body) == 2 and all(len(rank) == 2 for rank in body) and
          all(h["n_best"] == 2 for rank in body for h in rank) and
          [h["src"] for h in body[1]] == lines[:2] and body[0][0]["tgt"] == ref[0] and
          body[0][1]["tgt"] == ref[1] and body[0][0]["pred_score"] >= body[1][0]["pred_score"],
          f"n_best 2: {code} {body}")


def bad_requests(port, good_line, good_ref):
    cases = [
        (b"[{\"src\": ", 400, "malformed JSON"),
        ([{"src": 5}], 400, "wrong type of src"),
        ({"src": "x"}, 400, "not an array"),
        ([], 400, "no items"),
        ([{"src": "ein"}] * 9, 413, "too many items"),
        ([{"src": "ein " * 2000}], 413, "body over 4096 bytes"),
        (b"[{\"src\": \"ein \xff hund\"}]", 400, "invalid UTF-8"),
        ([{"src": "ein", "beam_size": 99}], 400, "beam above the server's"),
        ([{"src": "ein", "beam_size": "3"}], 400, "beam as a string"),
        ([{"src": "ein", "shrink": True}], 400, "shrinking on a server without it"),
        ([{"src": "ein", "align": 1}], 400, "align as a number"),
        ([{"src": "hund " * 100}], 400, "a line over max_line_bytes"),
    ]
    for body, want, what in cases:
        code, answer = post(port, body)
        check(code == want and answer.get("status") == "error" and answer.get("error"),
              f"{what}: {code} {answer}, want {want} with an error")
        code, answer = post(port, [{"src": good_line}])
        check(code == 200 and answer[0][0]["tgt"] == good_ref, f"a good request after {what}")
    check(get(port, "/nowhere")[0] == 404, "unknown path: 404")
    for path, method, allow in (("/translator/translate", "GET", "POST"),
                                ("/health", "POST", "GET, HEAD"), ("/metrics", "PUT", "GET, HEAD"),
                                ("/", "DELETE", "GET, HEAD")):
        req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", method=method,
                                     data=b"{}" if method != "GET" else None)
        try:
            urllib.request.urlopen(req, timeout=30).close()
            code, header = 200, None
        except urllib.error.HTTPError as e:
            code, header = e.code, e.headers.get("Allow")
            e.read()
        check(code == 405 and header == allow,
              f"{method} {path}: {code} with Allow {header!r}, want 405 with Allow {allow!r}")


def slow_client(port, good_line, good_ref):
    """A client that stops mid-body holds its connection only until --timeout."""
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.sendall(b"POST /translator/translate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json"
              b"\r\nContent-Length: 100\r\n\r\n[{\"src\": ")
    code, answer = post(port, [{"src": good_line}])
    check(code == 200 and answer[0][0]["tgt"] == good_ref, "served beside a stalled client")
    started = time.time()
    try:
        data = s.recv(4096)  # the server closes it (no answer, or a 408)
    except (ConnectionResetError, socket.timeout):
        data = b""
    check(time.time() - started < 9, "the stalled connection was closed by the server")
    check(data == b"" or data.startswith(b"HTTP/1.1 4"), f"stalled client got {data[:60]!r}")
    s.close()


def endpoints(port, n_sent):
    check(get(port, "/health") == (200, '{"status":"ok"}'), "/health")
    check(get(port, "/translator/health")[0] == 200, "/translator/health")
    code, page = get(port, "/")
    check(code == 200 and "<textarea" in page and "/translator/translate" in page, "the page")
    code, metrics = get(port, "/metrics")
    values = {}
    for line in metrics.splitlines():
        if line and not line.startswith("#"):
            key, value = line.rsplit(" ", 1)
            values[key] = float(value)
    check(code == 200 and values.get("nmt_queue_depth") == 0, "/metrics: queue depth 0")
    check(values.get("nmt_translate_sentences_total", 0) >= n_sent, "/metrics: sentences")
    check(values.get('nmt_http_responses_total{class="4xx"}', 0) >= 12, "/metrics: 4xx counted")
    check(values.get('nmt_request_latency_seconds_bucket{le="+Inf"}') ==
          values.get("nmt_request_latency_seconds_count"), "/metrics: histogram count")


def main():
    if not SERVER or not os.path.exists(SERVER):
        print("nmt-server not built: skipped")
        return 77
    for option in (["-i", "x.txt"], ["--alignment"], ["--mpi"], ["--stats", "s.json"]):
        r = subprocess.run([SERVER, "-m", MODEL, *option], capture_output=True, text=True,
                           timeout=60)
        check(r.returncode == 2 and "translate's, not the server's" in r.stderr,
              f"nmt-server {' '.join(option)}: exit {r.returncode}, {r.stderr.strip()}")
    rng = random.Random(7)
    lines = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 10))) for _ in range(24)]
    out = subprocess.run([TRANSLATE, "-m", MODEL, *OPTIONS], input="\n".join(lines) + "\n",
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    ref = out.stdout.split("\n")[:-1]
    assert len(ref) == len(lines)
    proc, port = start_server()
    try:
        good_requests(port, lines, ref)
        bad_requests(port, lines[1], ref[1])
        slow_client(port, lines[2], ref[2])
        endpoints(port, 8 * len(lines))
        # SIGTERM with a request in flight: it is answered, then the server exits 0.
        result = {}
        t = threading.Thread(target=lambda: result.update(a=post(port, [{"src": s} for s in
                                                                        lines[:8]])))
        t.start()
        time.sleep(0.05)
        proc.send_signal(signal.SIGTERM)
        t.join(timeout=60)
        code, body = result.get("a", (0, None))
        check(code in (200, 503), f"the request in flight at SIGTERM: {code}")
        check(proc.wait(timeout=60) == 0, "exit status 0 after SIGTERM")
        check("stopped after" in proc.stderr.read(), "the server says it stopped")
    finally:
        if proc.poll() is None:
            proc.kill()
    if failures:
        print(f"test_server: {len(failures)} failure(s)")
        return 1
    print("test_server: passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
