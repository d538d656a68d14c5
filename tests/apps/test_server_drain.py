"""test_server_drain.py: nmt-server's stop under load answers every request
within --timeout, and exits right after.

The shipped model on the CPU, 127.0.0.1, a free port, --timeout 2: ten
clients each send four sentences allowed 200 target tokens (a batch of them
takes ~20 s on a CPU core), and SIGTERM comes while they are translated.
Every request must get an answer, 200 (translated in time) or 503 (the
drain's deadline passed), and the server must exit 0 within --timeout plus
a few seconds; the abandoned batch is not finished first. Skips (77) when
nmt-server was not built."""
import json
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

SERVER = os.environ.get("NMT_SERVER", "")
SOURCE_DIR = os.environ.get("NMT_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
MODEL = os.path.join(SOURCE_DIR, "models", "multi30k-de-en.bin")
TIMEOUT_S = 2
EXIT_BOUND_S = TIMEOUT_S + 4  # the deadline, the second's grace, and slack for a slow machine
LINE = "ein mann läuft im park über die Straße und die frau schläft"
CLIENTS = 10


def post(port, body, timeout=120):
    req = urllib.request.Request(f"http://127.0.0.1:{port}/translator/translate",
                                 data=json.dumps(body).encode(), method="POST",
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"{}")
    except (OSError, ValueError) as e:  # no answer: a closed connection, a reset
        return None, repr(e)


def running(port):
    """Sentences queued or being translated, from /metrics."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
        text = r.read().decode()
    return sum(float(line.split()[1]) for line in text.splitlines()
               if line.startswith(("nmt_queue_depth ", "nmt_running ")))


def main():
    if not SERVER or not os.path.exists(SERVER):
        print("nmt-server not built: skipped")
        return 77
    proc = subprocess.Popen([SERVER, "-m", MODEL, "--device", "cpu", "--port", "0", "-b", "5",
                             "--timeout", str(TIMEOUT_S)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    failures = []
    try:
        line = proc.stdout.readline()
        if "listening on" not in line:
            sys.exit(f"the server did not start: {line!r}")
        port = int(line.rsplit(":", 1)[1])
        answers = [None] * CLIENTS

        def client(k):
            answers[k] = post(port, [{"src": LINE, "max_len_b": 200} for _ in range(4)])

        threads = [threading.Thread(target=client, args=(k,)) for k in range(CLIENTS)]
        for t in threads:
            t.start()
        for _ in range(100):  # until the work is in the service (at most 10 s)
            if running(port) >= 4 * CLIENTS:
                break
            time.sleep(0.1)
        stopped = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        try:
            code = proc.wait(timeout=EXIT_BOUND_S + 30)
        except subprocess.TimeoutExpired:
            code = None
        waited = time.monotonic() - stopped
        for t in threads:
            t.join(timeout=30)
        if code != 0:
            failures.append(f"exit status {code} after SIGTERM")
        if waited > EXIT_BOUND_S:
            failures.append(f"exited {waited:.1f} s after SIGTERM, past --timeout {TIMEOUT_S} "
                            f"+ {EXIT_BOUND_S - TIMEOUT_S} s")
        for k, answer in enumerate(answers):
            status, body = answer if answer else (None, "no answer")
            if status == 503:
                ok = "shutting down" in body.get("error", "")
            else:
                ok = status == 200 and len(body[0]) == 4
            if not ok:
                failures.append(f"client {k}: {status} {str(body)[:120]}")
        codes = sorted(str(a[0]) for a in answers if a)
        print(f"answers {codes}; exit {code} {waited:.1f} s after SIGTERM")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    for f in failures:
        print("FAIL:", f, file=sys.stderr)
    print(proc.stderr.read(), file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
