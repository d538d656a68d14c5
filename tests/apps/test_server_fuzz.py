"""test_server_fuzz.py: nmt-server under malformed traffic (CPU, 127.0.0.1).

A seeded fuzzer (NMT_TEST_SEED to replay; NMT_FUZZ_REQUESTS, default 1500)
sends mutated translation bodies (bytes flipped, inserted, deleted or cut
from valid ones, random JSON values, deep nesting, huge numbers, wrong types)
over HTTP, and raw garbage over plain sockets (broken request lines,
headers, chunked encodings, lengths that lie, early closes). Every HTTP
answer must be a well-formed response with a status below 600 and, for the
translation path, 200 or a 4xx/5xx with a JSON error; after every 100 the
server must still answer /health and translate a good line as translate
does. At the end: SIGTERM, exit 0, and no "AddressSanitizer"/crash output.
Skips (77) when nmt-server was not built."""
import json
import os
import random
import signal
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from test_server import MODEL, OPTIONS, SERVER, TRANSLATE, get, post, start_server  # noqa: E402

SEED = int(os.environ.get("NMT_TEST_SEED", str(int(time.time()))))
N = int(os.environ.get("NMT_FUZZ_REQUESTS", "1500"))
GOOD = [{"src": "ein mann läuft im park ."}, {"src": "zwei hund", "id": 0, "n_best": 2},
        {"src": "rot Ball !", "beam_size": 2, "alpha": 0.5, "align": True}]


def mutate(rng, data):
    data = bytearray(data)
    for _ in range(rng.randint(1, 6)):
        op = rng.randrange(5)
        if op == 0 and data:
            data[rng.randrange(len(data))] = rng.randrange(256)
        elif op == 1:
            data.insert(rng.randrange(len(data) + 1), rng.randrange(256))
        elif op == 2 and data:
            del data[rng.randrange(len(data))]
        elif op == 3:
            data = data[:rng.randrange(len(data) + 1)]
        else:
            data += bytes(rng.choice([b'"', b"[", b"{", b"]", b"}", b",", b":", b"\\u0000",
                                      b"\xff", b"1e99999", b"-", b"null"]))
    return bytes(data)


def random_value(rng, depth=0):
    kind = rng.randrange(8 if depth < 4 else 5)
    if kind == 0:
        return rng.choice([None, True, False])
    if kind == 1:
        return rng.choice([0, -1, 2 ** 63, 1e308, -1e-308, 3.5])
    if kind == 2:
        return "".join(rng.choice("ab .\u00e4\u4e2d\U0001f600\\\"") for _ in range(rng.randrange(20)))
    if kind == 3:
        return rng.choice(["ein", "", " ", "x" * 5000])
    if kind == 4:
        return {"src": rng.choice(["ein", 5, None, ["a"]])}
    if kind == 5:
        return [random_value(rng, depth + 1) for _ in range(rng.randrange(4))]
    if kind == 6:
        keys = ["src", "id", "beam_size", "n_best", "alpha", "max_len_a", "max_len_b",
                "shrink", "deadline_ms", "align", "zz"]
        return {rng.choice(keys): random_value(rng, depth + 1) for _ in range(rng.randrange(5))}
    return "[" * rng.randrange(1, 3000)


def fuzz_body(rng):
    r = rng.random()
    if r < 0.4:
        return mutate(rng, json.dumps(rng.sample(GOOD, rng.randint(1, 3))).encode())
    if r < 0.8:
        return json.dumps(random_value(rng)).encode()
    return bytes(rng.randrange(256) for _ in range(rng.randrange(200)))


RAW = [b"GET / HTTP/1.1\r\n\r\n", b"\x00\x01\x02\r\n\r\n", b"POST /translator/translate HTTP/1.1\r\n"
       b"Host: x\r\nContent-Length: 5\r\n\r\n[{", b"POST /translator/translate HTTP/1.1\r\nHost: x\r\n"
       b"Transfer-Encoding: chunked\r\n\r\nzz\r\nabc\r\n0\r\n\r\n", b"GET /" + b"a" * 9000 +
       b" HTTP/1.1\r\nHost: x\r\n\r\n", b"BREW /pot HTTP/9.9\r\n" + b"X: y\r\n" * 200 + b"\r\n",
       b"POST /translator/translate HTTP/1.1\r\nHost: x\r\nContent-Length: -3\r\n\r\n"]


def raw(port, rng):
    data = mutate(rng, rng.choice(RAW)) if rng.random() < 0.5 else rng.choice(RAW)
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        try:
            s.sendall(data)
            if rng.random() < 0.3:
                return b""  # close early
            s.shutdown(socket.SHUT_WR)
            return s.recv(200)
        except (ConnectionResetError, BrokenPipeError, socket.timeout):
            return b""


def main():
    if not SERVER or not os.path.exists(SERVER):
        print("nmt-server not built: skipped")
        return 77
    print(f"seed {SEED} (set NMT_TEST_SEED to replay), {N} requests")
    rng = random.Random(SEED)
    good_line = GOOD[0]["src"]
    ref = subprocess.run([TRANSLATE, "-m", MODEL, *OPTIONS], input=good_line + "\n",
                         capture_output=True, text=True, timeout=120).stdout.rstrip("\n")
    proc, port = start_server(max_requests=2 * N + 100)  # its own stop must not come first
    failures = []
    try:
        for i in range(N):
            if rng.random() < 0.15:
                answer = raw(port, rng)
                if answer and not answer.startswith(b"HTTP/1."):
                    failures.append(f"raw {i}: {answer[:40]!r}")
            else:
                code, body = post(port, fuzz_body(rng))
                if not (code == 200 or (400 <= code < 600 and body.get("status") == "error")):
                    failures.append(f"request {i}: {code} {str(body)[:80]}")
            if i % 100 == 99:
                if proc.poll() is not None:
                    failures.append(f"the server died after {i + 1} requests")
                    break
                code, body = post(port, [{"src": good_line}])
                if get(port, "/health")[0] != 200 or code != 200 or body[0][0]["tgt"] != ref:
                    failures.append(f"after {i + 1}: health or a good translation failed")
        proc.send_signal(signal.SIGTERM)
        rc = proc.wait(timeout=60)
        err = proc.stderr.read()
        if rc != 0 or "Sanitizer" in err or "Segmentation" in err:
            failures.append(f"exit {rc}: {err[-300:]}")
    finally:
        if proc.poll() is None:
            proc.kill()
    for f in failures[:10]:
        print("FAIL:", f, file=sys.stderr)
    print(f"test_server_fuzz: {'passed' if not failures else f'{len(failures)} failure(s)'}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
