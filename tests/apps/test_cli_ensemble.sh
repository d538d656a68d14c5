#!/usr/bin/env bash
# translate with several models (an ensemble, docs/decoding.md "Ensembles"),
# on the test model A and its twin B of another seed (CPU, the reference
# kernels):
#  - -m A -m A prints what -m A prints (scores, token scores, alignment,
#    n-best rows), and --weights 1,0 over A and B too;
#  - A and B give other lines than either alone;
#  - the INI file's model lines and weights key are the command line's -m
#    and --weights, and a command line -m replaces the file's models;
#  - the library's host pipeline with --workers 2 (two translators, each
#    an ensemble) writes what one translator writes, in order;
#  - on the fast kernels (and int8) -m A -m A is -m A there too, and so is
#    sampling with a seed;
#  - a model of another vocabulary is refused (exit 2), naming the
#    difference, and so is --repetition-penalty with an ensemble.
set -uo pipefail
: "${NMT_TRANSLATE:?}" "${NMT_TEST_MODEL:?}" "${NMT_TEST_MODEL_SEED2:?}"
T=$NMT_TRANSLATE
A=$NMT_TEST_MODEL
B=$NMT_TEST_MODEL_SEED2
SRC=${NMT_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }

cat > "$TMP/in.txt" <<'LINES'
der hund sieht die katze
ich liest ein buch
das haus ist sehr groß
wir sehen das kind nicht
Heute ist der Mann mit der Frau auf dem Buch
LINES
# run NAME ARGS...: translate the input into $TMP/NAME.out
run() {
    local name=$1
    shift
    "$T" --device cpu --cpu-kernels reference --quiet -b 4 "$@" < "$TMP/in.txt" \
        > "$TMP/$name.out" 2> "$TMP/$name.err" || fail "$name: exit $? ($(cat "$TMP/$name.err"))"
}
FIELDS=(--n-best 3 --token-scores --alignment)
run a -m "$A" "${FIELDS[@]}"
run aa -m "$A" -m "$A" "${FIELDS[@]}"
cmp -s "$TMP/a.out" "$TMP/aa.out" || fail "-m A -m A differs from -m A"
run ab10 -m "$A" -m "$B" --weights 1,0 "${FIELDS[@]}"
cmp -s "$TMP/a.out" "$TMP/ab10.out" || fail "-m A -m B --weights 1,0 differs from -m A"
run a1 -m "$A" --scores
run b1 -m "$B" --scores
run ab -m "$A" -m "$B" --weights 0.3,0.9 --scores
cmp -s "$TMP/ab.out" "$TMP/a1.out" && fail "A and B translate as A alone"
cmp -s "$TMP/ab.out" "$TMP/b1.out" && fail "A and B translate as B alone"

for i in 1 2 3 4 5 6; do cat "$TMP/in.txt"; done > "$TMP/in6.txt"
# runs NAME ARGS...: translate in6.txt (30 lines, windows of 4 lines) into $TMP/NAME.out
runs() {
    local name=$1
    shift
    "$T" --device cpu --quiet --batch-size 4 --maxi-batch 4 "$@" < "$TMP/in6.txt" \
        > "$TMP/$name.out" 2> "$TMP/$name.err" || fail "$name: exit $? ($(cat "$TMP/$name.err"))"
}
runs ab-one -m "$A" -m "$B" --weights 0.3,0.9 --scores
runs ab-workers -m "$A" -m "$B" --weights 0.3,0.9 --scores --workers 2
[ "$(wc -l < "$TMP/ab-one.out")" -eq 30 ] || fail "the pipeline wrote $(wc -l < "$TMP/ab-one.out") lines of 30"
cmp -s "$TMP/ab-one.out" "$TMP/ab-workers.out" || fail "--workers 2 over an ensemble differs from one translator"
for kernels in "--cpu-kernels fast" "--cpu-kernels fast --precision int8"; do
    # shellcheck disable=SC2086
    runs fast-a -m "$A" $kernels "${FIELDS[@]}"
    # shellcheck disable=SC2086
    runs fast-aa -m "$A" -m "$A" $kernels "${FIELDS[@]}"
    cmp -s "$TMP/fast-a.out" "$TMP/fast-aa.out" || fail "$kernels: -m A -m A differs from -m A"
done
SAMPLE=(--sampling-topk 10 --sampling-temperature 0.8 --seed 7 --n-best 2 --scores)
runs sample-a -m "$A" "${SAMPLE[@]}"
runs sample-aa -m "$A" -m "$A" "${SAMPLE[@]}"
cmp -s "$TMP/sample-a.out" "$TMP/sample-aa.out" || fail "sampling: -m A -m A differs from -m A"

"$T" --device cpu -m "$A" -m "$B" --repetition-penalty 1.5 < /dev/null > /dev/null 2> "$TMP/err"
code=$?
[ $code -eq 2 ] || fail "--repetition-penalty with an ensemble: exit $code, expected 2"
grep -q "repetition_penalty with an ensemble: not supported" "$TMP/err" ||
    fail "--repetition-penalty with an ensemble: $(cat "$TMP/err")"

printf 'model = %s\nmodel = %s\nweights = 0.3,0.9\nscores = 1\n' "$A" "$B" > "$TMP/ab.ini"
run ab-ini -c "$TMP/ab.ini"
cmp -s "$TMP/ab.out" "$TMP/ab-ini.out" || fail "the INI's model lines and weights differ from -m and --weights"
printf 'model = %s\nscores = 1\n' "$B" > "$TMP/b.ini"
run a-over-ini -c "$TMP/b.ini" -m "$A"
cmp -s "$TMP/a1.out" "$TMP/a-over-ini.out" || fail "-m on the command line did not replace the INI's model"

"$T" --device cpu -m "$A" -m "$SRC/models/multi30k-de-en.bin" < /dev/null > /dev/null 2> "$TMP/err"
code=$?
[ $code -eq 2 ] || fail "another vocabulary: exit $code, expected 2"
grep -q "model 2's target vocabulary has 4778 tokens, model 1's 32" "$TMP/err" ||
    fail "another vocabulary: $(cat "$TMP/err")"

if [ $failures -ne 0 ]; then echo "test_cli_ensemble: $failures failures" >&2; exit 1; fi
echo "test_cli_ensemble: passed"
