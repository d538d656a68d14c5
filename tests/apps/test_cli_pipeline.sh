#!/usr/bin/env bash
# translate's pipeline (the library's nmt_pipeline, engine/pipeline*.c) and its batching
# options: with one translator the next window is read and the last one
# written while one is translated, and the output is byte for byte the
# unpipelined one (NMT_TEST_PIPELINE_SLOTS=1: read, translate, write, one window
# at a time) on a few thousand lines with empty, too long, invalid UTF-8 and
# NUL lines, whatever the window (--maxi-batch) and with --workers; the
# refused lines keep their numbers; --batch-type tokens gives the output of
# sentences (and its INI key, its conflicts); a failed write exits 5; input
# from a pipe that arrives slowly, in pieces that cut lines, gives every line;
# the peak memory does not grow with the input's length; the CPU's default
# batch size is 32; --host-threads changes nothing in the output; --dry-run
# gives each line back through the tokenizer and detokenizer, with the same
# refusals; --timing reports start-up, the first output line and lines/s; a
# file of one batch or less skips the warm-up.
# shellcheck source=tests/common/shell_lib.sh
source "$(dirname "$0")/../common/shell_lib.sh"
: "${NMT_TRANSLATE:?}" "${NMT_TEST_MODEL:?}"
T=$NMT_TRANSLATE
M=$NMT_TEST_MODEL
O=(--device cpu -b 2 --max-len-b 6 --max-line-bytes 80)

# check NAME CODE PATTERN: the last command's exit status ($code) and its stderr ($TMP/err)
check() {
    [ "$code" -eq "$2" ] || fail "$1: exit $code, expected $2 ($(head -c 300 "$TMP/err"))"
    grep -q -- "$3" "$TMP/err" || fail "$1: stderr lacks '$3': $(head -c 300 "$TMP/err")"
}

# 3000 lines: every 97th empty, every 331st too long (> 80 bytes), every
# 499th invalid UTF-8, every 773rd with a NUL byte; the last without "\n".
python3 - "$TMP/in.txt" "$TMP/bad.txt" <<'PY'
import random, sys
r = random.Random(7)
w = "ein mann frau hund spielt im park Haus rot Ball . ! Zwei kind läuft".split()
lines, bad = [], []
for i in range(1, 3001):
    if i % 97 == 0:
        line = b""
    elif i % 331 == 0:
        line, _ = b"lang " * 20, bad.append(i)
    elif i % 499 == 0:
        line, _ = b"ein \xff mann", bad.append(i)
    elif i % 773 == 0:
        line, _ = b"ein \x00 mann", bad.append(i)
    else:
        line = " ".join(r.choice(w) for _ in range(r.randint(1, 14))).encode()
    lines.append(line)
open(sys.argv[1], "wb").write(b"\n".join(lines))
open(sys.argv[2], "w").write("".join(f"{i}\n" for i in bad))
PY
NMT_TEST_PIPELINE_SLOTS=1 "$T" -m "$M" "${O[@]}" -i "$TMP/in.txt" -o "$TMP/serial.txt" \
    2> "$TMP/serial.err"
serial=$?
[ $serial -eq 1 ] || fail "unpipelined run: exit $serial, expected 1 (refused lines)"
[ "$(wc -l < "$TMP/serial.txt")" -eq 3000 ] ||
    fail "unpipelined run: $(wc -l < "$TMP/serial.txt") lines out, 3000 in"
sed -n 's/^translate: line \([0-9]*\): .*/\1/p' "$TMP/serial.err" | cmp -s - "$TMP/bad.txt" ||
    fail "unpipelined run: the refused lines' numbers are not the bad lines'"
# --workers goes through the same code; the window changes only the batching
for run in "" "--maxi-batch 7" "--maxi-batch 1" "--maxi-batch 5000" "--workers 3" \
           "--workers 2 --maxi-batch 13"; do
    # shellcheck disable=SC2086
    "$T" -m "$M" "${O[@]}" $run < "$TMP/in.txt" > "$TMP/p.txt" 2> "$TMP/p.err"; code=$?
    [ $code -eq $serial ] || fail "pipelined ${run:-(default)}: exit $code, unpipelined $serial"
    cmp -s "$TMP/serial.txt" "$TMP/p.txt" ||
        fail "pipelined ${run:-(default)}: output differs from the unpipelined one"
    cmp -s "$TMP/serial.err" "$TMP/p.err" ||
        fail "pipelined ${run:-(default)}: messages differ: $(diff "$TMP/serial.err" "$TMP/p.err" | head -5)"
done

# --batch-type tokens: the same output by token budgets (small ones: many
# batches; one below a line's length: that line goes alone); the INI key
for budget in 3 17 200; do
    "$T" -m "$M" "${O[@]}" --batch-type tokens --batch-size $budget -i "$TMP/in.txt" \
        -o "$TMP/tok.txt" 2> /dev/null; code=$?
    [ $code -eq 1 ] || fail "--batch-type tokens --batch-size $budget: exit $code"
    cmp -s "$TMP/serial.txt" "$TMP/tok.txt" ||
        fail "--batch-type tokens --batch-size $budget: output differs from sentences"
done
printf '[translate]\nbatch_type = tokens\nbatch_size = 9000\nmaxi_batch = 300\n' > "$TMP/tok.ini"
"$T" -m "$M" "${O[@]}" -c "$TMP/tok.ini" -i "$TMP/in.txt" -o "$TMP/tok.txt" 2> "$TMP/err"; code=$?
[ $code -eq 1 ] && cmp -s "$TMP/serial.txt" "$TMP/tok.txt" ||
    fail "INI batch_type = tokens, batch_size = 9000: exit $code or other output"
"$T" -m "$M" --batch-size 5000 < /dev/null 2> "$TMP/err"; code=$?
check "--batch-size 5000 sentences" 2 "at most 4096 sentences"
"$T" -m "$M" --batch-type tokens --max-batch-tokens 100 < /dev/null 2> "$TMP/err"; code=$?
check "--batch-type tokens with --max-batch-tokens" 2 "exclude each other"
"$T" -m "$M" --batch-type words < /dev/null 2> "$TMP/err"; code=$?
check "--batch-type words" 2 "bad value for --batch-type: 'words'"
"$T" -m "$M" --maxi-batch 0 < /dev/null 2> "$TMP/err"; code=$?
check "--maxi-batch 0" 2 "bad value for --maxi-batch: '0'"

# a failed write: exit 5 with the message, pipelined as before
if [ -w /dev/full ]; then
    "$T" -m "$M" "${O[@]}" -i "$TMP/in.txt" -o /dev/full 2> "$TMP/err"; code=$?
    check "-o /dev/full" 5 "error writing /dev/full"
    "$T" -m "$M" "${O[@]}" --maxi-batch 3 < "$TMP/in.txt" > /dev/full 2> "$TMP/err"; code=$?
    check "> /dev/full, windows of 3" 5 "error writing standard output"
fi
# ... and the writer giving up stops a reader that waits on a silent pipe
timeout 20 "$T" -m "$M" "${O[@]}" --maxi-batch 1 -o /dev/full \
    < <(exec 2> /dev/null; echo "ein mann"; exec sleep 30) 2> "$TMP/err"; code=$?
[ $code -eq 124 ] && fail "a failed write with a silent input: the reader was not stopped"
[ -w /dev/full ] && check "a failed write with a silent input" 5 "error writing /dev/full"

# a pipe that arrives slowly, in pieces that cut lines and windows: every
# line, the same output
head -n 400 "$TMP/in.txt" > "$TMP/head.txt"
"$T" -m "$M" "${O[@]}" < "$TMP/head.txt" > "$TMP/head.out" 2> /dev/null
python3 - "$TMP/head.txt" <<'PY' | "$T" -m "$M" "${O[@]}" --maxi-batch 16 > "$TMP/slow.out" 2> /dev/null
import sys, time
data = open(sys.argv[1], "rb").read()
for i in range(0, len(data), 997):
    sys.stdout.buffer.write(data[i:i + 997])
    sys.stdout.buffer.flush()
    time.sleep(0.02)
PY
cmp -s "$TMP/head.out" "$TMP/slow.out" ||
    fail "a slow pipe: $(wc -l < "$TMP/slow.out") lines, or other output than from a file"

# constant memory: 10x the input, about the same peak RSS (the windows in flight)
python3 - "$T" "$M" "$TMP" <<'PY' || fail "peak memory grows with the input (see above)"
import os, subprocess, sys
translate, model, tmp = sys.argv[1:4]
src = open(os.path.join(tmp, "head.txt"), "rb").read().replace(b"\xff", b"x").replace(b"\0", b"x")
def peak(copies):
    path = os.path.join(tmp, f"x{copies}.txt")
    open(path, "wb").write((src + b"\n") * copies)
    with open(path, "rb") as f_in:
        proc = subprocess.Popen([translate, "-m", model, "--device", "cpu", "-b", "1",
                                 "--max-len-b", "2", "--maxi-batch", "64"],
                                stdin=f_in, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        _, status, usage = os.wait4(proc.pid, 0)
    return os.waitstatus_to_exitcode(status), usage.ru_maxrss
(c1, small), (c2, big) = peak(2), peak(20)
print(f"peak RSS: {small / 1024:.1f} MiB for 800 lines, {big / 1024:.1f} MiB for 8000")
sys.exit(0 if c1 == 0 and c2 == 0 and big - small < 4096 else 1)
PY

# The default batch size: 32 on the CPU, from a file too (2,048 is CUDA's,
# for a file); --batch-size wins.
printf 'ein mann\nzwei hund\n' > "$TMP/two.txt"
for want in 32 7; do
    extra=()
    [ "$want" = 32 ] || extra=(--batch-size "$want")
    "$T" -m "$M" --device cpu --max-len-b 2 "${extra[@]}" --stats "$TMP/st.json" \
        < "$TMP/two.txt" > /dev/null 2> "$TMP/err"
    code=$?
    [ $code -eq 0 ] && grep -q "\"batch_size\": $want," "$TMP/st.json" ||
        fail "batch size ${extra[*]:-default}: exit $code, $(grep batch_size "$TMP/st.json")"
done

# A regular file of one batch or less, read before the translators start,
# under --device auto (CUDA where there is a GPU, else the CPU): the batch
# size becomes its line count rounded up to a power of two (2 lines: 2; 3:
# 4), with the same output; from a pipe the default stays.
printf 'ein mann\nzwei hund\ndrei katzen\n' > "$TMP/three.txt"
for input in two three; do
    want=2
    [ "$input" = three ] && want=4
    "$T" -m "$M" --device auto --max-len-b 2 --stats "$TMP/st.json" \
        < "$TMP/$input.txt" > "$TMP/fit.txt" 2> "$TMP/err"
    code=$?
    [ $code -eq 0 ] && grep -q "\"batch_size\": $want," "$TMP/st.json" ||
        fail "a $input-line file: exit $code, $(grep batch_size "$TMP/st.json")"
    "$T" -m "$M" --device auto --max-len-b 2 --batch-size 64 < "$TMP/$input.txt" \
        > "$TMP/fit64.txt" 2> /dev/null
    cmp -s "$TMP/fit.txt" "$TMP/fit64.txt" || fail "a $input-line file: other output at batch 64"
done
cat "$TMP/three.txt" | "$T" -m "$M" --device auto --max-len-b 2 --batch-size 16 \
    --stats "$TMP/st.json" > /dev/null 2> "$TMP/err"
grep -q '"batch_size": 16,' "$TMP/st.json" ||
    fail "three lines from a pipe: $(grep batch_size "$TMP/st.json")"

# The host pool's size changes nothing.
for threads in 1 3; do
    "$T" -m "$M" "${O[@]}" --host-threads $threads --maxi-batch 50 < "$TMP/in.txt" \
        > "$TMP/h.txt" 2> /dev/null
    cmp -s "$TMP/serial.txt" "$TMP/h.txt" || fail "--host-threads $threads: other output"
done
# --dry-run: each line's tokens back through the detokenizer: the text of
# these lines (words and marks apart by single spaces) comes back as it was;
# the refused lines are refused with the same messages; no translator starts.
"$T" -m "$M" --device cpu --max-line-bytes 80 --dry-run --timing "$TMP/dry.json" \
    -i "$TMP/in.txt" -o "$TMP/dry.txt" 2> "$TMP/dry.err"; code=$?
[ $code -eq 1 ] || fail "--dry-run: exit $code ($(head -3 "$TMP/dry.err"))"
grep "^translate: line" "$TMP/dry.err" | cmp -s - <(grep "^translate: line" "$TMP/serial.err") ||
    fail "--dry-run: the refusals differ from a translation's"
python3 - "$TMP/in.txt" "$TMP/dry.txt" "$TMP/bad.txt" "$TMP/dry.json" <<'PY' || fail "--dry-run: see above"
import json, sys
src = open(sys.argv[1], "rb").read().split(b"\n")
out = open(sys.argv[2], "rb").read().split(b"\n")[:-1]
bad = {int(x) for x in open(sys.argv[3]).read().split()}
assert len(out) == len(src) == 3000, (len(out), len(src))
for i, (s, o) in enumerate(zip(src, out), 1):
    assert o == (b"" if i in bad else s), (i, s, o)
t = json.load(open(sys.argv[4]))
assert t["dry_run"] is True and t["device"] == "none" and t["lines"] == 3000, t
assert t["lines_per_second"] > 0 and t["host_threads"] >= 1, t
assert 0 < t["startup_seconds"] <= t["first_output_seconds"], t
PY
# --timing of a translation: start-up (model load to every translator ready),
# the first output line after it, lines/s
"$T" -m "$M" "${O[@]}" --timing "$TMP/t.json" -i "$TMP/head.txt" -o /dev/null 2> /dev/null
python3 - "$TMP/t.json" <<'PY' || fail "--timing: see above"
import json, sys
t = json.load(open(sys.argv[1]))
assert t["dry_run"] is False and t["lines"] == 400, t
assert 0 < t["model_load_seconds"] <= t["startup_seconds"] <= t["first_output_seconds"], t
assert t["pipeline_seconds"] > 0 and t["lines_per_second"] > 0, t
PY
# The warm-up (CUDA's; decided on any device but the CPU): off for a file of
# one batch or less, read whole before the translator starts; on for a larger
# one, from a pipe, or when --warmup is given.
printf 'ein mann\nzwei hund\n' > "$TMP/two.txt"
warmup_of() { # EXPECTED SOURCE OPTIONS...: the --timing's warmup
    local want=$1 src=$2
    shift 2
    "$T" -m "$M" --device auto --batch-size 32 --max-len-b 2 --timing "$TMP/w.json" "$@" \
        < "$src" > /dev/null 2>&1
    grep -q "\"warmup\": $want," "$TMP/w.json" ||
        fail "warmup $want for $src $*: $(grep warmup "$TMP/w.json")"
}
warmup_of false "$TMP/two.txt"
warmup_of true "$TMP/head.txt"
warmup_of true "$TMP/two.txt" --warmup on
warmup_of true <(cat "$TMP/two.txt")
warmup_of false "$TMP/head.txt" --skip-lines 380

if [ $failures -ne 0 ]; then echo "test_cli_pipeline: $failures failures" >&2; exit 1; fi
echo "test_cli_pipeline: passed"
