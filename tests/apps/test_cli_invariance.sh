#!/usr/bin/env bash
# Batch invariance through translate (docs/decoding.md, "Batch invariance"):
# with --scores, n-best 3, --alignment, --token-scores and --attention, the
# output is byte-identical at --batch-size 1, 7 and 64, by tokens, with
# other --maxi-batch windows and --max-batch-tokens, and with --workers 2
# and 3 (CPU); as it is for n-best 1 and for Marian's n-best rows. Every
# number is printed so that it reads back as the same float (%.9g), so
# equal files mean equal bits; another --alpha must change the file (the
# comparison sees the scores).
# shellcheck source=tests/common/shell_lib.sh
source "$(dirname "$0")/../common/shell_lib.sh"
: "${NMT_TRANSLATE:?}" "${NMT_TEST_MODEL:?}"
T=$NMT_TRANSLATE
M=$NMT_TEST_MODEL
random_lines "$TMP/in.txt" 40 150 20 2 \
    "der die das und ist ein eine Haus katze hund mann frau kind sieht nicht groß klein heute mit auf buch liest . , ! ?"
FIELDS=(--device cpu --scores --alignment --token-scores --attention --max-len-b 12)

# run NAME OPTIONS...: translate the input into $TMP/NAME.out.
run() {
    local name=$1
    shift
    "$T" -m "$M" "$@" -i "$TMP/in.txt" -o "$TMP/$name.out" 2> "$TMP/$name.err"
    local code=$?
    # exit 1: the refused lines
    [ $code -eq 1 ] || fail "$name: exit $code ($(head -3 "$TMP/$name.err"))"
}

# same REF NAME OPTIONS...: NAME's output must be REF's, byte for byte.
same() {
    local ref=$1 name=$2
    shift 2
    run "$name" "$@"
    cmp -s "$TMP/$ref.out" "$TMP/$name.out" ||
        fail "$name: output differs from $ref's: $(diff "$TMP/$ref.out" "$TMP/$name.out" | head -3)"
}

run ref "${FIELDS[@]}" -n 3 --batch-size 1
[ "$(wc -l < "$TMP/ref.out")" -eq $((3 * 152)) ] || fail "ref: $(wc -l < "$TMP/ref.out") rows, want 456"
same ref b7 "${FIELDS[@]}" -n 3 --batch-size 7
same ref b64 "${FIELDS[@]}" -n 3 --batch-size 64
same ref b64-maxi5 "${FIELDS[@]}" -n 3 --batch-size 64 --maxi-batch 5
same ref b3-maxi100 "${FIELDS[@]}" -n 3 --batch-size 3 --maxi-batch 100
same ref b7-maxi1 "${FIELDS[@]}" -n 3 --batch-size 7 --maxi-batch 1
same ref tokens "${FIELDS[@]}" -n 3 --batch-type tokens --batch-size 40
same ref max-tokens "${FIELDS[@]}" -n 3 --batch-size 64 --max-batch-tokens 30
same ref workers2 "${FIELDS[@]}" -n 3 --batch-size 7 --workers 2
same ref workers3 "${FIELDS[@]}" -n 3 --batch-size 64 --maxi-batch 16 --workers 3

run ref1 "${FIELDS[@]}" --batch-size 1
same ref1 one-b64 "${FIELDS[@]}" --batch-size 64
same ref1 one-workers2 "${FIELDS[@]}" --batch-size 5 --maxi-batch 9 --workers 2
run marian1 --device cpu -n 3 --n-best-format marian --batch-size 1
same marian1 marian64 --device cpu -n 3 --n-best-format marian --batch-size 64 --workers 2

# The comparison sees the scores: another length penalty changes them.
run alpha "${FIELDS[@]}" -n 3 --batch-size 64 --alpha 0.9
cmp -s "$TMP/ref.out" "$TMP/alpha.out" && fail "--alpha 0.9 gave the same file as --alpha 1"

# Every number reads back as the float it was printed from: printed again
# at 9 significant digits it is the same text (6 decimals would not be).
python3 - "$TMP/ref.out" <<'PY' || fail "a printed number does not round-trip"
import re, struct, sys

def same(s):
    f = struct.unpack("<f", struct.pack("<f", float(s)))[0]
    return s == "-inf" or format(f, ".9g") == s

bad = []
for row in open(sys.argv[1], encoding="utf-8"):
    parts = row.rstrip("\n").split(" |||")
    numbers = [parts[0].split("\t")[2]] + parts[-2].split()
    numbers += re.findall(r"[-+0-9.e]+", parts[-1].split('"weights":', 1)[1])
    bad += [n for n in numbers if not same(n)]
if bad:
    print("not round-trip:", bad[:5], file=sys.stderr)
sys.exit(1 if bad else 0)
PY
exit $((failures > 0))
