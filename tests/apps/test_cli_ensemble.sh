#!/usr/bin/env bash
# translate with several models (an ensemble, docs/decoding.md "Ensembles"),
# on the test model A and its twin B of another seed (CPU, the reference
# kernels):
#  - -m A -m A prints what -m A prints (scores, token scores, alignment,
#    n-best rows), and --weights 1,0 over A and B too;
#  - A and B give other lines than either alone;
#  - the INI file's model lines and weights key are the command line's -m
#    and --weights, and a command line -m replaces the file's models;
#  - a model of another vocabulary is refused (exit 2), naming the
#    difference.
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
