#!/usr/bin/env bash
# translate --workers N (CPU; --devices on CUDA is the same code path): the
# chunks are translated by N translators in parallel and written in input
# order, so the output, the exit status, the refused lines' messages and the
# line counts are those of one worker (not the decoder steps: the last
# window is split among the workers, other batches); a failed write still exits 5; a failing
# worker (injected) ends the run naming it and the first line not written,
# after a complete prefix, and --skip-lines resumes from there; the device
# options are refused where they do not apply; a short input gives every
# worker a part.
# shellcheck source=tests/common/shell_lib.sh
source "$(dirname "$0")/../common/shell_lib.sh"
: "${NMT_TRANSLATE:?}" "${NMT_TEST_MODEL:?}"
T=$NMT_TRANSLATE
M=$NMT_TEST_MODEL
random_lines "$TMP/in.txt" 11 300 12 3 "ein mann frau hund spielt im park Haus rot Ball . ! Zwei kind läuft"
O=(--device cpu -b 2 --max-len-b 6 --batch-size 4)
"$T" -m "$M" "${O[@]}" -i "$TMP/in.txt" -o "$TMP/one.txt" --stats "$TMP/one.json" 2> "$TMP/one.err"
one=$?
for w in 2 3 5; do
    "$T" -m "$M" "${O[@]}" --workers $w -i "$TMP/in.txt" -o "$TMP/w.txt" --stats "$TMP/w.json" \
        2> "$TMP/w.err"
    code=$?
    [ $code -eq $one ] || fail "--workers $w: exit $code, one worker $one"
    cmp -s "$TMP/one.txt" "$TMP/w.txt" || fail "--workers $w: output differs from one worker's"
    diff <(grep "line" "$TMP/one.err") <(grep "line" "$TMP/w.err") > /dev/null ||
        fail "--workers $w: the refused lines' messages differ"
    python3 - "$TMP/one.json" "$TMP/w.json" <<'PY' || fail "--workers $w: counters differ"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
sys.exit(0 if all(a[k] == b[k] for k in ("lines", "sentences")) else 1)
PY
done
[ "$(wc -l < "$TMP/one.txt")" -eq 303 ] || fail "one line out per line in: $(wc -l < "$TMP/one.txt")"
# A short input (40 lines, under one default window of 8 x 32) is shared
# among the workers: each translates a part (--timing's worker_sentences;
# NMT_TEST_PIPELINE_HOLD=1 so that no worker takes two parts before another
# wakes), the output is one worker's; decode_seconds is the wall time, and
# decode_seconds_summed the workers' times summed. With one slot in the ring
# (NMT_TEST_PIPELINE_SLOTS=1) the parts take turns in it, the same output.
head -n 40 "$TMP/in.txt" > "$TMP/short.txt"
"$T" -m "$M" --device cpu -b 2 --max-len-b 6 -i "$TMP/short.txt" -o "$TMP/short1.txt" 2> /dev/null
NMT_TEST_PIPELINE_HOLD=1 "$T" -m "$M" --device cpu -b 2 --max-len-b 6 --workers 3 \
    -i "$TMP/short.txt" -o "$TMP/short3.txt" --timing "$TMP/short.json" 2> /dev/null
cmp -s "$TMP/short1.txt" "$TMP/short3.txt" || fail "--workers 3 on 40 lines: output differs from one worker's"
python3 - "$TMP/short.json" <<'PY' || fail "--workers 3 on 40 lines: $(cat "$TMP/short.json")"
import json, sys
t = json.load(open(sys.argv[1]))
each = t["worker_sentences"]
assert len(each) == 3 and min(each) > 0 and sum(each) == t["sentences"] == 40, each
assert abs(sum(t["worker_decode_seconds"]) - t["decode_seconds_summed"]) < 1e-5
assert t["decode_seconds"] > 0 and t["decode_seconds_summed"] > 0
PY
NMT_TEST_PIPELINE_SLOTS=1 "$T" -m "$M" --device cpu -b 2 --max-len-b 6 --workers 3 \
    -i "$TMP/short.txt" -o "$TMP/short3.txt" 2> /dev/null
cmp -s "$TMP/short1.txt" "$TMP/short3.txt" ||
    fail "--workers 3 on 40 lines, one slot: output differs from one worker's"
if [ -w /dev/full ]; then
    "$T" -m "$M" "${O[@]}" --workers 3 -i "$TMP/in.txt" -o /dev/full 2> "$TMP/err"; code=$?
    [ $code -eq 5 ] && grep -q "error writing /dev/full" "$TMP/err" ||
        fail "--workers 3 -o /dev/full: exit $code"
fi
# A worker that fails (injected) at its first window (each worker holds its
# first until all have one) or mid-run (whichever takes the input's window 5):
# its window is translated by the others, the output and exit status are one
# worker's, and a warning names it (windows of 16 lines: many a worker).
for hook in 1 '*,5'; do
    NMT_TEST_PIPELINE_HOLD=1 NMT_TEST_TRANSLATOR_FAIL=$hook "$T" -m "$M" "${O[@]}" --workers 3 \
        --maxi-batch 16 -i "$TMP/in.txt" -o "$TMP/retried.txt" 2> "$TMP/retried.err"; code=$?
    [ "$hook" = 1 ] && worker=1 || worker='[0-2]'
    [ $code -eq $one ] || fail "worker $hook failing: exit $code, one worker $one"
    cmp -s "$TMP/one.txt" "$TMP/retried.txt" ||
        fail "worker $hook failing: output differs from one worker's"
    [ "$(grep -c "warning: CPU worker $worker failed (injected failure" "$TMP/retried.err")" = 1 ] ||
        fail "worker $hook failing: not one warning: $(cat "$TMP/retried.err")"
    grep -q "not written" "$TMP/retried.err" && fail "worker $hook failing: the run gave up"
done
# No worker left (the only one fails at its third window): exit 4 naming it and
# the first line not written; the output is a complete prefix; --skip-lines
# resumes it, and both parts together are the whole run's output.
NMT_TEST_TRANSLATOR_FAIL=0,2 "$T" -m "$M" "${O[@]}" --maxi-batch 16 -i "$TMP/in.txt" \
    -o "$TMP/part1.txt" 2> "$TMP/fail.err"; code=$?
skip=$(sed -n 's/.*resume with --skip-lines \([0-9]*\).*/\1/p' "$TMP/fail.err")
if [ $code -ne 4 ] || ! grep -q "failed on CPU worker 0: injected failure" "$TMP/fail.err" ||
        [ "$skip" != 32 ]; then
    fail "injected failure: exit $code, $(cat "$TMP/fail.err")"
else
    [ "$(wc -l < "$TMP/part1.txt")" -eq "$skip" ] ||
        fail "the failed run wrote $(wc -l < "$TMP/part1.txt") lines, not the $skip it reports"
    "$T" -m "$M" "${O[@]}" --workers 3 --skip-lines "$skip" -i "$TMP/in.txt" \
        -o "$TMP/part2.txt" 2> /dev/null
    cat "$TMP/part1.txt" "$TMP/part2.txt" | cmp -s - "$TMP/one.txt" ||
        fail "the failed run's prefix and the resumed rest are not the whole output"
fi
"$T" -m "$M" --device cpu --devices 0 -i "$TMP/in.txt" > /dev/null 2> "$TMP/err"; code=$?
[ $code -eq 2 ] && grep -q "devices is for CUDA" "$TMP/err" || fail "--devices on the CPU: exit $code"
"$T" -m "$M" --device cpu --workers 0 < /dev/null > /dev/null 2>&1; code=$?
[ $code -eq 2 ] || fail "--workers 0: exit $code"
"$T" -m "$M" --device cpu --devices 0,0 < /dev/null > /dev/null 2>&1; code=$?
[ $code -eq 2 ] || fail "--devices 0,0: exit $code"
exit $((failures > 0))
