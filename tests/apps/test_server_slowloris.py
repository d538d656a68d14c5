"""test_server_slowloris.py: slow and idle clients cannot hold nmt-server.

The test model on the CPU, 127.0.0.1, a free port, --timeout 2,
--max-connections-per-ip 60. Bounded by the loops' own limits:
- 50 connections send their request headers a byte every half second
  (libmicrohttpd's idle timeout never fires for them): each is closed by the
  server within --timeout (+ slack) of connecting, and good requests sent
  meanwhile are answered 200;
- 100 idle connections from one address: the server's threads stay within
  the per-address limit (a thread per connection), the ones over it are
  refused, and every one is closed after --timeout; then a good request is
  still answered.
Skips (77) when nmt-server was not built."""
import json
import os
import select
import socket
import subprocess
import sys
import time
import urllib.request

SERVER = os.environ.get("NMT_SERVER", "")
MODEL = os.environ["NMT_TEST_MODEL"]
TIMEOUT_S = 2
SLACK_S = 3  # the main thread's tick, and a slow machine
PER_IP = 60
HEADER = b"POST /translator/translate HTTP/1.1\r\nHost: x\r\nContent-Length: 40\r\n\r\n"
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what, file=sys.stderr)


def good(port):
    req = urllib.request.Request(f"http://127.0.0.1:{port}/translator/translate",
                                 data=json.dumps([{"src": "ein mann"}]).encode(), method="POST")
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status
    except OSError as e:
        return repr(e)


def threads(pid):
    with open(f"/proc/{pid}/status") as f:
        return int(next(line for line in f if line.startswith("Threads:")).split()[1])


def closed(sock):
    """1 when the server has closed sock (end of stream, a reset, or a 4xx answer)."""
    try:
        data = sock.recv(256)
    except OSError:
        return 1
    return data == b"" or data.startswith(b"HTTP/1.1 4")


def wait_closed(socks, started, what):
    """Polls socks until all are closed by the server; the seconds each took."""
    took = {}
    while len(took) < len(socks) and time.monotonic() - started < TIMEOUT_S + SLACK_S:
        ready, _, _ = select.select([s for s in socks if s not in took], [], [], 0.2)
        for s in ready:
            if closed(s):
                took[s] = time.monotonic() - started
    check(len(took) == len(socks), f"{what}: {len(socks) - len(took)} of {len(socks)} still "
          f"open {TIMEOUT_S + SLACK_S} s after connecting (--timeout {TIMEOUT_S})")
    return took


def slow_clients(port):
    socks = [socket.create_connection(("127.0.0.1", port), timeout=10) for _ in range(50)]
    started = time.monotonic()
    took, sent = {}, 0
    while len(took) < len(socks) and time.monotonic() - started < TIMEOUT_S + SLACK_S:
        for s in socks:
            if s not in took:
                try:
                    s.send(HEADER[sent:sent + 1])
                except OSError:
                    took[s] = time.monotonic() - started
        sent += 1
        ready, _, _ = select.select([s for s in socks if s not in took], [], [], 0)
        for s in ready:
            if closed(s):
                took[s] = time.monotonic() - started
        check(good(port) == 200, f"a good request beside {len(socks) - len(took)} slow clients")
        time.sleep(0.5)
    check(sent < len(HEADER), "the slow headers ended: the test sends too fast")
    check(len(took) == len(socks), f"{len(socks) - len(took)} of {len(socks)} slow clients "
          f"still open {TIMEOUT_S + SLACK_S} s after connecting (--timeout {TIMEOUT_S})")
    for s in socks:
        s.close()


def idle_clients(proc, port):
    before = threads(proc.pid)
    socks = [socket.create_connection(("127.0.0.1", port), timeout=10) for _ in range(100)]
    started = time.monotonic()
    time.sleep(0.5)
    held = threads(proc.pid) - before
    check(held <= PER_IP, f"100 idle connections hold {held} threads (per-address limit "
          f"{PER_IP})")
    wait_closed(socks, started, "idle connections")
    for s in socks:
        s.close()
    check(good(port) == 200, "a good request after the idle connections")


def main():
    if not SERVER or not os.path.exists(SERVER):
        print("nmt-server not built: skipped")
        return 77
    proc = subprocess.Popen([SERVER, "-m", MODEL, "--device", "cpu", "--port", "0",
                             "--timeout", str(TIMEOUT_S), "--max-connections-per-ip",
                             str(PER_IP), "--max-requests", "1000"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()
        if "listening on" not in line:
            sys.exit(f"the server did not start: {line!r}")
        port = int(line.rsplit(":", 1)[1])
        slow_clients(port)
        idle_clients(proc, port)
        proc.terminate()
        check(proc.wait(timeout=TIMEOUT_S + 10) == 0, "exit 0 after SIGTERM")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    print(f"test_server_slowloris: {len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
