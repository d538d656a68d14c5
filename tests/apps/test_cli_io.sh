#!/usr/bin/env bash
# translate's inputs and outputs: a failed write is an error (exit 5, naming
# the output) and never a silent loss; the --stats/--timing path is checked
# before any work (exit 2 at once); a read error on stdin, or a closed stdin
# or stdout, is exit 5; a line
# longer than --max-line-bytes is skipped up to its newline, not held in
# memory, and still gives its one empty output line and its message.
# shellcheck source=tests/common/shell_lib.sh
source "$(dirname "$0")/../common/shell_lib.sh"
: "${NMT_TRANSLATE:?}" "${NMT_TEST_MODEL:?}"
T=$NMT_TRANSLATE
M=$NMT_TEST_MODEL

# check NAME CODE PATTERN: the last command's exit status ($code) and its stderr ($TMP/err)
check() {
    [ "$code" -eq "$2" ] || fail "$1: exit $code, expected $2 ($(head -c 300 "$TMP/err"))"
    grep -q -- "$3" "$TMP/err" || fail "$1: stderr lacks '$3': $(head -c 300 "$TMP/err")"
}

# 1. standard output that cannot be written: exit 5 with a message, for one
# line (lost in the stdio buffer before), many lines, --n-best rows, --help.
if [ -w /dev/full ]; then
    echo 'Ein Hund.' | "$T" -m "$M" --device cpu > /dev/full 2> "$TMP/err"; code=$?
    check "one line > /dev/full" 5 "error writing standard output"
    for _ in $(seq 300); do echo "ein mann läuft im park"; done > "$TMP/many.txt"
    "$T" -m "$M" --device cpu --beam 1 < "$TMP/many.txt" > /dev/full 2> "$TMP/err"; code=$?
    check "300 lines > /dev/full" 5 "error writing standard output"
    echo 'ein mann' | "$T" -m "$M" --device cpu -b 2 -n 2 > /dev/full 2> "$TMP/err"; code=$?
    check "n-best > /dev/full" 5 "error writing standard output"
    "$T" --help > /dev/full 2> "$TMP/err"; code=$?
    check "--help > /dev/full" 5 "error writing standard output"
    "$T" --version > /dev/full 2> "$TMP/err"; code=$?
    check "--version > /dev/full" 5 "error writing standard output"
    # the stats and timing files: their writes are checked too
    echo 'ein mann' | "$T" -m "$M" --device cpu --stats /dev/full > /dev/null 2> "$TMP/err"; code=$?
    check "--stats /dev/full" 5 "\-\-stats: error writing /dev/full"
    echo 'ein mann' | "$T" -m "$M" --device cpu --timing /dev/full > /dev/null 2> "$TMP/err"; code=$?
    check "--timing /dev/full" 5 "\-\-timing: error writing /dev/full"
else
    echo "no writable /dev/full: the write-error cases are skipped" >&2
fi

# 2. an unwritable --stats/--timing path fails at once, before reading any
# input (stdin stays open and silent here: waiting on it would time out).
for opt in --stats --timing; do
    timeout 20 "$T" -m "$M" --device cpu $opt "$TMP/no/such/dir/stats.json" \
        < <(sleep 30 2>/dev/null) > /dev/null 2> "$TMP/err"; code=$?
    check "$opt to a missing directory" 2 "$opt: cannot write $TMP/no/such/dir/stats.json"
done
printf '[translate]\nstats = %s\n' "$TMP/no/such/dir/s.json" > "$TMP/stats.ini"
timeout 20 "$T" -m "$M" --device cpu -c "$TMP/stats.ini" < <(sleep 30 2>/dev/null) \
    > /dev/null 2> "$TMP/err"; code=$?
check "stats = missing directory (INI)" 2 "cannot write"

# ... and opening it early changes nothing else: a run that fails before the
# end (here: no model) leaves an existing file as it was and creates none; a
# longer old file is replaced whole by the JSON.
"$T" -m "$TMP/missing.bin" --stats "$TMP/new.json" < /dev/null > /dev/null 2> "$TMP/err"; code=$?
check "--stats with a missing model" 3 "cannot load the model"
[ -e "$TMP/new.json" ] && fail "a failed run left the --stats file it created"
echo keep > "$TMP/old.json"
"$T" -m "$TMP/missing.bin" --stats "$TMP/old.json" < /dev/null > /dev/null 2>&1
[ "$(cat "$TMP/old.json")" = keep ] || fail "a failed run changed an existing --stats file"
head -c 100000 /dev/zero | tr '\0' x > "$TMP/old.json"
echo 'ein mann' | "$T" -m "$M" --device cpu --stats "$TMP/old.json" > /dev/null 2>&1 ||
    fail "--stats over a longer file: exit $?"
python3 -c 'import json, sys; json.load(open(sys.argv[1]))' "$TMP/old.json" ||
    fail "--stats over a longer file: not one JSON object: $(head -c 200 "$TMP/old.json")"

# 3. a read error on standard input (a directory): exit 5, not "translation failed"
"$T" -m "$M" --device cpu < / > /dev/null 2> "$TMP/err"; code=$?
check "stdin is a directory" 5 "error reading standard input"

# ... closed: exit 5 at once, not a hang (a pipe opened later took fd 0 and the
# reader waited on it); a closed stdout is the same; -i or -o instead is fine.
timeout 20 "$T" -m "$M" --device cpu <&- > /dev/null 2> "$TMP/err"; code=$?
check "stdin closed" 5 "standard input is closed"
echo 'ein mann' | timeout 20 "$T" -m "$M" --device cpu >&- 2> "$TMP/err"; code=$?
check "stdout closed" 5 "standard output is closed"
echo 'ein mann' > "$TMP/one.txt"
timeout 20 "$T" -m "$M" --device cpu -i "$TMP/one.txt" <&- > "$TMP/one.out" 2> "$TMP/err" ||
    fail "stdin closed with -i: exit $? ($(head -c 300 "$TMP/err"))"
[ "$(wc -l < "$TMP/one.out")" -eq 1 ] || fail "stdin closed with -i: no output line"

# 4. the line limit at its edge: exactly N bytes (also before "\r\n") pass,
# N + 1 are refused with the byte count; the lines around are untouched.
printf 'ein mann\naaaaaaaaaa\r\naaaaaaaaaaa\neine frau\n' > "$TMP/edge.txt"
"$T" -m "$M" --device cpu --max-line-bytes 10 < "$TMP/edge.txt" > "$TMP/edge.out" 2> "$TMP/err"; code=$?
check "--max-line-bytes 10" 1 "line 3: line too long: 11 bytes, the limit is 10"
grep -q "line 2:" "$TMP/err" && fail "a line of exactly 10 bytes (with CRLF) was refused"
[ "$(wc -l < "$TMP/edge.out")" -eq 4 ] || fail "--max-line-bytes 10: expected 4 output lines"
[ -n "$(sed -n 2p "$TMP/edge.out")" ] || fail "--max-line-bytes 10: line 2 not translated"
[ -z "$(sed -n 3p "$TMP/edge.out")" ] || fail "--max-line-bytes 10: refused line 3 not empty"

# 5. huge lines: 50 MB with a newline, then 20 MB without one at the end of
# the input. Each gives one empty line and its message; the peak RSS is the
# same as for a two-word input (before: the whole line was read into memory,
# ~2x its size).
python3 - "$T" "$M" "$TMP" <<'EOF' || fail "huge lines (see above)"
import os, subprocess, sys
translate, model, tmp = sys.argv[1:4]
path = os.path.join(tmp, "huge.txt")
# Written in 1 MB pieces: this process stays small, and a child's peak RSS
# starts from its parent's at the fork (Linux keeps it across exec).
with open(path, "wb") as f:
    f.write(b"ein mann\n")
    for _ in range(50):
        f.write(b"a" * 1_000_000)
    f.write(b"\nzwei kinder spielen\n")
    for _ in range(20):
        f.write(b"b" * 1_000_000)

def run(stdin_path):
    """Runs translate on a file; returns (exit code, stdout, stderr, peak RSS in KiB)."""
    with open(stdin_path, "rb") as f_in, open(os.path.join(tmp, "o"), "wb") as f_out, \
            open(os.path.join(tmp, "e"), "wb") as f_err:
        proc = subprocess.Popen([translate, "-m", model, "--device", "cpu"], stdin=f_in,
                                stdout=f_out, stderr=f_err)
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
    return (proc.returncode, open(os.path.join(tmp, "o"), "rb").read().decode(),
            open(os.path.join(tmp, "e"), "rb").read().decode(), usage.ru_maxrss)

small = os.path.join(tmp, "small.txt")
open(small, "w").write("ein mann\n")
_, _, _, base_kib = run(small)
code, out, err, huge_kib = run(path)
bad = []
if code != 1:
    bad.append(f"exit {code}, expected 1")
rows = out.split("\n")
if len(rows) != 5 or rows[1] != "" or rows[3] != "" or not rows[0] or not rows[2]:
    bad.append(f"expected 4 output lines, 2 and 4 empty: {[r[:40] for r in rows]}")
for line, size in ((2, 50_000_000), (4, 20_000_000)):
    if f"line {line}: line too long: {size} bytes, the limit is 4096" not in err:
        bad.append(f"no message for line {line}: {err[:300]}")
grown_mib = (huge_kib - base_kib) / 1024
print(f"peak RSS: {base_kib / 1024:.0f} MiB for one short line, {huge_kib / 1024:.0f} MiB "
      f"with the 50 MB line (+{grown_mib:.1f} MiB)")
if grown_mib > 16:
    bad.append(f"the huge line grew the peak RSS by {grown_mib:.0f} MiB (limit 16)")
for b in bad:
    print("FAIL: huge lines:", b)
sys.exit(1 if bad else 0)
EOF

if [ $failures -ne 0 ]; then echo "test_cli_io: $failures failures" >&2; exit 1; fi
echo "test_cli_io: passed"
