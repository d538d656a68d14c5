"""test_cli_terminal.py: translate with a terminal as its input (CPU).

With standard input a terminal, translate reads, translates and writes on
one thread, a line at a time (apps/translate/translate.c, "one_thread"):
each answer must come before the next line is typed, and the answers must be
byte for byte those of the same lines from a file (empty, too long and
invalid UTF-8 lines answered with an empty line, the others translated).
--skip-lines skips the first lines typed; two lines pasted at once are both
answered; ^D ends the input with the file's exit status (1: some lines
refused)."""
import os
import pty
import select
import subprocess
import sys
import termios

TRANSLATE = os.environ["NMT_TRANSLATE"]
MODEL = os.environ["NMT_TEST_MODEL"]
OPTIONS = ["--device", "cpu", "--max-len-b", "6", "--max-line-bytes", "80", "--quiet"]
LINES = [b"ein mann l\xc3\xa4uft im park .", b"", b"zwei hund spielt", b"lang " * 20,
         b"ein \xff mann", b"rot Ball !", b"Haus", b"eine frau und ein kind ."]


def fail(message):
    print(f"FAIL: {message}")
    sys.exit(1)


def from_file(extra):
    proc = subprocess.run([TRANSLATE, "-m", MODEL, *OPTIONS, *extra],
                          input=b"".join(line + b"\n" for line in LINES), capture_output=True,
                          timeout=300)
    return proc.returncode, proc.stdout.split(b"\n")[:-1]


def typed(extra, lines, answers_expected):
    """Types `lines` one at a time; returns the answer to each (None: none
    within 2 s, which is what a skipped line must give), the exit code after
    ^D, what was written after the last answer, and the standard error."""
    master, slave = pty.openpty()
    attrs = termios.tcgetattr(slave)
    attrs[3] &= ~termios.ECHO  # canonical (line) mode without the echo
    termios.tcsetattr(slave, termios.TCSANOW, attrs)
    proc = subprocess.Popen([TRANSLATE, "-m", MODEL, *OPTIONS, *extra], stdin=slave,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    os.close(slave)
    out = proc.stdout.fileno()
    buf, answers = b"", []
    try:
        for line, expect in zip(lines, answers_expected):
            os.write(master, line + b"\n")
            wait = 120 if expect else 2
            while b"\n" not in buf:
                ready, _, _ = select.select([out], [], [], wait)
                if not ready:
                    break
                chunk = os.read(out, 65536)
                if not chunk:
                    break
                buf += chunk
            if b"\n" in buf:
                answer, buf = buf.split(b"\n", 1)
                answers.append(answer)
            else:
                answers.append(None)
        os.write(master, b"\x04")  # ^D at the start of a line: the end
        code = proc.wait(timeout=120)
        buf += proc.stdout.read()
        err = proc.stderr.read().decode("utf-8", "replace")
    finally:
        if proc.poll() is None:
            proc.kill()
        os.close(master)
    return answers, code, buf, err


want_code, want = from_file([])
if len(want) != len(LINES):
    fail(f"from a file: {len(want)} output lines for {len(LINES)}")
if want_code != 1:
    fail(f"from a file: exit {want_code}, expected 1 (refused lines)")

# 1. Each line answered before the next is typed, as from the file.
answers, code, rest, err = typed([], LINES, [True] * len(LINES))
for i, (got, expected) in enumerate(zip(answers, want)):
    if got != expected:
        fail(f"typed line {i + 1}: answer {got!r}, from the file {expected!r} ({err[:300]})")
if rest:
    fail(f"output after the last answer: {rest[:200]!r}")
if code != want_code:
    fail(f"typed: exit {code}, from the file {want_code} ({err[:300]})")
print(f"ok: {len(LINES)} typed lines answered one at a time as from the file, exit {code}")

# 2. --skip-lines 2: the first two typed lines get no answer, then line 3's.
answers, code, rest, err = typed(["--skip-lines", "2"], LINES[:4], [False, False, True, True])
if answers[:2] != [None, None]:
    fail(f"--skip-lines 2: skipped lines answered: {answers[:2]!r}")
if answers[2:] != want[2:4]:
    fail(f"--skip-lines 2: answers {answers[2:]!r}, from the file {want[2:4]!r}")
if code != 1 or rest:
    fail(f"--skip-lines 2: exit {code} (expected 1: line 4 is refused), left {rest[:100]!r}")
print("ok: --skip-lines on a terminal")

# 3. Two lines in one write (a paste): both answered, in order.
answers, code, rest, err = typed([], [LINES[0] + b"\n" + LINES[2]], [True])
if answers != [want[0]] or rest != want[2] + b"\n" or code != 0:
    fail(f"a pasted pair: answers {answers!r} then {rest[:100]!r}, exit {code} ({err[:300]})")
print("ok: two lines pasted at once, both answered")
